"""A lower bound that keeps each cluster's packing integral (issue 13: what is attainable).

The time-indexed LP's job rows (one start per job) are relaxed with multipliers ``u`` (the
job LP's duals); what is left splits by cluster. For any ``u``

    L(u) = sum_j u_j + sum_m min { sum (c_jms - u_j) x_jms : x binary, at most one start
           per job on m, the capacity of m per resource and slot }

is a lower bound on the grams of every on-time plan (weak duality: a plan's starts are
feasible for every cluster's problem, and the job rows hold for it). Each cluster's least
value is taken as HiGHS's MILP dual bound, so ``L`` is proved whatever the time limits;
with each cluster's LP instead of its MILP, ``L(u)`` at the LP's duals is the LP optimum
(printed as a check). Prints JSON rows: the LP, that check, ``L`` and, per cluster, the
dual bound, the best integral answer (not a bound) and HiGHS's status.

Run: ``python bench/planner_cluster_bound.py FAMILY N SEED [SECONDS_PER_CLUSTER]``
(bench_planner families; bench/planner.md, "Quality at 500-3,000 jobs").
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_planner import build


def cluster_bound(family: str, n_jobs: int, seed: int, limit_s: float) -> None:
    from carbonshift.planning.backends.highs import SolveOptions, solve
    from carbonshift.planning.lagrangian import classes_of, shape_costs, unit_grams
    from carbonshift.planning.problem import (
        LinearProgram,
        arrays_of,
        build_problem,
        on_time_program,
    )

    arrays = arrays_of(build(family, n_jobs, seed))
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    problem = build_problem(arrays, on_time_only=True)
    starts = problem.starts
    job, cluster, start = starts.job, starts.cluster, starts.start_slot
    cost = table[classes.shape[job], cluster, start] * classes.weight[job]
    lp = solve(on_time_program(problem, cost), SolveOptions(time_limit_s=600.0))
    n_cap = problem.capacity_key.shape[0]
    u = lp.row_duals[n_cap : n_cap + arrays.n_jobs]
    runtime = arrays.runtime_slots[job]
    n_clusters, n_resources, horizon = arrays.free_units.shape
    print(json.dumps({"instance": f"{family} {n_jobs} seed {seed}", "lp_g": lp.objective}))

    def least(m: int, integer: bool) -> tuple[float, float, str]:
        """Cluster ``m``'s least reduced grams: (bound, best answer found, status)."""
        cols = np.flatnonzero((cluster == m) & (cost - u[job] < 0))
        if cols.size == 0:
            return 0.0, 0.0, "no column"
        # capacity rows (resource, slot) of the cells each run holds, then one row per job
        span = runtime[cols]
        col_of = np.repeat(np.arange(cols.size), span)
        slot = np.repeat(start[cols], span) + (
            np.arange(span.sum()) - np.repeat(np.cumsum(span) - span, span)
        )
        blocks = []
        for k in range(n_resources):
            demand = arrays.demand_units[job[cols], k]
            blocks.append(
                sp.csc_matrix((demand[col_of], (slot, col_of)), shape=(horizon, cols.size))
            )
        jobs_here, row_of = np.unique(job[cols], return_inverse=True)
        blocks.append(
            sp.csc_matrix(
                (np.ones(cols.size), (row_of, np.arange(cols.size))),
                shape=(jobs_here.size, cols.size),
            )
        )
        program = LinearProgram(
            objective=cost[cols] - u[job[cols]],
            matrix=sp.vstack(blocks).tocsc(),
            row_upper=np.concatenate([arrays.free_units[m].reshape(-1), np.ones(jobs_here.size)]),
            maximise=False,
            n_integer=cols.size,
        )
        found = solve(program, SolveOptions(integer=integer, time_limit_s=limit_s, mip_gap=1e-7))
        return found.bound, found.objective, found.detail

    relaxed = float(u.sum()) + sum(least(m, False)[0] for m in range(n_clusters))
    print(json.dumps({"check_lp_relaxed_L_g": relaxed}))
    parts = [least(m, True) for m in range(n_clusters)]
    bound = float(u.sum()) + sum(p[0] for p in parts)
    found = float(u.sum()) + sum(p[1] for p in parts)
    print(
        json.dumps(
            {
                "bound_g": bound,
                "bound_above_lp_pct": 100 * (bound - lp.objective) / lp.objective,
                "answers_sum_g": found,
                "answers_above_lp_pct": 100 * (found - lp.objective) / lp.objective,
                "per_cluster": [{"bound": p[0], "answer": p[1], "status": p[2]} for p in parts],
            }
        )
    )


if __name__ == "__main__":
    fam, n, sd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    cluster_bound(fam, n, sd, float(sys.argv[4]) if len(sys.argv) > 4 else 60.0)
