"""``carbonshift``: the least grams with every deadline kept, with a certified lower bound.

docs/design/0002-carbonshift-planner.md describes the method; in short:

0. critical first (where some jobs but not all are critical): they take their earliest
   starts with room, and the other jobs are planned by the steps below as an instance of
   their own on the room they leave; the bound stays of every all-on-time plan;
1. price: Lagrangian prices on (cluster, resource, slot) by subgradient ascent
   (:mod:`carbonshift.planning.lagrangian`); the best dual value is the certified bound;
2. place: critical jobs first at their earliest start with room; then every other job, the
   largest first, at its on-time start with room of least *priced* grams (true grams plus
   the prices of the cells it occupies: a price-guided greedy in the manner of primal
   heuristics from a convex relaxation); a job with no on-time start with room takes its
   earliest start with room (least lateness), ties to fewer grams; a job with no start
   with room at all gets room made for it (the jobs in its way moved, late if need be);
   plans are compared by jobs left out, then total lateness, then grams;
3. improve: jobs not at their own cheapest on-time start are taken out and put back at the
   start with room of least true grams (late jobs at their earliest), until a pass gains
   nothing or the pass limit is reached;
4. search (up to 3,000 jobs): a bounded ruin and recreate whose move ejects the jobs in the
   way of a cheaper start of a job and puts them back elsewhere, kept when grams fall;
5. polish (up to 3,000 jobs): a MIP neighbourhood search (:mod:`._polish`): windows of
   jobs re-planned exactly by small HiGHS MILPs on the room the others leave (and, last
   of the searches, windows that follow ejection chains: who holds the room a job would
   rather have);
6. core (above ``core_small_jobs``, 400, where the class LP is too large): the class LP
   restricted to each class's cheapest priced columns and the best plan's starts (interior
   point and crossover), rounded, its late jobs re-planned by sub-MILPs; a second ascent
   from its prices for the bound;
9. incumbent (online, opt-in): a start off the round before's plan costs a stated move
   penalty in every cost table of the steps above (:mod:`carbonshift.planning.incumbent`);
   the bound and the grams reported are the unpenalised ones.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from carbonshift.domain import Instance
from carbonshift.errors import SolverError
from carbonshift.formats import PlanBound
from carbonshift.planning.aggregate import (
    ClassColumns,
    class_columns,
    class_lp_options,
    class_program,
    column_index,
)
from carbonshift.planning.backends.highs import LpMethod, Solution, SolveOptions, solve
from carbonshift.planning.incumbent import MovePenalty, move_penalty
from carbonshift.planning.lagrangian import (
    DUAL_TARGET_GAP,
    JobClasses,
    classes_of,
    dual_ascent,
    evaluate,
    range_min,
    shape_costs,
    shape_costs_error_g,
    unique_rows,
    unit_grams,
)
from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.policies._common import result_of
from carbonshift.planning.policies._polish import (
    WALL_GUARD_PER_CPU_S,
    PolishStats,
    polish,
    polish_bands,
    polish_pairs,
    repair_late,
)
from carbonshift.planning.problem import (
    CAPACITY_TOLERANCE,
    InstanceArrays,
    LinearProgram,
    StartProblem,
    Starts,
    arrays_of,
    balanced_units,
    build_problem,
    every_job_once,
    linear_program,
    on_time_program,
)
from carbonshift.planning.types import PlanContext, PolicyResult, SolveStatus

__all__ = ["BOUND_METHODS", "CORE_LP_METHODS", "OBJECTIVES", "carbonshift"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

OBJECTIVES = ("carbon", "operational")
BOUND_METHODS = ("auto", "lagrangian", "lp", "none")
#: How the core LP is solved: HiGHS dual simplex, or interior point with crossover to a
#: vertex (simplex again when it fails or ends off a vertex).
CORE_LP_METHODS = ("simplex", "ipm-vertex")

#: The reported bound is taken down by this relative margin, so that float rounding in the
#: prefix sums can never lift it over the true dual value.
_BOUND_MARGIN = 1e-9

#: HiGHS's wall-time limit on the policy's solves, each limited in CPU seconds of the
#: solving thread (``SolveOptions.cpu_limit_s``): :data:`._polish.WALL_GUARD_PER_CPU_S` wall
#: seconds per CPU second, and at least this many; only a guard against a hang (HiGHS 1.16's
#: MILP presolve, which calls no interrupt callback, ran for minutes on a sub-MILP). A wall
#: limit that binds makes the plan depend on the machine's load (under load wall time runs
#: far ahead of CPU time: a clairvoyant Caspian plan at load 7, 53 s of wall for 7.6 s of
#: CPU); the CPU limits and node counts do not (docs/design/0002, "Limits").
_WALL_GUARD_MIN_S = 60.0

#: Above 3,000 jobs the core LP's interior point stops at this relative optimality
#: tolerance and HiGHS's crossover runs from there (``SolveOptions.ipm_tolerance``): with
#: crossover on, IPX runs on to a tighter tolerance of its own first (ten-zone 10,000:
#: 31-39 iterations instead of 35-47, the same optimum; bench/planner.md (q)).
_CORE_IPM_TOLERANCE = 1e-7
#: The most columns the core keeps through ``core_columns`` per resource (with one resource,
#: or above it, ``core_columns`` per class whatever the count).
_CORE_COLUMNS_CAP = 60_000


def _note_search(stats: dict[str, float], name: str, done: PolishStats) -> None:
    """A search step's sub-MILPs, those kept, its simplex iterations and CPU seconds in the
    plan's ``stats``."""
    stats[f"{name}_steps"] = float(done.steps)
    stats[f"{name}_kept"] = float(done.kept)
    stats[f"{name}_cpu_seconds"] = done.cpu_seconds
    stats[f"{name}_guard_bound"] = float(done.guard_bound)
    stats[f"{name}_lp_iterations"] = float(done.lp_iterations)


def _cpu_limited(options: SolveOptions, cpu_limit_s: float) -> SolveOptions:
    """``options`` with ``cpu_limit_s`` CPU seconds and the wall guard above it."""
    wall_s = max(WALL_GUARD_PER_CPU_S * cpu_limit_s, _WALL_GUARD_MIN_S)
    return replace(options, cpu_limit_s=cpu_limit_s, time_limit_s=wall_s)


#: The exact MILP of small instances (``exact_nodes``) stops after this many branch-and-bound
#: nodes: a limit that does not depend on the machine. Random 14-job instances of 308-362
#: columns needed 1-33 nodes and 0.07-1.9 s of CPU (the root's work), so the CPU guard
#: ``exact_time_limit_s`` binds there first on a slow machine; 500 nodes bound the search of
#: a model whose nodes are cheap.
_EXACT_NODES = 500


#: Up to this many jobs the planner re-prices and re-places three times and improves the
#: first greedy plan too; above it, once (the 1 s target at 10,000 jobs).
_SMALL_JOBS = 3000


#: The search's budget grows with the jobs up to this many, then stays (about 0.6 s of CPU).
_SEARCH_JOBS = 1000

#: The bands' budgets (``band_lp_iterations``, ``cluster_band_lp_iterations``) are those of
#: this many jobs and more; below, they grow as this many / jobs, at most
#: :data:`_BAND_BUDGET_MAX_SCALE` times: a smaller plan leaves more of the CPU of a plan
#: for them, and their sub-MILPs are where its grams above the bound still fall (cjps-small
#: 100 seed 2 ran out of the cluster bands' 30,000 iterations in its first sweep;
#: bench/planner.md, 2026-11-27 (quality)). Deterministic: a count of jobs, not a time.
_BAND_BUDGET_JOBS = 1000
_BAND_BUDGET_MAX_SCALE = 3.0


def _band_budget(lp_iterations: int, n_jobs: int) -> int:
    """The bands' simplex-iteration budget for ``n_jobs`` jobs (:data:`_BAND_BUDGET_JOBS`)."""
    scale = min(_BAND_BUDGET_MAX_SCALE, max(1.0, _BAND_BUDGET_JOBS / max(n_jobs, 1)))
    return int(lp_iterations * scale)


#: ``polish_cpu_s``: the CPU guard of the polish and of each kind of band, in seconds of
#: the planning thread. A guard against a hang, far above their deterministic work (node
#: limits and simplex-iteration budgets): at 10 s it bound on a machine as fast as ours
#: where the polish's sub-MILPs, each ended by its node limit, spent 13.8 s (cjps-small
#: 100 seed 1, 87,518 iterations, load 5), so the plan depended on the machine's speed.
_POLISH_CPU_GUARD_S = 60.0

#: ``support_time_limit_s``: the CPU guard of the support MILP (step 7b), whose node limit
#: (``support_nodes``) is meant to end it. At 5 s it bound first on every ten-zone 300 seed
#: (ten-zone 300 seed 0: 500 nodes took 12.7 s of CPU at load 8, the same plan; 100 nodes
#: since 2026-11-29, bench/planner.md (z)).
_SUPPORT_CPU_GUARD_S = 60.0

#: The polish runs in this many rounds, each with a third of its budget and its own seed,
#: with re-insertion passes between them. Against one round with the passes after it, on
#: the 21 instances of bench/planner.md where it ran (2026-11-26 (b)): better on 12, worse
#: on 9, by less than the spread between seeds; kept for the caspian family (0.27-0.81 %
#: against 0.32-0.86 %), a wash elsewhere.
_POLISH_ROUNDS = 3

#: Step 7g (the chain windows' polish) solves at most this many sub-MILPs (its budget of
#: simplex iterations, ``polish_chain_lp_iterations``, or a stall ends it first) ...
_CHAIN_STEPS = 400
#: ... with the seed ``search_seed`` plus this (another stream than the first polish's)
_CHAIN_SEED = 1000

#: Step 7h (cluster pairs) runs up to this many jobs: from 1,000 jobs on the plans were
#: within 1.4 % of the bound before it, and its windows of two clusters' jobs grow with the
#: jobs (ten-zone 1,000 seeds 0-2: 0.02-0.15 points for 18-20 s of CPU; 300: 0.5-1.6)
_PAIR_MAX_JOBS = 1000

#: The late-job repair after the LP's rounding stops after this many rounds over the late
#: jobs (ten-zone 1,000 seeds 0-4 needed 2-12 sub-MILPs in at most 4 rounds).
_LATE_REPAIR_ROUNDS = 8

#: ... and runs only when the rounding's grams are within this share of the LP optimum:
#: ten-zone 1,000 and 3,000 round to 0.6-2.3 % above it and the repair keeps most of that
#: (plans 1.6-2.1 % above the bound, against 4.5-6.6 %); ten-zone 300 rounds to 9.5-9.8 %
#: above it, and the repaired rounding led to a plan better on seed 0 by 0.8 points and
#: worse on seed 1 by 1.9 (bench/planner.md, 2026-11-26, late-job repair).
_LATE_REPAIR_NEAR = 0.05

#: Above 3,000 jobs the core's rounding, when it leaves jobs late, is made again at most
#: this many times with every job late in an earlier one first (:func:`_round_late_first`)
#: before the sub-MILP repair runs. Ten-zone 10,000 seeds 0-2, 11 and 16: 1-2 roundings
#: (0.04 s each) put every job on time, where the repair took 0.03-0.08 s on seeds 0-2 and
#: 0.9 s on seeds 11 and 16 (one window of 11-21 jobs: 2,400-4,900 simplex iterations).
_LATE_FIRST_ROUNDS = 3

#: With ``core_fallback_last`` the price-guided placements run after the core only when its
#: plan leaves a job late or out, does not beat the plan before it, or is more than this
#: share above the certified bound (then no plan can be better by more than this share).
_FALLBACK_GAP = 0.01

#: Up to 3,000 jobs (above ``core_small_jobs``) the core is solved twice, with at least
#: this many columns per class and then at least the second many (its classes hold fewer
#: jobs each), and the better rounding is kept: another vertex rounds differently, by up to
#: half a point of gap either way on ten-zone 1,000-2,000. Ten-zone 1,000 and 2,000 seeds
#: 0-1 (bench/planner.md, "Quality at 500-3,000 jobs"): 20 columns alone gave plans
#: 0.07-0.16 % lighter than the whole class LP's on all four, 15 alone lighter on three and
#: 0.4 % heavier on one, the better of both 0.13-0.23 % lighter on all four (with the
#: repair in windows of ``core_repair_columns``). (2026-11-26 (d): 3 columns 0.3-0.7 %
#: heavier on three of ten-zone 2,000 and 3,000 seeds 0-1, 10 columns lighter.)
_SMALL_CORE_COLUMNS = (20, 15)

#: Up to 3,000 jobs (above ``core_small_jobs``) the core also stands in for a class LP
#: within its limits that has more than this many columns per job: its classes gather few
#: jobs (ten-zone 501-3,000 jobs: 51-70 columns per job; cjps-large at most 43 from 501
#: jobs, the trace families at most 10). Ten-zone 500 and 800 seeds 0-1 (bench/planner.md,
#: "Quality at 500-3,000 jobs"): the whole LP's rounding in row form ended 1.6-4.9 points
#: above the cores' plans, in more CPU.
_SMALL_CORE_COLUMNS_PER_JOB = 50


#: The greedy placement chooses the starts of this many jobs at once (one resource):
#: :meth:`_Placer.place_cheapest`.
_BLOCK_JOBS = 64


@dataclass(slots=True)
class _State:
    """Placement state: free units ``(m, k, h)``, each job's (cluster, start) or -1."""

    free: FloatArray
    cluster: IntArray
    start: IntArray


def _copy(state: _State) -> _State:
    return _State(free=state.free.copy(), cluster=state.cluster.copy(), start=state.start.copy())


def _window_min(window: FloatArray, runtime: int, width: int) -> FloatArray:
    """``min(window[..., s : s + runtime])`` for ``s`` in ``0 .. width - 1`` (last axis):
    ``runtime - 1`` elementwise minima (measured faster than strided views for short runs)."""
    least = window[..., :width].copy()
    for k in range(1, runtime):
        np.minimum(least, window[..., k : k + width], out=least)
    return least


class _Room:
    """The one resource's room ``(m, h)`` as Python floats, for loops that test and take
    room job by job (a slice of Python floats is cheaper than a numpy call per job). It
    takes room by the same subtractions as :meth:`_Placer.place`, so it holds the same
    floats; :meth:`write_back` puts the rows it changed into the array before that is read."""

    def __init__(self, free: FloatArray) -> None:
        self.free = free
        self.rows: list[list[float]] = free.tolist()
        self.stale: set[int] = set()

    def fits(self, m: int, s: int, runtime: int, amount: float) -> bool:
        """:meth:`_Placer.fits_at`'s test."""
        return min(self.rows[m][s : s + runtime]) + CAPACITY_TOLERANCE >= amount

    def take(self, m: int, s: int, runtime: int, amount: float) -> None:
        row = self.rows[m]
        for k in range(s, s + runtime):
            row[k] -= amount
        self.stale.add(m)

    def write_back(self) -> None:
        for m in self.stale:
            self.free[m] = self.rows[m]
        self.stale.clear()


