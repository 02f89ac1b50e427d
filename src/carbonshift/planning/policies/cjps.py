"""CJPS (Bahreini, Tantawi, Youssef): RR-APX, SRR-APX and the exact MILP reference.

All three maximise green resource utilisation, GRU = sum over clusters and slots of (jobs'
use + ``future_weight`` x reserved future use) / max(1, I) (CJPS eq. 6 and the objective
after eq. 6), over on-time starts only (eq. 2, read as ALGORITHMS.md fixes it: a job may
finish exactly at its deadline), with capacity covering jobs and reserved future demand (eq.
5), each job at most once, and each slot's forecast demand reserved at most once, in that
slot or later (eqs. 3-4). The paper calls ``future_weight`` gamma (prioritisation factor).
Jobs without an on-time start in the horizon are unscheduled: CJPS only places on time.

``exact`` also solves the other objective users come for (``objective="grams"``, its
default): the least operational + embodied grams (docs/formats.md scores) with every
deadline as a hard constraint, and, when no plan puts every job on time, the least total
lateness first. The CJPS reproduction and benchmarks pin ``objective="gru"``.
"""

from __future__ import annotations

import time

import numpy as np
import numpy.typing as npt

from carbonshift.domain import Instance
from carbonshift.errors import InputError
from carbonshift.planning.backends.highs import LpMethod, Solution, SolveOptions, solve
from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.policies._common import release_order, result_of
from carbonshift.planning.problem import (
    StartProblem,
    arrays_of,
    build_problem,
    carbon_g,
    future_gru,
    gru,
    linear_program,
    on_time_program,
)
from carbonshift.planning.types import PlanContext, PlanStatus, PolicyResult, SolveStatus

#: LP answers a policy can use (PDLP may stop "unknown" holding a near-optimal point).
_USABLE = (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE)

__all__ = ["EXACT_OBJECTIVES", "cjps_problem", "exact", "rr", "srr"]

#: What ``exact`` minimises or maximises: grams (the default) or CJPS's GRU.
EXACT_OBJECTIVES = ("grams", "gru")

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def cjps_problem(
    instance: Instance, context: PlanContext | None, future_weight: float
) -> tuple[StartProblem, FloatArray, FloatArray]:
    """The CJPS model: problem, job GRU coefficients and weighted future coefficients."""
    if not 0 <= future_weight <= 1:
        raise InputError(
            f"future_weight is {future_weight}; give a weight in [0, 1] (paper: gamma)"
        )
    arrays = arrays_of(instance, context)
    with_future = future_weight > 0 and bool(np.any(arrays.future_units > 0))
    problem = build_problem(arrays, on_time_only=True, with_future=with_future)
    job_gru = gru(arrays, problem.starts)
    future_obj = future_weight * future_gru(arrays, problem.future)
    return problem, job_gru, future_obj


def _relaxation(
    instance: Instance, context: PlanContext | None, future_weight: float, options: SolveOptions
) -> tuple[StartProblem, FloatArray, Solution]:
    problem, job_gru, future_obj = cjps_problem(instance, context, future_weight)
    lp = linear_program(problem, job_gru, future_objective=future_obj)
    solution = solve(lp, options)
    return problem, job_gru, solution


def _draw(
    problem: StartProblem, x_bar: FloatArray, rng: np.random.Generator, samples: int
) -> IntArray:
    """Roll each job's die ``samples`` times: column index drawn with probability
    ``x_bar``, or -1 ("not placed") with the remaining probability. Shape (samples, jobs)."""
    n = problem.arrays.n_jobs
    job = problem.starts.job
    p = np.clip(x_bar, 0.0, 1.0)
    cum = np.cumsum(p)
    bounds = np.searchsorted(job, np.arange(n + 1))
    base = np.concatenate([[0.0], cum])[bounds[:-1]]
    end = np.concatenate([[0.0], cum])[bounds[1:]]
    u = rng.random((samples, n))
    target = base[None, :] + u
    column = np.searchsorted(cum, target, side="right")
    inside = target < end[None, :]
    column = np.where(inside, np.minimum(column, len(job) - 1), -1)
    # guard against a float edge landing in the next job's range
    ok = column >= 0
    ok[ok] = job[column[ok]] == np.nonzero(ok)[1]
    result: IntArray = np.where(ok, column, -1).astype(np.int64)
    return result


