"""The time-indexed model the two exact benchmarks solve, built once for both.

``bench/planner_milp.py`` (HiGHS) and ``bench/planner_cpsat.py`` (CP-SAT) read an instance
the same way: a bench_planner family instance, its LP optimum, ``carbonshift``'s plan (its
CPU seconds and grams), every on-time start of every job as a column with the planner's own
grams (the shape table at (shape, cluster, start) x the job's weight), and the plan as a
0/1 vector over those columns (the MILP's first incumbent, CP-SAT's hint).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.bench_planner import build, exact_lp

__all__ = ["TimeIndexed", "time_indexed"]


@dataclass(frozen=True, slots=True)
class TimeIndexed:
    """One instance read for an exact solver."""

    family: str
    n_jobs: int
    seed: int
    inst: Any
    lp_g: float | None
    plan: Any
    """``carbonshift``'s result (``run_policy``)."""
    plan_g: float
    plan_cpu_s: float
    arrays: Any
    problem: Any
    """``build_problem(arrays, on_time_only=True)``: its ``starts`` are the columns."""
    grams: npt.NDArray[np.float64]
    """The planner's grams per column."""
    ours: npt.NDArray[np.bool_]
    """Per column: whether ``carbonshift``'s plan starts there."""
    ours_late: int
    """``carbonshift``'s assignments that are no on-time start (no column)."""

    @property
    def starts(self) -> Any:
        return self.problem.starts

    def above_lp_pct(self, grams: float | None) -> float | None:
        """``grams`` as % above the LP optimum (None without either)."""
        lp = self.lp_g
        return None if grams is None or lp is None else round(100 * (grams - lp) / lp, 3)

    def row(self) -> dict[str, object]:
        """The first fields of a benchmark's JSON row: the instance and its LP optimum."""
        return {
            "family": self.family,
            "jobs": self.n_jobs,
            "seed": self.seed,
            "columns": len(self.starts),
            "lp_g": self.lp_g,
        }


def time_indexed(family: str, n_jobs: int, seed: int) -> TimeIndexed:
    """Build ``family``'s instance of ``n_jobs`` jobs from ``seed`` and read it as above."""
    from carbonshift.domain import score_plan
    from carbonshift.planning import run_policy
    from carbonshift.planning.lagrangian import classes_of, shape_costs, unit_grams
    from carbonshift.planning.problem import arrays_of, build_problem

    inst = build(family, n_jobs, seed)
    lp, _, _ = exact_lp(inst, 600.0)
    began = time.process_time()
    plan = run_policy("carbonshift", inst, {})
    plan_cpu_s = time.process_time() - began
    plan_g = score_plan(inst, plan.plan).carbon_g
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    problem = build_problem(arrays, on_time_only=True)
    starts = problem.starts
    grams = (
        table[classes.shape[starts.job], starts.cluster, starts.start_slot]
        * classes.weight[starts.job]
    )
    job_of = {job.id: j for j, job in enumerate(inst.jobs)}
    cluster_of = {c.name: m for m, c in enumerate(inst.clusters)}
    column = {
        (int(j), int(m), int(s)): k
        for k, (j, m, s) in enumerate(
            zip(starts.job, starts.cluster, starts.start_slot, strict=True)
        )
    }
    ours = np.zeros(len(starts), dtype=bool)
    late = 0
    for a in plan.plan.assignments:
        k = column.get((job_of[a.job], cluster_of[a.cluster], a.start_slot))
        if k is None:
            late += 1
        else:
            ours[k] = True
    return TimeIndexed(
        family, n_jobs, seed, inst, lp, plan, plan_g, plan_cpu_s, arrays, problem, grams, ours, late
    )