class _Placer:
    """Start choices for one job at a time, vectorised over (cluster, start)."""

    def __init__(self, arrays: InstanceArrays, classes: JobClasses, state: _State) -> None:
        self.a = arrays
        self.c = classes
        self.s = state
        self.single = arrays.demand_units.shape[1] == 1
        self.free0 = state.free[:, 0, :]  # a view: the one resource's room
        rows = [] if self.single else list(arrays.demand_units)
        self.nz = [np.flatnonzero(row > 0) for row in rows]
        self.need = [arrays.demand_units[j, nz] for j, nz in enumerate(self.nz)]
        self.amount = arrays.demand_units[:, 0].tolist()
        self.runtime = arrays.runtime_slots.tolist()
        self.every: list[bool] = np.all(arrays.allowed, axis=1).tolist()
        # per job as Python lists: read once per placement, cheaper than numpy scalars
        self.on_time: list[bool] = classes.on_time.tolist()
        self.lo: list[int] = classes.lo.tolist()
        self.hi: list[int] = classes.hi.tolist()
        self.shape: list[int] = classes.shape.tolist()
        # per job its allowed clusters (None: every one), for the one-resource room test;
        # one array per pattern of allowed clusters
        # (a pattern's key is its row of bits packed into bytes, read as one integer where
        # it fits in 7 bytes (up to 56 clusters): a 1-D unique of integers, several times
        # faster than of the bytes (1.4 against 0.4 ms on ten-zone 10,000), or of the rows)
        packed = np.packbits(arrays.allowed, axis=1)
        keys: npt.NDArray[Any]
        if packed.shape[1] <= 7:
            keys = np.zeros(packed.shape[0], dtype=np.int64)
            for byte in packed.T:
                keys = (keys << 8) | byte
        else:
            keys = packed.view(np.dtype((np.void, packed.shape[1]))).reshape(-1)
        _, first, pattern_of = np.unique(keys, return_index=True, return_inverse=True)
        by_pattern = [
            None if arrays.allowed[j].all() else np.flatnonzero(arrays.allowed[j]) for j in first
        ]
        self.rows: list[IntArray | None] = [by_pattern[p] for p in pattern_of.reshape(-1)]

    def room(self, j: int, lo: int, hi: int) -> npt.NDArray[np.bool_]:
        """Where job ``j`` fits for starts ``lo .. hi`` on each cluster: ``(m, hi-lo+1)``.

        A start fits when no slot of its run lacks room: the count of short slots over the
        run, from a prefix count, is zero (a fixed number of array operations whatever the
        runtime)."""
        r = self.runtime[j]
        width = hi - lo + 1
        if self.single:
            short = self.s.free[:, 0, lo : hi + r] + CAPACITY_TOLERANCE < self.amount[j]
        else:
            window = self.s.free[:, self.nz[j], lo : hi + r]
            short = np.any(window + CAPACITY_TOLERANCE < self.need[j][None, :, None], axis=1)
        count = np.zeros((short.shape[0], short.shape[1] + 1), dtype=np.int32)
        np.cumsum(short, axis=1, out=count[:, 1:])
        ok: npt.NDArray[np.bool_] = count[:, r : r + width] == count[:, :width]
        if self.every[j]:
            return ok
        result: npt.NDArray[np.bool_] = ok & self.a.allowed[j][:, None]
        return result

    def fits_at(self, j: int, m: int, s: int) -> bool:
        """Whether job ``j`` fits started at ``s`` on cluster ``m`` (room only)."""
        r = self.runtime[j]
        if self.single:
            return bool(self.free0[m, s : s + r].min() + CAPACITY_TOLERANCE >= self.amount[j])
        window = self.s.free[m, self.nz[j], s : s + r]
        return bool(np.all(window + CAPACITY_TOLERANCE >= self.need[j][:, None]))

    def cheapest(self, j: int, table: FloatArray) -> tuple[int, int] | None:
        """The on-time start with room of least ``table`` cost, or None."""
        if not self.on_time[j]:
            return None
        lo, hi = self.lo[j], self.hi[j]
        if self.single:
            return self._cheapest_one_resource(j, lo, hi, table)
        ok = self.room(j, lo, hi)
        cost = np.where(ok, table[self.c.shape[j], :, lo : hi + 1], np.inf)
        flat = int(np.argmin(cost))
        width = hi - lo + 1
        if not np.isfinite(cost.flat[flat]):
            return None
        return flat // width, lo + flat % width

    def _cheapest_one_resource(
        self, j: int, lo: int, hi: int, table: FloatArray
    ) -> tuple[int, int] | None:
        """:meth:`cheapest` with one resource: the room test of :meth:`room` on the allowed
        clusters only and in fewer array operations (the hot path of every placement; the
        same answer, ties to the lower cluster, then the earlier start)."""
        r = self.runtime[j]
        width = hi - lo + 1
        rows = self.rows[j]
        if rows is None:
            window = self.free0[:, lo : hi + r]
            cost = table[self.shape[j], :, lo : hi + 1]
        else:
            window = self.free0[rows, lo : hi + r]
            cost = table[self.shape[j], rows, lo : hi + 1]
        # short slots in the run of each start: a prefix count over the window (a start
        # fits where the count does not grow over its run)
        count = np.zeros((window.shape[0], window.shape[1] + 1), dtype=np.int32)
        (window + CAPACITY_TOLERANCE < self.amount[j]).cumsum(axis=1, out=count[:, 1:])
        cost = np.where(count[:, r : r + width] == count[:, :width], cost, np.inf)
        flat = int(cost.argmin())
        if cost.flat[flat] == np.inf:
            return None
        m = flat // width
        return (m if rows is None else int(rows[m])), lo + flat % width

    def place_cheapest(self, jobs: list[int], table: FloatArray) -> list[int]:
        """Each of ``jobs`` in turn placed at its :meth:`cheapest` start (one resource);
        returns those with none, in order.

        The starts are chosen for blocks of ``_BLOCK_JOBS`` jobs at once against the room
        at the block's start. Placing jobs only takes room away, so the starts that fit
        when a job's turn comes are a subset of those that fitted then: where its choice
        still fits it is still the least (ties alike), and only a choice whose run another
        job of the block has since used is tested again, and made again when it no longer
        fits. The plan is the one of :meth:`cheapest` job by job."""
        deferred: list[int] = []
        runtime, amount, lo, hi = self.runtime, self.amount, self.lo, self.hi
        width = self.free0.shape[1]
        room = _Room(self.free0)
        for first in range(0, len(jobs), _BLOCK_JOBS):
            block = jobs[first : first + _BLOCK_JOBS]
            room.write_back()
            # per cluster, a bit per slot some job of this block has taken room in
            touched = [0] * self.free0.shape[0]
            for j, flat in zip(block, self._cheapest_block(block, table), strict=True):
                if flat < 0:
                    deferred.append(j)
                    continue
                m, s = divmod(flat, width)
                r = runtime[j]
                run = (1 << r) - 1
                if (touched[m] >> s) & run and not room.fits(m, s, r, amount[j]):
                    room.write_back()
                    where = self._cheapest_one_resource(j, lo[j], hi[j], table)
                    if where is None:
                        deferred.append(j)
                        continue
                    m, s = where
                room.take(m, s, r, amount[j])
                touched[m] |= run << s
                self.s.cluster[j], self.s.start[j] = m, s
        room.write_back()
        return deferred

    def _cheapest_block(self, block: list[int], table: FloatArray) -> list[int]:
        """:meth:`cheapest` for each job of ``block`` against the present room, as flat
        indexes ``m * h + s`` (-1: none), vectorised over the jobs: a start fits where the
        least room over its run, per runtime, is enough."""
        jobs = np.asarray(block, dtype=np.int64)
        free = self.free0
        m, h = free.shape
        runtime = self.a.runtime_slots[jobs]
        longest = int(runtime.max())
        # least[r - 1, m, s]: the least room over slots s .. s + r - 1 (-inf past the
        # horizon), plus the tolerance (the same floats as room()'s test slot by slot)
        least = np.full((longest, m, h), -np.inf)
        least[0] = free
        for k in range(1, longest):
            np.minimum(least[k - 1, :, : h - k], free[:, k:], out=least[k, :, : h - k])
        least += CAPACITY_TOLERANCE
        short = least[runtime - 1] < self.a.demand_units[jobs, 0][:, None, None]
        slots = np.arange(h)
        short |= ((slots < self.c.lo[jobs][:, None]) | (slots > self.c.hi[jobs][:, None]))[
            :, None, :
        ]
        short |= ~self.a.allowed[jobs][:, :, None]
        cost = table[self.c.shape[jobs]]
        np.copyto(cost, np.inf, where=short)
        cost = cost.reshape(len(block), m * h)
        flat = cost.argmin(axis=1)
        found = (cost[np.arange(len(block)), flat] != np.inf) & self.c.on_time[jobs]
        result: list[int] = np.where(found, flat, -1).tolist()
        return result

    def earliest(self, j: int, table: FloatArray) -> tuple[int, int] | None:
        """The earliest start with room in the horizon, ties to the least ``table`` cost."""
        lo = int(self.a.release_slot[j])
        hi = self.a.horizon_slots - self.runtime[j]
        if hi < lo:
            return None
        ok = self.room(j, lo, hi)
        cols = np.flatnonzero(ok.any(axis=0))
        if cols.size == 0:
            return None
        s = lo + int(cols[0])
        rows = np.flatnonzero(ok[:, cols[0]])
        costs = table[self.c.shape[j], rows, s]
        return int(rows[int(np.argmin(costs))]), s

    def place(self, j: int, where: tuple[int, int]) -> None:
        m, s = where
        r = self.runtime[j]
        if self.single:
            self.free0[m, s : s + r] -= self.amount[j]
        else:
            self.s.free[m, self.nz[j], s : s + r] -= self.need[j][:, None]
        self.s.cluster[j], self.s.start[j] = m, s

    def remove(self, j: int) -> None:
        m, s = int(self.s.cluster[j]), int(self.s.start[j])
        r = self.runtime[j]
        if self.single:
            self.s.free[m, 0, s : s + r] += self.amount[j]
        else:
            self.s.free[m, self.nz[j], s : s + r] += self.need[j][:, None]
        self.s.cluster[j] = self.s.start[j] = -1


def _place_critical(placer: _Placer, arrays: InstanceArrays, true: FloatArray) -> None:
    """The critical jobs, before any other, in order of release: each at its earliest start
    with room over its allowed clusters, ties to the least ``true`` cost; a critical job
    with no start with room is left out."""
    critical = np.flatnonzero(arrays.critical)
    for j in critical[np.argsort(arrays.release_slot[critical], kind="stable")]:
        where = placer.earliest(int(j), true)
        if where is not None:
            placer.place(int(j), where)


def _place_all(
    arrays: InstanceArrays,
    classes: JobClasses,
    guide: FloatArray,
    true: FloatArray,
    *,
    tight_first: bool = False,
    order: IntArray | None = None,
) -> _State:
    """Critical jobs at their earliest start, then the rest, largest first (``tight_first``:
    fewest on-time (cluster, start) options first, then largest), at their on-time start
    of least ``guide`` cost; those with no on-time room at their earliest start."""
    n = arrays.n_jobs
    state = _State(
        free=arrays.free_units.copy(),
        cluster=np.full(n, -1, dtype=np.int64),
        start=np.full(n, -1, dtype=np.int64),
    )
    placer = _Placer(arrays, classes, state)
    _place_critical(placer, arrays, true)
    rest = np.flatnonzero(~arrays.critical)
    size = classes.weight[rest] * arrays.runtime_slots[rest]
    if order is not None:
        order = order[~arrays.critical[order]]
    elif tight_first:
        options = (classes.hi - classes.lo + 1)[rest] * arrays.allowed[rest].sum(axis=1)
        order = rest[np.lexsort((-size, options))]
    else:
        order = rest[np.argsort(-size, kind="stable")]
    deferred = []
    if placer.single:
        deferred = placer.place_cheapest(order.tolist(), guide)
    else:
        for j in order.tolist():
            where = placer.cheapest(j, guide)
            if where is None:
                deferred.append(j)
            else:
                placer.place(j, where)
    for j in sorted(deferred, key=lambda i: (int(arrays.deadline_slot[i]), i)):
        where = placer.earliest(j, true)
        if where is not None:
            placer.place(j, where)
    return state


@dataclass(frozen=True, slots=True)
class _Groups:
    """Jobs of one shape and one demand vector: they fit at the same (cluster, start)."""

    of_job: IntArray  # (n,)
    shape: IntArray  # (G,)
    runtime: IntArray  # (G,)
    demand: FloatArray  # (G, k)

    @staticmethod
    def of(arrays: InstanceArrays, classes: JobClasses) -> _Groups:
        # np.unique over rows of (shape, demand), through integer codes of each demand
        # column (order kept) and one 1-D unique: the same groups in the same order, 0.8
        # against 5.6 ms on ten-zone 10,000
        demand = arrays.demand_units
        codes = [classes.shape]
        for q in range(demand.shape[1]):
            _, code = np.unique(demand[:, q], return_inverse=True)
            codes.append(code.reshape(-1))
        rows, inverse, first = unique_rows(np.column_stack(codes).astype(np.int64))
        shape = rows[:, 0]
        return _Groups(
            of_job=inverse,
            shape=shape,
            runtime=classes.shape_runtime[shape],
            demand=np.ascontiguousarray(demand[first]),
        )


