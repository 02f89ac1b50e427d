"""The exact MILP of the ``carbonshift`` objective (issue 13: what is attainable).

Every on-time start of every job, one start per job, capacity per cluster, resource and
slot, least operational + embodied grams; integral starts, solved by HiGHS (one thread)
under a time limit. Prints one JSON row per instance: the LP optimum, the MILP incumbent,
its dual bound, and ``carbonshift``'s plan, each as grams and % above the LP.

Run: ``python bench/planner_milp.py FAMILY N SEED [TIME_LIMIT_S] [incumbent]``
(bench_planner families). With ``incumbent`` HiGHS starts from ``carbonshift``'s plan
(every job on time) as its first incumbent, so its dual bound is the figure to read and
any plan it reports is at least as light as ours. The time limit counts wall seconds. A
first row (the plan's grams, the LP, the columns) is printed before the MILP starts.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.time_indexed import time_indexed


def milp(
    family: str, n_jobs: int, seed: int, time_limit_s: float, given: bool = False
) -> dict[str, object]:
    from carbonshift.planning.backends.highs import SolveOptions, solve
    from carbonshift.planning.problem import on_time_program

    read = time_indexed(family, n_jobs, seed)
    lp, plan, plan_g, plan_cpu_s = read.lp_g, read.plan, read.plan_g, read.plan_cpu_s
    problem, starts, grams = read.problem, read.starts, read.grams
    first = None
    if given:
        if read.ours_late:
            raise SystemExit(
                f"carbonshift's plan starts {read.ours_late} job(s) late; "
                "'incumbent' needs every job on time: run without it"
            )
        first = read.ours.astype(float)
    # the plan's row first, so that a run stopped from outside still leaves it
    print(json.dumps({"plan_g": plan_g, "lp_g": lp, "columns": len(starts)}), flush=True)
    began = time.perf_counter()
    cpu_began = time.thread_time()
    sol = solve(
        on_time_program(problem, grams),
        SolveOptions(integer=True, time_limit_s=time_limit_s, mip_gap=1e-4),
        start=first,
    )
    milp_cpu_s = time.thread_time() - cpu_began
    wall = time.perf_counter() - began
    incumbent = sol.objective if sol.values.size else None

    pct = read.above_lp_pct
    return {
        **read.row(),
        "milp_status": sol.status.value,
        "milp_incumbent_g": incumbent,
        "milp_dual_bound_g": sol.bound,
        "milp_s": round(wall, 1),
        "milp_cpu_s": round(milp_cpu_s, 1),
        "incumbent_given": given,
        "certified_bound_g": None if plan.bound is None else plan.bound.lower_bound_g,
        "incumbent_above_lp_pct": pct(incumbent),
        "dual_bound_above_lp_pct": pct(sol.bound if np.isfinite(sol.bound) else None),
        "carbonshift_g": plan_g,
        "carbonshift_above_lp_pct": pct(plan_g),
        "carbonshift_cpu_s": round(plan_cpu_s, 2),
    }


if __name__ == "__main__":
    fam, n, sd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    limit = float(sys.argv[4]) if len(sys.argv) > 4 else 120.0
    given = len(sys.argv) > 5 and sys.argv[5] == "incumbent"
    print(json.dumps(milp(fam, n, sd, limit, given)), flush=True)
