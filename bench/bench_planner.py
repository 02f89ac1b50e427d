"""The ``carbonshift`` planner (issue 13): grams against the LP lower bound, speed, memory.

Figures, not pass/fail tests; the table and how it was taken are in ``bench/planner.md``.
Every instance runs in a fresh subprocess, so that its peak memory (``ru_maxrss``: the
whole process, instance construction included) is its own.

Families (embedded Electricity Maps data, direct intensity, sampled at each slot's start):

- ``caspian``: bench_planning.caspian_instance (3 spokes, 200 jobs, 48 hourly slots);
- ``cjps-small``: bench_planning.cjps_instance (3 DCs of 50 cpu, 100 jobs, 50 half-hours);
- ``cjps-large``: the same DCs with capacity 0.7 per job (700 for 1,000 jobs);
- ``ten-zone``: 10 clusters in 10 zones, 48 hourly slots, n jobs released over the first
  24 h, demand and runtime 1..8, deadline release + ceil(beta x runtime) with beta uniform
  in (1.5, 4) (at most the horizon), a quarter of the jobs restricted to one of three
  regions, capacity sized for about 60 % average use; per-cluster power, PUE and embodied
  carbon differ;
- ``ten-zone-mr``: the ten-zone family with two resources that both bind (cpu and
  memory, as FLUIDOS plans): each job 1..8 cpu and 1, 2, 4, 8 or 16 GiB per cpu; each
  cluster a tenth of the cpu, memory per cpu in the ratios 2 : 4 : 8 across them, both
  resources sized for about 60 % average use (``two_resource_instance``);
- ``ten-zone-crit``: the ten-zone family with each job critical with probability 0.1
  (``with_critical``; bench/planner.md (ad));
- ``trace``: jobs of a GAIA trace (``../shared/data/traces/gaia``, hours) arriving in one
  day, through carbonshift's trace reader and slot rules, on 4 zones, 48 hourly slots,
  deadline factor 3 (capped at the horizon), capacity sized for about 50 % average use;
- ``trace-pai`` and ``trace-pwa``: the same with GAIA's ``pai-100k`` trace and the Parallel
  Workloads Archive's NASA iPSC log (SWF, through the SWF reader), each on four other zones
  (``TRACES``); most iPSC jobs run for minutes, so there the deadline is 3 x the runtime in
  slots (at least).

The reference is the time-indexed LP (every on-time start, one start per job, capacity per
cluster, resource and slot, least grams), solved exactly by HiGHS on its class-aggregated
form (``carbonshift.planning.aggregate``; the same optimum as the job LP). ``lp_s`` is the
time of that one solve (dual simplex, one thread).

Run: ``python bench/bench_planner.py [family ...] [--sizes 1000,10000] [--seeds 2]
[--lp-limit SECONDS] [--params KEY=VALUE,...]``, for example ``PYTHONPATH=src:. python
bench/bench_planner.py trace-pai --sizes 1000 --seeds 3``, or ``python -m bench planner``
(a small default set).
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from carbonshift.domain import (
    Cluster,
    ClusterName,
    Instance,
    Job,
    JobId,
    TimeGrid,
    check_feasibility,
    score_plan,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_planning import carbon_slots, caspian_instance, cjps_instance

TEN_ZONES = (
    "CA-ON",
    "US-NY-NYIS",
    "GB",
    "DE",
    "JP-TK",
    "US-CAL-CISO",
    "US-MIDA-PJM",
    "AU-NSW",
    "BR-CS",
    "IN-WE",
)
TRACE_ZONES = ("CA-ON", "DE", "US-CAL-CISO", "GB")
#: ``../shared`` beside the checkout (or beside the folder of a git worktree under it).
GAIA = next(
    (
        up / "shared" / "data" / "traces" / "gaia"
        for up in Path(__file__).resolve().parents[2:]
        if (up / "shared" / "data" / "traces" / "gaia").is_dir()
    ),
    Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / "gaia",
)


def ten_zone_instance(n_jobs: int, seed: int) -> Instance:
    """The ten-zone family (module docstring)."""
    horizon = 48
    start = datetime(2023, 3, 6, tzinfo=UTC)
    rng = np.random.default_rng(seed)
    release = rng.integers(0, 24, n_jobs)
    runtime = rng.integers(1, 9, n_jobs)
    demand = rng.integers(1, 9, n_jobs)
    beta = rng.uniform(1.5, 4.0, n_jobs)
    deadline = np.minimum(release + np.ceil(beta * runtime).astype(int), horizon)
    regions = (TEN_ZONES[:3], TEN_ZONES[3:6], TEN_ZONES[6:])
    restricted = rng.random(n_jobs) < 0.25
    region = rng.integers(0, 3, n_jobs)
    unit_slots = float(np.sum(demand * runtime))
    capacity = math.ceil(unit_slots / (0.6 * len(TEN_ZONES) * horizon))
    clusters = tuple(
        Cluster(
            name=ClusterName(z),
            zone=z,
            capacity={"gpu": float(capacity)},
            watts_per_unit={"gpu": float(200 + 25 * (i % 5))},
            pue=1.1 + 0.05 * (i % 4),
            embodied_g_per_unit_hour={"gpu": float(5 + 3 * (i % 3))},
        )
        for i, z in enumerate(TEN_ZONES)
    )
    jobs = tuple(
        Job(
            id=JobId(f"t{i}"),
            demand={"gpu": float(demand[i])},
            runtime_slots=int(runtime[i]),
            release_slot=int(release[i]),
            deadline_slot=int(deadline[i]),
            allowed_clusters=(
                frozenset(ClusterName(z) for z in regions[int(region[i])])
                if restricted[i]
                else None
            ),
        )
        for i in range(n_jobs)
    )
    return Instance(
        grid=TimeGrid(slot_minutes=60, horizon_slots=horizon),
        resources=("gpu",),
        clusters=clusters,
        carbon_g_per_kwh={c.name: carbon_slots(c.name, start, 60, horizon) for c in clusters},
        jobs=jobs,
    )


def two_resource_instance(n_jobs: int, seed: int) -> Instance:
    """The ``ten-zone-mr`` family (module docstring): the ten-zone family's jobs (times,
    cpu = its demand, allowed clusters), zones and carbon, with memory beside cpu."""
    base = ten_zone_instance(n_jobs, seed)
    rng = np.random.default_rng(10_000 + seed)
    gib_per_cpu = rng.choice(np.array([1.0, 2.0, 4.0, 8.0, 16.0]), n_jobs)
    jobs = tuple(
        Job(
            id=j.id,
            demand={"cpu": j.demand["gpu"], "memory": j.demand["gpu"] * float(gib_per_cpu[i])},
            runtime_slots=j.runtime_slots,
            release_slot=j.release_slot,
            deadline_slot=j.deadline_slot,
            allowed_clusters=j.allowed_clusters,
        )
        for i, j in enumerate(base.jobs)
    )
    horizon = base.grid.horizon_slots
    m = len(base.clusters)
    # each cluster a tenth of the cpu; memory per cpu in the ratios 2 : 4 : 8, scaled so
    # that both resources are about 60 % used over the ten clusters
    cpu_each = sum(j.demand["cpu"] * j.runtime_slots for j in jobs) / (0.6 * horizon * m)
    memory_need = sum(j.demand["memory"] * j.runtime_slots for j in jobs) / (0.6 * horizon)
    ratio = np.array([2.0, 4.0, 8.0])[np.arange(m) % 3]
    memory = ratio * memory_need / float(ratio.sum())
    peak_cpu = max(j.demand["cpu"] for j in jobs)
    peak_memory = max(j.demand["memory"] for j in jobs)
    clusters = tuple(
        Cluster(
            name=c.name,
            zone=c.zone,
            capacity={
                "cpu": float(max(peak_cpu, math.ceil(cpu_each))),
                "memory": float(max(peak_memory, math.ceil(memory[i]))),
            },
            watts_per_unit={"cpu": c.watts_per_unit["gpu"] / 10, "memory": 0.4},
            pue=c.pue,
            embodied_g_per_unit_hour={
                "cpu": c.embodied_g_per_unit_hour["gpu"] / 10,
                "memory": 0.05,
            },
        )
        for i, c in enumerate(base.clusters)
    )
    return Instance(
        grid=base.grid,
        resources=("cpu", "memory"),
        clusters=clusters,
        carbon_g_per_kwh=base.carbon_g_per_kwh,
        jobs=jobs,
    )


#: The trace families: (file under ``../shared/data/traces``, zones), each on other zones.
TRACES: dict[str, tuple[str, tuple[str, ...]]] = {
    "trace": ("gaia/azure-100k.csv.gz", TRACE_ZONES),
    "trace-pai": ("gaia/pai-100k.csv.gz", ("GB", "JP-TK", "US-NY-NYIS", "AU-NSW")),
    "trace-pwa": ("pwa/NASA-iPSC-1993-3.1-cln.swf.zip", ("US-MIDA-PJM", "BR-CS", "IN-WE", "DE")),
}


def trace_instance(n_jobs: int, seed: int, family: str = "trace") -> Instance:
    """``n_jobs`` consecutive jobs of a trace from a day picked by ``seed`` (module
    docstring), through ``read_workload`` and ``to_planning_jobs``."""
    from carbonshift.workloads.convert import to_planning_jobs
    from carbonshift.workloads.readers import read_workload

    horizon = 48
    trace, zones = TRACES[family]
    workload = read_workload(GAIA.parent / trace, time_unit="hours", resource="cpu")
    rng = np.random.default_rng(seed)
    keep = np.flatnonzero(workload.runtime_h <= 24.0)
    first = int(rng.integers(0, max(1, keep.shape[0] - n_jobs)))
    chosen = keep[first : first + n_jobs]
    origin_h = float(np.floor(workload.submit_h[chosen[0]]))
    jobs = to_planning_jobs(workload.take(chosen), slot_minutes=60, origin_h=origin_h)
    # a static instance: what arrives in the window, every deadline inside the horizon
    span = max(j.release_slot for j in jobs) + 1
    if span > 24:
        scale = 23.0 / (span - 1)
        jobs = [
            Job(
                id=j.id,
                demand=j.demand,
                runtime_slots=j.runtime_slots,
                release_slot=int(j.release_slot * scale),
                deadline_slot=int(j.release_slot * scale) + (j.deadline_slot - j.release_slot),
            )
            for j in jobs
        ]
    # Most of the PWA log's jobs run for minutes: 3 x their runtime ends inside their first
    # hourly slot, so there the deadline factor applies to the runtime in slots.
    slot_factor = 3 if family == "trace-pwa" else 1
    jobs = [
        Job(
            id=j.id,
            demand=j.demand,
            runtime_slots=j.runtime_slots,
            release_slot=j.release_slot,
            deadline_slot=min(
                max(j.deadline_slot, j.release_slot + slot_factor * j.runtime_slots), horizon
            ),
        )
        for j in jobs
    ]
    start = datetime(2023, 5, 1, tzinfo=UTC) + timedelta(days=seed % 200)
    unit_slots = sum(j.demand["cpu"] * j.runtime_slots for j in jobs)
    peak = max(j.demand["cpu"] for j in jobs)
    capacity = max(peak, math.ceil(unit_slots / (0.5 * len(zones) * 36)))
    clusters = tuple(
        Cluster(
            name=ClusterName(z),
            zone=z,
            capacity={"cpu": float(capacity)},
            watts_per_unit={"cpu": 12.0},
            embodied_g_per_unit_hour={"cpu": 0.5},
        )
        for z in zones
    )
    return Instance(
        grid=TimeGrid(slot_minutes=60, horizon_slots=horizon),
        resources=("cpu",),
        clusters=clusters,
        carbon_g_per_kwh={c.name: carbon_slots(c.name, start, 60, horizon) for c in clusters},
        jobs=tuple(jobs),
    )


#: ``ten-zone-crit``: the share of the jobs made critical
CRITICAL_SHARE = 0.1


def with_critical(inst: Instance, seed: int, share: float) -> Instance:
    """``inst`` with each job critical with probability ``share`` (numpy's generator seeded
    ``seed + 77``; bench/planner.md (ad) measured step 0b so)."""
    rng = np.random.default_rng(seed + 77)
    jobs = tuple(replace(job, critical=bool(rng.random() < share)) for job in inst.jobs)
    return replace(inst, jobs=jobs)


def build(family: str, n_jobs: int, seed: int) -> Instance:
    if family == "caspian":
        return caspian_instance(seed, n_jobs)
    if family == "cjps-small":
        return cjps_instance(n_jobs, seed)
    if family == "cjps-large":
        return cjps_instance(n_jobs, seed, capacity=0.7 * n_jobs)
    if family == "ten-zone":
        return ten_zone_instance(n_jobs, seed)
    if family == "ten-zone-mr":
        return two_resource_instance(n_jobs, seed)
    if family == "ten-zone-crit":
        return with_critical(ten_zone_instance(n_jobs, seed), seed, CRITICAL_SHARE)
    if family in TRACES:
        return trace_instance(n_jobs, seed, family)
    raise SystemExit(f"unknown family {family!r}")


def exact_lp(inst: Instance, time_limit_s: float) -> tuple[float | None, float, str]:
    """The time-indexed LP optimum (class-aggregated, flow form, HiGHS dual simplex as the
    policy runs it) and its time."""
    from carbonshift.planning.aggregate import class_columns, class_lp_options, class_program
    from carbonshift.planning.backends.highs import solve
    from carbonshift.planning.lagrangian import classes_of, shape_costs, unit_grams
    from carbonshift.planning.problem import arrays_of

    began = time.perf_counter()
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    if not classes.every_job_can_be_on_time:
        return None, 0.0, "some job has no on-time start"
    table = shape_costs(classes, unit_grams(arrays))
    program = class_program(arrays, classes, table, class_columns(classes)).program
    sol = solve(program, class_lp_options(time_limit_s))
    seconds = time.perf_counter() - began
    value = sol.objective if sol.status.value == "optimal" else None
    return value, seconds, f"{sol.status.value}, {program.n_columns} columns"


def one(family: str, n_jobs: int, seed: int, lp_limit_s: float, params: str) -> dict[str, Any]:
    """Plan one instance with ``carbonshift``; return its row (run in a subprocess)."""
    from carbonshift.planning import run_policy

    inst = build(family, n_jobs, seed)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    parsed = dict(kv.split("=") for kv in params.split(",")) if params else {}
    cpu_began = time.process_time()
    result = run_policy("carbonshift", inst, parsed)
    cpu_s = time.process_time() - cpu_began
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scores = score_plan(inst, result.plan)
    lp, lp_s, lp_note = exact_lp(inst, lp_limit_s) if lp_limit_s > 0 else (None, 0.0, "skipped")
    bound = result.bound.lower_bound_g if result.bound else None
    grams = scores.carbon_g
    return {
        "family": family,
        "jobs": n_jobs,
        "clusters": len(inst.clusters),
        "slots": inst.grid.horizon_slots,
        "seed": seed,
        "params": params,
        "grams": grams,
        "bound_g": bound,
        "lp_g": lp,
        "gap_vs_bound_pct": None if not bound else 100 * (grams - bound) / bound,
        "gap_vs_lp_pct": None if not lp else 100 * (grams - lp) / lp,
        "on_time": scores.on_time,
        "late": scores.late,
        "unscheduled": scores.unscheduled,
        "feasible": not check_feasibility(inst, result.plan),
        "solve_s": result.plan.solve_seconds,
        "cpu_s": cpu_s,
        "lp_s": lp_s,
        "lp_note": lp_note,
        "peak_rss_mb_plan": rss_after / 1024,
        "peak_rss_mb_before_plan": rss_before / 1024,
        "stats": dict(result.stats),
    }


DEFAULT = [
    ("caspian", 200, 0),
    ("cjps-small", 100, 0),
    ("cjps-large", 1000, 0),
    ("ten-zone", 1000, 0),
    ("trace", 1000, 0),
]


def _spawn(family: str, n: int, seed: int, lp_limit_s: float, params: str) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--one", family, str(n), str(seed), str(lp_limit_s)]
    if params:
        cmd.append(params)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    row: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return row


def run() -> list[dict[str, Any]]:
    """The small default set for ``python -m bench planner`` (value: solve seconds)."""
    rows = []
    for family, n, seed in DEFAULT:
        row = _spawn(family, n, seed, 120.0, "")
        rows.append(
            {
                "name": f"planner {family} n={n} seed={seed}",
                "value": row["solve_s"],
                "unit": "s",
                **row,
            }
        )
    return rows


def main(argv: list[str]) -> int:
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        return 0
    if argv and argv[0] == "--one":
        family, n, seed, lp_limit = argv[1], int(argv[2]), int(argv[3]), float(argv[4])
        params = argv[5] if len(argv) > 5 else ""
        print(json.dumps(one(family, n, seed, lp_limit, params)), flush=True)
        return 0
    sizes = [1000, 10000]
    seeds = 1
    lp_limit_s = 120.0
    params = ""
    families = []
    it = iter(argv)
    for arg in it:
        if arg == "--sizes":
            sizes = [int(s) for s in next(it).split(",")]
        elif arg == "--seeds":
            seeds = int(next(it))
        elif arg == "--lp-limit":
            lp_limit_s = float(next(it))
        elif arg == "--params":
            params = next(it)
        else:
            families.append(arg)
    for family in families or ["caspian", "cjps-small", "cjps-large", "ten-zone", "trace"]:
        fixed = {"caspian": [200], "cjps-small": [100]}.get(family, sizes)
        for n in fixed:
            for seed in range(seeds):
                print(json.dumps(_spawn(family, n, seed, lp_limit_s, params)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