def _fits(groups: _Groups, free: FloatArray) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Per group, cluster and slot: whether the slot is short of room for one job of the
    group, and whether a run of the group started there fits: ``(G, m, h)`` each."""
    m, k, h = free.shape
    n_groups = groups.shape.shape[0]
    short = np.zeros((n_groups, m, h), dtype=bool)
    for q in range(k):
        need = groups.demand[:, q][:, None, None]
        short |= (free[None, :, q, :] + CAPACITY_TOLERANCE < need) & (need > 0)
    count = np.zeros((n_groups, m, h + 1), dtype=np.int32)
    np.cumsum(short, axis=2, out=count[:, :, 1:])
    end = np.arange(h)[None, :] + groups.runtime[:, None]  # (G, h)
    inside = end <= h
    stop = np.take_along_axis(count, np.minimum(end, h)[:, None, :].repeat(m, axis=1), axis=2)
    fits: npt.NDArray[np.bool_] = (stop == count[:, :, :h]) & inside[:, None, :]
    return short, fits


def _movable(
    arrays: InstanceArrays,
    classes: JobClasses,
    groups: _Groups,
    state: _State,
    table: FloatArray,
    jobs: IntArray,
    cost: FloatArray,
) -> npt.NDArray[np.bool_]:
    """Which of ``jobs`` (placed, on time) may have an on-time start of less ``table`` cost
    with room once taken out: one with room now, or one whose run overlaps its own on its
    cluster (taking it out frees those cells). A superset of the jobs a re-insertion can
    move, computed for all at once (room per group of the same shape and demand)."""
    if jobs.size == 0:
        return np.zeros(0, dtype=bool)
    _, _, h = state.free.shape
    short, fits = _fits(groups, state.free)
    masked = np.where(fits, table[groups.shape], np.inf)
    g, lo, hi = groups.of_job[jobs], classes.lo[jobs], classes.hi[jobs]
    values, _ = range_min(masked, g, lo, hi)
    least = np.where(arrays.allowed[jobs], values, np.inf).min(axis=1)
    limit = cost[jobs] * (1 - 1e-12) - 1e-12
    # a start overlapping its own run needs room only where it leaves that run: up to the
    # stretch of cells with room just before or just after the run
    here, at = state.cluster[jobs], state.start[jobs]
    r = arrays.runtime_slots[jobs]
    slots = np.arange(h)
    last_short = np.maximum.accumulate(np.where(short, slots, -1), axis=2)
    next_short = np.minimum.accumulate(np.where(short, slots, h)[:, :, ::-1], axis=2)[:, :, ::-1]
    before = np.where(at > 0, at - 1 - last_short[g, here, np.maximum(at - 1, 0)], 0)
    after_slot = at + r
    after = np.where(
        after_slot < h, next_short[g, here, np.minimum(after_slot, h - 1)] - after_slot, 0
    )
    near_lo = np.maximum(lo, at - np.minimum(before, r - 1))
    near_hi = np.minimum(hi, at + np.minimum(after, r - 1))
    near, _ = range_min(table, classes.shape[jobs], near_lo, near_hi)
    shifted = near[np.arange(jobs.shape[0]), here]
    result: npt.NDArray[np.bool_] = (least < limit) | (shifted < limit)
    return result


def _improve(
    arrays: InstanceArrays,
    classes: JobClasses,
    state: _State,
    true: FloatArray,
    own_best: FloatArray,
    passes: int,
) -> int:
    """Re-insert jobs not at their own cheapest on-time start; returns the moves made."""
    placer = _Placer(arrays, classes, state)
    groups = _Groups.of(arrays, classes) if arrays.n_jobs > _SMALL_JOBS else None
    moves = 0
    for _ in range(passes):
        placed = state.cluster >= 0
        cost = _unit_cost(arrays, classes, state, true)
        late = placed & (state.start + arrays.runtime_slots > arrays.deadline_slot)
        dearer = np.flatnonzero(
            placed & ~late & ~arrays.critical & (cost > own_best * (1 + 1e-12) + 1e-12)
        )
        if groups is not None:
            # only those that may move (vectorised); room a move frees for another job
            # counts from the next pass, so small instances keep the one-by-one check
            dearer = dearer[_movable(arrays, classes, groups, state, true, dearer, cost)]
        candidates = np.union1d(dearer, np.flatnonzero(late))
        gained = 0
        excess = np.where(np.isfinite(own_best), cost, np.inf) - np.where(
            np.isfinite(own_best), own_best, 0.0
        )
        for j in candidates[np.argsort(-excess[candidates], kind="stable")]:
            j = int(j)
            before = (int(state.cluster[j]), int(state.start[j]))
            placer.remove(j)
            if arrays.critical[j]:
                where = placer.earliest(j, true)
            else:
                where = placer.cheapest(j, true) or placer.earliest(j, true)
            if where is None:
                where = before
            placer.place(j, where)
            if where != before:
                gained += 1
        moves += gained
        if gained == 0:
            break
    # jobs left out before may fit now
    for j in np.flatnonzero(state.cluster < 0):
        where = placer.cheapest(int(j), true) or placer.earliest(int(j), true)
        if where is not None:
            placer.place(int(j), where)
    return moves


def _ruin_recreate(
    arrays: InstanceArrays,
    classes: JobClasses,
    state: _State,
    true: FloatArray,
    own_best: FloatArray,
    *,
    budget: int,
    seed: int,
) -> int:
    """Bounded ruin and recreate (Schrimpf et al. 2000, "Record breaking optimization results
    using the ruin and recreate principle"; Shaw 1998's large neighbourhood search) with an
    ejection move: pick an on-time job ``j`` with probability proportional to the grams it
    pays above its own cheapest on-time start; pick one of its on-time starts cheaper than
    its own, among the four that lack the least room (random among them); take ``j`` out and
    the jobs in the way there, in random order, until ``j`` fits; place ``j`` and put the
    others back, largest first, at their cheapest on-time start with room (true grams).
    Kept when every job is back on time and the grams fall; otherwise undone.

    ``budget`` counts job placements tried; the search also stops when no job pays above its
    own cheapest start. Deterministic for a ``seed``. Returns the moves kept."""
    placer = _Placer(arrays, classes, state)
    rng = np.random.default_rng(seed)
    runtime = arrays.runtime_slots
    weight = classes.weight
    movable = ~arrays.critical & classes.on_time
    cost = _unit_cost(arrays, classes, state, true)
    size = weight * runtime
    # room lacking, per resource, in units of its largest free capacity
    scale = np.maximum(arrays.free_units.max(axis=(0, 2)), 1e-9)
    work = kept = 0
    drawn: list[int] = []
    while work < budget:
        if not drawn:  # a batch of draws; a job drawn may have stopped paying since
            on_time = (state.cluster >= 0) & (state.start + runtime <= arrays.deadline_slot)
            paying = movable & on_time & np.isfinite(own_best)
            excess = np.zeros(cost.shape[0])
            excess[paying] = weight[paying] * (cost[paying] - own_best[paying])
            excess = np.where(excess > 1e-9 * np.maximum(weight * cost, 1.0), excess, 0.0)
            total = float(excess.sum())
            if total <= 0:
                break
            drawn = rng.choice(excess.shape[0], size=32, p=excess / total).tolist()
        j = int(drawn.pop())
        lo, hi, r = int(classes.lo[j]), int(classes.hi[j]), int(runtime[j])
        width = hi - lo + 1
        option = np.where(
            arrays.allowed[j][:, None], true[classes.shape[j], :, lo : hi + 1], np.inf
        ).reshape(-1)
        cheaper = np.flatnonzero(option < cost[j] * (1 - 1e-12))
        work += 1
        if cheaper.size == 0:
            continue
        least = _window_min(state.free[:, :, lo : hi + r], r, width)  # (m, k, width)
        lacking = np.maximum(arrays.demand_units[j][None, :, None] - least, 0.0)
        lacking = (lacking / scale[None, :, None]).sum(axis=1).reshape(-1)
        pick = min(cheaper.size, 4)
        ranked = cheaper[np.lexsort((option[cheaper], lacking[cheaper]))[:pick]]
        flat = int(ranked[int(rng.integers(pick))])
        m, s = flat // width, lo + flat % width
        before = [(j, int(state.cluster[j]), int(state.start[j]))]
        placer.remove(j)
        way = np.flatnonzero(
            (state.cluster == m) & (state.start < s + r) & (state.start + runtime > s) & movable
        )
        removed = []
        for k in way[rng.permutation(way.size)]:
            if placer.fits_at(j, m, s):
                break
            removed.append(int(k))
            before.append((int(k), int(state.cluster[k]), int(state.start[k])))
            placer.remove(int(k))
        ok = placer.fits_at(j, m, s)
        if ok:
            placer.place(j, (m, s))
            for k in sorted(removed, key=lambda i: -size[i]):
                where = placer.cheapest(k, true)
                work += 1
                if where is None:
                    ok = False
                    break
                placer.place(k, where)
        if ok:
            moved = np.array([b[0] for b in before])
            new = true[classes.shape[moved], state.cluster[moved], state.start[moved]]
            delta = float(weight[moved] @ (new - cost[moved]))
            if delta < -1e-9 * float(weight[moved] @ cost[moved]):
                cost[moved] = new
                kept += 1
                continue
        for k, _, _ in before:
            if state.cluster[k] >= 0:
                placer.remove(k)
        for k, mk, sk in before:
            placer.place(k, (mk, sk))
    return kept


def _place_making_room(
    arrays: InstanceArrays,
    classes: JobClasses,
    placer: _Placer,
    j: int,
    options: Iterable[tuple[int, int]],
    back: Callable[[int], tuple[int, int] | None],
    max_moved: int,
) -> bool:
    """Place job ``j`` (not placed) at the first of ``options`` (cluster, start) where it
    fits once the non-critical jobs in its way (at most ``max_moved``) are taken out, and
    each of them goes back where ``back`` says (largest first); undone unless all go back.
    The one ejection move of both repairs."""
    state = placer.s
    runtime = arrays.runtime_slots
    r = int(runtime[j])
    for m, s in options:
        way = np.flatnonzero(
            (state.cluster == m)
            & (state.start < s + r)
            & (state.start + runtime > s)
            & ~arrays.critical
        )
        if way.size > max_moved:
            continue
        olds = [(int(k), int(state.cluster[k]), int(state.start[k])) for k in way]
        for k in way:
            placer.remove(int(k))
        if bool(placer.room(j, s, s)[m, 0]):
            placer.place(j, (m, s))
            all_back = True
            for k in way[np.argsort(-(classes.weight[way] * runtime[way]), kind="stable")]:
                where = back(int(k))
                if where is None:
                    all_back = False
                    break
                placer.place(int(k), where)
            if all_back:
                return True
            for k in way:
                if state.cluster[k] >= 0:
                    placer.remove(int(k))
            placer.remove(j)
        for kk, mk, sk in olds:
            placer.place(kk, (mk, sk))
    return False


def _blocked(arrays: InstanceArrays, state: _State, j: int, lo: int, hi: int) -> FloatArray:
    """The most demand already in the way over the run of each start ``lo .. hi`` of job
    ``j`` on each cluster (summed over resources): ``(m, hi-lo+1)``, ``inf`` where ``j`` may
    not run."""
    r = int(arrays.runtime_slots[j])
    used = arrays.free_units[:, :, lo : hi + r] - state.free[:, :, lo : hi + r]
    most = -_window_min(-used.sum(axis=1), r, hi - lo + 1)
    return np.where(arrays.allowed[j][:, None], most, np.inf)


def _options(blocked: FloatArray, lo: int, order: IntArray, tries: int) -> list[tuple[int, int]]:
    """The first ``tries`` (cluster, start) of ``order`` (flat indices into ``blocked``)
    where the job may run."""
    width = blocked.shape[1]
    return [
        (int(flat // width), lo + int(flat % width))
        for flat in order[:tries]
        if np.isfinite(blocked.flat[flat])
    ]


def _repair_lateness(
    arrays: InstanceArrays,
    classes: JobClasses,
    state: _State,
    guide: FloatArray,
    tries: int = 8,
    max_moved: int = 24,
) -> int:
    """Put late jobs on time by making room: for a late job, over its on-time (cluster,
    start) options with the least demand in the way, take out the non-critical jobs in the
    way (at most ``max_moved``), place the late job, and put them back at their cheapest
    on-time start with room (by ``guide``); undone unless every one of them goes back on
    time. Returns the jobs put on time."""
    placer = _Placer(arrays, classes, state)
    runtime = arrays.runtime_slots
    fixed = 0
    late = _late_jobs(arrays, state)
    for j in late[np.argsort(-(classes.weight[late] * runtime[late]), kind="stable")]:
        j = int(j)
        if not classes.on_time[j] or arrays.critical[j]:
            continue
        lo, hi = int(classes.lo[j]), int(classes.hi[j])
        old_j = (int(state.cluster[j]), int(state.start[j]))
        placer.remove(j)
        blocked = _blocked(arrays, state, j, lo, hi)
        options = _options(blocked, lo, np.argsort(blocked, axis=None, kind="stable"), tries)
        on_time = partial(placer.cheapest, table=guide)
        if _place_making_room(arrays, classes, placer, j, options, on_time, max_moved):
            fixed += 1
        else:
            placer.place(j, old_j)
    return fixed


def _repair_unplaced(
    arrays: InstanceArrays,
    classes: JobClasses,
    state: _State,
    true: FloatArray,
    guide: FloatArray,
    tries: int = 16,
    max_moved: int = 24,
) -> int:
    """Place jobs left out by making room: for a job with no start with room, over its
    (cluster, start) options in the horizon with the least demand in the way (then the
    least lateness), take out the non-critical jobs in the way (at most ``max_moved``),
    place it, and put them back at their cheapest on-time start with room (by ``guide``),
    else at their earliest start with room; undone unless every one of them goes back.
    Returns the jobs placed. A plan that leaves out fewer jobs is better however late."""
    placer = _Placer(arrays, classes, state)
    runtime = arrays.runtime_slots
    placed_now = 0

    def anywhere(k: int) -> tuple[int, int] | None:
        return placer.cheapest(k, guide) or placer.earliest(k, true)

    out = np.flatnonzero(state.cluster < 0)
    for j in out[np.argsort(-(classes.weight[out] * runtime[out]), kind="stable")]:
        j = int(j)
        lo = int(arrays.release_slot[j])
        hi = arrays.horizon_slots - int(runtime[j])
        if hi < lo or not arrays.allowed[j].any():
            continue
        blocked = _blocked(arrays, state, j, lo, hi)
        late = np.maximum(0, np.arange(lo, hi + 1) + runtime[j] - arrays.deadline_slot[j])
        order = np.lexsort((np.broadcast_to(late, blocked.shape).ravel(), blocked.ravel()))
        options = _options(blocked, lo, order, tries)
        if _place_making_room(arrays, classes, placer, j, options, anywhere, max_moved):
            placed_now += 1
    return placed_now


def _fill_left_out(
    arrays: InstanceArrays, classes: JobClasses, state: _State, table: FloatArray
) -> int:
    """Place each job left out that fits as the plan stands: at its on-time start with room
    of least ``table`` cost, else its earliest start with room (least lateness, ties to the
    least ``table`` cost); the jobs of the largest weight x runtime first. Returns the jobs
    placed. Placing a job only takes room, so the plan is never worse by the policy's order
    (jobs left out, then lateness, then grams)."""
    placer = _Placer(arrays, classes, state)
    out = np.flatnonzero(state.cluster < 0)
    placed_now = 0
    for j in out[np.argsort(-(classes.weight[out] * arrays.runtime_slots[out]), kind="stable")]:
        where = placer.cheapest(int(j), table) or placer.earliest(int(j), table)
        if where is not None:
            placer.place(int(j), where)
            placed_now += 1
    return placed_now


def _unit_cost(
    arrays: InstanceArrays, classes: JobClasses, state: _State, table: FloatArray
) -> FloatArray:
    """Cost per unit of weight of each job's current start (``inf`` when unplaced)."""
    placed = state.cluster >= 0
    out = np.full(arrays.n_jobs, np.inf)
    idx = np.flatnonzero(placed)
    out[idx] = table[classes.shape[idx], state.cluster[idx], state.start[idx]]
    return out


def _own_best_fast(arrays: InstanceArrays, classes: JobClasses, table: FloatArray) -> FloatArray:
    """:func:`_own_best` through the classes (one query per class, allowed clusters kept)."""
    values, _ = range_min(table, classes.class_shape, classes.class_lo, classes.class_hi)
    values = np.where(classes.class_allowed, values, np.inf).min(axis=1)
    out = np.full(arrays.n_jobs, np.inf)
    has = (classes.klass >= 0) & classes.on_time
    out[has] = values[classes.klass[has]]
    return out


def _grams(arrays: InstanceArrays, classes: JobClasses, state: _State, table: FloatArray) -> float:
    placed = np.flatnonzero(state.cluster >= 0)
    unit = table[classes.shape[placed], state.cluster[placed], state.start[placed]]
    return float(classes.weight[placed] @ unit)


def _all_on_time(arrays: InstanceArrays, state: _State) -> bool:
    """Whether ``state`` places every job, each on time."""
    return bool(
        np.all(state.cluster >= 0)
        and np.all(state.start + arrays.runtime_slots <= arrays.deadline_slot)
    )


def _less_margins(value_g: float, classes: JobClasses, full: FloatArray) -> float:
    """A certified bound from ``value_g``: less :data:`_BOUND_MARGIN` of it and the rounding
    of the prefix sums of the ``full`` grams, which is absolute (stress shape
    carbon_limits); at least 0."""
    return max(0.0, value_g - _BOUND_MARGIN * abs(value_g) - shape_costs_error_g(classes, full))


def _late_jobs(arrays: InstanceArrays, state: _State) -> IntArray:
    """The placed jobs that end past their deadline."""
    late = (state.cluster >= 0) & (state.start + arrays.runtime_slots > arrays.deadline_slot)
    return np.flatnonzero(late)


def _lateness_slots(arrays: InstanceArrays, state: _State) -> int:
    placed = state.cluster >= 0
    late = np.maximum(0, state.start + arrays.runtime_slots - arrays.deadline_slot)
    return int(late[placed].sum())


def _place_from_lp(
    arrays: InstanceArrays,
    classes: JobClasses,
    columns: ClassColumns,
    share: FloatArray,
    true: FloatArray,
    guide: FloatArray,
    first: IntArray | None = None,
) -> _State:
    """Round the class LP: each job, the largest first, takes the LP start of its class with
    the most weight left to place there and room; otherwise its cheapest on-time start with
    room; otherwise (late) its earliest start with room. Critical jobs go first, earliest."""
    n = arrays.n_jobs
    state = _State(
        free=arrays.free_units.copy(),
        cluster=np.full(n, -1, dtype=np.int64),
        start=np.full(n, -1, dtype=np.int64),
    )
    placer = _Placer(arrays, classes, state)
    _place_critical(placer, arrays, true)
    quota_all = share * classes.class_weight[columns.klass]
    # per class, the LP's starts (weight to place there, cluster, start): a basic solution
    # has few per class, so each is checked alone, not the window; kept as Python lists
    # (the rounding's hot loop)
    support = np.flatnonzero(quota_all > 1e-9)
    quota = quota_all[support].tolist()
    where_of = list(
        zip(columns.cluster[support].tolist(), columns.start_slot[support].tolist(), strict=True)
    )
    bounds = np.searchsorted(
        columns.klass[support], np.arange(classes.class_shape.shape[0] + 1)
    ).tolist()
    weight = classes.weight.tolist()
    klass = classes.klass.tolist()
    on_time = classes.on_time.tolist()
    rest = np.flatnonzero(~arrays.critical)
    size = classes.weight[rest] * arrays.runtime_slots[rest]
    deferred = []
    # one resource: the room tested and taken as Python floats (the same plan)
    room = _Room(placer.free0) if placer.single else None
    stale: set[int] = room.stale if room is not None else set()
    runtime, amount = placer.runtime, placer.amount

    def fits(j: int, m: int, s: int) -> bool:
        if room is not None:
            return room.fits(m, s, runtime[j], amount[j])
        return placer.fits_at(j, m, s)

    def place(j: int, m: int, s: int) -> None:
        if room is not None:
            room.take(m, s, runtime[j], amount[j])
            state.cluster[j], state.start[j] = m, s
        else:
            placer.place(j, (m, s))

    order = rest[np.argsort(-size, kind="stable")]
    if first is not None:  # these (non-critical) jobs before the others, in their order
        ahead = np.zeros(n, dtype=bool)
        ahead[first] = True
        order = np.concatenate([first[~arrays.critical[first]], order[~ahead[order]]])
    rows = room.rows if room is not None else None
    taken_job: list[int] = []
    taken_cluster: list[int] = []
    taken_start: list[int] = []
    for j in order.tolist():
        c = klass[j]
        if c < 0 or not on_time[j]:
            deferred.append(j)
            continue
        # the LP's starts by weight left to place (ties: column order), the first with room
        first_pick, end_pick = bounds[c], bounds[c + 1]
        if end_pick - first_pick == 1:  # most classes of a vertex: one start, no sort
            picks = [first_pick] if quota[first_pick] > 1e-9 else []
        else:
            picks = [p for p in range(first_pick, end_pick) if quota[p] > 1e-9]
            picks.sort(key=lambda p: -quota[p])
        placed = False
        for pick in picks:
            m, s = where_of[pick]
            if rows is not None:
                # _Room.fits and _Room.take inline (the same floats; the hot loop of
                # every rounding)
                r, need = runtime[j], amount[j]
                row = rows[m]
                if min(row[s : s + r]) + CAPACITY_TOLERANCE < need:
                    continue
                for k in range(s, s + r):
                    row[k] -= need
                stale.add(m)
                # the state's arrays once after the loop (a numpy write per job cost more)
                taken_job.append(j)
                taken_cluster.append(m)
                taken_start.append(s)
            elif fits(j, m, s):
                place(j, m, s)
            else:
                continue
            quota[pick] -= weight[j]
            placed = True
            break
        if placed:
            continue
        if room is not None:
            room.write_back()
        where = placer.cheapest(j, guide)
        if where is None:
            deferred.append(j)
        else:
            place(j, *where)
    if room is not None:
        room.write_back()
    state.cluster[taken_job] = taken_cluster
    state.start[taken_job] = taken_start
    for j in sorted(deferred, key=lambda i: (int(arrays.deadline_slot[i]), i)):
        where = placer.earliest(j, true)
        if where is not None:
            placer.place(j, where)
    return state


def _round_late_first(
    arrays: InstanceArrays,
    classes: JobClasses,
    true: FloatArray,
    state: _State,
    place: Callable[[IntArray], _State],
    rounds: int,
) -> tuple[_State, int]:
    """``state`` (a rounding of the LP by :func:`_place_from_lp`; ``place(first)``, that
    rounding made with the jobs ``first`` placed first) rounded again, while it leaves
    jobs late and at most ``rounds`` times, with every job
    late in an earlier rounding placed first, in the order they were first late (the
    squeaky wheel of Joslin and Clements 1999: a job the larger ones crowded out of its
    LP starts takes them before they do). Returns the rounding of least (lateness, grams)
    and how many roundings were made again."""
    best, best_key = state, (_lateness_slots(arrays, state), _grams(arrays, classes, state, true))
    trial = state
    ahead = np.zeros(0, dtype=np.int64)
    made = 0
    while made < rounds:
        late = _late_jobs(arrays, trial)
        if late.shape[0] == 0:
            break
        ahead = np.concatenate([ahead, late[~np.isin(late, ahead)]])
        trial = place(ahead)
        made += 1
        key = (_lateness_slots(arrays, trial), _grams(arrays, classes, trial, true))
        if key < best_key:
            best, best_key = trial, key
    return best, made


def _support_milp(
    arrays: InstanceArrays,
    classes: JobClasses,
    table: FloatArray,
    columns: ClassColumns,
    share: FloatArray,
    state: _State,
    *,
    max_nodes: int,
    cpu_limit_s: float,
    stats: dict[str, float] | None = None,
) -> _State | None:
    """The job-level MILP restricted to the class LP's support (every job may take any start
    its class has weight at in the LP) and the plan's own starts, the plan as incumbent:
    least ``table`` grams with every job on time (critical jobs stay where they are). The
    class LP's quotas mix jobs of different weights (trace-pai 1,000 seed 2: 358 of 1,000
    jobs find no room at their class's LP starts in the rounding); the restricted MILP packs
    whole jobs into them exactly (Danna, Rothberg and Le Pape 2005, restricting to the LP's
    support as RINS does). None unless HiGHS finds a plan with fewer grams that fits.
    HiGHS stops at ``max_nodes`` nodes or, a guard, ``cpu_limit_s`` CPU seconds of this
    thread (a generous wall guard against a hang beside it). ``stats`` gets the MILP's
    columns, its wall seconds and HiGHS's relative gap at the end (cjps-small 100 seeds 0-2:
    194-215 columns, proved optimal in 0.1-2.7 s; seed 0 once stopped after 20 nodes by the
    5 s guard when it counted wall seconds, beside another HiGHS run)."""
    problem = build_problem(arrays, on_time_only=True)
    starts = problem.starts
    job = starts.job
    n_m, n_h = arrays.free_units.shape[0], arrays.free_units.shape[2] + 1
    support = share > 1e-9
    key_lp = (columns.klass[support] * n_m + columns.cluster[support]) * n_h + columns.start_slot[
        support
    ]
    key = (classes.klass[job] * n_m + starts.cluster) * n_h + starts.start_slot
    current = (starts.cluster == state.cluster[job]) & (starts.start_slot == state.start[job])
    if int(current.sum()) != arrays.n_jobs:
        return None
    keep = np.flatnonzero(current | (np.isin(key, key_lp) & ~arrays.critical[job]))
    grams = table[classes.shape[job], starts.cluster, starts.start_slot] * classes.weight[job]
    program = on_time_program(problem, grams).restricted_to(keep)
    options = _cpu_limited(SolveOptions(integer=True, max_nodes=max_nodes), cpu_limit_s)
    solution = solve(program, options, start=current[keep].astype(np.float64))
    if stats is not None:
        stats["support_columns"] = float(keep.shape[0])
        stats["support_seconds"] = solution.seconds
        stats["support_gap"] = solution.gap
        # the CPU guard ends a solve with HiGHS's time-limit status (backends/highs.py)
        stats["support_guard_bound"] = float(solution.detail == "Time limit reached")
    if solution.status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        return None
    chosen = keep[solution.values > 0.5]
    if not np.array_equal(np.sort(job[chosen]), np.arange(arrays.n_jobs)):
        return None
    if not float(grams[chosen].sum()) < float(grams[current].sum()) * (1 - 1e-9):
        return None
    trial = _State(
        free=arrays.free_units.copy(),
        cluster=np.full(arrays.n_jobs, -1, dtype=np.int64),
        start=np.full(arrays.n_jobs, -1, dtype=np.int64),
    )
    placer = _Placer(arrays, classes, trial)
    for col in chosen.tolist():
        j, m, s = int(job[col]), int(starts.cluster[col]), int(starts.start_slot[col])
        if not placer.fits_at(j, m, s):
            return None  # over capacity by our tolerance: keep the plan
        placer.place(j, (m, s))
    return trial


def _ranks_in_class(priced: FloatArray, klass: IntArray, first: IntArray, count: int) -> IntArray:
    """Each column's rank by ``priced`` within its class (ties: the earlier column), for the
    ``count`` first of each class; ``count`` for the rest. ``klass`` ascending, ``first``
    each class's first column. Where every class has a column, ``count`` rounds of a
    segmented minimum (ten-zone 10,000: 2 ms against 15 ms for sorting 281k columns)."""
    n = priced.shape[0]
    rank = np.full(n, count, dtype=np.int64)
    if n == 0 or bool(np.any(np.diff(np.append(first, n)) == 0)) or count > 16:
        order = np.lexsort((priced, klass))
        ranked = np.empty(n, dtype=np.int64)
        ranked[order] = np.arange(n) - first[klass[order]]
        return np.minimum(ranked, count)
    left = priced.copy()
    taken = np.zeros(n, dtype=bool)
    for r in range(count):
        least = np.minimum.reduceat(left, first)
        hit = np.flatnonzero((left == least[klass]) & ~taken)
        lead = np.ones(hit.shape[0], dtype=bool)
        lead[1:] = klass[hit[1:]] != klass[hit[:-1]]
        pick = hit[lead]  # the first least column of each class not yet ranked
        rank[pick] = r
        taken[pick] = True
        left[pick] = np.inf
    return rank


def _core_columns(
    arrays: InstanceArrays,
    classes: JobClasses,
    columns: ClassColumns,
    guide: FloatArray,
    state: _State,
    per_class: int,
    *,
    fix_cheapest: bool = False,
) -> IntArray:
    """The core of the class LP (as in the core problems of large set covering, Balas and
    Carrera 1996): per class, its ``per_class`` columns of least ``guide`` cost (grams plus
    the Lagrangian prices of the cells a run occupies: at near-optimal prices the LP's
    support has reduced costs near 0), and the column of every on-time start of ``state``,
    so that the restricted LP is feasible when that plan puts every job on time.
    ``fix_cheapest``: a class whose jobs ``state`` puts all, on time, at its column of least
    ``guide`` cost keeps that column only (fixed there: the LP stays feasible with the
    plan, and HiGHS's presolve takes such classes out). Returns the indices kept,
    ascending."""
    priced = guide[classes.class_shape[columns.klass], columns.cluster, columns.start_slot]
    first = np.searchsorted(columns.klass, np.arange(classes.class_shape.shape[0]))
    rank = _ranks_in_class(priced, columns.klass, first, per_class)
    keep = rank < per_class
    on_time = (
        (state.cluster >= 0)
        & (state.start + arrays.runtime_slots <= arrays.deadline_slot)
        & (classes.klass >= 0)
        & classes.on_time
    )
    j = np.flatnonzero(on_time)
    at = column_index(classes, classes.klass[j], state.cluster[j], state.start[j])
    keep[at] = True
    if fix_cheapest:
        n_classes = first.shape[0]
        jobs = np.bincount(classes.klass[classes.klass >= 0], minlength=n_classes)
        cheapest = np.bincount(classes.klass[j[rank[at] == 0]], minlength=n_classes)
        keep &= (rank == 0) | (jobs != cheapest)[columns.klass]
    result: IntArray = np.flatnonzero(keep)
    return result


def _exact_plan(
    arrays: InstanceArrays,
    base: FloatArray,
    cpu_limit_s: float,
    *,
    on_time: bool,
    max_nodes: int | None = None,
    critical_at: _State | None = None,
    penalty: MovePenalty | None = None,
) -> _State | None:
    """Small instances, by the HiGHS MILP. ``on_time``: the least grams with every job on
    time (the LP of the bound with integral starts). Otherwise the MILP over every start,
    late ones too, with the lexicographic objective placed jobs, then total lateness (slots),
    then grams, as weights: grams scaled under 1, a slot of lateness costs 1, leaving a job
    out more than all lateness together. None when HiGHS finds no solution within
    ``max_nodes`` nodes and ``cpu_limit_s`` CPU seconds of this thread (or none exists).
    ``critical_at``: each critical job stays where that plan put it (its earliest start
    with room, issue 13), or out where it left it out; the other jobs are planned around.
    ``penalty``: each start off a job's incumbent costs its move penalty more (step 9)."""
    problem = build_problem(arrays, on_time_only=on_time)
    starts = problem.starts
    if len(starts) == 0:
        return None
    grams = _start_grams(arrays, base, starts.job, starts.cluster, starts.start_slot)
    if penalty is not None and penalty.active:
        grams = grams + penalty.of_starts(
            starts.job, starts.cluster, starts.start_slot, arrays.n_jobs
        )
    if on_time:
        program = on_time_program(problem, grams)
    else:
        scale = float(np.sum(np.maximum(grams, 0.0))) + 1.0
        late = np.maximum(
            0,
            starts.start_slot + arrays.runtime_slots[starts.job] - arrays.deadline_slot[starts.job],
        ).astype(float)
        reward = float(np.sum(arrays.horizon_slots + arrays.runtime_slots)) + 2.0
        program = linear_program(problem, grams / scale + late - reward, maximise=False)
    keep = np.arange(len(starts), dtype=np.int64)
    if critical_at is not None and np.any(arrays.critical):
        program, keep = _critical_kept(program, problem, critical_at)
    options = SolveOptions(integer=True, mip_gap=0.0, max_nodes=max_nodes)
    solution = solve(program, _cpu_limited(options, cpu_limit_s))
    if solution.status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        return None
    return _state_of(arrays, starts, keep[np.flatnonzero(solution.values[: len(keep)] > 0.5)])


def _state_of(arrays: InstanceArrays, starts: Starts, chosen: IntArray) -> _State:
    """The plan that starts each job at its column of ``starts`` in ``chosen`` (the others
    left out), its free units taken."""
    n = arrays.n_jobs
    state = _State(
        free=arrays.free_units.copy(),
        cluster=np.full(n, -1, dtype=np.int64),
        start=np.full(n, -1, dtype=np.int64),
    )
    for col in chosen:
        j, m, s = int(starts.job[col]), int(starts.cluster[col]), int(starts.start_slot[col])
        r = int(arrays.runtime_slots[j])
        state.free[m, :, s : s + r] -= arrays.demand_units[j][:, None]
        state.cluster[j], state.start[j] = m, s
    return state


#: Step 8b (:func:`_late_milp`): the reduced-cost margin added to every test, in the
#: objective's units (a slot of lateness is 1): HiGHS's reduced costs are exact to about
#: its dual feasibility tolerance (1e-7).
_LATE_RC_MARGIN = 1e-6
#: ... the second (proving) MILP runs while its columns are at most this many times the
#: first's (and at most :data:`_LATE_NEIGHBOURHOOD_COLUMNS`).
_LATE_PROOF_GROWTH = 8
#: ... and may spend this share of the CPU seconds left then (the rest is the grams')
_LATE_PROOF_SHARE = 0.5
#: ... the MILP over the LP's support and the plan's starts may spend this share of the CPU
#: seconds left then
_LATE_ROUNDING_SHARE = 0.3
#: ... and the columns of reduced cost 0 join it up to this many in all (on the late model
#: every on-time start costs 0: ten-zone 300 at 0.7 x its capacity has 84,436 of them, where
#: HiGHS's MILP found nothing in 10 s)
_LATE_NEIGHBOURHOOD_COLUMNS = 40_000
#: ... with this share of the CPU seconds left then (the rest for the proof and the grams)
_LATE_NEIGHBOURHOOD_SHARE = 0.5
#: ... and each of its MILPs stops after this many wall seconds per CPU second of its limit
#: (at least :data:`_LATE_WALL_MIN_S`): HiGHS calls no interrupt in some of a MILP's root
#: work (ten-zone 300 at 0.7 x its capacity, seed 2: a 15,657-column MILP ran 240 s past its
#: CPU limit under the policy's usual guard of ten times). Where this binds (a machine
#: loaded more than about twice over) the plan depends on the load.
_LATE_WALL_PER_CPU = 2.0
_LATE_WALL_MIN_S = 5.0
#: ... and each of its MILPs stops after this many branch-and-bound nodes (a limit that does
#: not depend on the machine; the CPU limit is the guard).
_LATE_NODES = 5_000


@dataclass(frozen=True, slots=True)
class LateMilp:
    """Step 8b's outcome: the plan (None when no MILP found one), whether its jobs left out
    and its lateness are proven the least over every plan with the critical jobs where they
    are, the columns of its MILPs and its CPU seconds."""

    state: _State | None
    proven: bool
    columns: int
    proof_columns: int
    cpu_seconds: float
    lower_slots: float | None = None
    """No plan placing as many jobs is less late than this (the late LP's optimum, slots,
    rounded up); None where that LP was not solved."""


@dataclass(frozen=True, slots=True)
class _Least:
    """One level of step 8b: a 0/1 plan over the model's columns, whether it is proven the
    least, the columns of its neighbourhood and of the proving MILP (0: none ran)."""

    values: FloatArray
    proven: bool
    columns: IntArray
    proof_columns: int
    lower: float
    """The LP optimum: no 0/1 point's objective is below it."""


def _least_integral(
    program: LinearProgram,
    incumbent: FloatArray,
    left: Callable[[], float],
    rounding: Callable[[FloatArray], FloatArray | None] | None = None,
) -> _Least | None:
    """The least of ``program`` (an objective whole at every 0/1 point) near its LP.

    The LP is solved whole (HiGHS's interior point with crossover, whose reduced costs are a
    vertex's: on the late model, where every on-time start costs 0, the dual simplex took
    9.9 s of CPU on ten-zone 300 at 0.7 x its capacity, the interior point 3.2 s);
    ``rounding`` turns its values into a 0/1 point (None: none), which replaces
    ``incumbent`` when its objective is less. Then MILPs, each from the best point so far
    (never worse): over the LP's support and the point's columns (:data:`_LATE_ROUNDING_SHARE`
    of the CPU left), then with the columns of reduced cost 0 too while they are at
    most :data:`_LATE_NEIGHBOURHOOD_COLUMNS` (:data:`_LATE_NEIGHBOURHOOD_SHARE` of the CPU
    left); it ends at ``U``. By LP duality a point of
    objective at most ``U - 1`` uses only columns of reduced cost at most ``U - 1 - L``
    (``L`` the LP optimum), so when those are all among the MILP's columns, or a last MILP
    over them (when not too many) ends with a dual bound above ``U - 1`` (with
    :data:`_LATE_PROOF_SHARE` of the CPU left), ``U`` is proven the least. ``left()``: the
    CPU seconds left to the step."""
    relaxed = solve(program, _cpu_limited(SolveOptions(method=LpMethod.IPM_VERTEX), left()))
    if relaxed.status is not SolveStatus.OPTIMAL or relaxed.reduced_costs.size == 0:
        return None
    lower = relaxed.objective
    reduced = relaxed.reduced_costs[: program.n_columns]
    support = relaxed.values[: program.n_columns] > 1e-9
    if rounding is not None:
        rounded_lp = rounding(relaxed.values[: program.n_columns])
        if rounded_lp is not None and float(program.objective @ rounded_lp) < float(
            program.objective @ incumbent
        ):
            incumbent = rounded_lp

    def milp(columns: IntArray, start: FloatArray, share: float) -> tuple[FloatArray, bool] | None:
        found = _late_sub_milp(program, columns, start, max(share * left(), 0.1))
        if found is None:
            return None
        values, bound = found
        objective = float(program.objective @ values)
        # the objective is whole: a dual bound above one less proves it the least
        return values, bool(np.isfinite(bound) and bound > objective - 1.0 + _LATE_RC_MARGIN)

    # first the LP's support and the incumbent alone (a small MILP: the LP's rounding), then
    # the columns of reduced cost 0 too, while they are not too many
    near = np.flatnonzero(support | (incumbent > 0.5))
    rounded = milp(near, incumbent, _LATE_ROUNDING_SHARE)
    values, least = rounded if rounded is not None else (incumbent, False)
    cols = np.flatnonzero(support | (values > 0.5) | (reduced <= _LATE_RC_MARGIN))
    if cols.shape[0] <= _LATE_NEIGHBOURHOOD_COLUMNS:
        first = milp(cols, values, _LATE_NEIGHBOURHOOD_SHARE)
        if first is None and rounded is None:
            return None
        values, least = first if first is not None else (values, False)
    else:
        if rounded is None:
            return None
        cols = near
    upper = float(program.objective @ values)
    proof = np.flatnonzero(
        support | (values > 0.5) | (reduced <= upper - 1.0 - lower + _LATE_RC_MARGIN)
    )
    if least and bool(np.all(np.isin(proof, cols))):
        return _Least(values, True, cols, 0, lower)
    if proof.shape[0] > min(_LATE_PROOF_GROWTH * cols.shape[0], _LATE_NEIGHBOURHOOD_COLUMNS):
        return _Least(values, False, cols, 0, lower)
    again = milp(proof, values, _LATE_PROOF_SHARE)
    if again is None:
        return _Least(values, False, cols, int(proof.shape[0]), lower)
    return _Least(again[0], again[1], proof, int(proof.shape[0]), lower)


def _late_sub_milp(
    program: LinearProgram, columns: IntArray, start: FloatArray, cpu_limit_s: float
) -> tuple[FloatArray, float] | None:
    """``program`` on ``columns`` as a MILP from ``start``: the 0/1 point over every
    column, and HiGHS's dual bound; None without a solution."""
    # no presolve: HiGHS 1.16's MILP presolve calls no interrupt (ten-zone 300 at 0.7 x its
    # capacity, seed 1: 225 s of CPU in this step with it, its limit 30 s)
    options = SolveOptions(
        integer=True,
        mip_gap=0.0,
        max_nodes=_LATE_NODES,
        presolve=False,
        cpu_limit_s=cpu_limit_s,
        time_limit_s=max(_LATE_WALL_PER_CPU * cpu_limit_s, _LATE_WALL_MIN_S),
    )
    answer = solve(program.restricted_to(columns), options, start=start[columns])
    if answer.status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        return None
    values = np.zeros(program.n_columns)
    values[columns[answer.values[: columns.shape[0]] > 0.5]] = 1.0
    bound = (
        float(program.objective @ values) if answer.status is SolveStatus.OPTIMAL else answer.bound
    )
    return values, bound


def _round_late(
    arrays: InstanceArrays,
    starts: Starts,
    keep: IntArray,
    share: FloatArray,
    late: FloatArray,
    critical_at: _State,
) -> _State:
    """Step 8b's rounding of the late LP (``share`` per column of the model, whose columns
    are ``starts`` at ``keep``; ``late`` their lateness, slots): the critical jobs where
    ``critical_at`` has them, then job by job, the job of the largest LP share first, at
    its fitting column of the largest share, else its fitting column of the least lateness
    (then the earliest); a job with no fitting column is left out."""
    n = arrays.n_jobs
    free = arrays.free_units.copy()
    state = _State(
        free=free, cluster=np.full(n, -1, dtype=np.int64), start=np.full(n, -1, dtype=np.int64)
    )
    runtime = arrays.runtime_slots

    def place(j: int, m: int, s: int) -> None:
        free[m, :, s : s + int(runtime[j])] -= arrays.demand_units[j][:, None]
        state.cluster[j], state.start[j] = m, s

    job, cluster, start = starts.job[keep], starts.cluster[keep], starts.start_slot[keep]
    held = arrays.critical & (critical_at.cluster >= 0)
    for kept in np.flatnonzero(held):
        place(int(kept), int(critical_at.cluster[kept]), int(critical_at.start[kept]))
    # the LP's mean start of each job (its alpha point: Hall, Schulz, Shmoys and Wein 1997)
    weight = np.bincount(job, weights=share, minlength=n)
    mean = np.bincount(job, weights=share * start, minlength=n) / np.maximum(weight, 1e-12)
    bounds = np.searchsorted(job, np.arange(n + 1))
    h = free.shape[2]
    for picked in np.lexsort((-arrays.demand_units.sum(axis=1), mean)):
        j = int(picked)
        lo, hi = int(bounds[j]), int(bounds[j + 1])
        if held[j] or lo == hi:
            continue
        r = int(runtime[j])
        room = _window_min(free, r, h - r + 1)  # (m, k, starts)
        c, s = cluster[lo:hi], start[lo:hi]
        fits = np.all(room[c, :, s] + CAPACITY_TOLERANCE >= arrays.demand_units[j][None, :], axis=1)
        if not np.any(fits):
            continue
        ok = np.flatnonzero(fits)
        best = ok[np.lexsort((s[ok], late[lo:hi][ok], -share[lo:hi][ok]))[0]]
        place(j, int(c[best]), int(s[best]))
    return state


def _late_milp(
    arrays: InstanceArrays,
    base: FloatArray,
    best: _State,
    *,
    max_columns: int,
    cpu_limit_s: float,
    penalty: MovePenalty | None = None,
    repair: Callable[[_State], None] | None = None,
) -> LateMilp:
    """Step 8b: a late plan (``best``) made least late by MILPs on the reduced-cost
    neighbourhoods of LP relaxations (:func:`_least_integral`; docs/design/0002).

    The model has every start within the horizon, late ones too (at most ``max_columns``),
    each job at most once, the critical jobs held where ``best`` has them, and a row that
    places at least as many jobs as ``best``. Three levels, lexicographic: where ``best``
    leaves jobs out, the most jobs placed; then the least total lateness (slots) with that
    many placed, from the late LP's rounding (:func:`_round_late`, then ``repair``: the
    policy's room-making for jobs left out and late) where that is less late; then, on the
    last level's columns, the lateness plus the grams scaled under one slot (so the least
    grams at that lateness). Each level starts from the one before, so the plan is never
    worse than ``best``. Each MILP stops at :data:`_LATE_NODES` nodes; together they have
    ``cpu_limit_s`` CPU seconds of this thread (HiGHS checks it between nodes, not inside a
    root LP: the step can run over it by a few seconds)."""
    began = time.thread_time()
    none = LateMilp(None, False, 0, 0, 0.0)
    problem = build_problem(arrays, on_time_only=False)
    starts = problem.starts
    if not 0 < len(starts) <= max_columns:
        return none

    def left() -> float:
        return max(cpu_limit_s - (time.thread_time() - began), 0.1)

    def spent() -> float:
        return time.thread_time() - began

    grams = _start_grams(arrays, base, starts.job, starts.cluster, starts.start_slot)
    if penalty is not None and penalty.active:
        grams = grams + penalty.of_starts(
            starts.job, starts.cluster, starts.start_slot, arrays.n_jobs
        )
    # grams under 1 in every plan: each job's dearest start, summed
    dearest = np.zeros(arrays.n_jobs)
    np.maximum.at(dearest, starts.job, np.maximum(grams, 0.0))
    scale = float(dearest.sum()) + 1.0
    late = np.maximum(
        0, starts.start_slot + arrays.runtime_slots[starts.job] - arrays.deadline_slot[starts.job]
    ).astype(float)
    out = best.cluster < 0
    placed_count = int(np.sum(~out))
    if np.any(out):
        # each job at most once (its row <= 1), and at least as many placed as best: one row
        program = linear_program(problem, late, maximise=False)
        program = replace(
            program,
            matrix=sp.csc_matrix(
                sp.vstack([program.matrix, sp.csc_matrix(np.ones((1, len(starts))))])
            ),
            row_upper=np.append(program.row_upper, float(arrays.n_jobs)),
            row_lower=np.append(np.full(program.row_upper.shape[0], -np.inf), placed_count),
        )
    else:
        # every job placed, exactly once (a row of every column would slow HiGHS's MILP:
        # trace-pwa 1,000 seed 0 found nothing in 14 s with it, 22 slots in 2 s without)
        program = every_job_once(problem, late)
    keep = np.arange(len(starts), dtype=np.int64)
    if np.any(arrays.critical):
        program, keep = _critical_kept(program, problem, best)
    # best's starts as columns of the program (starts are sorted by job, cluster, slot)
    n_clusters = arrays.allowed.shape[1]
    pair_job, pair_cluster = np.nonzero(arrays.allowed)
    lo = arrays.release_slot
    count = np.maximum(arrays.horizon_slots - arrays.runtime_slots - lo + 1, 0)
    per_pair = count[pair_job]
    first = np.full((arrays.n_jobs, n_clusters), -1, dtype=np.int64)
    first[pair_job, pair_cluster] = np.cumsum(per_pair) - per_pair

    def as_columns(plan: _State) -> FloatArray | None:
        """``plan`` as a 0/1 point of the model (None: a start outside it)."""
        placed = np.flatnonzero(plan.cluster >= 0)
        column = first[placed, plan.cluster[placed]] + plan.start[placed] - lo[placed]
        at = np.searchsorted(keep, column)
        if np.any(first[placed, plan.cluster[placed]] < 0) or np.any(
            (at >= keep.shape[0]) | (keep[np.minimum(at, keep.shape[0] - 1)] != column)
        ):
            return None
        point = np.zeros(program.n_columns)
        point[at] = 1.0
        return point

    def rounding(share: FloatArray) -> FloatArray | None:
        plan = _round_late(arrays, starts, keep, share, late[keep], best)
        if repair is not None:
            repair(plan)
        # as many jobs placed as the model asks for (every job, or the count row's)
        need = arrays.n_jobs
        if np.any(out) and program.row_lower is not None:
            need = round(program.row_lower[-1])
        if int(np.sum(plan.cluster >= 0)) < need:
            return None
        return as_columns(plan)

    start_point = as_columns(best)
    if start_point is None:
        return none  # a start outside the model: not a plan this step can start from
    values = start_point
    proven, columns, proof_columns = True, np.flatnonzero(values > 0.5), 0
    if np.any(out):
        # the most jobs placed (minimise minus their count)
        most = _least_integral(
            replace(program, objective=-np.ones(program.n_columns)), values, left
        )
        if most is None:
            return replace(none, cpu_seconds=spent())
        values, proven = most.values, most.proven
        proof_columns = most.proof_columns
        lower = program.row_lower
        assert lower is not None
        lower = lower.copy()
        lower[-1] = float(values.sum())
        program = replace(program, row_lower=lower)
    least = _least_integral(program, values, left, rounding)
    if least is None:
        return replace(none, cpu_seconds=spent())
    values, proven = least.values, proven and least.proven
    columns, proof_columns = least.columns, max(proof_columns, least.proof_columns)
    # then the least grams at that lateness: from this plan, any point better than it is no
    # later (the grams of a plan are under one slot)
    lighter = _late_sub_milp(
        replace(program, objective=program.objective + grams[keep] / scale),
        columns,
        values,
        left(),
    )
    if lighter is not None:
        values = lighter[0]
    return LateMilp(
        _state_of(arrays, starts, keep[np.flatnonzero(values > 0.5)]),
        proven,
        int(columns.shape[0]),
        proof_columns,
        spent(),
        float(math.ceil(least.lower - _LATE_RC_MARGIN)),
    )


#: The feasibility LP of a late plan's bound (:func:`_fitting_on_time_lp`) up to this many
#: columns (class, cluster, start); above it the bound of a late plan stays null.
_FEASIBILITY_MAX_COLUMNS = 500_000
#: ... and this many classes (each asks where its jobs fit alone, in a loop over classes:
#: ten-zone 10,000, 3,942 classes, 0.31 s of CPU up to the LP; 100,000, 8,317, 0.82 s)
_FEASIBILITY_MAX_CLASSES = 50_000
#: above this many columns the feasibility LP goes to HiGHS's interior point first, for at
#: most this many wall seconds (``lp_time_limit_s`` if smaller): at any size since
#: 2026-11-30 (the zero-cost LP is degenerate for the dual simplex: 200 jobs, three
#: resources, 3,738 columns, no answer in 60 s of CPU, where the interior point said
#: feasible in 0.15 s; bench/planner.md (ae))
_FEASIBILITY_IPM_COLUMNS = 0
_FEASIBILITY_IPM_WALL_S = 30.0


#: :func:`_overloaded` runs while classes x windows of slots is at most this (20 million:
#: about 0.3 s of CPU; ten-zone 10,000, 48 slots: 2,000 classes x 1,176 windows)
_OVERLOAD_MAX_CELLS = 20_000_000
#: windows per block of :func:`_overloaded` (a block's table is classes x this)
_OVERLOAD_BLOCK = 256


def _overloaded(arrays: InstanceArrays, classes: JobClasses) -> bool:
    """Whether some window of slots ``[a, b)`` must hold more work than the free units of
    every cluster there, for some resource: then the all-on-time LP is infeasible. A job of
    runtime ``r`` that starts on time in ``[lo, hi]`` runs at least ``min(overlap at lo,
    overlap at hi)`` slots inside the window (energetic reasoning: Erschler, Lopez and
    Thuriot 1991; Baptiste, Le Pape and Nuijten 2001, ch. 3). A necessary condition only (it
    ignores allowed clusters and which cluster a run is on), but it settles in a fraction of
    a second what HiGHS took 8 s to prove (ten-zone 10,000 at 0.7 x its capacity, 282k
    columns: 1.03 x the room of one window). False, proving nothing, past
    :data:`_OVERLOAD_MAX_CELLS`."""
    _, k, h = arrays.free_units.shape
    first, last = np.triu_indices(h + 1, 1)  # every window [a, b), a < b
    if classes.class_lo.shape[0] * first.shape[0] > _OVERLOAD_MAX_CELLS:
        return False
    room = np.zeros((h + 1, k))
    np.cumsum(arrays.free_units.sum(axis=0).T, axis=0, out=room[1:])
    tolerance = 1e-9 * np.maximum(1.0, np.abs(room[-1]))
    runtime = classes.shape_runtime[classes.class_shape]
    lo, hi = classes.class_lo, classes.class_hi
    for at in range(0, first.shape[0], _OVERLOAD_BLOCK):
        a = first[at : at + _OVERLOAD_BLOCK, None]
        b = last[at : at + _OVERLOAD_BLOCK, None]
        early = np.minimum(lo + runtime, b) - np.maximum(lo, a)
        late = np.minimum(hi + runtime, b) - np.maximum(hi, a)
        inside = np.maximum(np.minimum(early, late), 0).astype(float)  # (windows, classes)
        need = inside @ classes.class_demand  # (windows, k) unit-slots
        if np.any(need > room[b[:, 0]] - room[a[:, 0]] + tolerance):
            return True
    return False


def _fitting_on_time_lp(
    arrays: InstanceArrays, cpu_limit_s: float, classes: JobClasses | None = None
) -> bool | None:
    """Whether the all-on-time time-indexed LP over the starts that fit alone (on the free
    capacity) is feasible: the relaxation whose infeasibility says that no all-on-time plan
    may exist (CONTRACTS.md section 2, ``lower_bound_g`` null). A start that does not fit
    alone is left out: the LP would otherwise run such a job fractionally (a 3-unit job on
    clusters of 1, 2 and 1 units). None when it is too large or not solved in time.

    It is solved over job classes, not jobs (the same LP: a class's shares split evenly
    over its jobs give each job's, and a plan's job shares summed give the class's). The
    starts that fit alone follow a job's size, which may differ within a class (jobs of one
    demand mix): where the class's smallest and largest jobs fit at other starts, the class
    is split by size (jobs of one size fit at the same starts). ``classes``: the plan's
    (:func:`~carbonshift.planning.lagrangian.classes_of` of ``arrays``, maybe finer, as a
    move penalty splits them: the same LP), else grouped here."""
    if arrays.n_jobs == 0:
        return True
    if classes is None:
        classes = classes_of(arrays)
    if not classes.every_job_can_be_on_time:
        return False  # a job with no on-time start at all
    if _overloaded(arrays, classes):
        return False
    n_classes = classes.class_shape.shape[0]
    width = classes.class_hi - classes.class_lo + 1
    n_columns = int((classes.class_allowed.sum(axis=1) * width).sum())
    if n_columns > _FEASIBILITY_MAX_COLUMNS or n_classes > _FEASIBILITY_MAX_CLASSES:
        return None
    ledger = CapacityLedger(arrays)
    klass, weight = classes.klass, classes.weight
    order = np.lexsort((np.arange(arrays.n_jobs), weight, klass))
    edges = np.searchsorted(klass[order], np.arange(n_classes + 1))

    def fits(job: int, c: int) -> BoolArray:
        """Where ``job`` fits alone among class ``c``'s starts: ``(clusters, window)``."""
        lo, hi = int(classes.class_lo[c]), int(classes.class_hi[c])
        alone: BoolArray = ledger.fitting_starts_everywhere(job)[:, lo : hi + 1]
        alone &= classes.class_allowed[c][:, None]
        return alone

    group_class: list[int] = []
    group_weight: list[float] = []
    group_demand: list[FloatArray] = []
    parts: list[tuple[IntArray, IntArray, IntArray]] = []
    for c in range(n_classes):
        members = order[edges[c] : edges[c + 1]]
        smallest, largest = int(members[0]), int(members[-1])
        mask = fits(smallest, c)
        if weight[largest] == weight[smallest] or np.array_equal(mask, fits(largest, c)):
            sizes = [(members, mask)]
        else:  # by size: ascending weights, one mask per distinct weight
            cut = np.flatnonzero(np.diff(weight[members]) != 0) + 1
            sizes = [(run, fits(int(run[0]), c)) for run in np.split(members, cut)]
        for run, alone in sizes:
            if not alone.any():
                return False  # these jobs fit alone at no on-time start
            cluster, offset = np.nonzero(alone)
            g = len(group_class)
            parts.append(
                (
                    np.full(cluster.shape[0], g, dtype=np.int64),
                    cluster.astype(np.int64),
                    (offset + classes.class_lo[c]).astype(np.int64),
                )
            )
            group_class.append(c)
            group_weight.append(float(weight[run].sum()))
            group_demand.append(arrays.demand_units[run].sum(axis=0))
    of = np.asarray(group_class, dtype=np.int64)
    groups = replace(
        classes,
        class_shape=classes.class_shape[of],
        class_lo=classes.class_lo[of],
        class_hi=classes.class_hi[of],
        class_allowed=classes.class_allowed[of],
        class_weight=np.asarray(group_weight),
        class_demand=np.asarray(group_demand),
    )
    columns = ClassColumns(*(np.concatenate(axis) for axis in zip(*parts, strict=True)))
    m, _, h = arrays.free_units.shape
    no_cost = np.zeros((classes.shape_runtime.shape[0], m, h))
    program = class_program(arrays, groups, no_cost, columns).program
    status: SolveStatus | None = None
    if len(columns) > _FEASIBILITY_IPM_COLUMNS:
        # the interior point (HiGHS's dual simplex gave no answer in 60 s of CPU on ten-zone
        # 10,000 at 0.7 x its capacity, 282k columns; IPX said feasible in 8.4 s), limited in
        # wall seconds as the core's is (_solve_class_lp)
        wall_s = min(cpu_limit_s, _FEASIBILITY_IPM_WALL_S)
        try:
            status = solve(program, class_lp_options(wall_s, method=LpMethod.IPM)).status
        except SolverError:
            status = None  # an IPX "solve error": the dual simplex instead
    if status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE, SolveStatus.INFEASIBLE):
        limited = _cpu_limited(class_lp_options(cpu_limit_s), cpu_limit_s)
        status = solve(program, limited).status
    if status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        return True
    if status is SolveStatus.INFEASIBLE:
        return False
    return None


