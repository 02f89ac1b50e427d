"""A late plan's least lateness (bench/planner.md, "A late plan's least lateness").

One instance per call; prints one JSON line per run: ``carbonshift`` with step 8b off
(``late_milp_columns=0``: the plans of before) and on (the default), each with its jobs
left out, late jobs, total lateness in slots, grams and CPU seconds, and, with a time limit
given, HiGHS's MILP of the least total lateness over every start (every job placed, one
thread, wall seconds): its lateness and dual bound, the reference.

    PYTHONPATH=src:. .venv/bin/python bench/late_plans.py trace-pwa 1000 0 [MILP_LIMIT_S]
    PYTHONPATH=src:. .venv/bin/python bench/late_plans.py ten-zone 1000 0 0.7 [MILP_LIMIT_S]

Families: those of ``bench/bench_planner.py`` (``FAMILY N SEED``), and ``ten-zone N SEED F``
with every cluster's capacity times F (``bench/late_bound.py``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_planner import build
from bench.late_bound import scaled_ten_zone
from carbonshift.domain import Instance
from carbonshift.domain.scoring import score_plan
from carbonshift.planning.backends.highs import SolveOptions, solve
from carbonshift.planning.problem import arrays_of, build_problem, every_job_once
from carbonshift.planning.registry import run_policy


def lateness(inst: Instance, plan: object) -> tuple[int, int, int]:
    """Jobs left out, late jobs and total lateness (slots) of ``plan``."""
    jobs = {j.id: j for j in inst.jobs}
    over = [
        max(0, a.start_slot + jobs[a.job].runtime_slots - jobs[a.job].deadline_slot)
        for a in plan.assignments  # type: ignore[attr-defined]
    ]
    return len(plan.unscheduled), sum(o > 0 for o in over), sum(over)  # type: ignore[attr-defined]


def run(inst: Instance, params: dict[str, object]) -> dict[str, object]:
    began = time.process_time()
    result = run_policy("carbonshift", inst, params)
    cpu_s = time.process_time() - began
    out, late, slots = lateness(inst, result.plan)
    stats = {k: v for k, v in result.stats.items() if k.startswith("late_milp")}
    return {
        "params": params,
        "left_out": out,
        "late_jobs": late,
        "lateness_slots": slots,
        "grams": round(score_plan(inst, result.plan).carbon_g, 1),
        "cpu_s": round(cpu_s, 2),
        **stats,
    }


def least_lateness_milp(inst: Instance, limit_s: float) -> dict[str, object]:
    """HiGHS on every start, every job placed once, least total lateness."""
    arrays = arrays_of(inst)
    problem = build_problem(arrays, on_time_only=False)
    st = problem.starts
    late = np.maximum(
        0, st.start_slot + arrays.runtime_slots[st.job] - arrays.deadline_slot[st.job]
    ).astype(float)
    model = every_job_once(problem, late)
    began = time.perf_counter()
    sol = solve(model, SolveOptions(integer=True, time_limit_s=limit_s, mip_gap=1e-6))
    return {
        "milp_status": sol.status.value,
        "milp_lateness_slots": sol.objective if sol.values.size else None,
        "milp_dual_bound": sol.bound,
        "milp_wall_s": round(time.perf_counter() - began, 1),
        "columns": len(st),
    }


def main(argv: list[str]) -> None:
    family, n, seed = argv[0], int(argv[1]), int(argv[2])
    rest = argv[3:]
    if family == "ten-zone" and rest:
        inst = scaled_ten_zone(n, seed, float(rest[0]))
        rest = rest[1:]
    else:
        inst = build(family, n, seed)
    head = {"family": family, "jobs": n, "seed": seed, "argv": argv}
    for params in ({"late_milp_columns": 0}, {}):
        print(json.dumps({**head, **run(inst, params)}), flush=True)
    if rest:
        print(json.dumps({**head, **least_lateness_milp(inst, float(rest[0]))}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