def _reserve_future(ledger: CapacityLedger, problem: StartProblem, z: FloatArray) -> None:
    fut = problem.future
    for col in np.flatnonzero(z > 1e-12):
        ledger.reserve(int(fut.cluster[col]), 0, int(fut.slot[col]), float(z[col] * fut.units[col]))


def _lp_stats(solution: Solution) -> dict[str, float]:
    # a bound only when proved optimal (an interior point stopped early is "feasible")
    key = "lp_bound_gru" if solution.status is SolveStatus.OPTIMAL else "lp_objective_gru"
    return {key: solution.objective, "lp_seconds": solution.seconds}


def rr(
    instance: Instance,
    context: PlanContext | None = None,
    *,
    future_weight: float = 1.0,
    seed: int = 0,
    lp_method: LpMethod = LpMethod.AUTO,
    lp_time_limit_s: float = 60.0,
) -> PolicyResult:
    """RR-APX (CJPS section III-A, Algorithm 1): solve the LP relaxation, then for each job
    independently draw (cluster, start) with probability ``x_bar`` (lines 3-5), keeping the
    LP's future reservations. The plan may overload capacity: its status is then
    ``overloaded`` and ``stats["overloaded_cells"]`` counts (cluster, resource, slot) cells
    where the jobs exceed capacity (``..._with_reservations``: jobs plus reserved future
    demand, CJPS eq. 5)."""
    began = time.perf_counter()
    problem, _, solution = _relaxation(
        instance,
        context,
        future_weight,
        SolveOptions(method=lp_method, time_limit_s=lp_time_limit_s),
    )
    if solution.status not in _USABLE:
        return _no_solution(instance, "rr", began, solution)
    n_x = len(problem.starts)
    draw = _draw(problem, solution.values[:n_x], np.random.default_rng(seed), 1)[0]
    ledger = CapacityLedger(problem.arrays)  # jobs only: the plan's own feasibility
    reserved = CapacityLedger(problem.arrays)  # jobs plus the LP's future reservations
    _reserve_future(reserved, problem, solution.values[n_x:])
    chosen: dict[int, tuple[int, int]] = {}
    notes: dict[int, str] = {}
    for i, col in enumerate(draw):
        if col < 0:
            notes[i] = _why_not_drawn(problem, i)
            continue
        c, s = int(problem.starts.cluster[col]), int(problem.starts.start_slot[col])
        ledger.place(i, c, s)
        reserved.place(i, c, s)
        chosen[i] = (c, s)
        notes[i] = f"rr: drawn with LP probability {solution.values[col]:.3g}"
    over = int(np.sum(ledger.free_units < -1e-9))
    over_reserved = int(np.sum(reserved.free_units < -1e-9))
    stats = {
        **_lp_stats(solution),
        "overloaded_cells": float(over),
        "overloaded_cells_with_reservations": float(over_reserved),
    }
    status = PlanStatus.OVERLOADED if over else PlanStatus.FEASIBLE
    return result_of(
        instance,
        "rr",
        chosen,
        seconds=time.perf_counter() - began,
        status=status,
        notes=notes,
        stats=stats,
    )


def _why_not_drawn(problem: StartProblem, job: int) -> str:
    lo, hi = np.searchsorted(problem.starts.job, [job, job + 1])
    if lo == hi:
        return "cjps: no on-time start in the horizon on an allowed cluster"
    return "cjps: the die fell on 'not placed' (the LP placed this job only in part)"