def _critical_kept(
    program: LinearProgram, problem: StartProblem, critical_at: _State
) -> tuple[LinearProgram, IntArray]:
    """``program`` with each critical job held where ``critical_at`` has it: its one column
    there, its job row ``= 1`` (or no column where it is left out), and the columns kept."""
    arrays, starts = problem.arrays, problem.starts
    critical = arrays.critical[starts.job]
    there = (starts.cluster == critical_at.cluster[starts.job]) & (
        starts.start_slot == critical_at.start[starts.job]
    )
    keep = np.flatnonzero(~critical | there).astype(np.int64)
    kept = program.restricted_to(keep)
    lower = (
        np.full(kept.row_upper.shape[0], -np.inf)
        if kept.row_lower is None
        else kept.row_lower.copy()
    )
    n_cap = problem.capacity_key.shape[0]
    placed = np.flatnonzero(arrays.critical & (critical_at.cluster >= 0))
    lower[n_cap + placed] = 1.0
    return replace(kept, row_lower=lower), keep


def _start_grams(
    arrays: InstanceArrays, base: FloatArray, job: IntArray, cluster: IntArray, start: IntArray
) -> FloatArray:
    """Grams of each (job, cluster, start) under ``base`` (``(k, m, h)`` per unit-slot)."""
    _, _, h = base.shape
    prefix = np.zeros((base.shape[0], base.shape[1], h + 1))
    np.cumsum(base, axis=2, out=prefix[:, :, 1:])
    end = start + arrays.runtime_slots[job]
    per_unit = prefix[:, cluster, end] - prefix[:, cluster, start]  # (k, starts)
    result: FloatArray = np.einsum("sk,ks->s", arrays.demand_units[job], per_unit)
    return result


