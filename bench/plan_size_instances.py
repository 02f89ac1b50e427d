"""Instances for the plan-size figures (bench/safety.md, "Plan-size limits").

``python bench/plan_size_instances.py JOBS CLUSTERS SLOTS RESOURCES MAX_RUNTIME SEED OUT``:
JOBS jobs of 1 unit of the first resource, runtime uniform in 1..MAX_RUNTIME slots, release
uniform before the end, deadline the horizon (so nearly every job is a class of its own);
CLUSTERS clusters of 4 units of every resource at 200 W per unit, 5-minute slots, carbon
uniform in 50..399 g/kWh.
"""

import json
import sys

import numpy as np


def main() -> None:
    n_jobs, n_clusters, horizon, n_res, maxrt, seed = (int(a) for a in sys.argv[1:7])
    out = sys.argv[7]
    rng = np.random.default_rng(seed)
    res = [f"r{i}" for i in range(n_res)]
    names = [f"c{i}" for i in range(n_clusters)]
    doc = {
        "version": 1,
        "slot_minutes": 5,
        "horizon_slots": horizon,
        "resources": res,
        "clusters": [
            {
                "name": n,
                "zone": "XX",
                "capacity": dict.fromkeys(res, 4.0),
                "watts_per_unit": dict.fromkeys(res, 200.0),
            }
            for n in names
        ],
        "carbon_g_per_kwh": {n: [float(v) for v in rng.integers(50, 400, horizon)] for n in names},
        "jobs": [],
    }
    for j in range(n_jobs):
        rt = int(rng.integers(1, min(maxrt, horizon) + 1))
        rel = int(rng.integers(0, max(1, horizon - rt)))
        doc["jobs"].append(
            {
                "id": f"j{j}",
                "demand": {res[0]: 1.0},
                "runtime_slots": rt,
                "release_slot": rel,
                "deadline_slot": horizon,
            }
        )
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(doc, handle)


if __name__ == "__main__":
    main()