def srr(
    instance: Instance,
    context: PlanContext | None = None,
    *,
    samples: int = 20,
    future_weight: float = 1.0,
    seed: int = 0,
    lp_method: LpMethod = LpMethod.AUTO,
    lp_time_limit_s: float = 60.0,
    late_fallback: bool = True,
) -> PolicyResult:
    """SRR-APX (CJPS section III-B, Algorithm 2): ``samples`` (S) roundings of the LP
    solution; within a sample a drawn job that would overload any (cluster, resource, slot)
    is dropped (lines 11-17); keep the sample with the fewest dropped jobs, ties by higher
    GRU (lines 22-24). Capacity starts from what the LP reserved for future demand.
    Never overloads.

    CJPS only places on-time starts, so a job whose deadline can no longer be met would
    wait for ever in online use; with ``late_fallback`` (default) such a job takes its
    earliest start with room after the rounding (fail open), and ``--explain`` says so."""
    if samples < 1:
        raise InputError(f"samples is {samples}; give a whole number of samples >= 1")
    began = time.perf_counter()
    problem, job_gru, solution = _relaxation(
        instance,
        context,
        future_weight,
        SolveOptions(method=lp_method, time_limit_s=lp_time_limit_s),
    )
    if solution.status not in _USABLE:
        return _no_solution(instance, "srr", began, solution)
    n_x = len(problem.starts)
    draws = _draw(problem, solution.values[:n_x], np.random.default_rng(seed), samples)
    start_ledger = CapacityLedger(problem.arrays)
    _reserve_future(start_ledger, problem, solution.values[n_x:])
    best: tuple[int, float] | None = None
    best_chosen: dict[int, tuple[int, int]] = {}
    best_dropped: list[int] = []
    for draw in draws:
        ledger = CapacityLedger(problem.arrays)
        ledger.free_units[...] = start_ledger.free_units
        chosen: dict[int, tuple[int, int]] = {}
        dropped: list[int] = []
        value = 0.0
        for i, col in enumerate(draw):
            if col < 0:
                continue
            c, s = int(problem.starts.cluster[col]), int(problem.starts.start_slot[col])
            if ledger.fits(i, c, s):
                ledger.place(i, c, s)
                chosen[i] = (c, s)
                value += float(job_gru[col])
            else:
                dropped.append(i)
        key = (len(dropped), -value)
        if best is None or key < (best[0], -best[1]):
            best = (len(dropped), value)
            best_chosen, best_dropped = chosen, dropped
    notes: dict[int, str] = {}
    for i in range(problem.arrays.n_jobs):
        if i in best_chosen:
            notes[i] = f"srr: drawn in the best of {samples} samples"
        elif i in best_dropped:
            notes[i] = "srr: drawn, but its start would overload capacity; dropped"
        else:
            notes[i] = _why_not_drawn(problem, i)
    if late_fallback:
        ledger = CapacityLedger(problem.arrays)
        ledger.free_units[...] = start_ledger.free_units
        for i, (c, s) in best_chosen.items():
            ledger.place(i, c, s)
        _overdue_fallback(problem, ledger, best_chosen, notes, "srr")
    stats = {**_lp_stats(solution), "dropped_jobs": float(len(best_dropped))}
    return result_of(
        instance,
        "srr",
        best_chosen,
        seconds=time.perf_counter() - began,
        notes=notes,
        stats=stats,
    )


def _chosen_starts(problem: StartProblem, values: FloatArray) -> dict[int, tuple[int, int]]:
    """Job -> (cluster, start slot) of the MILP's chosen start columns (value > 0.5)."""
    picked = np.flatnonzero(values[: len(problem.starts)] > 0.5)
    return {
        int(problem.starts.job[col]): (
            int(problem.starts.cluster[col]),
            int(problem.starts.start_slot[col]),
        )
        for col in picked
    }


