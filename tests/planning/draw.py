"""One generator of small hostile but valid instance files (CONTRACTS.md section 1), for the
property test (``tests/planning/test_independent.py``, through hypothesis) and the benchmark
(``bench/independent_check.py``, through numpy): ties and zero-carbon slots, tight and
per-slot capacity, one or two resources, critical jobs, releases up to the horizon's edge,
deadlines already past. Like :mod:`tests.planning.independent` it imports no carbonshift code.

The draws go through a :class:`Chooser`; :class:`NumpyChooser` takes them from a
``numpy.random.Generator`` in the order and shape the benchmark always drew them, so its
seeds give the instances its recorded figures came from (bench/planner.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

__all__ = ["Chooser", "NumpyChooser", "draw_instance"]

T = TypeVar("T")

#: carbon intensities (g/kWh) drawn from: few distinct values, so ties between slots and
#: clusters, and zero-carbon slots
INTENSITIES = (0.0, 0.0, 10.0, 50.0, 50.0, 200.0)


class Chooser(Protocol):
    """Where a draw comes from (bounds inclusive; ``p``: the chance of True, which a
    shrinking chooser such as hypothesis's may ignore)."""

    def integer(self, lo: int, hi: int) -> int: ...

    def integers(self, lo: int, hi: int, n: int) -> list[int]: ...

    def boolean(self, p: float) -> bool: ...

    def booleans(self, p: float, n: int) -> list[bool]: ...

    def choice(self, options: Sequence[T]) -> T: ...

    def choices(self, options: Sequence[T], n: int) -> list[T]: ...


class NumpyChooser:
    """Draws from a numpy ``Generator`` (the benchmark's seeds)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))

    def integers(self, lo: int, hi: int, n: int) -> list[int]:
        return [int(v) for v in self.rng.integers(lo, hi + 1, n)]

    def boolean(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def booleans(self, p: float, n: int) -> list[bool]:
        return [bool(v) for v in self.rng.random(n) < p]

    def choice(self, options: Sequence[T]) -> T:
        return options[int(self.rng.integers(0, len(options)))]

    def choices(self, options: Sequence[T], n: int) -> list[T]:
        return [options[int(i)] for i in self.rng.integers(0, len(options), n)]


def draw_instance(choose: Chooser, max_jobs: int, max_horizon: int) -> dict[str, Any]:
    """One instance file of at most ``max_jobs`` jobs over at most ``max_horizon`` slots."""
    horizon = choose.integer(1, max_horizon)
    resources = ["gpu", "mem"][: choose.integer(1, 2)]
    names = [f"c{c}" for c in range(choose.integer(1, 3))]
    clusters = []
    for name in names:
        capacity: dict[str, Any] = {}
        for r in resources:
            if choose.boolean(0.5):
                capacity[r] = float(choose.integer(0, 4))
            else:
                capacity[r] = [float(v) for v in choose.integers(0, 4, horizon)]
        clusters.append(
            {
                "name": name,
                "zone": "XX",
                "capacity": capacity,
                "watts_per_unit": {r: float(choose.choice((0, 100, 200))) for r in resources},
                "pue": float(choose.choice((1.0, 1.5))),
                "embodied_g_per_unit_hour": {resources[0]: float(choose.choice((0, 0, 5)))},
            }
        )
    loose = choose.boolean(0.5)  # every job can be on time alone
    jobs = []
    for i in range(choose.integer(0, max_jobs)):
        demand = {r: float(choose.integer(0, 3)) for r in resources}
        if not any(demand.values()):
            demand[resources[0]] = 1.0
        runtime = choose.integer(1, (horizon + 1) // 2 if loose else horizon)
        release = choose.integer(0, horizon - runtime if loose else horizon)  # up to the edge
        deadline = (
            choose.integer(release + runtime, horizon)
            if loose
            else choose.integer(release - 1, horizon + 2)  # possibly already past
        )
        job: dict[str, Any] = {
            "id": f"j{i}",
            "demand": demand,
            "runtime_slots": runtime,
            "release_slot": release,
            "deadline_slot": deadline,
            "critical": choose.boolean(0.3),
        }
        if choose.boolean(0.5):
            pick = choose.booleans(0.6, len(names))
            pick[choose.integer(0, len(names) - 1)] = True
            job["allowed_clusters"] = [n for n, p in zip(names, pick, strict=True) if p]
        jobs.append(job)
    return {
        "version": 1,
        "slot_minutes": int(choose.choice((30, 60))),
        "horizon_slots": horizon,
        "resources": resources,
        "clusters": clusters,
        "carbon_g_per_kwh": {
            n: [float(v) for v in choose.choices(INTENSITIES, horizon)] for n in names
        },
        "jobs": jobs,
    }