@dataclass(frozen=True, slots=True, eq=False)
class _ClassLp:
    """The class LP's outcome: its optimum (None unless solved; with ``ipm_tolerance`` the
    objective of a basic feasible solution within the crossover's tolerances of it, which
    bounds nothing), the certified bound
    ``bound_g`` (the Lagrangian dual at its capacity prices ``prices``, ``(m, k, h)``) and
    the start shares."""

    optimum_g: float | None
    bound_g: float | None
    prices: FloatArray | None
    infeasible: bool
    columns: ClassColumns
    share: FloatArray
    seconds: float
    retried: bool = False


def _near_vertex(solution: Solution, ipm_tolerance: float | None) -> bool:
    """Whether an interior point's answer, crossover apart, is a basic feasible solution
    that will do though HiGHS does not call it optimal."""
    return (
        ipm_tolerance is not None
        and solution.status is SolveStatus.FEASIBLE
        and solution.vertex
        and solution.reduced_costs.size > 0
    )


def _solve_class_lp(
    arrays: InstanceArrays,
    classes: JobClasses,
    base: FloatArray,
    table: FloatArray,
    columns: ClassColumns,
    cpu_limit_s: float,
    *,
    flow: bool = True,
    method: str = "simplex",
    presolve: bool = False,
    ipm_tolerance: float | None = None,
) -> _ClassLp:
    """HiGHS dual simplex on the class LP: in flow form (planning/aggregate.py) without
    presolve and scaling (trace 10,000 jobs: 0.4 s against 1.3 s with them), or in row form
    with HiGHS's defaults. The bound is not the simplex's objective but ``L``
    (planning/lagrangian.py) at the capacity prices of its dual solution: a lower bound for
    any prices >= 0 (weak duality), so it stays valid whatever the solver's tolerances, and
    equals the LP optimum at exact duals.

    ``method = ipm-vertex``: HiGHS's interior point with crossover (the core LP of
    ten-zone 10,000: 0.5 s against 0.9 s of dual simplex), and dual simplex again when it
    does not end at an optimal vertex (the rounding wants a basic solution's few starts per
    class); ``retried`` says so. ``presolve``: HiGHS's presolve before the interior point
    (in flow form it is off otherwise; it takes out the classes of one column).
    ``ipm_tolerance``: the interior point's, then crossover apart
    (``SolveOptions.ipm_tolerance``).
    ``cpu_limit_s``: each solve's limit, in CPU seconds of this thread for the dual simplex
    (a wall guard against a hang beside it), in wall seconds for the interior point (see
    below); where it binds there is no LP."""
    lp = class_program(arrays, classes, table, columns, flow=flow)
    seconds = 0.0
    retried = False
    near = False  # a basic feasible solution, not called optimal, kept (ipm_tolerance)
    if method == "ipm-vertex":
        # the interior point is limited in wall seconds, as before: HiGHS calls the interrupt
        # callback at each of IPX's inner steps (23,733 calls in a ten-zone 10,000 plan,
        # 4-5 % of its CPU, bench/planner.md (k)), and its 60 s default is a guard that binds
        # only on instances far above 100,000 jobs (about 3 s of CPU there) or under a load
        # that stretches wall time 20-fold
        options = class_lp_options(cpu_limit_s, flow=flow, method=LpMethod.IPM_VERTEX)
        if presolve:
            options = replace(options, presolve=True)
        if ipm_tolerance is not None:
            options = replace(options, ipm_tolerance=ipm_tolerance)
        try:
            solution = solve(lp.program, options)
            seconds = solution.seconds
            # with ipm_tolerance a basic feasible solution that HiGHS's crossover does not
            # call optimal will do (no bound is taken from it: L at its prices is valid)
            near = _near_vertex(solution, ipm_tolerance)
            retried = not (near or (solution.status is SolveStatus.OPTIMAL and solution.vertex))
            if retried and ipm_tolerance is not None:
                # the crossover apart found no vertex (two resources, ten-zone-mr 10,000
                # seed 0 with 6 core columns: "no solution" after 3.3 s): the interior point
                # with HiGHS's own crossover (3.4 s to the optimal vertex) before the dual
                # simplex (9.7 s)
                solution = solve(lp.program, replace(options, ipm_tolerance=None))
                seconds += solution.seconds
                retried = not (solution.status is SolveStatus.OPTIMAL and solution.vertex)
        except SolverError:
            # HiGHS 1.16's interior point ended in "Solve error" on a 13-column core LP
            # (tests/planning/test_core_lp.py, a property test): dual simplex instead
            retried = True
    if method != "ipm-vertex" or retried:
        options = _cpu_limited(class_lp_options(cpu_limit_s, flow=flow), cpu_limit_s)
        solution = solve(lp.program, options)
        seconds += solution.seconds
        near = False
    if solution.status is not SolveStatus.OPTIMAL and not near:
        infeasible = solution.status is SolveStatus.INFEASIBLE
        return _ClassLp(None, None, None, infeasible, columns, np.zeros(0), seconds, retried)
    prices = None
    bound_g = None
    if solution.reduced_costs.size and solution.row_duals.size:
        prices = lp.prices(solution.reduced_costs, solution.row_duals)
        bound_g = evaluate(classes, base, prices, arrays.free_units).value_g
    return _ClassLp(
        optimum_g=solution.objective,
        bound_g=bound_g,
        prices=prices,
        infeasible=False,
        columns=columns,
        share=lp.share(solution.values),
        seconds=seconds,
        retried=retried,
    )


