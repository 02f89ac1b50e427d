"""Random small instances through every policy, judged by the independent checker (issue 13).

Each instance is drawn as a CONTRACTS.md instance file by the property test's generator
(``tests/planning/draw.py``, here from numpy seeds: 1-3 clusters, 1-2 resources,
constant or per-slot capacity, few distinct intensities with zeros and ties, critical jobs,
releases up to the horizon's edge, deadlines already past), read by carbonshift's instance
reader, planned by each policy, written as the plan JSON (with scores and bound) and checked
by ``tests/planning/independent.py``, which imports no carbonshift code and solves its own
time-indexed LP and lexicographic MILP with highspy. The rules each policy promises are the
property test's (``tests/planning/test_independent.py``, ``POLICIES``).

Run: ``PYTHONPATH=src:. python bench/independent_check.py [--instances 200] [--seeds 0,1,2]
[--policies carbonshift,window] [--jobs 8] [--horizon 8]``. Prints one JSON line per
(policy, seed) and a markdown table; the figures are in ``bench/planner.md``. Point
``PYTHONPATH`` at another checkout's ``src`` to judge its planner with this checker.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import Counter
from typing import Any

import numpy as np
from tests.planning import independent
from tests.planning.draw import NumpyChooser, draw_instance
from tests.planning.test_independent import POLICIES

from carbonshift.domain import score_plan
from carbonshift.formats import instance_from_dict
from carbonshift.formats.plan import plan_to_dict
from carbonshift.planning import run_policy


def run(policy: str, seed: int, n: int, max_jobs: int, max_horizon: int) -> dict[str, Any]:
    params, rules = POLICIES[policy]
    parsed = dict(p.split("=", 1) for p in params)
    choose = NumpyChooser(np.random.default_rng(seed))
    broken: Counter[str] = Counter()
    instances_broken = 0
    worst_bound_over_lp = 0.0
    bounds = 0
    first: dict[str, Any] | None = None
    cpu = time.process_time()
    for _ in range(n):
        doc = draw_instance(choose, max_jobs, max_horizon)
        inst = instance_from_dict(doc)
        result = run_policy(policy, inst, parsed)
        plan = json.loads(
            json.dumps(plan_to_dict(result.plan, score_plan(inst, result.plan), result.bound))
        )
        report = independent.check(doc, plan, **rules)
        if not report.ok:
            instances_broken += 1
            broken.update(report.violations.keys())
            if first is None:
                first = {"instance": doc, "why": str(report)}
        b = (plan.get("bound") or {}).get("lower_bound_g")
        if b is not None and report.lp_g:
            bounds += 1
            worst_bound_over_lp = max(worst_bound_over_lp, b / report.lp_g - 1)
    return {
        "policy": policy,
        "seed": seed,
        "instances": n,
        "instances_broken": instances_broken,
        "by_rule": dict(broken),
        "bounds_checked": bounds,
        "worst_bound_over_lp": worst_bound_over_lp,
        "cpu_s": round(time.process_time() - cpu, 2),
        "first": first,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--horizon", type=int, default=8)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # caspian's and window's notices, once per instance
    rows = []
    for policy in args.policies.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            row = run(policy, seed, args.instances, args.jobs, args.horizon)
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "first"}), flush=True)
            if row["first"] is not None:
                print("  first:", json.dumps(row["first"])[:2000], file=sys.stderr, flush=True)
    print(
        "\n| policy | seed | instances | with a violation | by rule | bounds checked "
        "| worst B / LP - 1 | CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        rules = ", ".join(f"{k} {v}" for k, v in sorted(r["by_rule"].items())) or "-"
        print(
            f"| {r['policy']} | {r['seed']} | {r['instances']} | {r['instances_broken']} | "
            f"{rules} | {r['bounds_checked']} | {r['worst_bound_over_lp']:.2e} | {r['cpu_s']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