def exact(
    instance: Instance,
    context: PlanContext | None = None,
    *,
    objective: str = "grams",
    future_weight: float = 1.0,
    time_limit_s: float = 60.0,
    mip_gap: float = 1e-4,
    late_fallback: bool = True,
) -> PolicyResult:
    """A reference optimum by HiGHS branch and bound, with ``time_limit_s`` and relative
    ``mip_gap``, of one of two objectives.

    ``objective="gru"``: the CJPS-MILP (CJPS section II, objective after eq. 6): x binary,
    future reservations z continuous; ``stats`` has ``mip_bound_gru`` (dual bound),
    ``mip_gap`` and ``objective_gru``; ``late_fallback`` places jobs with no on-time start
    left as :func:`srr` does.

    ``objective="grams"`` (default): the least operational + embodied grams with every job
    on time (the time-indexed MILP whose LP relaxation is the ``carbonshift`` bound);
    ``stats`` has ``objective_g``, ``mip_bound_g`` (a lower bound on the grams of every plan
    that puts every job on time) and ``mip_gap``. When no such plan exists, one MILP over
    every start places as many jobs as fit, then least total lateness (slots), then least
    grams (``late_fallback``; without it, as many jobs on time as fit, then least grams),
    solved to gap 0 because the weights make a relative gap meaningless; ``stats`` then has
    ``lateness_slots``. ``future_weight`` is part of GRU only (grams reserve nothing).

    Status ``optimal`` when proved within the gap, ``time_limit`` when stopped with a plan,
    ``no_solution`` (every job unscheduled) when stopped without one."""
    if objective == "gru":
        return _exact_gru(instance, context, future_weight, time_limit_s, mip_gap, late_fallback)
    if objective == "grams":
        return _exact_grams(instance, context, time_limit_s, mip_gap, late_fallback)
    raise InputError(f"objective is {objective!r}; give one of {', '.join(EXACT_OBJECTIVES)}")


def _exact_gru(
    instance: Instance,
    context: PlanContext | None,
    future_weight: float,
    time_limit_s: float,
    mip_gap: float,
    late_fallback: bool,
) -> PolicyResult:
    began = time.perf_counter()
    problem, job_gru, future_obj = cjps_problem(instance, context, future_weight)
    lp = linear_program(problem, job_gru, future_objective=future_obj)
    solution = solve(lp, SolveOptions(integer=True, time_limit_s=time_limit_s, mip_gap=mip_gap))
    if solution.status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        return _no_solution(instance, "exact", began, solution)
    chosen = _chosen_starts(problem, solution.values)
    notes: dict[int, str] = {}
    for i in range(problem.arrays.n_jobs):
        if i in chosen:
            notes[i] = "exact: placed by the MILP optimum"
        else:
            lo, hi = np.searchsorted(problem.starts.job, [i, i + 1])
            notes[i] = (
                "cjps: no on-time start in the horizon on an allowed cluster"
                if lo == hi
                else "exact: leaving it out maximises GRU (no room on time, or it would "
                "displace greener use)"
            )
    if late_fallback:
        ledger = CapacityLedger(problem.arrays)
        _reserve_future(ledger, problem, solution.values[len(problem.starts) :])
        for i, (c, s) in chosen.items():
            ledger.place(i, c, s)
        _overdue_fallback(problem, ledger, chosen, notes, "exact")
    status = PlanStatus.OPTIMAL if solution.status is SolveStatus.OPTIMAL else PlanStatus.TIME_LIMIT
    stats = {
        "objective_gru": solution.objective,
        "mip_bound_gru": solution.bound,
        "mip_gap": solution.gap,
        "solver_seconds": solution.seconds,
    }
    return result_of(
        instance,
        "exact",
        chosen,
        seconds=time.perf_counter() - began,
        status=status,
        notes=notes,
        stats=stats,
    )


