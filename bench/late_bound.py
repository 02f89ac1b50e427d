"""A late plan's bound (bench/planner.md, "A late plan's bound at any size").

One plan per call, printed on one line. ``crowded N``: N one-slot jobs of 1.2 GPU due by
slot 200 on ten 2-GPU clusters (one job per cluster and slot fits, so at most 2,000 are on
time, while the all-on-time LP holds 3,333). ``ten-zone N SEED F``: the ten-zone family of
bench_planner.py with every cluster's capacity times F (rounded).

    PYTHONPATH=src:. .venv/bin/python bench/late_bound.py crowded 3100
    PYTHONPATH=src:. .venv/bin/python bench/late_bound.py ten-zone 10000 0 0.73
"""

from __future__ import annotations

import dataclasses
import resource
import sys
import time

from bench.bench_planner import ten_zone_instance
from carbonshift.domain import Cluster, ClusterName, Instance, Job, JobId, TimeGrid
from carbonshift.planning.registry import run_policy

WINDOW_SLOTS = 200


def crowded(n_jobs: int) -> Instance:
    """The ``crowded`` instance (module docstring)."""
    horizon = 2 * WINDOW_SLOTS
    clusters = tuple(
        Cluster(
            name=ClusterName(f"c{i}"),
            zone=f"Z{i}",
            capacity={"gpu": 2.0},
            watts_per_unit={"gpu": 200.0},
            pue=1.2,
            embodied_g_per_unit_hour={"gpu": 5.0},
        )
        for i in range(10)
    )
    carbon = {
        c.name: tuple(float(100 + 50 * ((s * 7 + i * 3) % 11)) for s in range(horizon))
        for i, c in enumerate(clusters)
    }
    jobs = tuple(
        Job(
            id=JobId(f"j{i}"),
            demand={"gpu": 1.2},
            runtime_slots=1,
            release_slot=0,
            deadline_slot=WINDOW_SLOTS,
        )
        for i in range(n_jobs)
    )
    return Instance(
        grid=TimeGrid(slot_minutes=60, horizon_slots=horizon),
        resources=("gpu",),
        clusters=clusters,
        carbon_g_per_kwh=carbon,
        jobs=jobs,
    )


def scaled_ten_zone(n_jobs: int, seed: int, factor: float) -> Instance:
    """The ten-zone instance with every cluster's capacity times ``factor``."""
    inst = ten_zone_instance(n_jobs, seed)
    clusters = tuple(
        dataclasses.replace(c, capacity={"gpu": float(round(c.capacity["gpu"] * factor))})
        for c in inst.clusters
    )
    return dataclasses.replace(inst, clusters=clusters)


def main(argv: list[str]) -> None:
    if argv[:1] == ["crowded"] and len(argv) == 2:
        name, inst = f"crowded {argv[1]}", crowded(int(argv[1]))
    elif argv[:1] == ["ten-zone"] and len(argv) == 4:
        name = f"ten-zone {argv[1]} seed {argv[2]} capacity x{argv[3]}"
        inst = scaled_ten_zone(int(argv[1]), int(argv[2]), float(argv[3]))
    else:
        raise SystemExit(__doc__)
    began = time.process_time()
    result = run_policy("carbonshift", inst, {})
    cpu_s = time.process_time() - began
    jobs = {j.id: j for j in inst.jobs}
    late = sum(
        1
        for a in result.plan.assignments
        if a.start_slot + jobs[a.job].runtime_slots > jobs[a.job].deadline_slot
    )
    bound = None if result.bound is None else result.bound.lower_bound_g
    feasibility = result.stats.get("lp_feasibility_cpu_seconds")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{name}: cpu {cpu_s:.2f} s, late {late}, left out {len(result.plan.unscheduled)}, "
        f"lower_bound_g {bound}, feasibility LP cpu {feasibility}, peak RSS {peak_mb:.0f} MB"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
