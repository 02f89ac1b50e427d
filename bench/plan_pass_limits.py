"""One planning pass of the one-cluster controller with N pending workloads, limit or not.

A tenant's runaway loop: N pending Pods, each of its own job class (1 cpu and a memory
request of its own, so every demand mix differs: ``carbonshift`` cannot aggregate them),
expected runtime 1 to ``--longest-runtime-h`` h (8), deadlines 5-29 h after the earliest end,
on 2023-06-01 (DE, embedded data, ``seasonal-day`` forecast, 60-min slots, a 24-slot horizon
or the longest runtime's, resources cpu and memory).
One call of :func:`carbonshift.k8s.planner.plan_round` (snapshot, the policy, the hold rule,
an outcome per workload), in this process, which does nothing else: its peak RSS
(``ru_maxrss``, the intents included) and CPU seconds (``time.process_time`` around the
call) are the pass's.

Run one pass per process (the peak is the process's):
``.venv/bin/python bench/plan_pass_limits.py --pending 50000 --max-plan-cells 0``
(0: no limit; default: the configuration's default; ``--longest-runtime-h 72``: a 72-slot
horizon; ``--alike``: every Pod the same demand mix, so the runtimes and windows make a
few hundred classes). Prints one JSON line. Recorded in
bench/safety.md ("Plan-size limits of the controller and the hub").
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from carbonshift.k8s.config import PlanningSection, parse_config
from carbonshift.k8s.intent import Intent
from carbonshift.k8s.planner import CarbonSource, plan_round
from carbonshift.planning.limits import PlanSize

START = datetime(2023, 6, 1, tzinfo=UTC)


def intents(n: int, longest_runtime_h: int, *, alike: bool = False) -> list[Intent]:
    """``n`` pending Pods, each a class of its own (see the module doc); ``alike``: all with
    the same demand mix (1 cpu, 2 GiB), so they form few classes."""
    runtime_h = [1 + i % longest_runtime_h for i in range(n)]
    return [
        Intent(
            kind="Pod",
            namespace="batch",
            name=f"w{i:07d}",
            uid=f"uid-{i}",
            created=START,
            deadline=START + timedelta(hours=runtime_h[i] + 5 + (i * 7919) % 25),
            expected_runtime=timedelta(hours=runtime_h[i]),
            demand={"cpu": 1.0, "memory": 2.0 if alike else 1.0 + i / n},
            deadline_source="bench",
        )
        for i in range(n)
    ]


def main(argv: list[str]) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--policy", default="carbonshift")
    parser.add_argument("--longest-runtime-h", type=int, default=8)
    parser.add_argument("--alike", action="store_true", help="one demand mix: few classes")
    parser.add_argument(
        "--max-plan-cells",
        type=int,
        default=PlanningSection().max_plan_cells,
        help="planning.max_plan_cells (0: no limit)",
    )
    args = parser.parse_args(argv)
    config = parse_config(
        {
            "cluster": {"zone": "DE", "resources": ["cpu", "memory"]},
            "planning": {"policy": args.policy, "max_plan_cells": args.max_plan_cells},
        }
    )
    source = CarbonSource(config)
    pending = intents(args.pending, args.longest_runtime_h, alike=args.alike)
    capacity = {"cpu": args.pending / 4, "memory": args.pending / 2}
    began = time.process_time()
    round_ = plan_round(config, START, pending, capacity, [], source)
    cpu_s = time.process_time() - began
    planned = PlanSize.of(round_.instance)
    return {
        "utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"),
        "pending": args.pending,
        "policy": args.policy,
        "longest_runtime_h": args.longest_runtime_h,
        "alike": args.alike,
        "max_plan_cells": args.max_plan_cells,
        "planned": len(round_.instance.jobs),
        "left_out": round_.left_out,
        "planned_classes": planned.classes,
        "planned_weighted_cells": planned.weighted_cells(args.policy),
        "horizon_slots": planned.slots,
        "pass_cpu_s": round(cpu_s, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
