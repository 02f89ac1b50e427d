"""The hub's planning call (``plan_hub``) over many workloads and spokes, offline.

One call with 100 / 1,000 pending workloads in Caspian's family (demand 1-4 cpu, runtime
1-4 h, deadline = runtime x U(2, 4)) over 3 / 10 spokes (zones of the embedded data,
32 cpu each, 60-min slots, 24-slot horizon, seasonal-day forecasts from 2023-06-01),
policies ``fluidos`` and ``caspian``: median wall time of 3 calls (forecasts cached after
the first, as in a running hub) and the peak Python heap of one call (tracemalloc).
Recorded in bench/hub.md.

Run: ``.venv/bin/python -m bench hub``.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from typing import Any

from carbonshift.k8s.multicluster.config import HubConfig
from carbonshift.k8s.multicluster.plan import Pending, SpokeView, plan_hub
from carbonshift.k8s.planner import CarbonSource

ZONES = (
    "CA-ON",
    "DE",
    "JP-TK",
    "GB",
    "US-CAL-CISO",
    "IN-WE",
    "BR-CS",
    "AU-NSW",
    "US-NY-NYIS",
    "CL-SEN",
)
NOW = datetime(2023, 6, 1, 0, 20, tzinfo=UTC)
#: recorded medians (s) on the reference machine; a run fails past LIMIT_SLACK x these
RECORDED_S: dict[str, float] = {
    "plan_hub fluidos 100 jobs x 3 spokes": 0.0091,
    "plan_hub fluidos 100 jobs x 10 spokes": 0.0219,
    "plan_hub fluidos 1000 jobs x 3 spokes": 0.0769,
    "plan_hub fluidos 1000 jobs x 10 spokes": 0.2069,
    "plan_hub caspian 100 jobs x 3 spokes": 0.2588,
    "plan_hub caspian 100 jobs x 10 spokes": 0.8155,
    "plan_hub caspian 1000 jobs x 3 spokes": 3.401,
    "plan_hub caspian 1000 jobs x 10 spokes": 24.69,
}
LIMIT_SLACK = 4.0


def _pending(n: int, seed: int = 1) -> list[Pending]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        runtime_h = rng.randint(1, 4)
        deadline = NOW + timedelta(hours=runtime_h * rng.uniform(2, 4))
        out.append(
            Pending(
                f"Job/batch/w{i:04d}",
                {"cpu": float(rng.randint(1, 4))},
                timedelta(hours=runtime_h),
                deadline,
                NOW,
            )
        )
    return out


def _case(policy: str, jobs: int, spokes: int) -> dict[str, Any]:
    zones = ZONES[:spokes]
    config = HubConfig.model_validate({"planning": {"policy": policy, "forecast": "seasonal-day"}})
    views = [
        SpokeView(z.lower(), z, {"cpu": 32.0}, {"cpu": 10.0}, 1.2, {"cpu": 1.0}) for z in zones
    ]
    sources = {v.name: CarbonSource(config.controller_config(v.zone)) for v in views}
    pending = _pending(jobs)
    times = []
    for _ in range(3):
        began = time.perf_counter()
        round_ = plan_hub(config, NOW, pending, views, [], sources)
        times.append(time.perf_counter() - began)
    tracemalloc.start()
    plan_hub(config, NOW, pending, views, [], sources)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    placed = sum(1 for d in round_.decisions.values() if d.cluster is not None)
    return {
        "median_s": statistics.median(times),
        "peak_mib": peak / 2**20,
        "placed": placed,
        "zones": len(zones),
    }


def run() -> list[dict[str, Any]]:
    rows = []
    for policy in ("fluidos", "caspian"):
        for jobs in (100, 1000):
            for spokes in (3, 10):
                got = _case(policy, jobs, spokes)
                name = f"plan_hub {policy} {jobs} jobs x {got['zones']} spokes"
                recorded = RECORDED_S.get(name)
                rows.append(
                    {
                        "name": name,
                        "value": round(got["median_s"], 4),
                        "unit": "s",
                        "peak_mib": round(got["peak_mib"], 1),
                        "placed": got["placed"],
                        **({"limit": recorded * LIMIT_SLACK} if recorded else {}),
                    }
                )
    return rows


def main(argv: list[str] | None = None) -> int:
    """One large case from the command line: CPU and wall seconds of each ``plan_hub`` call
    (the first builds the forecasts, later ones reuse them as a running hub does), peak RSS
    of the process, and how many workloads the plan placed."""
    import argparse
    import json
    import resource

    parser = argparse.ArgumentParser(
        description="plan_hub over N pending workloads and S spokes (bench/hub.md)",
        epilog="example: python bench/bench_hub.py --jobs 10000 --spokes 10 --policy fluidos",
    )
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--spokes", type=int, default=10, help=f"1-{len(ZONES)}")
    parser.add_argument("--policy", default="fluidos")
    parser.add_argument("--calls", type=int, default=2, help="plan_hub calls (default 2)")
    parser.add_argument("--cpu-per-spoke", type=float, default=32.0)
    args = parser.parse_args(argv)
    if not 1 <= args.spokes <= len(ZONES):
        parser.error(f"--spokes {args.spokes} is outside 1-{len(ZONES)} (one spoke per zone)")
    config = HubConfig.model_validate(
        {"planning": {"policy": args.policy, "forecast": "seasonal-day"}}
    )
    views = [
        SpokeView(z.lower(), z, {"cpu": args.cpu_per_spoke}, {"cpu": 10.0}, 1.2, {"cpu": 1.0})
        for z in ZONES[: args.spokes]
    ]
    sources = {v.name: CarbonSource(config.controller_config(v.zone)) for v in views}
    pending = _pending(args.jobs)
    calls = []
    placed = 0
    for _ in range(args.calls):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        round_ = plan_hub(config, NOW, pending, views, [], sources)
        calls.append(
            {
                "cpu_s": round(time.process_time() - cpu0, 2),
                "wall_s": round(time.perf_counter() - wall0, 2),
            }
        )
        placed = sum(1 for d in round_.decisions.values() if d.cluster is not None)
        print(f"call {len(calls)}: {calls[-1]}", file=sys.stderr, flush=True)
    result = {
        "policy": args.policy,
        "jobs": args.jobs,
        "spokes": args.spokes,
        "cpu_per_spoke": args.cpu_per_spoke,
        "calls": calls,
        "placed": placed,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
