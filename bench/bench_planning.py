"""Planning benchmarks on the embedded real carbon data (figures, not pass/fail tests).

Families (issue 3, section 7):

- ``cjps-small``: CJPS's comparison with CPLEX: 3 data centres (CA-ON, US-NY-NYIS, GB) of
  capacity 50, 50 half-hour slots from 2023-01-16 00:00 UTC, n jobs with demand and runtime
  uniform in 1..10, release 0, deadline uniform in [runtime, 50]: solve time of srr and exact
  and GRU(exact) / GRU(srr) (exact's dual bound when it did not prove optimality);
- ``cjps-large``: the same data centres at capacity 700 with 1,000 to 6,000 jobs: time and
  scores per policy;
- ``caspian``: 3 spokes (CA-ON, JP-TK, DE) of 32 GPUs, 200 / 100 / 200 W per GPU, 200 jobs
  arriving by a Poisson process over the first 24 of 48 hourly slots from 2023-11-14,
  demand and runtime uniform in 1..5, deadline = release + ceil(beta x runtime), beta
  uniform in (2, 4): time and scores per policy.

Run: ``.venv/bin/python -m bench planning`` (the whole set, about 10 minutes on 2 cores), or
``.venv/bin/python bench/bench_planning.py [family ...] [--quick]`` for a table.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from carbonshift.carbon.embedded import load_series
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
from carbonshift.planning import run_policy

CJPS_ZONES = ("CA-ON", "US-NY-NYIS", "GB")
CASPIAN_ZONES = ("CA-ON", "JP-TK", "DE")


def carbon_slots(zone: str, start: datetime, slot_minutes: int, n: int) -> tuple[float, ...]:
    """The embedded hourly series sampled at each slot's start (a step function)."""
    series = load_series(zone)
    first_h = (start - series.start).total_seconds() / 3600.0
    index = (first_h + np.arange(n) * slot_minutes / 60.0).astype(int)
    return tuple(float(v) for v in series.values_g_per_kwh[index])


def cjps_instance(n_jobs: int, seed: int, *, capacity: float = 50.0) -> Instance:
    """A CJPS static instance (seeds/001 section IV) on real carbon data."""
    horizon, slot_minutes = 50, 30
    start = datetime(2023, 1, 16, tzinfo=UTC)
    rng = np.random.default_rng(seed)
    demand = rng.integers(1, 11, n_jobs)
    runtime = rng.integers(1, 11, n_jobs)
    deadline = rng.integers(runtime, horizon + 1)
    clusters = tuple(
        Cluster(
            name=ClusterName(z), zone=z, capacity={"cpu": capacity}, watts_per_unit={"cpu": 10.0}
        )
        for z in CJPS_ZONES
    )
    jobs = tuple(
        Job(
            id=JobId(f"j{i}"),
            demand={"cpu": float(demand[i])},
            runtime_slots=int(runtime[i]),
            deadline_slot=int(deadline[i]),
        )
        for i in range(n_jobs)
    )
    return Instance(
        grid=TimeGrid(slot_minutes=slot_minutes, horizon_slots=horizon),
        resources=("cpu",),
        clusters=clusters,
        carbon_g_per_kwh={
            c.name: carbon_slots(c.name, start, slot_minutes, horizon) for c in clusters
        },
        jobs=jobs,
    )


def caspian_instance(seed: int, n_jobs: int = 200) -> Instance:
    """The Caspian family, static (seeds/000 section IV, read as ALGORITHMS.md fixes it)."""
    horizon = 48
    start = datetime(2023, 11, 14, tzinfo=UTC)
    rng = np.random.default_rng(seed)
    arrival_h = np.sort(rng.uniform(0.0, 24.0, n_jobs))  # Poisson arrivals given their count
    demand = rng.integers(1, 6, n_jobs)
    runtime = rng.integers(1, 6, n_jobs)
    beta = rng.uniform(2.0, 4.0, n_jobs)
    release = np.floor(arrival_h).astype(int)
    deadline = release + np.ceil(beta * runtime).astype(int)
    watts = {"CA-ON": 200.0, "JP-TK": 100.0, "DE": 200.0}
    clusters = tuple(
        Cluster(
            name=ClusterName(f"spoke-{z}"),
            zone=z,
            capacity={"gpu": 32.0},
            watts_per_unit={"gpu": watts[z]},
        )
        for z in CASPIAN_ZONES
    )
    jobs = tuple(
        Job(
            id=JobId(f"w{i}"),
            demand={"gpu": float(demand[i])},
            runtime_slots=int(runtime[i]),
            release_slot=int(release[i]),
            deadline_slot=int(deadline[i]),
        )
        for i in range(n_jobs)
    )
    return Instance(
        grid=TimeGrid(slot_minutes=60, horizon_slots=horizon),
        resources=("gpu",),
        clusters=clusters,
        carbon_g_per_kwh={c.name: carbon_slots(c.zone or "", start, 60, horizon) for c in clusters},
        jobs=jobs,
    )


