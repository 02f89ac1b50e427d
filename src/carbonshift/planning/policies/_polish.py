"""MIP neighbourhood search on a ``carbonshift`` plan (issue 13, quality).

The greedy, its re-insertions and the ruin and recreate move a few jobs at a time; on
congested instances the grams left above the bound sit in exchanges of many jobs at once.
Each step here frees a window of jobs (their starts open, every other job kept where it
is) and solves their exact problem on the room the others leave: a small time-indexed MILP
(every on-time start of a freed job, capacity per cluster, resource and slot, least grams)
by HiGHS, with the current starts as its first incumbent; the answer is kept when it has
fewer grams. Fix-and-optimise large neighbourhood search (Shaw 1998; Danna, Rothberg and
Le Pape 2005, whose RINS is what finds HiGHS's improvements inside each sub-MILP).

The window: a job drawn with probability proportional to the grams it pays above its own
cheapest on-time start, and the movable jobs whose on-time spans overlap its span most
(then nearest; random ties), up to a size that starts at half ``max_jobs`` (and as many
starts in proportion to ``max_columns``) and adapts to the work the last sub-MILP took.

Every step keeps capacity (the sub-MILP's rows are the room left, and each job is put back
only where :data:`CAPACITY_TOLERANCE` says it fits), keeps every freed job on time (only
on-time starts are columns; only on-time jobs are freed) and never raises grams (kept only
when grams fall). HiGHS's node limit ends each sub-MILP and the search's budget counts
HiGHS's simplex iterations, so the plan is deterministic for a seed; only the CPU guard
``cpu_limit_s``, checked between sub-MILPs, where it binds first, makes it depend on the
machine. Every CPU guard here reads the planning thread's CPU (``time.thread_time``), as
:class:`SolveOptions`' ``cpu_limit_s`` does: the controller and the hub plan in a process
whose other threads are busy, and the process's CPU (``time.process_time``) would count
theirs. HiGHS's own time limit, which counts wall seconds, is a guard against a hang
(:data:`WALL_GUARD_PER_CPU_S`), not the CPU left: set to the CPU left it cut sub-MILPs short
on a loaded machine, and plans depended on the load (bench/online.md, 2026-11-27).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import numpy.typing as npt

from carbonshift.errors import InputError, SolverError
from carbonshift.planning.backends.highs import SolveOptions, solve
from carbonshift.planning.lagrangian import JobClasses
from carbonshift.planning.problem import (
    CAPACITY_TOLERANCE,
    InstanceArrays,
    LinearProgram,
    Starts,
    build_problem,
    on_time_program,
)
from carbonshift.planning.types import SolveStatus

__all__ = [
    "WALL_GUARD_PER_CPU_S",
    "LateRepairStats",
    "PolishStats",
    "polish",
    "polish_bands",
    "polish_pairs",
    "repair_late",
    "resolve_jobs",
    "sub_milp_options",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Each sub-MILP also counts this many simplex iterations against the budget, for building
#: and loading it (about what a small sub-MILP's set-up costs in CPU, measured).
STEP_ITERATIONS = 100

#: The windows' size adapts so that a sub-MILP spends about this many simplex iterations:
#: on instances whose sub-MILPs are hard (large jobs on little capacity) many small
#: windows gain more within the budget than a few large ones (measured on caspian and
#: CJPS); the adaptation reads iteration counts only, so it is the same on any machine.
STEP_TARGET = 600

#: The search stops after this many sub-MILPs in a row that gained nothing.
STALL_STEPS = 40

#: :func:`_chain_window`: each job of a chain names the jobs in the cells of this many of
#: its cheaper starts
CHAIN_STARTS = 3

#: :func:`polish_bands`: each band is this many slots wide (bands start every half band)
#: and each freed job may also take its this many starts of least priced grams.
BAND_SLOTS = 3
BAND_STARTS = 2

#: :func:`polish_bands` with ``per_cluster``: one cluster's band of this many slots (bands
#: start every half band), each freed job also taking its this many least priced starts
#: (chosen on ten-zone 500 and 1,000 seeds 0-1 among 6 / 8 / 12 / 16 slots and 3 / 4 / 6
#: starts, bench/planner.md section (j))
CLUSTER_BAND_SLOTS = 8
CLUSTER_BAND_STARTS = 4

#: :func:`polish_pairs`: each sub-MILP stops after this many HiGHS nodes (its root: the
#: gains come from RINS there), and the pairs are swept at most this many times in all
#: (again at the same size while the last sweep kept a window, else at the next size)
PAIR_NODES = 1
PAIR_SWEEPS = 8

#: :func:`polish_pairs`'s windows grow: these fractions of its ``max_columns``, the next
#: when a sweep kept nothing; the first size spends at most :data:`PAIR_FIRST_SHARE` of the
#: budget. Small windows are cheap and gain most on ten-zone 300-1,000 (many jobs per
#: pair), large ones on cjps-small (few large jobs whose repackings span a pair's day)
#: (bench/planner.md (z))
PAIR_SIZES = (0.25, 1.0, 2.0)
PAIR_FIRST_SHARE = 0.5

#: :func:`polish_bands` with ``per_cluster`` sweeps the horizon again while the last sweep
#: kept a band, at most this many times (cjps-small 100 seed 2: a second sweep took it
#: from 3.80 % to 2.35 % above the LP)
CLUSTER_BAND_SWEEPS = 3


@dataclass(frozen=True, slots=True)
class PolishStats:
    """What :func:`polish` did: sub-MILPs solved, those kept, grams saved, HiGHS's LP
    iterations and CPU seconds; ``guard_bound``: the CPU guard ended the search (the plan
    then depends on the machine's speed), not its budget, its steps or a stall."""

    steps: int
    kept: int
    saved_g: float
    lp_iterations: int
    cpu_seconds: float
    guard_bound: bool = False


#: a sub-MILP's columns chosen among its freed jobs' on-time starts (``starts``; ``job``, each
#: start's job; ``current``, each job's start now, all to be kept), or None: solve nothing
Columns = Callable[[Starts, IntArray, BoolArray], IntArray | None]


def _use(arrays: InstanceArrays, free: FloatArray, j: int, m: int, s: int, sign: float) -> None:
    r = int(arrays.runtime_slots[j])
    free[m, :, s : s + r] += sign * arrays.demand_units[j][:, None]


def _fits(arrays: InstanceArrays, free: FloatArray, j: int, m: int, s: int) -> bool:
    r = int(arrays.runtime_slots[j])
    window = free[m, :, s : s + r]
    return bool(np.all(window + CAPACITY_TOLERANCE >= arrays.demand_units[j][:, None]))


def resolve_jobs(
    arrays: InstanceArrays,
    classes: JobClasses,
    table: FloatArray,
    free: FloatArray,
    cluster: IntArray,
    start: IntArray,
    freed: IntArray,
    options: SolveOptions,
    columns: Columns | None = None,
) -> tuple[float, int, bool] | None:
    """Re-plan the jobs ``freed`` (placed, on time) exactly on the room the others leave:
    least ``table`` grams (per unit of weight of each shape, cluster and start) over their
    on-time starts, or those ``columns`` chooses. Applied to ``free`` / ``cluster`` /
    ``start`` when the sub-MILP finds fewer grams. Returns the grams saved (0: nothing
    changed), HiGHS's LP iterations, and whether HiGHS proved its answer optimal; None when
    no sub-MILP was solved (a freed job not at an on-time start, or ``columns`` said no)."""
    with _freed(arrays, free, cluster, start, freed):
        return _resolve(arrays, classes, table, free, cluster, start, freed, options, columns)


@contextmanager
def _freed(
    arrays: InstanceArrays, free: FloatArray, cluster: IntArray, start: IntArray, jobs: IntArray
) -> Iterator[None]:
    """The cells of ``jobs`` given back to ``free`` for a sub-MILP, and held again after it
    (at their old starts, or the new ones it took), whatever happens."""
    for j in jobs:
        _use(arrays, free, int(j), int(cluster[j]), int(start[j]), +1.0)
    try:
        yield
    finally:
        for j in jobs:
            _use(arrays, free, int(j), int(cluster[j]), int(start[j]), -1.0)


def _freed_arrays(arrays: InstanceArrays, free: FloatArray, freed: IntArray) -> InstanceArrays:
    """The sub-problem of the jobs ``freed`` on the room ``free`` the others leave (none of
    them critical: a sub-MILP moves them freely)."""
    return replace(
        arrays,
        demand_units=arrays.demand_units[freed],
        runtime_slots=arrays.runtime_slots[freed],
        release_slot=arrays.release_slot[freed],
        deadline_slot=arrays.deadline_slot[freed],
        critical=np.zeros(freed.shape[0], dtype=bool),
        allowed=arrays.allowed[freed],
        free_units=np.maximum(free, 0.0),
    )


def _take(
    arrays: InstanceArrays,
    free: FloatArray,
    cluster: IntArray,
    start: IntArray,
    job: IntArray,
    starts: Starts,
    chosen: IntArray,
) -> bool:
    """Move the freed jobs to a sub-MILP's ``chosen`` columns (``job`` and ``starts`` as
    the sub-problem numbers them) if every new start fits ``free`` by our own tolerance;
    False, and nothing changed, otherwise."""
    trial = free.copy()
    for col in chosen:
        j, m, s = int(job[col]), int(starts.cluster[col]), int(starts.start_slot[col])
        if not _fits(arrays, trial, j, m, s):
            return False
        _use(arrays, trial, j, m, s, -1.0)
    cluster[job[chosen]] = starts.cluster[chosen]
    start[job[chosen]] = starts.start_slot[chosen]
    return True


def _resolve(
    arrays: InstanceArrays,
    classes: JobClasses,
    table: FloatArray,
    free: FloatArray,
    cluster: IntArray,
    start: IntArray,
    freed: IntArray,
    options: SolveOptions,
    columns: Columns | None,
) -> tuple[float, int, bool] | None:
    problem = build_problem(_freed_arrays(arrays, free, freed), on_time_only=True)
    starts = problem.starts
    job = freed[starts.job]
    current = (starts.cluster == cluster[job]) & (starts.start_slot == start[job])
    if int(current.sum()) != freed.shape[0]:
        return None  # some freed job is not at an on-time start: not ours to move
    keep = None if columns is None else columns(starts, job, current)
    if columns is not None and keep is None:
        return None
    grams = table[classes.shape[job], starts.cluster, starts.start_slot] * classes.weight[job]
    program = on_time_program(problem, grams)
    if keep is not None:
        program = program.restricted_to(keep)
    first = current if keep is None else current[keep]
    solution = solve(program, options, start=first.astype(np.float64))
    work = solution.lp_iterations
    proved = solution.status is SolveStatus.OPTIMAL
    if solution.status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        return 0.0, work, False
    picked = np.flatnonzero(solution.values > 0.5)
    chosen = picked if keep is None else keep[picked]
    if not np.array_equal(np.sort(starts.job[chosen]), np.arange(freed.shape[0])):
        return 0.0, work, proved
    before = float(grams[current].sum())
    gain = before - float(grams[chosen].sum())
    if not gain > 1e-9 * max(before, 1.0):
        return 0.0, work, proved
    if not _take(arrays, free, cluster, start, job, starts, chosen):
        return 0.0, work, proved
    return gain, work, proved


def _window(
    arrays: InstanceArrays,
    classes: JobClasses,
    movable: BoolArray,
    j: int,
    rng: np.random.Generator,
    max_jobs: int,
    max_columns: int,
) -> IntArray:
    """Job ``j`` and the movable jobs whose on-time spans overlap its span most, then lie
    nearest (random ties), up to ``max_jobs`` jobs and ``max_columns`` on-time starts."""
    runtime = arrays.runtime_slots
    first = classes.lo.astype(float)
    last = (classes.hi + runtime).astype(float)
    lo_j, hi_j = float(first[j]), float(last[j])
    overlap = np.maximum(np.minimum(last, hi_j) - np.maximum(first, lo_j), 0.0)
    distance = np.abs((first + last) / 2.0 - (lo_j + hi_j) / 2.0) - overlap
    distance = distance + rng.random(arrays.n_jobs) * 0.5
    distance[~movable] = np.inf
    distance[j] = -np.inf
    order = np.argsort(distance, kind="stable")[:max_jobs]
    order = order[np.isfinite(distance[order]) | (order == j)]
    options = ((classes.hi - classes.lo + 1) * arrays.allowed.sum(axis=1))[order]
    chosen: IntArray = np.sort(order[np.cumsum(options) <= max_columns])
    return chosen


def _chain_window(
    arrays: InstanceArrays,
    classes: JobClasses,
    table: FloatArray,
    cluster: IntArray,
    start: IntArray,
    movable: BoolArray,
    j: int,
    rng: np.random.Generator,
    max_jobs: int,
    max_columns: int,
) -> IntArray:
    """Job ``j`` and the movable jobs that hold the room it would rather have, then those
    that hold the room they would rather have, and so on (breadth first): an ejection
    chain (Glover 1996) as one window. For each job taken, its :data:`CHAIN_STARTS` on-time
    starts of fewer ``table`` grams than its own (cheapest first) name the jobs that run
    in their cells now (random order); up to ``max_jobs`` jobs and ``max_columns`` on-time
    starts, as :func:`_window`. Where the window by spans (:func:`_window`) takes the jobs
    near ``j`` in time on any cluster, this one follows who blocks whom across clusters
    and slots (cjps-small 100 seed 0: CP-SAT's lighter plan moves 19 jobs over 2 clusters
    and 32 slots, one connected set of such moves; bench/planner.md section (v))."""
    runtime = arrays.runtime_slots
    n_starts = (classes.hi - classes.lo + 1) * arrays.allowed.sum(axis=1)
    end = start + runtime
    taken = np.zeros(arrays.n_jobs, dtype=bool)
    taken[j] = True
    chosen = [j]
    columns = int(n_starts[j])
    queue = [j]
    while queue and len(chosen) < max_jobs:
        i = queue.pop(0)
        lo, hi, r = int(classes.lo[i]), int(classes.hi[i]), int(runtime[i])
        if hi < lo:
            continue
        cost = np.where(arrays.allowed[i][:, None], table[classes.shape[i], :, lo : hi + 1], np.inf)
        now = float(table[classes.shape[i], cluster[i], start[i]])
        flat = np.flatnonzero(cost.ravel() < now - 1e-9 * max(abs(now), 1.0))
        flat = flat[np.argsort(cost.ravel()[flat], kind="stable")][:CHAIN_STARTS]
        width = hi - lo + 1
        for f in flat:
            m, s = int(f) // width, lo + int(f) % width
            there = movable & ~taken & (cluster == m) & (start < s + r) & (end > s)
            for k in rng.permutation(np.flatnonzero(there)):
                if len(chosen) >= max_jobs or columns + int(n_starts[k]) > max_columns:
                    break
                taken[k] = True
                chosen.append(int(k))
                columns += int(n_starts[k])
                queue.append(int(k))
    window: IntArray = np.sort(np.array(chosen, dtype=np.int64))
    return window


#: HiGHS's time limit of a sub-MILP, in wall seconds per CPU second of the search's guard
#: (``cpu_limit_s``): only a guard against a hang. Under load wall time runs ahead of CPU
#: time (a clairvoyant Caspian plan at load 7: 53 s of wall for 7.6 s of CPU), and a limit
#: of the CPU left cut 2 of its 17 sub-MILPs after about 1 s of CPU each.
WALL_GUARD_PER_CPU_S = 10.0


def sub_milp_options(
    left_s: float, max_nodes: int, restart: bool, *, rens: bool = True
) -> SolveOptions:
    """HiGHS options of one sub-MILP: ``left_s`` wall seconds at most (a guard; the node
    limit ends a sub-MILP), ``max_nodes`` nodes, HiGHS's root restart and RENS on or off,
    no presolve.

    HiGHS 1.16's MILP presolve ran past its time limit (minutes) on a 106-row sub-MILP of a
    CJPS simulation round (``tests/planning/data/polish_presolve_hang.json``); without
    presolve it is solved in 0.2 s."""
    return SolveOptions(
        integer=True,
        time_limit_s=max(0.05, left_s),
        mip_gap=1e-6,
        max_nodes=max_nodes,
        mip_restart=restart,
        mip_rens=rens,
        presolve=False,
    )


def polish(
    arrays: InstanceArrays,
    classes: JobClasses,
    table: FloatArray,
    free: FloatArray,
    cluster: IntArray,
    start: IntArray,
    own_best: FloatArray,
    *,
    steps: int,
    max_jobs: int,
    max_columns: int,
    max_nodes: int,
    lp_iterations: int,
    cpu_limit_s: float,
    seed: int,
    target_g: float | None = None,
    restart: bool = False,
    rounds: int = 1,
    between: Callable[[], object] | None = None,
    chain_every: int = 0,
) -> PolishStats:
    """Sub-MILPs (module docstring) on the plan ``free`` / ``cluster`` / ``start``, changed
    in place (``table``: grams per unit of weight of each shape, cluster and start;
    ``own_best``: each job's least on-time ``table`` cost, ignoring room), in ``rounds``
    rounds of up to ``steps`` sub-MILPs and ``lp_iterations / rounds`` simplex iterations
    each (the budget, the same on any machine; each sub-MILP also counts
    :data:`STEP_ITERATIONS`), the seed ``seed + round``; ``between`` (the caller's local
    moves) runs after each round that moved jobs. Each sub-MILP frees at most ``max_jobs``
    jobs and ``max_columns`` starts and stops at ``max_nodes`` HiGHS nodes. A round ends
    early after :data:`STALL_STEPS` sub-MILPs in a row without gain; the search ends once a
    window holding every movable job is solved to optimality, when no job pays above its
    own cheapest start, when the plan's grams reach ``target_g``, on a solver failure, or
    after ``cpu_limit_s`` seconds of this thread's CPU (a guard, ``time.thread_time``).
    With ``chain_every`` above 0 every ``chain_every``-th window is an ejection chain
    (:func:`_chain_window`) instead of the jobs nearest in time (:func:`_window`)."""
    began = time.thread_time()
    total = _Tally()
    # windows whose sub-MILP changed nothing on the plan as it stands (see _round)
    tried: dict[tuple[int, ...], tuple[float, int, bool] | None] = {}
    for r in range(max(1, rounds)):
        kept_before = total.kept
        finished = _round(
            arrays,
            classes,
            table,
            free,
            cluster,
            start,
            own_best,
            total,
            steps=steps,
            max_jobs=max_jobs,
            max_columns=max_columns,
            max_nodes=max_nodes,
            lp_iterations=max(1, lp_iterations // max(1, rounds)),
            cpu_limit_s=cpu_limit_s - (time.thread_time() - began),
            wall_guard_s=WALL_GUARD_PER_CPU_S * cpu_limit_s,
            rng=np.random.default_rng(seed + r),
            target_g=target_g,
            restart=restart,
            chain_every=chain_every,
            tried=tried,
        )
        if between is not None and total.kept > kept_before:
            between()
            tried.clear()
        if finished or total.guard_bound:
            break
        if time.thread_time() - began >= cpu_limit_s and r + 1 < max(1, rounds):
            total.guard_bound = True  # rounds left, but no CPU for them
            break
    return total.stats(began)


def polish_bands(
    arrays: InstanceArrays,
    classes: JobClasses,
    table: FloatArray,
    free: FloatArray,
    cluster: IntArray,
    start: IntArray,
    guide: FloatArray,
    support_key: IntArray,
    *,
    max_columns: int,
    max_nodes: int,
    lp_iterations: int,
    cpu_limit_s: float,
    per_cluster: bool = False,
) -> PolishStats:
    """Time bands: a neighbourhood of many jobs with few starts each, which the windows of
    :func:`polish` (every on-time start of a few jobs) cannot hold. For each band of
    :data:`BAND_SLOTS` slots, from the horizon's start, every movable job whose run overlaps
    it, on any cluster, is freed; each may take its own start, the starts its class has
    weight at in an LP (``support_key``: ``(class x clusters + cluster) x (slots + 1) +
    start``, sorted) and its :data:`BAND_STARTS` on-time starts of least ``guide`` cost (the
    grams priced by capacity prices). A band whose sub-MILP has more than ``max_columns``
    columns is skipped; the others are solved as :func:`polish`'s (``max_nodes`` nodes, the
    current starts as incumbent) and kept when lighter, until ``lp_iterations`` simplex
    iterations are spent (each band also counts :data:`STEP_ITERATIONS`) or, a guard,
    ``cpu_limit_s`` seconds of CPU. Fix-and-optimise over time (Pochet and Wolsey 2006,
    "Production planning by mixed integer programming", relax-and-fix by periods) on the
    LP's support, as RINS restricts a MILP to it (Danna, Rothberg and Le Pape 2005).

    With ``per_cluster``, cluster bands instead: one cluster's :data:`CLUSTER_BAND_SLOTS`
    slots at a time (bands every half band, each cluster in turn within a band), freeing
    the jobs that run there and the jobs whose start of least ``guide`` cost runs there
    (the jobs competing for that cluster's cheap slots, wherever they run now), each with
    :data:`CLUSTER_BAND_STARTS` least priced starts; the sweep over the horizon is repeated
    while the last one kept a band, :data:`CLUSTER_BAND_SWEEPS` times at most, within the
    one budget. A large neighbourhood per resource and period (Shaw 1998's relatedness:
    jobs that compete for the same capacity)."""
    began = time.thread_time()
    total = _Tally()
    horizon = free.shape[2]
    runtime = arrays.runtime_slots
    width = CLUSTER_BAND_SLOTS if per_cluster else BAND_SLOTS
    n_starts = CLUSTER_BAND_STARTS if per_cluster else BAND_STARTS
    cells: list[tuple[int, int | None]] = [
        (t, m)
        for t in range(0, horizon, max(1, width // 2))
        for m in (range(free.shape[0]) if per_cluster else (None,))
    ]
    least_m, least_s = _least_priced(arrays, classes, guide) if per_cluster else (None, None)
    for _ in range(CLUSTER_BAND_SWEEPS if per_cluster else 1):
        kept_before = total.kept
        for t, m in cells:
            if total.spent(began, lp_iterations, cpu_limit_s):
                return total.stats(began)
            placed = cluster >= 0
            in_band = placed & (start < t + width) & (start + runtime > t)
            if m is not None and least_m is not None and least_s is not None:
                wanting = (least_m == m) & (least_s < t + width) & (least_s + runtime > t)
                in_band = (in_band & (cluster == m)) | (placed & wanting)
            movable = in_band & (start + runtime <= arrays.deadline_slot) & ~arrays.critical
            freed = np.flatnonzero(movable & classes.on_time)
            if freed.shape[0] < 2:
                continue
            options = sub_milp_options(WALL_GUARD_PER_CPU_S * cpu_limit_s, max_nodes, False)
            columns = partial(
                _band_columns,
                classes,
                guide,
                support_key,
                horizon,
                max_columns=max_columns,
                n_starts=n_starts,
            )
            if not total.solve(
                arrays, classes, table, free, cluster, start, freed, options, columns
            ):
                return total.stats(began)  # the plan so far stands, as in polish
        if total.kept == kept_before:
            break  # a sweep that kept nothing: the next would find the same
    return total.stats(began)


def _pair_order(
    arrays: InstanceArrays,
    classes: JobClasses,
    table: FloatArray,
    cluster: IntArray,
    start: IntArray,
    own_best: FloatArray,
    movable: BoolArray,
) -> list[tuple[int, int]]:
    """The pairs of clusters, those whose movable jobs pay most above their own cheapest
    on-time starts first (then by index); pairs where nothing is paid are left out."""
    n_m = arrays.free_units.shape[0]
    paying = np.flatnonzero(movable)
    cost = table[classes.shape[paying], cluster[paying], start[paying]]
    excess = np.maximum(cost - own_best[paying], 0.0) * classes.weight[paying]
    per = np.bincount(cluster[paying], weights=excess, minlength=n_m)
    pairs = [(a, b) for a in range(n_m) for b in range(a + 1, n_m) if per[a] + per[b] > 1e-9]
    return sorted(pairs, key=lambda pair: -float(per[pair[0]] + per[pair[1]]))


def _pair_groups(
    freed: IntArray, start: IntArray, options: IntArray, max_columns: int
) -> list[IntArray]:
    """``freed`` in order of their starts, cut into windows of at most ``max_columns``
    on-time starts (``options``: each job's count), each window after the first holding
    the later half of the one before (a job's starts are never cut apart; after a window
    of one job the next keeps that job, so a window of two may hold more)."""
    order = freed[np.argsort(start[freed], kind="stable")]
    groups: list[IntArray] = []
    now: list[int] = []
    columns = 0
    for j in order:
        if now and columns + int(options[j]) > max_columns:
            groups.append(np.array(now, dtype=np.int64))
            now = now[len(now) // 2 :]
            columns = int(options[now].sum()) if now else 0
        now.append(int(j))
        columns += int(options[j])
    groups.append(np.array(now, dtype=np.int64))
    return [np.sort(g) for g in groups if g.shape[0] >= 2]


def _pair_columns(
    pair: tuple[int, int], starts: Starts, job: IntArray, current: BoolArray
) -> IntArray:
    """A pair window's columns: each freed job's own start and its on-time starts on the
    pair's two clusters."""
    keep: IntArray = np.flatnonzero(current | np.isin(starts.cluster, pair))
    return keep


def polish_pairs(
    arrays: InstanceArrays,
    classes: JobClasses,
    table: FloatArray,
    free: FloatArray,
    cluster: IntArray,
    start: IntArray,
    own_best: FloatArray,
    *,
    max_columns: int,
    lp_iterations: int,
    cpu_limit_s: float,
    between: Callable[[], object] | None = None,
    target_g: float | None = None,
) -> PolishStats:
    """Cluster pairs: every movable job on two clusters freed at once, each with its
    on-time starts on both, in windows along the horizon (:func:`_pair_groups`) of at most
    a quarter of ``max_columns`` starts, then ``max_columns``, then twice that
    (:data:`PAIR_SIZES`): the windows grow when a sweep over the pairs kept nothing, and
    past half the budget (:data:`PAIR_FIRST_SHARE`) for the first size. The pairs whose
    jobs pay most above their own cheapest starts come first (:func:`_pair_order`); each
    sub-MILP stops at its root (:data:`PAIR_NODES`), with RINS and without RENS
    (``sub_milp_options``), the current starts as incumbent, and is kept when lighter.
    Sweeps repeat (:data:`PAIR_SWEEPS` in all at most; ``between``, the caller's local
    moves, after each that kept a window) until ``lp_iterations`` simplex iterations are
    spent (each sub-MILP also counts :data:`STEP_ITERATIONS`) or, a guard,
    ``cpu_limit_s`` seconds of this thread's CPU, or the plan's grams reach ``target_g``.
    A variable neighbourhood search (Mladenovic and Hansen 1997) over the windows' size.

    Where the plan's packing of the clean clusters is loose, the grams above the bound
    sit in exchanges between two clusters: a clean one packed tighter so that jobs leave a
    dirty one. Windows of jobs near in time (:func:`polish`), ejection chains and bands
    with few starts per job hold few of them (ten-zone 300 seed 0: 90 pair windows of all
    starts took the plan from 5.2 % to 2.8 % above the LP, where CP-SAT with two workers
    for 600 s reached 3.2 %; bench/planner.md (y))."""
    began = time.thread_time()
    total = _Tally()
    runtime = arrays.runtime_slots
    n_options = (classes.hi - classes.lo + 1).astype(np.int64)
    settings = sub_milp_options(WALL_GUARD_PER_CPU_S * cpu_limit_s, PAIR_NODES, False, rens=False)
    sizes = [max(1, int(fraction * max_columns)) for fraction in PAIR_SIZES]
    level = 0
    kept_seen = 0

    def reached() -> bool:
        """Whether a window kept since the last look took the plan to ``target_g``."""
        nonlocal kept_seen
        if target_g is None or total.kept == kept_seen:
            return False
        kept_seen = total.kept
        idx = np.flatnonzero(cluster >= 0)
        grams = classes.weight[idx] @ table[classes.shape[idx], cluster[idx], start[idx]]
        return bool(float(grams) <= target_g)

    for _ in range(PAIR_SWEEPS):
        kept_before = total.kept
        # the first size hands over past its share; the last keeps the whole budget
        share = lp_iterations * (PAIR_FIRST_SHARE if level == 0 else 1.0)
        last = level + 1 == len(sizes)
        placed = cluster >= 0
        movable = (
            placed
            & (start + runtime <= arrays.deadline_slot)
            & ~arrays.critical
            & classes.on_time
            & np.isfinite(own_best)
        )
        handed_over = False
        for pair in _pair_order(arrays, classes, table, cluster, start, own_best, movable):
            on_pair = movable & ((cluster == pair[0]) | (cluster == pair[1]))
            options = n_options * arrays.allowed[:, list(pair)].sum(axis=1)
            columns = partial(_pair_columns, pair)
            for freed in _pair_groups(np.flatnonzero(on_pair), start, options, sizes[level]):
                if total.spent(began, lp_iterations, cpu_limit_s) or reached():
                    return total.stats(began)
                if not last and total.lp_iterations >= share:
                    handed_over = True
                    break
                if not total.solve(
                    arrays, classes, table, free, cluster, start, freed, settings, columns
                ):
                    return total.stats(began)  # the plan so far stands, as in polish
            if handed_over:
                break
        if total.kept > kept_before and between is not None:
            between()
        if handed_over or total.kept == kept_before:
            if last:
                break  # a sweep of the largest windows that kept nothing: the next would too
            level += 1
    return total.stats(began)


def _least_priced(
    arrays: InstanceArrays, classes: JobClasses, guide: FloatArray
) -> tuple[IntArray, IntArray]:
    """Each job's on-time start of least ``guide`` cost (allowed clusters only): its
    cluster and start slot (a job with none: cluster -1)."""
    horizon = guide.shape[2]
    slot = np.arange(horizon)
    cost = np.where(arrays.allowed[:, :, None], guide[classes.shape], np.inf)
    window = (slot[None, :] >= classes.lo[:, None]) & (slot[None, :] <= classes.hi[:, None])
    cost = np.where(window[:, None, :], cost, np.inf).reshape(
        arrays.n_jobs, guide.shape[1] * horizon
    )
    flat = np.argmin(cost, axis=1)
    found = np.isfinite(cost[np.arange(arrays.n_jobs), flat])
    least_m: IntArray = np.where(found, flat // horizon, -1)
    least_s: IntArray = flat % horizon
    return least_m, least_s


def _band_columns(
    classes: JobClasses,
    guide: FloatArray,
    support_key: IntArray,
    horizon: int,
    starts: Starts,
    job: IntArray,
    current: BoolArray,
    *,
    max_columns: int,
    n_starts: int = BAND_STARTS,
) -> IntArray | None:
    """A band's columns (:func:`polish_bands`): each freed job's own start, the starts its
    class has weight at in the LP (``support_key``) and its ``n_starts`` least
    ``guide``-priced starts; None (the band is skipped) past ``max_columns``."""
    n_jobs = int(current.sum())  # each freed job has exactly one current start
    n_m = int(guide.shape[1])
    priced = guide[classes.shape[job], starts.cluster, starts.start_slot]
    order = np.lexsort((priced, starts.job))
    first = np.searchsorted(starts.job[order], np.arange(n_jobs))
    rank = np.empty(len(starts), dtype=np.int64)
    rank[order] = np.arange(len(starts)) - first[starts.job[order]]
    key = (classes.klass[job] * n_m + starts.cluster) * (horizon + 1) + starts.start_slot
    keep: IntArray = np.flatnonzero(current | (rank < n_starts) | np.isin(key, support_key))
    return None if keep.shape[0] > max_columns else keep


@dataclass(slots=True)
class _Tally:
    steps: int = 0
    kept: int = 0
    saved_g: float = 0.0
    lp_iterations: int = 0
    guard_bound: bool = False

    def spent(self, began_cpu_s: float, lp_iterations: int, cpu_limit_s: float) -> bool:
        """Whether a band or pair search has spent its ``lp_iterations`` simplex iterations
        or, a guard (then noted), ``cpu_limit_s`` seconds of this thread's CPU since
        ``began_cpu_s``."""
        if self.lp_iterations >= lp_iterations:
            return True
        if time.thread_time() - began_cpu_s >= cpu_limit_s:
            self.guard_bound = True
            return True
        return False

    def solve(
        self,
        arrays: InstanceArrays,
        classes: JobClasses,
        table: FloatArray,
        free: FloatArray,
        cluster: IntArray,
        start: IntArray,
        freed: IntArray,
        options: SolveOptions,
        columns: Columns,
    ) -> bool:
        """One window's sub-MILP (:func:`resolve_jobs`), counted here when one was solved;
        False when HiGHS refused the model or failed (the search ends there)."""
        try:
            outcome = resolve_jobs(
                arrays, classes, table, free, cluster, start, freed, options, columns
            )
        except (InputError, SolverError):
            return False
        if outcome is not None:
            gain, work, _ = outcome
            self.steps += 1
            self.lp_iterations += work + STEP_ITERATIONS
            if gain > 0:
                self.kept += 1
                self.saved_g += gain
        return True

    def stats(self, began_cpu_s: float) -> PolishStats:
        """The search's figures, its CPU counted from ``began_cpu_s`` (this thread's
        CPU, ``time.thread_time``)."""
        return PolishStats(
            steps=self.steps,
            kept=self.kept,
            saved_g=self.saved_g,
            lp_iterations=self.lp_iterations,
            cpu_seconds=time.thread_time() - began_cpu_s,
            guard_bound=self.guard_bound,
        )


def _round(
    arrays: InstanceArrays,
    classes: JobClasses,
    table: FloatArray,
    free: FloatArray,
    cluster: IntArray,
    start: IntArray,
    own_best: FloatArray,
    total: _Tally,
    *,
    steps: int,
    max_jobs: int,
    max_columns: int,
    max_nodes: int,
    lp_iterations: int,
    cpu_limit_s: float,
    wall_guard_s: float,
    rng: np.random.Generator,
    target_g: float | None,
    restart: bool,
    chain_every: int = 0,
    tried: dict[tuple[int, ...], tuple[float, int, bool] | None] | None = None,
) -> bool:
    """One round of :func:`polish`, counted in ``total``; True when the whole search is
    over (nothing left to gain, or a solver failure), False when the round's budget, its
    step limit or a stall ended it.

    ``tried``: the outcome of each window (its jobs, in order) whose sub-MILP changed
    nothing since the plan last changed. The same window on the same plan is the same
    model, whose answer HiGHS (one thread, a node limit) repeats, so it is not solved again:
    its outcome, LP iterations included, counts as if it were, and the plans are those of
    solving it. On few movable jobs with many starts each (the stress shape
    ``horizon_long``: 12 jobs, 500-700 slots) the windows repeat and were most of the
    polish's 120 sub-MILPs (bench/planner.md, "Repeated polish windows")."""
    if tried is None:
        tried = {}
    began = time.thread_time()
    runtime = arrays.runtime_slots
    weight = classes.weight
    spent = stalled = 0
    size = max(2, max_jobs // 2)
    for _ in range(steps):
        if spent >= lp_iterations:
            return False
        if time.thread_time() - began >= cpu_limit_s:
            total.guard_bound = True
            return False
        placed = cluster >= 0
        on_time = placed & (start + runtime <= arrays.deadline_slot)
        movable = on_time & ~arrays.critical & classes.on_time & np.isfinite(own_best)
        idx = np.flatnonzero(placed)
        cost = np.zeros(arrays.n_jobs)
        cost[idx] = table[classes.shape[idx], cluster[idx], start[idx]]
        if target_g is not None and float(weight[idx] @ cost[idx]) <= target_g:
            return True
        excess = np.where(movable, weight * (cost - np.where(movable, own_best, 0.0)), 0.0)
        excess = np.where(excess > 1e-9 * np.maximum(weight * cost, 1.0), excess, 0.0)
        paid = float(excess.sum())
        if paid <= 0:
            return True  # every movable job is at its own cheapest start
        j = int(rng.choice(excess.shape[0], p=excess / paid))
        window = partial(_window, arrays, classes)
        if chain_every > 0 and total.steps % chain_every == chain_every - 1:
            window = partial(_chain_window, arrays, classes, table, cluster, start)
        chosen = window(movable, j, rng, size, max(2, max_columns * size // max_jobs))
        total.steps += 1
        if chosen.shape[0] < 2:
            continue
        options = sub_milp_options(wall_guard_s, max_nodes, restart)
        key = tuple(int(x) for x in chosen)
        if key in tried:
            outcome = tried[key]
        else:
            try:
                outcome = resolve_jobs(
                    arrays, classes, table, free, cluster, start, chosen, options
                )
            except (InputError, SolverError):
                # a model HiGHS refuses (units far out of its range) or a solver failure:
                # the plan so far stands; the polish is an improvement, never a requirement
                return True
        gain, work, proved = outcome or (0.0, 0, False)
        if gain > 0:
            tried.clear()  # the plan changed: every window is a new model
        else:
            tried[key] = outcome
        spent += work + STEP_ITERATIONS
        total.lp_iterations += work + STEP_ITERATIONS
        if gain > 0:
            total.kept += 1
            total.saved_g += gain
        if proved and chosen.shape[0] == int(movable.sum()):
            return True  # every movable job was free and the answer is optimal
        stalled = 0 if gain > 0 else stalled + 1
        if stalled >= STALL_STEPS:
            return False
        # windows grow while their sub-MILPs are cheap and shrink while they are dear
        if work > 2 * STEP_TARGET:
            size = max(2, size * 3 // 4)
        elif work < STEP_TARGET // 2:
            size = min(max_jobs, size + max(1, size // 4))
    return False


@dataclass(frozen=True, slots=True)
class LateRepairStats:
    """What :func:`repair_late` did: sub-MILPs solved, slots of lateness removed, HiGHS's LP
    iterations and CPU seconds."""

    steps: int
    slots_removed: int
    lp_iterations: int
    cpu_seconds: float


def _late_slots(arrays: InstanceArrays, job: IntArray, start: IntArray) -> IntArray:
    """Slots of lateness of each ``job`` started at ``start``."""
    late: IntArray = np.maximum(0, start + arrays.runtime_slots[job] - arrays.deadline_slot[job])
    return late


def _resolve_late(
    arrays: InstanceArrays,
    classes: JobClasses,
    table: FloatArray,
    free: FloatArray,
    cluster: IntArray,
    start: IntArray,
    freed: IntArray,
    options: SolveOptions,
) -> tuple[int, int]:
    """Re-plan the placed jobs ``freed`` (``free`` already holds their room) over their
    on-time starts and each one's current start, least lateness (slots) then least grams.
    Applied when (lateness, grams) falls. Returns the slots of lateness removed (0: no
    change or only grams fell) and HiGHS's LP iterations."""
    problem = build_problem(_freed_arrays(arrays, free, freed), on_time_only=False)
    starts = problem.starts
    job = freed[starts.job]
    late = _late_slots(arrays, job, starts.start_slot)
    current = (starts.cluster == cluster[job]) & (starts.start_slot == start[job])
    if int(current.sum()) != freed.shape[0]:
        return 0, 0  # some freed job is not at a start of the horizon: not ours to move
    keep = np.flatnonzero((late == 0) | current)
    grams = table[classes.shape[job], starts.cluster, starts.start_slot] * classes.weight[job]
    # lexicographic by weights: every plan's grams, scaled, stay under one slot of lateness
    scale = 1.0 / (2.0 * freed.shape[0] * float(np.abs(grams[keep]).max()) + 1.0)
    n_cap = problem.capacity_key.shape[0]
    lower = np.full(problem.row_upper.shape[0], -np.inf)
    lower[n_cap : n_cap + freed.shape[0]] = 1.0
    program = LinearProgram(
        objective=grams[keep] * scale + late[keep],
        matrix=problem.matrix[:, keep],
        row_upper=problem.row_upper,
        maximise=False,
        n_integer=keep.shape[0],
        row_lower=lower,
    )
    solution = solve(program, options, start=current[keep].astype(np.float64))
    work = solution.lp_iterations
    if solution.status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        return 0, work
    chosen = keep[np.flatnonzero(solution.values > 0.5)]
    if not np.array_equal(np.sort(starts.job[chosen]), np.arange(freed.shape[0])):
        return 0, work
    before = (int(late[current].sum()), float(grams[current].sum()))
    after = (int(late[chosen].sum()), float(grams[chosen].sum()))
    if not (after[0] < before[0] or (after[0] == before[0] and after[1] < before[1] - 1e-9)):
        return 0, work
    if not _take(arrays, free, cluster, start, job, starts, chosen):
        return 0, work
    return before[0] - after[0], work


def repair_late(
    arrays: InstanceArrays,
    classes: JobClasses,
    table: FloatArray,
    free: FloatArray,
    cluster: IntArray,
    start: IntArray,
    *,
    max_jobs: int,
    max_columns: int,
    max_nodes: int,
    rounds: int,
    cpu_limit_s: float,
    seed: int,
) -> LateRepairStats:
    """Put late jobs on time by re-planning each with its neighbours exactly, on the plan
    ``free`` / ``cluster`` / ``start`` (changed in place; ``table`` as in :func:`polish`).

    For each late job (non-critical, with an on-time start; the largest first) a window of
    it and the on-time movable jobs whose spans overlap its span most (:func:`_window`, at
    most ``max_jobs`` jobs and ``max_columns`` starts) is freed and solved by a sub-MILP
    (``max_nodes`` nodes, no presolve, the current starts as its first incumbent) whose
    columns are the window's on-time starts and the late job's current start, least
    lateness (slots) then least grams. Rounds go on while they remove lateness; once one
    removes none, with windows twice as large (jobs, starts and nodes) while they do, up
    to ``rounds`` rounds in all, or ``cpu_limit_s`` seconds of CPU (a guard). Every
    change keeps capacity and never raises (lateness, grams) of the freed jobs; a job on
    time stays on time."""
    began = time.thread_time()
    rng = np.random.default_rng(seed)
    runtime = arrays.runtime_slots
    steps = removed = work = 0
    wide = False
    for _ in range(max(0, rounds)):
        late = np.flatnonzero((cluster >= 0) & (start + runtime > arrays.deadline_slot))
        late = late[classes.on_time[late] & ~arrays.critical[late]]
        if late.shape[0] == 0:
            break
        scale = 2 if wide else 1
        progress = False
        for j in late[np.argsort(-(classes.weight[late] * runtime[late]), kind="stable")]:
            j = int(j)
            if start[j] + runtime[j] <= arrays.deadline_slot[j]:
                continue  # put on time by an earlier window
            left = cpu_limit_s - (time.thread_time() - began)
            if left <= 0:
                return LateRepairStats(steps, removed, work, time.thread_time() - began)
            placed = cluster >= 0
            movable = placed & (start + runtime <= arrays.deadline_slot) & ~arrays.critical
            movable &= classes.on_time
            movable[j] = True
            chosen = _window(
                arrays, classes, movable, j, rng, scale * max_jobs, scale * max_columns
            )
            if not np.any(chosen == j):
                chosen = np.sort(np.append(chosen, j))
            options = sub_milp_options(WALL_GUARD_PER_CPU_S * cpu_limit_s, scale * max_nodes, False)
            try:
                with _freed(arrays, free, cluster, start, chosen):
                    gained, spent = _resolve_late(
                        arrays, classes, table, free, cluster, start, chosen, options
                    )
            except (InputError, SolverError):
                gained, spent = 0, 0  # the plan so far stands
            steps += 1
            work += spent
            removed += gained
            progress = progress or gained > 0
        if not progress:
            if wide:
                break
            wide = True
    return LateRepairStats(steps, removed, work, time.thread_time() - began)
