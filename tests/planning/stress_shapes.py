"""Valid instance files unlike our fixtures (CONTRACTS.md section 1), one function per shape.

1 or 30 clusters; horizons of 1, 2 and 500+ slots; 5- and 15-minute slots; carbon flat (ties
everywhere), mostly zero, with one spike at the format's limit, or at both limits with watts
and PUE at theirs; capacity zero in some slots or varying per slot; four resources with one
binding; runtime equal to the horizon; no slack; every job critical; one allowed cluster;
embodied carbon dominant; look-alike ids; demands of 1e12 units; no on-time plan. Each
shape takes a numpy generator and returns the instance JSON object. ``bench/
stress_instances.py`` runs every policy on them; ``test_stress_shapes.py`` a few.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Doc = dict[str, Any]
Rng = np.random.Generator

#: the format's limits (src/carbonshift/formats/instance.py)
MAX_UNITS = 1e12
MAX_WATTS = 1e6
MAX_CARBON = 1e5
MAX_EMBODIED = 1e6
MAX_PUE = 100.0
MIN_POSITIVE = 1e-9


def _base(
    rng: Rng,
    *,
    horizon: int,
    n_clusters: int = 2,
    resources: tuple[str, ...] = ("gpu",),
    slot_minutes: int = 60,
    carbon: Callable[[Rng, int], list[float]] | None = None,
    capacity: Callable[[Rng, int], Any] | None = None,
) -> Doc:
    names = [f"c{i}" for i in range(n_clusters)]
    clusters = []
    for name in names:
        cap: dict[str, Any] = {}
        for r in resources:
            cap[r] = capacity(rng, horizon) if capacity else float(rng.integers(1, 5))
        clusters.append(
            {
                "name": name,
                "zone": "XX",
                "capacity": cap,
                "watts_per_unit": {r: float(rng.choice([0, 100, 300])) for r in resources},
                "pue": float(rng.choice([1.0, 1.3])),
                "embodied_g_per_unit_hour": {resources[0]: float(rng.choice([0, 0, 4]))},
            }
        )
    ci = carbon or (lambda g, h: [float(v) for v in g.choice([0.0, 20.0, 80.0, 300.0], h)])
    return {
        "version": 1,
        "slot_minutes": slot_minutes,
        "horizon_slots": horizon,
        "resources": list(resources),
        "clusters": clusters,
        "carbon_g_per_kwh": {n: ci(rng, horizon) for n in names},
        "jobs": [],
    }


def _jobs(
    rng: Rng,
    doc: Doc,
    n: int,
    *,
    max_runtime: int | None = None,
    slack: Callable[[Rng, int, int], int] | None = None,
    critical: float = 0.25,
    allowed_one: bool = False,
    ids: list[str] | None = None,
    demand: Callable[[Rng, str], float] | None = None,
) -> Doc:
    horizon = doc["horizon_slots"]
    names = [c["name"] for c in doc["clusters"]]
    resources = doc["resources"]
    for i in range(n):
        runtime = int(rng.integers(1, (max_runtime or max(1, horizon // 2)) + 1))
        runtime = min(runtime, horizon)
        release = int(rng.integers(0, horizon - runtime + 1))
        room = horizon - release - runtime
        extra = slack(rng, room, runtime) if slack else int(rng.integers(0, room + 1))
        want = {r: (demand(rng, r) if demand else float(rng.integers(0, 3))) for r in resources}
        if not any(want.values()):
            want[resources[0]] = 1.0
        job: Doc = {
            "id": ids[i] if ids else f"j{i}",
            "demand": want,
            "runtime_slots": runtime,
            "release_slot": release,
            "deadline_slot": release + runtime + extra,
            "critical": bool(rng.random() < critical),
        }
        if allowed_one:
            job["allowed_clusters"] = [names[int(rng.integers(0, len(names)))]]
        elif rng.random() < 0.3:
            pick = sorted({names[int(k)] for k in rng.integers(0, len(names), 2)})
            job["allowed_clusters"] = pick
        doc["jobs"].append(job)
    return doc


def _flat(value: float) -> Callable[[Rng, int], list[float]]:
    return lambda _g, h: [value] * h


def _per_slot(low: int, high: int) -> Callable[[Rng, int], Any]:
    return lambda g, h: [float(v) for v in g.integers(low, high + 1, h)]


# --- the shapes ----------------------------------------------------------------------------


def one_cluster(rng: Rng) -> Doc:
    return _jobs(rng, _base(rng, horizon=8, n_clusters=1), 6)


def thirty_clusters(rng: Rng) -> Doc:
    return _jobs(rng, _base(rng, horizon=6, n_clusters=30), 8)


def horizon_1(rng: Rng) -> Doc:
    return _jobs(rng, _base(rng, horizon=1), 5)


def horizon_2(rng: Rng) -> Doc:
    return _jobs(rng, _base(rng, horizon=2), 5)


def horizon_long(rng: Rng) -> Doc:
    return _jobs(rng, _base(rng, horizon=int(rng.integers(500, 700))), 12, max_runtime=40)


def slot_5_minutes(rng: Rng) -> Doc:
    return _jobs(rng, _base(rng, horizon=12, slot_minutes=5), 6)


def slot_15_minutes(rng: Rng) -> Doc:
    return _jobs(rng, _base(rng, horizon=12, slot_minutes=15), 6)


def carbon_flat(rng: Rng) -> Doc:
    value = float(rng.choice([0.0, 100.0]))
    return _jobs(rng, _base(rng, horizon=6, carbon=_flat(value)), 6)


def carbon_zeros(rng: Rng) -> Doc:
    def ci(g: Rng, h: int) -> list[float]:
        return [float(v) for v in g.choice([0.0, 0.0, 0.0, 50.0], h)]

    return _jobs(rng, _base(rng, horizon=6, carbon=ci), 6)


def carbon_spike(rng: Rng) -> Doc:
    def ci(g: Rng, h: int) -> list[float]:
        out = [float(v) for v in g.choice([100.0, 110.0], h)]
        out[int(g.integers(0, h))] = MAX_CARBON
        return out

    return _jobs(rng, _base(rng, horizon=6, carbon=ci), 6)


def carbon_limits(rng: Rng) -> Doc:
    def ci(g: Rng, h: int) -> list[float]:
        return [float(v) for v in g.choice([0.0, MIN_POSITIVE, 1.0, MAX_CARBON], h)]

    doc = _base(rng, horizon=6, carbon=ci)
    for c in doc["clusters"]:
        c["watts_per_unit"] = {"gpu": float(rng.choice([MIN_POSITIVE, MAX_WATTS]))}
        c["pue"] = float(rng.choice([1.0, MAX_PUE]))
    return _jobs(rng, doc, 6)


def capacity_zero_slots(rng: Rng) -> Doc:
    return _jobs(rng, _base(rng, horizon=6, capacity=_per_slot(0, 1)), 6)


def capacity_varies(rng: Rng) -> Doc:
    return _jobs(rng, _base(rng, horizon=6, capacity=_per_slot(0, 5)), 7)


def resources_one_binding(rng: Rng) -> Doc:
    resources = ("cpu", "gpu", "memory_gib", "disk")
    doc = _base(rng, horizon=6, resources=resources)
    for c in doc["clusters"]:
        c["capacity"] = {"cpu": 1000.0, "gpu": float(rng.integers(1, 3)), "memory_gib": 1e6}
        c["capacity"]["disk"] = 1e9

    def want(g: Rng, r: str) -> float:
        return {"cpu": 8.0, "gpu": float(g.integers(0, 2)), "memory_gib": 64.0, "disk": 10.0}[r]

    return _jobs(rng, doc, 7, demand=want)


def runtime_equals_horizon(rng: Rng) -> Doc:
    horizon = int(rng.integers(1, 6))
    doc = _jobs(rng, _base(rng, horizon=horizon), 5, max_runtime=horizon)
    for j in doc["jobs"][::2]:
        j.update(runtime_slots=horizon, release_slot=0, deadline_slot=horizon)
    return doc


def no_slack(rng: Rng) -> Doc:
    return _jobs(rng, _base(rng, horizon=6), 6, slack=lambda _g, _room, _r: 0)


def all_critical(rng: Rng) -> Doc:
    return _jobs(rng, _base(rng, horizon=6), 6, critical=1.0)


def allowed_one_cluster(rng: Rng) -> Doc:
    return _jobs(rng, _base(rng, horizon=6, n_clusters=3), 7, allowed_one=True)


def embodied_dominant(rng: Rng) -> Doc:
    doc = _base(rng, horizon=6, n_clusters=3)
    for c in doc["clusters"]:
        c["watts_per_unit"] = {"gpu": 1.0}
        c["embodied_g_per_unit_hour"] = {"gpu": float(rng.choice([1e3, 1e5, MAX_EMBODIED]))}
    return _jobs(rng, doc, 6)


def lookalike_ids(rng: Rng) -> Doc:
    ids = ["j", "J", "j ", " j", "j.0", "j/0", "é", "e\u0301", "0", "00", "null", "'"]
    pick = [ids[int(k)] for k in rng.permutation(len(ids))[:6]]
    return _jobs(rng, _base(rng, horizon=6), 6, ids=pick)


def huge_demand(rng: Rng) -> Doc:
    doc = _base(rng, horizon=6)
    for c in doc["clusters"]:
        c["capacity"] = {"gpu": MAX_UNITS}
        c["watts_per_unit"] = {"gpu": float(rng.choice([1.0, MAX_WATTS]))}

    def want(g: Rng, _r: str) -> float:
        return float(g.choice([1.0, 4e11, 6e11, MAX_UNITS]))

    return _jobs(rng, doc, 5, demand=want)


def no_on_time_plan(rng: Rng) -> Doc:
    doc = _jobs(rng, _base(rng, horizon=6, n_clusters=1), 6)
    for j in doc["jobs"]:
        j["deadline_slot"] = j["release_slot"] + j["runtime_slots"] - int(rng.integers(0, 3))
    doc["clusters"][0]["capacity"] = {"gpu": 2.0}
    for j in doc["jobs"]:
        j["demand"] = {"gpu": 2.0}
        j.pop("allowed_clusters", None)
    return doc


SHAPES: dict[str, Callable[[Rng], Doc]] = {
    f.__name__: f
    for f in (
        one_cluster,
        thirty_clusters,
        horizon_1,
        horizon_2,
        horizon_long,
        slot_5_minutes,
        slot_15_minutes,
        carbon_flat,
        carbon_zeros,
        carbon_spike,
        carbon_limits,
        capacity_zero_slots,
        capacity_varies,
        resources_one_binding,
        runtime_equals_horizon,
        no_slack,
        all_critical,
        allowed_one_cluster,
        embodied_dominant,
        lookalike_ids,
        huge_demand,
        no_on_time_plan,
    )
}
#: shapes too large for the checker's lexicographic MILP
NO_MILP = {"horizon_long", "thirty_clusters"}