def _run(policy: str, inst: Instance, params: dict[str, Any] | None = None) -> dict[str, Any]:
    began = time.perf_counter()
    result = run_policy(policy, inst, params)
    seconds = time.perf_counter() - began
    scores = score_plan(inst, result.plan)
    jobs = {job.id: job for job in inst.jobs}
    first = inst.resources[0]
    unit_h = sum(
        jobs[a.job].demand.get(first, 0.0) * jobs[a.job].runtime_slots * inst.grid.slot_hours
        for a in result.plan.assignments
    )
    return {
        "g_per_unit_h": scores.carbon_g / unit_h if unit_h else math.nan,
        "policy": policy,
        "seconds": seconds,
        "status": result.status.value,
        "carbon_kg": scores.carbon_g / 1000.0,
        "gru": scores.gru,
        "on_time": scores.on_time,
        "late": scores.late,
        "unscheduled": scores.unscheduled,
        "feasible": not check_feasibility(inst, result.plan),
        "stats": dict(result.stats),
    }


def cjps_small(sizes: Sequence[int], seeds: int, exact_limit_s: float) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        srr_s, exact_s, ratios, proved = [], [], [], 0
        for seed in range(seeds):
            inst = cjps_instance(n, seed)
            srr = _run("srr", inst)
            # pinned to CJPS's objective: these figures are GRU ratios (exact's default is grams)
            exact = _run("exact", inst, {"time_limit_s": exact_limit_s, "objective": "gru"})
            srr_s.append(srr["seconds"])
            exact_s.append(exact["seconds"])
            best = (
                exact["gru"]
                if exact["status"] == "optimal"
                else exact["stats"].get("mip_bound_gru", exact["gru"])
            )
            proved += exact["status"] == "optimal"
            ratios.append(best / srr["gru"] if srr["gru"] > 0 else math.nan)
        rows += [
            {
                "name": f"cjps-small n={n} srr time",
                "value": statistics.median(srr_s),
                "unit": "s",
                "seeds": seeds,
            },
            {
                "name": f"cjps-small n={n} exact time",
                "value": statistics.median(exact_s),
                "unit": "s",
                "seeds": seeds,
                "proved_optimal": proved,
                "limit_s": exact_limit_s,
            },
            {
                "name": f"cjps-small n={n} GRU exact/srr",
                "value": statistics.mean(ratios),
                "unit": "ratio",
                "min": min(ratios),
                "max": max(ratios),
                "seeds": seeds,
            },
        ]
    return rows


POLICIES_LARGE = ("asap", "threshold", "window", "fluidos", "srr")


def _policy_rows(
    family: str, inst: Instance, policies: Sequence[str], exact_limit_s: float | None = None
) -> list[dict[str, Any]]:
    """One row per policy; a name like ``caspian:omega1=0`` passes parameters."""
    rows = []
    base = None
    for label in policies:
        policy, _, raw = label.partition(":")
        params: dict[str, Any] = dict(kv.split("=") for kv in raw.split(",")) if raw else {}
        if policy == "exact" and exact_limit_s is not None:
            params["time_limit_s"] = exact_limit_s
        if policy == "exact":
            params.setdefault("objective", "gru")  # the figures below were taken on GRU
        r = _run(policy, inst, params)
        if policy == "asap":
            base = r["carbon_kg"]
        saving = 100 * (base - r["carbon_kg"]) / base if base else math.nan
        rows.append(
            {
                "name": f"{family} {label} time",
                "value": r["seconds"],
                "unit": "s",
                "carbon_kg": r["carbon_kg"],
                "saving_vs_asap_pct": saving,
                "gru": r["gru"],
                "g_per_unit_h": r["g_per_unit_h"],
                "on_time": r["on_time"],
                "late": r["late"],
                "unscheduled": r["unscheduled"],
                "feasible": r["feasible"],
                "status": r["status"],
            }
        )
    return rows


def cjps_large(sizes: Sequence[int], caspian_up_to: int = 1000) -> list[dict[str, Any]]:
    """Caspian solves four LPs over every start (late ones too): only up to ``caspian_up_to``
    jobs, to keep the whole run near 10 minutes on 2 cores."""
    rows = []
    for n in sizes:
        policies = POLICIES_LARGE + (("caspian",) if n <= caspian_up_to else ())
        rows += _policy_rows(f"cjps-large n={n}", cjps_instance(n, 0, capacity=700.0), policies)
    return rows


def caspian_family(seeds: int) -> list[dict[str, Any]]:
    rows = []
    policies = (
        "asap",
        "threshold",
        "window",
        "fluidos",
        "caspian:omega1=0",
        "caspian",
        "caspian:omega1=0.5",
        "srr",
        "exact",
    )
    for seed in range(seeds):
        rows += _policy_rows(f"caspian seed={seed}", caspian_instance(seed), policies, 20.0)
    return rows


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Every family; ``quick`` cuts sizes and seeds (for a smoke run)."""
    if quick:
        return cjps_small((10,), 2, 10.0) + cjps_large((1000,)) + caspian_family(1)
    return (
        cjps_small((10, 20), 10, 60.0)
        + cjps_small((50, 100), 3, 20.0)
        + cjps_large((1000, 2000, 4000, 6000))
        + caspian_family(3)
    )


def main(argv: list[str]) -> int:
    import json

    quick = "--quick" in argv
    families = [a for a in argv if not a.startswith("--")]
    table = {
        "cjps-small": lambda: (
            cjps_small((10,), 2, 10.0)
            if quick
            else cjps_small((10, 20), 10, 60.0) + cjps_small((50, 100), 3, 20.0)
        ),
        "cjps-large": lambda: cjps_large((1000,) if quick else (1000, 2000, 4000, 6000)),
        "caspian": lambda: caspian_family(1 if quick else 3),
    }
    for family in families or list(table):
        for row in table[family]():
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