def carbonshift(
    instance: Instance,
    context: PlanContext | None = None,
    *,
    objective: str = "carbon",
    bound: str = "auto",
    dual_iterations: int = 300,
    improve_passes: int = 3,
    lp_max_columns: int = 60_000,
    lp_columns_per_job: float = 1.0,
    lp_time_limit_s: float = 60.0,
    exact_max_starts: int = 400,
    exact_time_limit_s: float = 2.0,
    exact_nodes: int = _EXACT_NODES,
    search_factor: float = 30.0,
    search_seed: int = 0,
    polish_steps: int = 200,
    polish_jobs: int = 40,
    polish_columns: int = 1600,
    polish_nodes: int = 20,
    polish_lp_iterations: int = 15_000,
    polish_cpu_s: float = _POLISH_CPU_GUARD_S,
    late_repair_jobs: int = 30,
    late_repair_columns: int = 1600,
    late_repair_nodes: int = 20,
    late_repair_cpu_s: float = 30.0,
    core_columns: int = 3,
    core_max_jobs: int = 100_000,
    core_small_jobs: int = 400,
    core_lp_method: str = "ipm-vertex",
    core_fallback_last: bool = True,
    core_repair_columns: int = 800,
    core_bound_gap: float = 0.005,
    core_fix_cheapest: bool = True,
    support_nodes: int = 100,
    support_time_limit_s: float = _SUPPORT_CPU_GUARD_S,
    band_columns: int = 300,
    band_lp_iterations: int = 30_000,
    cluster_band_columns: int = 400,
    cluster_band_lp_iterations: int = 30_000,
    lp_bands: bool = True,
    late_bound: bool = True,
    late_milp_columns: int = 300_000,
    late_milp_cpu_s: float = 30.0,
    polish_chain_jobs: int = 12,
    polish_chain_lp_iterations: int = 15_000,
    pair_columns: int = 800,
    pair_lp_iterations: int = 200_000,
    pair_cpu_s: float = _POLISH_CPU_GUARD_S,
    move_penalty_g: float = 0.0,
    move_penalty_pct: float = 0.0,
) -> PolicyResult:
    """The least operational + embodied grams (docs/formats.md scores; ``objective =
    operational``: operational grams only) with every deadline kept as a hard constraint,
    and a certified lower bound on the grams of any feasible all-on-time plan.

    Method (docs/design/0002-carbonshift-planner.md): with two or more resources each is
    first counted in a unit of its own, a power of two times the instance's
    (:func:`~carbonshift.planning.problem.balanced_units`: the same grams and fits, the
    steps below no longer depend on the instance's units); the time-indexed LP relaxation,
    aggregated over classes of interchangeable jobs and solved by HiGHS (dual simplex) when
    it has at most ``lp_max_columns`` columns or ``lp_columns_per_job`` per job, rounded
    class by class; and the Lagrangian relaxation of its capacity rows (Fisher 1981) by
    subgradient ascent with Polyak steps (Held, Wolfe and Crowder 1974; above 3,000 jobs
    the solved LP's own prices instead), whose prices guide a greedy placement (largest jobs
    first, least priced grams among on-time starts with room). Either is followed by
    re-insertion moves at least true grams; the best plan (least lateness, then grams) wins.
    Up to 3,000 jobs a bounded ruin and recreate (Schrimpf et al. 2000) follows, with
    ``search_factor`` placements tried per job and the seed ``search_seed``, then a MIP
    neighbourhood search (:mod:`._polish`): up to ``polish_steps`` sub-MILPs, each freeing
    at most ``polish_jobs`` jobs and ``polish_columns`` starts (HiGHS, ``polish_nodes``
    nodes), until they have spent ``polish_lp_iterations`` simplex iterations, within
    ``polish_cpu_s`` seconds of CPU (a guard: the plan depends on the machine only where it
    binds). Last, up to 3,000 jobs where the whole class LP was solved, the job-level MILP
    restricted to the LP's support and the plan's starts (:func:`_support_milp`, HiGHS,
    ``support_nodes`` nodes, ``support_time_limit_s`` CPU seconds at most; 0 nodes: off), the
    plan as its incumbent; then (where the cores below stand in for that LP, or with
    ``lp_bands`` where it was solved whole) time bands (:func:`._polish.polish_bands`:
    every movable job running in a band of slots freed at once with its own start, the
    LP's or the cores' support and its least priced starts, sub-MILPs of at most
    ``band_columns`` columns, ``polish_nodes`` nodes, ``band_lp_iterations`` simplex
    iterations in all; 0 columns: off), then cluster bands (one cluster's slots at
    a time, the jobs running there and those whose least priced start lies there freed,
    at most ``cluster_band_columns`` columns, ``cluster_band_lp_iterations`` simplex
    iterations; 0 columns: off); below 1,000 jobs both bands' budgets grow as 1,000 /
    jobs, at most threefold (:func:`_band_budget`). Last of the searches, the polish
    again with every window an ejection chain (:func:`._polish._chain_window`: a job and
    the jobs that hold the room it would rather have, and so on; at most
    ``polish_chain_jobs`` jobs, ``polish_chain_lp_iterations`` simplex iterations; 0:
    off). Then, up to 1,000 jobs, cluster pairs (:func:`._polish.polish_pairs`: every
    movable job on two clusters freed with its starts on both, windows along the horizon
    of at most a quarter of ``pair_columns`` starts, growing to twice ``pair_columns`` when
    a sweep keeps nothing, ``pair_lp_iterations`` simplex iterations in
    all, ``pair_cpu_s`` CPU seconds at most, a guard; 0: off). Up to 3,000 jobs the class LP
    is solved whatever its size (in flow form where it has more columns than the limits
    above), and when its first rounding leaves jobs late with grams within 5 % of the LP
    optimum, those jobs are re-planned with their neighbours by sub-MILPs
    (:func:`._polish.repair_late`: windows of at most ``late_repair_jobs`` jobs and
    ``late_repair_columns`` starts, ``late_repair_nodes`` nodes, least lateness then grams,
    within ``late_repair_cpu_s`` seconds of CPU, a guard;
    ``late_repair_jobs = 0``: off, and the LP only within the limits). Above
    ``core_small_jobs`` (at most 3,000) and up to ``core_max_jobs`` jobs, where the class
    LP is beyond the limits, its core instead (per class ``core_columns`` columns of least
    priced grams per resource the jobs ask for, and the best plan's on-time starts; Balas
    and Carrera 1996) is
    solved (up to 3,000 jobs twice, with at least 20 and at least 15 columns per class, the
    better rounding kept, and with ``core_columns`` when neither is on time;
    ``core_lp_method``: HiGHS interior point with crossover, dual simplex again when that
    gives no optimal vertex; or dual simplex), rounded and repaired the same way (in
    windows of at most ``core_repair_columns`` starts), kept when it beats the best plan,
    and a second dual ascent starts from its prices (above 3,000 jobs only while the plan
    is more than ``core_bound_gap``, relative, above the bound, and until it is within it;
    ``core_columns = 0``: off). Above 3,000 jobs with
    ``core_fallback_last`` the core takes its starts from one price-guided placement, and
    the improved price-guided placements run after it only when its plan is late, no
    better, or more than 1 % above the bound. Above 3,000 jobs with ``core_fix_cheapest`` a
    class that plan puts wholly at its column of least priced grams is fixed there in the
    core (its other columns dropped, HiGHS's presolve on).
    The bound is the larger of the LP's (the dual value at its prices: the LP optimum up
    to the solver's tolerances) and the best dual value (``bound``: ``auto``
    both, ``lagrangian`` the dual only, ``lp`` the LP whatever its size, ``none``). When no
    on-time start has room a job takes its earliest start with room (least lateness, then
    fewer grams); critical jobs take their earliest start with room over all allowed
    clusters (ties: fewer grams). A job is left out only when no start of it fits.

    Up to ``exact_max_starts`` starts the whole MILP is also solved (HiGHS,
    ``exact_nodes`` nodes), with the critical jobs held at their starts. A late plan
    carries a bound when the all-on-time LP over the starts that fit alone is feasible
    (up to 3,000 jobs). No wall clock decides the plan: ``lp_time_limit_s``
    (each class or core LP by dual simplex; the interior point's, from 2,000 jobs up, in
    wall seconds: see :func:`_solve_class_lp`), ``exact_time_limit_s`` (that MILP),
    ``support_time_limit_s``, ``polish_cpu_s`` and ``late_repair_cpu_s`` count CPU seconds
    of the planning thread,
    guards beside the node and iteration counts; HiGHS's wall limit is a guard against a
    hang only (:data:`_WALL_GUARD_MIN_S`). Where a CPU guard binds the plan depends on the
    machine's speed, never on its load.

    Online (step 9, :mod:`carbonshift.planning.incumbent`): with ``move_penalty_g`` or
    ``move_penalty_pct`` and ``context.incumbent`` (the round before's plan), every start of
    a job other than its incumbent costs ``move_penalty_g`` grams plus ``move_penalty_pct``
    % of its grams there more in every table above, so a job is moved off its last plan
    only when the plan gains more; the bound and the plan's grams are the unpenalised ones.
    """
    # first, while locals() holds the parameters alone: every keyword, for the plan of the
    # jobs that are not critical (step 0b)
    params = {name: value for name, value in locals().items() if name not in _NOT_PARAMS}
    critical = [job.critical for job in instance.jobs]
    if any(critical) and not all(critical):
        return _critical_held(instance, context, params)
    began = time.perf_counter()
    # every resource on one scale (a planner on raw units depends on them: ten-zone-mr's
    # first builder, 10,000 jobs, memory in GiB against 16 GiB, 4.75 % against 1.91 % above
    # the bound; bench/planner.md (aa))
    arrays = balanced_units(arrays_of(instance, context))
    free = arrays.free_units
    full = unit_grams(arrays, embodied=True)
    base = full if objective == "carbon" else unit_grams(arrays, embodied=False)
    # the incumbent (step 9): a start off the round before's plan costs its penalty in
    # every table the steps below compare; the bound and the grams reported never see it
    penalty = move_penalty(
        instance,
        arrays,
        {} if context is None else context.incumbent,
        base,
        move_penalty_g=move_penalty_g,
        move_penalty_pct=move_penalty_pct,
    )
    classes = classes_of(arrays, penalty.own_shape(arrays.n_jobs) if penalty.active else None)
    true_table = shape_costs(classes, base)

    def priced(costs: FloatArray) -> FloatArray:
        return penalty.table(costs, classes.shape, classes.weight)

    table = priced(true_table)
    own = _own_best_fast(arrays, classes, table)
    all_on_time_possible = classes.every_job_can_be_on_time
    stats: dict[str, float] = {}

    def score(state: _State) -> tuple[int, int, float]:
        # jobs left out, then total lateness (slots), then grams: a plan that leaves out a
        # job is never better, however late the other plan is
        return (
            int(np.sum(state.cluster < 0)),
            _lateness_slots(arrays, state),
            _grams(arrays, classes, state, table),
        )

    def place_left_out(trial: _State) -> None:
        """No job left out that fits: a plan that leaves room for one (a MILP stopped by its
        limits) gets it, at its cleanest on-time start with room, else its earliest (never
        leave out a job that fits somewhere in the horizon); then room is made for the rest
        (up to 3,000 jobs)."""
        if np.any(trial.cluster < 0):
            filled = _fill_left_out(arrays, classes, trial, table)
            stats["filled_jobs"] = stats.get("filled_jobs", 0.0) + filled
            repair(trial, table)

    def repair(trial: _State, guide: FloatArray) -> None:
        """Up to 3,000 jobs: make room for jobs left out, then for late jobs."""
        if small and np.any(trial.cluster < 0):
            _repair_unplaced(arrays, classes, trial, table, guide)
        if small and _lateness_slots(arrays, trial):
            _repair_lateness(arrays, classes, trial, guide)

    small = arrays.n_jobs <= _SMALL_JOBS
    passes = improve_passes
    lower: float | None = None  # a bound on the planning objective's grams
    lp: _ClassLp | None = None
    columns = class_columns(classes) if all_on_time_possible else None
    within = columns is not None and len(columns) <= max(
        lp_max_columns, lp_columns_per_job * arrays.n_jobs
    )
    # the core of the class LP (step 2b) where the whole LP is beyond the limits, from
    # above core_small_jobs up to core_max_jobs jobs
    core_on = core_columns > 0 and core_small_jobs < arrays.n_jobs <= core_max_jobs
    # up to 3,000 jobs also where the LP is within the limits but its classes gather few
    # jobs (many columns per job)
    whole = within and not (
        core_on
        and small
        and columns is not None
        and len(columns) > _SMALL_CORE_COLUMNS_PER_JOB * arrays.n_jobs
    )
    # up to 3,000 jobs (core_small_jobs where the core is on) the LP is also solved beyond
    # the limits when its rounding's lateness is to be repaired (ten-zone 1,000: 69k
    # columns, about 3 s of CPU in flow form)
    # (where the whole LP is solved within the limits, core on or not, its rounding is
    # repaired alike)
    late_repair = small and late_repair_jobs > 0 and (whole or not core_on)
    use_lp = (
        columns is not None
        and bound in ("auto", "lp")
        and (bound == "lp" or whole or late_repair)
        and bool(np.any(base > 0))
    )
    if use_lp and columns is not None:
        # the same LP in two forms: the flow form is the faster above 3,000 jobs and on the
        # LPs beyond the limits; within them up to 3,000 jobs the row form is fast enough and
        # keeps its plans (another optimal vertex rounds differently: caspian and cjps-small
        # moved by -0.6 to +1.4 points of gap)
        lp = _solve_class_lp(
            arrays, classes, base, table, columns, lp_time_limit_s, flow=not (small and within)
        )
        stats["lp_seconds"] = lp.seconds
        if lp.optimum_g is not None:
            stats["lp_optimum_g"] = lp.optimum_g
        if lp.bound_g is not None:
            lower = lp.bound_g
            stats["lp_bound_g"] = lp.bound_g

    def repair_rounding(trial: _State, lp_g: float, max_columns: int = late_repair_columns) -> None:
        """When an LP's rounding is near the LP (``lp_g`` grams) but late: re-plan the
        late jobs with their neighbours exactly, in windows of at most ``max_columns``
        starts."""
        near = _grams(arrays, classes, trial, table) <= (1 + _LATE_REPAIR_NEAR) * lp_g
        if late_repair_jobs > 0 and near and _lateness_slots(arrays, trial):
            fixed = repair_late(
                arrays,
                classes,
                table,
                trial.free,
                trial.cluster,
                trial.start,
                max_jobs=max(2, late_repair_jobs),
                max_columns=max_columns,
                max_nodes=late_repair_nodes,
                rounds=_LATE_REPAIR_ROUNDS,
                cpu_limit_s=late_repair_cpu_s,
                seed=search_seed,
            )
            stats["late_repair_steps"] = float(fixed.steps)
            stats["late_repair_slots"] = float(fixed.slots_removed)
            stats["late_repair_cpu_seconds"] = fixed.cpu_seconds

    if lp is not None and lp.optimum_g is not None:
        best = _place_from_lp(arrays, classes, lp.columns, lp.share, table, table)
        if late_repair:
            repair_rounding(best, lp.optimum_g)
        repair(best, table)
        _improve(arrays, classes, best, table, own, passes)
    else:
        best = _place_all(arrays, classes, table, table)
        if small:
            repair(best, table)
            _improve(arrays, classes, best, table, own, passes)
    best_key = score(best)

    def complete_on_time() -> bool:
        return best_key[0] == 0 and best_key[1] == 0

    def consider(trial: _State) -> None:
        nonlocal best, best_key
        _improve(arrays, classes, trial, table, own, passes)
        key = score(trial)
        if key < best_key:
            best, best_key = trial, key

    def place_guided(
        guide: FloatArray, first: _State | None = None, *, fallback: bool = False
    ) -> None:
        # first: the placement by guide, when made already; fallback: the placements the
        # core stood in for, so the second one runs when the first is late or leaves a job
        # out, even where the best plan (the core's) is on time (a 5-job instance, core
        # forced: the core's plan on time at 4 g, the second placement's at 3 g)
        trial = _place_all(arrays, classes, guide, table) if first is None else first
        repair(trial, guide)
        consider(trial)
        incomplete = score(trial)[:2] != (0, 0) if fallback else not complete_on_time()
        if incomplete:  # still late or left out: fewest options first
            trial = _place_all(arrays, classes, guide, table, tight_first=True)
            repair(trial, guide)
            consider(trial)

    if small and lp is not None and lp.optimum_g is not None:
        consider(_place_all(arrays, classes, table, table))

    def close_enough() -> bool:
        return (
            complete_on_time()
            and lower is not None
            and best_key[2] - lower <= 1e-3 * abs(best_key[2])
        )

    # above 3,000 jobs with core_fallback_last: the price-guided placements wait for the
    # core, and run only when its plan is not good enough (at 100,000 jobs they cost more
    # than the core itself)
    wait_for_core = (
        core_fallback_last and core_on and not small and lp is None and columns is not None
    )
    deferred_guide: FloatArray | None = None
    # up to 3,000 jobs on the core path: the cores' starts (class, cluster, start keys) for
    # the time bands of step 7c
    band_support: IntArray | None = None
    guided_plan: _State | None = None
    dual_done = 0
    lp_rounded = False
    ascent_guide: FloatArray | None = None  # the last ascent's priced grams
    # above 3,000 jobs, once the LP is solved its capacity prices are optimal Lagrangian
    # prices: no ascent, neither for the bound nor for a guide (a second rounding guided by
    # them gained 3 g of 122,739 on trace 10,000 for a quarter of the time)
    lp_prices = lp.prices if not small and lp is not None else None
    infeasible = lp is not None and lp.infeasible
    if (
        all_on_time_possible
        and not infeasible
        and bound != "none"
        and dual_iterations > 0
        and lp_prices is None
    ):
        prices = None
        resume = None
        rounds = 3 if small else 1
        per_round = max(1, dual_iterations // rounds)
        # small: three short ascents, each from the last one's prices with a fresh step
        # (their plans differ: more candidates), then the last one goes on for the bound
        legs = [(per_round, False)] * rounds + ([(dual_iterations, True)] if small else [])
        for iterations, going_on in legs:
            if close_enough():
                break
            dual = dual_ascent(
                classes,
                base,
                free,
                upper_g=best_key[2],
                iterations=iterations,
                prices=prices,
                resume=resume if going_on else None,
            )
            dual_done += dual.iterations
            prices, resume = dual.prices, dual.resume
            lower = dual.bound_g if lower is None else max(lower, dual.bound_g)
            guide = priced(shape_costs(classes, base + prices.transpose(1, 0, 2)))
            ascent_guide = guide
            if lp is not None and lp.optimum_g is not None and not lp_rounded:
                # the LP's starts, and the prices where they have no room
                consider(_place_from_lp(arrays, classes, lp.columns, lp.share, table, guide))
                lp_rounded = True
            elif wait_for_core:
                # the price-guided placement once, not improved: its starts for the core
                deferred_guide = guide
                guided_plan = _place_all(arrays, classes, guide, table)
                guided_key = score(guided_plan)
                if guided_key < best_key:
                    best, best_key = _copy(guided_plan), guided_key
            else:
                place_guided(guide)
    if not complete_on_time() and dual_done == 0:
        place_guided(
            table
            if lp_prices is None
            else priced(shape_costs(classes, base + lp_prices.transpose(1, 0, 2)))
        )
    stats["dual_iterations"] = float(dual_done)

    if core_on and lp is None and columns is not None and ascent_guide is not None:
        # where the class LP is too large: its core, rounded and repaired
        before_core = best_key
        # up to 3,000 jobs two wide cores (both rounded: the better plan is kept), the
        # narrow one when neither rounding is on time
        # core_columns per resource the jobs ask for: a basic solution has a capacity row
        # per (cluster, resource, slot), so with more resources binding a class's LP
        # support spreads over more starts (ten-zone-mr 10,000 seeds 0-2, cpu and memory:
        # 3 columns 1.65 / 3.46 / 0.85 % above the bound, 6 columns 0.90 / 2.23 / 0.73 %),
        # while the core keeps at most _CORE_COLUMNS_CAP columns that way (ten-zone-mr
        # 100,000: 6 columns a class, 153k columns, took 30 s of interior point, 3 a class
        # 21 s, for a plan 0.37 % above the bound)
        asked = int(np.count_nonzero(np.any(arrays.demand_units > 0, axis=0)))
        n_classes = max(1, classes.class_shape.shape[0])
        narrow = max(core_columns, min(core_columns * asked, _CORE_COLUMNS_CAP // n_classes))
        # with two or more resources the interior point's crossover apart found no vertex on
        # 4 of 6 cores measured (ten-zone-mr 10,000 and 100,000), and HiGHS's own crossover
        # takes as long from the start (3.4 s against 3.3 s): that one, not both
        core_tolerance = None if small or asked > 1 else _CORE_IPM_TOLERANCE
        wide = tuple(max(narrow, k) for k in _SMALL_CORE_COLUMNS)
        tries = (*wide, narrow) if small else (narrow,)
        diverse = len(dict.fromkeys(wide)) if small else 1
        on_time_cores = 0
        core_prices: FloatArray | None = None
        core_share = np.zeros(len(columns))
        for attempt, per_class in enumerate(dict.fromkeys(tries)):
            if on_time_cores and attempt >= diverse:
                break
            # above 3,000 jobs the classes the plan put wholly at their least priced start
            # stay there (ten-zone 10,000: a tenth fewer columns, the LP 0.1 s faster)
            fix = core_fix_cheapest and not small
            keep = _core_columns(
                arrays, classes, columns, ascent_guide, best, per_class, fix_cheapest=fix
            )
            core = _solve_class_lp(
                arrays,
                classes,
                base,
                table,
                columns.subset(keep),
                lp_time_limit_s,
                method=core_lp_method,
                presolve=fix,
                ipm_tolerance=core_tolerance,
            )
            stats["core_attempts"] = float(attempt + 1)
            stats["core_columns"] = float(keep.shape[0])
            stats["core_lp_seconds"] = stats.get("core_lp_seconds", 0.0) + core.seconds
            if core.retried:
                stats["core_lp_retried"] = stats.get("core_lp_retried", 0.0) + 1.0
            if core.optimum_g is None:
                continue
            core_share[keep] += core.share
            # the restricted LP's optimum bounds nothing; L at its prices does
            if core.bound_g is not None:
                stats["core_bound_g"] = core.bound_g
                lower = core.bound_g if lower is None else max(lower, core.bound_g)
            trial = _place_from_lp(arrays, classes, core.columns, core.share, table, ascent_guide)
            if not small:
                # above 3,000 jobs, late jobs first before any sub-MILP: a rounding costs
                # 0.04 s, the repair 0.03-0.9 s on ten-zone 10,000
                trial, made = _round_late_first(
                    arrays,
                    classes,
                    table,
                    trial,
                    partial(
                        _place_from_lp,
                        arrays,
                        classes,
                        core.columns,
                        core.share,
                        table,
                        ascent_guide,
                    ),
                    _LATE_FIRST_ROUNDS,
                )
                if made:
                    stats["core_rounded_again"] = stats.get("core_rounded_again", 0.0) + made
            # narrower windows than the whole LP's repair: the sub-MILPs took a fifth of
            # ten-zone 10,000's time with 1,600 starts (seed 0: 0.33 s against 0.06 s with
            # 800, the plan 353 g lighter); at 1,000-2,000 jobs (seeds 0-1) 0.06-0.2 s
            # against 0.1-0.5 s, the plans -0.13 to +0.19 %
            repair_rounding(trial, core.optimum_g, core_repair_columns)
            # up to 3,000 jobs, as the whole LP's rounding: room made for jobs still late
            repair(trial, ascent_guide)
            if not small and _lateness_slots(arrays, trial):
                # above 3,000 jobs, jobs the sub-MILPs leave late: the rounding again with
                # them first (ten-zone 10,000 seed 9: one job 3 slots late after 10
                # sub-MILPs, and the fallback's plan, 5.5 % above the bound, replaced the
                # core's)
                late = _late_jobs(arrays, trial)
                consider(trial)
                stats["core_rounded_again"] = stats.get("core_rounded_again", 0.0) + 1.0
                trial = _place_from_lp(
                    arrays, classes, core.columns, core.share, table, ascent_guide, late
                )
                repair_rounding(trial, core.optimum_g, core_repair_columns)
            consider(trial)
            core_prices = core.prices
            on_time_cores += score(trial)[:2] == (0, 0)
        if small and np.any(core_share > 1e-9):
            used = core_share > 1e-9
            band_support = np.sort(
                (columns.klass[used] * free.shape[0] + columns.cluster[used]) * (free.shape[2] + 1)
                + columns.start_slot[used]
            )
        # above 3,000 jobs only while the plan is more than core_bound_gap above the bound,
        # and until it is not (ten-zone 10,000: the first ascent's bound is already within
        # 0.3 %); up to 3,000 jobs always (the bound decides whether the search runs)
        enough = DUAL_TARGET_GAP if small else max(core_bound_gap, DUAL_TARGET_GAP)
        if (
            core_prices is not None
            and complete_on_time()
            and (lower is None or best_key[2] - lower > enough * abs(best_key[2]))
        ):
            # the bound: an ascent from the core's prices towards this much better plan
            # (Polyak's steps aim at the plan's grams: ten-zone 10,000, 0.1 % higher)
            dual = dual_ascent(
                classes,
                base,
                free,
                upper_g=best_key[2],
                iterations=dual_iterations,
                prices=core_prices,
                target_gap=enough,
            )
            stats["dual_iterations"] += float(dual.iterations)
            lower = dual.bound_g if lower is None else max(lower, dual.bound_g)
        if deferred_guide is not None and not (
            complete_on_time()
            and best_key < before_core
            and lower is not None
            and best_key[2] - lower <= _FALLBACK_GAP * abs(best_key[2])
        ):
            # the core failed, or its plan is late, no better, or not near the bound: the
            # placements it stood in for
            stats["core_fallback"] = 1.0
            place_guided(deferred_guide, guided_plan, fallback=True)
        deferred_guide = None
    if deferred_guide is not None:  # the core did not run
        place_guided(deferred_guide, guided_plan, fallback=True)

    def reinsert() -> None:
        """Re-insertions on the best plan (as it is then), after the ruin and recreate and
        between a search's rounds: the jobs they moved leave holes single jobs can use."""
        _improve(arrays, classes, best, table, own, passes)

    if small and search_factor > 0 and complete_on_time() and not close_enough():
        # a bounded search; above 3,000 jobs the 1 s target leaves no room for it
        _ruin_recreate(
            arrays,
            classes,
            best,
            table,
            own,
            budget=int(search_factor * min(arrays.n_jobs, _SEARCH_JOBS)),
            seed=search_seed,
        )
        reinsert()
        best_key = score(best)
    if small and polish_steps > 0 and complete_on_time() and not close_enough():
        # sub-MILPs over windows of jobs (_polish); above 3,000 jobs, as the search, off
        done = polish(
            arrays,
            classes,
            table,
            best.free,
            best.cluster,
            best.start,
            own,
            steps=polish_steps,
            max_jobs=polish_jobs,
            max_columns=polish_columns,
            max_nodes=polish_nodes,
            lp_iterations=polish_lp_iterations,
            cpu_limit_s=polish_cpu_s,
            seed=search_seed,
            target_g=None if lower is None else lower * (1 + 1e-3),
            rounds=_POLISH_ROUNDS,
            between=reinsert,
        )
        _note_search(stats, "polish", done)
        best_key = score(best)
    if (
        small
        and support_nodes > 0
        and lp is not None
        and lp.optimum_g is not None
        and complete_on_time()
        and not close_enough()
    ):
        # the class LP's quotas packed by whole jobs exactly (trace-pai 1,000 seed 2: from
        # 1.85 % to 0.41 % above the LP in 0.8 s; HiGHS's whole MILP ends 0.014 % above it)
        packed = _support_milp(
            arrays,
            classes,
            table,
            lp.columns,
            lp.share,
            best,
            max_nodes=support_nodes,
            cpu_limit_s=support_time_limit_s,
            stats=stats,
        )
        stats["support_milp_kept"] = float(packed is not None)
        if packed is not None and score(packed) < best_key:
            best, best_key = packed, score(packed)

    def bands(
        name: str, support: IntArray, columns: int, iterations: int, *, per_cluster: bool
    ) -> None:
        """Steps 7c (time bands) and 7d (cluster bands) on ``best``, noted as ``name``."""
        assert ascent_guide is not None
        done = polish_bands(
            arrays,
            classes,
            table,
            best.free,
            best.cluster,
            best.start,
            ascent_guide,
            support,
            max_columns=columns,
            max_nodes=polish_nodes,
            lp_iterations=iterations,
            cpu_limit_s=polish_cpu_s,
            per_cluster=per_cluster,
        )
        _note_search(stats, name, done)
        stats[f"{name}_lp_budget"] = float(iterations)

    lp_support: IntArray | None = None
    if band_support is None and lp is not None:
        used = lp.share > 1e-9
        lp_support = np.sort(
            (lp.columns.klass[used] * free.shape[0] + lp.columns.cluster[used])
            * (free.shape[2] + 1)
            + lp.columns.start_slot[used]
        )

    def time_bands(support: IntArray | None) -> None:
        """Step 7c (or 7f) on ``support``, when the plan is on time and not yet near the
        bound."""
        nonlocal best_key
        if (
            small
            and band_columns > 0
            and support is not None
            and ascent_guide is not None
            and complete_on_time()
            and not close_enough()
        ):
            # time bands of many jobs with few starts each (ten-zone 1,000 seeds 0-2:
            # 0.12-0.16 points)
            budget = _band_budget(band_lp_iterations, arrays.n_jobs)
            bands("band", support, band_columns, budget, per_cluster=False)
            best_key = score(best)

    time_bands(band_support)  # the cores' path: before the cluster bands (step 7c)
    cluster_support = band_support if band_support is not None else lp_support
    if (
        small
        and cluster_band_columns > 0
        and cluster_support is not None
        and ascent_guide is not None
        and complete_on_time()
        and not close_enough()
    ):
        # one cluster's slots at a time, with the jobs that want them (step 7d; ten-zone
        # 500 and 1,000 seeds 0-1: 0.13-0.28 points more than the time bands alone;
        # cjps-small seeds 0-2: 0.2-1.9 points)
        bands(
            "cluster_band",
            cluster_support,
            cluster_band_columns,
            _band_budget(cluster_band_lp_iterations, arrays.n_jobs),
            per_cluster=True,
        )
        best_key = score(best)
    if band_support is None and lp_bands:
        # the whole LP's path (step 7f): after the cluster bands, so that the plan is the
        # one of before or lighter (bench/planner.md (r): before them, trace 1,000 seed 3
        # ended 4 g heavier)
        time_bands(lp_support)
    if (
        small
        and polish_chain_lp_iterations > 0
        and polish_steps > 0
        and complete_on_time()
        and not close_enough()
    ):
        # step 7g: sub-MILPs over ejection chains (_polish._chain_window), after the
        # bands, so that the plan is the one of before or lighter (bench/planner.md (v):
        # cjps-small 100 seeds 0-2 and ten-zone 300 seeds 0-2, 0.08-0.61 points)
        stats["chain_from_g"] = best_key[2]
        done = polish(
            arrays,
            classes,
            table,
            best.free,
            best.cluster,
            best.start,
            own,
            steps=_CHAIN_STEPS,
            max_jobs=polish_chain_jobs,
            max_columns=polish_columns,
            max_nodes=polish_nodes,
            lp_iterations=polish_chain_lp_iterations,
            cpu_limit_s=polish_cpu_s,
            seed=search_seed + _CHAIN_SEED,
            target_g=None if lower is None else lower * (1 + 1e-3),
            between=reinsert,
            chain_every=1,
        )
        _note_search(stats, "chain", done)
        stats["chain_saved_g"] = done.saved_g
        best_key = score(best)
    if (
        small
        and arrays.n_jobs <= _PAIR_MAX_JOBS
        and free.shape[0] >= 2
        and pair_columns > 0
        and pair_lp_iterations > 0
        and complete_on_time()
        and not close_enough()
    ):
        # step 7h: two clusters' jobs at a time, the clean one packed tighter so that jobs
        # leave the dirty one (bench/planner.md (y) and (z): ten-zone 300 seeds 0-4, 1.51-2.97
        # points)
        stats["pair_from_g"] = best_key[2]
        done = polish_pairs(
            arrays,
            classes,
            table,
            best.free,
            best.cluster,
            best.start,
            own,
            max_columns=pair_columns,
            lp_iterations=pair_lp_iterations,
            cpu_limit_s=pair_cpu_s,
            between=reinsert,
            target_g=None if lower is None else lower * (1 + 1e-3),
        )
        _note_search(stats, "pair", done)
        best_key = score(best)
    n_starts = int(
        np.sum(
            arrays.allowed.sum(axis=1)
            * np.maximum(arrays.horizon_slots - arrays.runtime_slots - arrays.release_slot + 1, 0)
        )
    )
    if exact_max_starts < n_starts <= late_milp_columns and not complete_on_time():
        # step 8b: a late plan's least lateness by a MILP on its LP's reduced-cost
        # neighbourhood (trace-pwa 1,000 seed 0: 310 slots late before, 22 now, proven)
        # the step's roundings, repaired, are plans too: one may place more jobs than its
        # MILPs' plan (caspian 500 seed 0: 10 left out against 16), which its lateness
        # level does not compare
        roundings: list[_State] = []

        def repair_and_keep(trial: _State) -> None:
            repair(trial, table)
            roundings.append(_copy(trial))

        least_late = _late_milp(
            arrays,
            base,
            best,
            max_columns=late_milp_columns,
            cpu_limit_s=late_milp_cpu_s,
            penalty=penalty,
            repair=repair_and_keep,
        )
        stats["late_milp_from_slots"] = float(best_key[1])
        stats["late_milp_columns"] = float(least_late.columns)
        stats["late_milp_proof_columns"] = float(least_late.proof_columns)
        stats["late_milp_cpu_seconds"] = least_late.cpu_seconds
        stats["late_milp_proven"] = float(least_late.proven)
        if least_late.lower_slots is not None:
            stats["late_milp_lower_slots"] = least_late.lower_slots
        if least_late.state is not None:
            place_left_out(least_late.state)
            key = score(least_late.state)
            if key < best_key:
                best, best_key = least_late.state, key
                stats["late_milp_kept"] = 1.0
        for rounded in roundings:
            place_left_out(rounded)
            consider(rounded)
    if 0 < n_starts <= exact_max_starts:
        for stage_on_time in (False, True):
            complete = complete_on_time()
            if stage_on_time != complete or (complete and close_enough()):
                continue
            # critical jobs stay at their earliest start with room (as the plan has them)
            exact = _exact_plan(
                arrays,
                base,
                exact_time_limit_s,
                on_time=stage_on_time,
                max_nodes=exact_nodes,
                critical_at=best,
                penalty=penalty,
            )
            if exact is not None:
                key = score(exact)
                if key < best_key:
                    best, best_key = exact, key
                    stats["exact_used"] = 1.0

    if best_key[0] > 0:
        trial = _copy(best)
        place_left_out(trial)
        consider(trial)

    def _on_time_lp_feasible() -> bool:
        if lower is None or columns is None or (lp is not None and lp.infeasible):
            return False
        began_check = time.process_time()
        feasible = _fitting_on_time_lp(arrays, lp_time_limit_s, classes)
        stats["lp_feasibility_cpu_seconds"] = time.process_time() - began_check
        return bool(feasible)

    placed = best.cluster >= 0
    if penalty.active:
        stats["incumbent_jobs"] = float(penalty.job.size)
        stats["incumbent_moved_jobs"] = float(
            np.sum(
                (best.cluster[penalty.job] != penalty.cluster)
                | (best.start[penalty.job] != penalty.start)
            )
        )
    full_table = true_table if objective == "carbon" else shape_costs(classes, full)
    plan_g = _grams(arrays, classes, best, full_table)
    on_time = _all_on_time(arrays, best)
    plan_bound: PlanBound | None = None
    if bound != "none":
        # CONTRACTS.md section 2: B bounds every feasible all-on-time plan and is null only
        # when no such plan may exist. An on-time plan proves one may; a late plan does not
        # say it cannot: the all-on-time LP does (over job classes, at any size up to
        # _FEASIBILITY_MAX_COLUMNS columns; above, a late plan's bound stays null)
        value = lower if on_time or (late_bound and _on_time_lp_feasible()) else None
        if value is not None and objective != "carbon":
            # a bound on operational grams bounds operational + embodied too; the dual on
            # the full grams is usually tighter
            full_dual = dual_ascent(
                classes,
                full,
                free,
                upper_g=plan_g,
                iterations=max(dual_iterations, 1),
                prices=lp_prices,  # above 3,000 jobs: from the LP's (operational) prices
            )
            value = max(value, full_dual.bound_g)
        if value is not None:
            value = _less_margins(value, classes, full)
        plan_bound = PlanBound.of(value, plan_g)
    if plan_bound is not None and plan_bound.lower_bound_g is not None:
        stats["lower_bound_g"] = plan_bound.lower_bound_g
    placed_jobs = np.flatnonzero(placed)
    chosen = dict(
        zip(
            placed_jobs.tolist(),
            zip(best.cluster[placed_jobs].tolist(), best.start[placed_jobs].tolist(), strict=True),
            strict=True,
        )
    )
    notes = _notes(arrays, best, own, table, classes)
    result = result_of(
        instance,
        "carbonshift",
        chosen,
        seconds=time.perf_counter() - began,
        notes=notes,
        stats=stats,
    )
    return replace(result, bound=plan_bound)


#: carbonshift's arguments that are not its keyword parameters
_NOT_PARAMS = frozenset({"instance", "context"})
#: Step 0b: the bound of a plan with critical jobs comes from the whole class LP up to this
#: many jobs (the Lagrangian dual ascent above; ten-zone 10,000: 0.12 % under the LP's
#: bound in 0.14 s of CPU from prices 0, 600 steps)
_CRITICAL_LP_MAX_JOBS = 1000


def _critical_held(
    instance: Instance, context: PlanContext | None, params: dict[str, Any]
) -> PolicyResult:
    """Step 0b: the critical jobs first, each at its earliest start with room (ties: fewer
    grams), as every plan of the policy has them; then the other jobs planned as an
    instance of their own (:func:`carbonshift` with ``params``) on the room the critical
    jobs leave, which is held as running work is (``PlanContext.held_units``). So every
    step, the class LP and its bound included, plans around the critical jobs where they
    are, not around an LP that moves them (ten-zone 10,000 with a tenth of the jobs
    critical: 5.95 % above the bound of plans with the critical jobs where they are,
    0.34 % so; bench/planner.md (ad)). The plan's certified bound is of every all-on-time
    plan, critical jobs anywhere (CONTRACTS.md section 2): the class LP's up to
    :data:`_CRITICAL_LP_MAX_JOBS` jobs, and the Lagrangian dual ascent's."""
    began = time.perf_counter()
    raw = arrays_of(instance, context)
    arrays = balanced_units(raw)
    objective = str(params["objective"])
    full = unit_grams(arrays, embodied=True)
    base = full if objective == "carbon" else unit_grams(arrays, embodied=False)
    classes = classes_of(arrays)
    true = shape_costs(classes, base)
    n = arrays.n_jobs
    state = _State(
        free=arrays.free_units.copy(),
        cluster=np.full(n, -1, dtype=np.int64),
        start=np.full(n, -1, dtype=np.int64),
    )
    _place_critical(_Placer(arrays, classes, state), arrays, true)
    full_table = true if objective == "carbon" else shape_costs(classes, full)
    critical_g = _grams(arrays, classes, state, full_table)
    # their room, in the instance's units, held beside what the context holds
    held = raw.capacity_units - raw.free_units
    for j in np.flatnonzero(state.cluster >= 0).tolist():
        m, s = int(state.cluster[j]), int(state.start[j])
        held[m, :, s : s + int(raw.runtime_slots[j])] += raw.demand_units[j][:, None]
    rest = replace(instance, jobs=tuple(job for job in instance.jobs if not job.critical))
    # the inner plan's bound is of the held problem only; a late plan's check that an
    # all-on-time plan may exist is made here, on the whole instance
    inner = carbonshift(
        rest, replace(context or PlanContext(), held_units=held), **(params | {"late_bound": False})
    )
    index = {job.id: i for i, job in enumerate(instance.jobs)}
    cluster_index = {cluster.name: m for m, cluster in enumerate(instance.clusters)}
    for a in inner.plan.assignments:
        j = index[a.job]
        m, s = cluster_index[a.cluster], int(a.start_slot)
        state.cluster[j], state.start[j] = m, s  # (the room is not read after this)
    placed = state.cluster >= 0
    chosen = {int(j): (int(state.cluster[j]), int(state.start[j])) for j in np.flatnonzero(placed)}
    plan_g = _grams(arrays, classes, state, full_table)
    stats = dict(inner.stats)
    stats["critical_held_jobs"] = float(np.sum(arrays.critical & placed))
    if inner.bound is not None and inner.bound.lower_bound_g is not None:
        # a bound on the plans with the critical jobs where they are (not the certified one)
        stats["critical_held_lower_bound_g"] = inner.bound.lower_bound_g + critical_g
    stats.pop("lower_bound_g", None)
    on_time = _all_on_time(arrays, state)
    plan_bound: PlanBound | None = None
    if params["bound"] != "none":
        value: float | None = None
        feasible = on_time or (
            bool(params["late_bound"])
            and bool(_fitting_on_time_lp(arrays, float(params["lp_time_limit_s"]), classes))
        )
        if feasible:
            value, prices = -math.inf, None
            if (
                params["bound"] in ("auto", "lp")
                and (params["bound"] == "lp" or n <= _CRITICAL_LP_MAX_JOBS)
                and classes.every_job_can_be_on_time
            ):
                lp = _solve_class_lp(
                    arrays,
                    classes,
                    full,
                    shape_costs(classes, full),
                    class_columns(classes),
                    float(params["lp_time_limit_s"]),
                )
                if lp.bound_g is not None:
                    value, prices = lp.bound_g, lp.prices
            ascent = dual_ascent(
                classes,
                full,
                arrays.free_units,
                upper_g=plan_g,
                iterations=max(2 * int(params["dual_iterations"]), 1),
                prices=prices,
            )
            value = _less_margins(max(value, ascent.bound_g), classes, full)
            stats["lower_bound_g"] = value
        plan_bound = PlanBound.of(value, plan_g)
    notes = {
        j: text
        for j, text in _notes(
            arrays, state, _own_best_fast(arrays, classes, true), true, classes
        ).items()
        if arrays.critical[j]
    }
    notes.update((index[job], text) for job, text in inner.notes.items())
    result = result_of(
        instance,
        "carbonshift",
        chosen,
        seconds=time.perf_counter() - began,
        notes=notes,
        stats=stats,
    )
    return replace(result, bound=plan_bound)


def _notes(
    arrays: InstanceArrays,
    state: _State,
    own: FloatArray,
    table: FloatArray,
    classes: JobClasses,
) -> dict[int, str]:
    cost = _unit_cost(arrays, classes, state, table)
    texts = [
        "carbonshift: no start of it fits on an allowed cluster in the horizon",
        "carbonshift: critical, earliest start with room (ties: fewer grams)",
        "carbonshift: no on-time start had room; earliest start with room (late)",
        "carbonshift: its cleanest on-time start",
        "carbonshift: cleanest on-time start with room once the others were placed",
        "carbonshift: every start of it in the horizon is taken by the jobs placed (more "
        "work than room: the plan places as many jobs as it found room for)",
    ]
    # the first that holds of: left out, critical, late, at its cleanest start, else
    which = np.select(
        [
            state.cluster < 0,
            arrays.critical,
            state.start + arrays.runtime_slots > arrays.deadline_slot,
            cost <= own * (1 + 1e-12) + 1e-12,
        ],
        [0, 1, 2, 3],
        4,
    )
    # a job left out that would fit alone: its room is taken (the free room before any job
    # of the plan, as the planning instance has it)
    out = np.flatnonzero(state.cluster < 0)
    if out.size:
        empty = _State(
            free=arrays.free_units.copy(),
            cluster=np.full(arrays.n_jobs, -1, dtype=np.int64),
            start=np.full(arrays.n_jobs, -1, dtype=np.int64),
        )
        alone = _Placer(arrays, classes, empty)
        for j in out.tolist():
            if alone.earliest(j, table) is not None:
                which[j] = 5
    return {j: texts[w] for j, w in enumerate(which.tolist())}