def _exact_grams(
    instance: Instance,
    context: PlanContext | None,
    time_limit_s: float,
    mip_gap: float,
    late_fallback: bool,
) -> PolicyResult:
    began = time.perf_counter()
    arrays = arrays_of(instance, context)
    n = arrays.n_jobs
    on_time = build_problem(arrays, on_time_only=True)
    every_job_has_a_start = bool(np.all(np.bincount(on_time.starts.job, minlength=n) > 0))
    stats: dict[str, float] = {}
    solution: Solution | None = None
    problem = on_time
    if every_job_has_a_start:
        grams = carbon_g(arrays, on_time.starts)
        options = SolveOptions(integer=True, time_limit_s=time_limit_s, mip_gap=mip_gap)
        solution = solve(on_time_program(on_time, grams), options)
        if solution.status in _USABLE:
            stats = {
                "objective_g": solution.objective,
                "mip_bound_g": solution.bound,
                "mip_gap": solution.gap,
            }
        elif solution.status is not SolveStatus.INFEASIBLE:
            return _no_solution(instance, "exact", began, solution)
    if solution is None or solution.status is SolveStatus.INFEASIBLE:
        # no plan puts every job on time: placed jobs, then lateness, then grams, as weights
        left = time_limit_s - (solution.seconds if solution is not None else 0.0)
        problem = build_problem(arrays, on_time_only=not late_fallback)
        starts = problem.starts
        grams = carbon_g(arrays, starts)
        scale = float(np.sum(np.abs(grams))) + 1.0
        end = starts.start_slot + arrays.runtime_slots[starts.job]
        late = np.maximum(0, end - arrays.deadline_slot[starts.job]).astype(float)
        # leaving a job out costs more than all lateness together; grams weigh under 1
        reward = float(np.sum(late)) + 2.0
        program = linear_program(problem, grams / scale + late - reward, maximise=False)
        options = SolveOptions(integer=True, time_limit_s=max(left, 0.001), mip_gap=0.0)
        solution = solve(program, options)
        if solution.status not in _USABLE:
            return _no_solution(instance, "exact", began, solution)
    chosen = _chosen_starts(problem, solution.values)
    ends = {i: s + int(arrays.runtime_slots[i]) for i, (_, s) in chosen.items()}
    lateness = sum(max(0, e - int(arrays.deadline_slot[i])) for i, e in ends.items())
    if problem is not on_time:
        stats = {"lateness_slots": float(lateness)}
    notes: dict[int, str] = {}
    for i in range(n):
        if i not in chosen:
            notes[i] = (
                "exact: no start with room in the horizon beside the other jobs"
                if late_fallback
                else "exact: no on-time start with room (late_fallback is off)"
            )
        elif ends[i] > arrays.deadline_slot[i]:
            notes[i] = "exact: no plan keeps every deadline; least total lateness, then grams"
        else:
            notes[i] = "exact: placed by the least-grams MILP optimum"
    status = PlanStatus.OPTIMAL if solution.status is SolveStatus.OPTIMAL else PlanStatus.TIME_LIMIT
    stats["solver_seconds"] = solution.seconds
    return result_of(
        instance,
        "exact",
        chosen,
        seconds=time.perf_counter() - began,
        status=status,
        notes=notes,
        stats=stats,
    )


def _overdue_fallback(
    problem: StartProblem,
    ledger: CapacityLedger,
    chosen: dict[int, tuple[int, int]],
    notes: dict[int, str],
    policy: str,
) -> None:
    """Jobs with no on-time start left (the CJPS model has no column for them) take their
    earliest start with room, in release order: they fail open instead of waiting for ever.
    Jobs that still have on-time starts are left to the model."""
    arrays = problem.arrays
    has_on_time = np.zeros(arrays.n_jobs, dtype=bool)
    has_on_time[problem.starts.job] = True
    for i in release_order(arrays):
        if i in chosen or has_on_time[i]:
            continue
        best: tuple[int, int] | None = None
        for c in np.flatnonzero(arrays.allowed[i]):
            ok = ledger.fitting_starts(i, int(c))
            ok[: int(arrays.release_slot[i])] = False
            if ok.any():
                start = int(np.argmax(ok))
                if best is None or start < best[1]:
                    best = (int(c), start)
        if best is not None:
            ledger.place(i, *best)
            chosen[i] = best
            notes[i] = (
                f"{policy}: its deadline can no longer be met; earliest start with room "
                "(late, fail open)"
            )


def _no_solution(instance: Instance, policy: str, began: float, solution: Solution) -> PolicyResult:
    why = f"{policy}: the solver stopped without a solution ({solution.detail})"
    notes = dict.fromkeys(range(len(instance.jobs)), why)
    return result_of(
        instance,
        policy,
        {},
        seconds=time.perf_counter() - began,
        status=PlanStatus.NO_SOLUTION,
        notes=notes,
        stats={"solver_seconds": solution.seconds},
    )
