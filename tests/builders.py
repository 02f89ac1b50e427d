"""Builders for test objects: small, readable instances with sensible defaults."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np
import pytest

from carbonshift.carbon.providers.clock import ManualClock
from carbonshift.domain import Cluster, ClusterName, Instance, Job, JobId, TimeGrid


def job(
    job_id: str = "j1",
    *,
    gpu: float = 1.0,
    runtime: int = 1,
    release: int = 0,
    deadline: int = 10**6,
    allowed: Sequence[str] | None = None,
    critical: bool = False,
) -> Job:
    return Job(
        id=JobId(job_id),
        demand={"gpu": gpu},
        runtime_slots=runtime,
        release_slot=release,
        deadline_slot=deadline,
        allowed_clusters=None if allowed is None else frozenset(ClusterName(c) for c in allowed),
        critical=critical,
    )


def cluster(
    name: str = "c1",
    *,
    gpu: float | tuple[float, ...] = 4.0,
    watts: float = 1000.0,
    pue: float = 1.0,
    embodied: float = 0.0,
) -> Cluster:
    return Cluster(
        name=ClusterName(name),
        capacity={"gpu": gpu},
        watts_per_unit={"gpu": watts},
        pue=pue,
        embodied_g_per_unit_hour={"gpu": embodied},
    )


def instance(
    jobs: Sequence[Job],
    clusters: Sequence[Cluster] | None = None,
    carbon: dict[str, Sequence[float]] | None = None,
    *,
    horizon: int = 4,
    slot_minutes: int = 60,
) -> Instance:
    clusters = list(clusters) if clusters is not None else [cluster()]
    if carbon is None:
        carbon = {c.name: [100.0] * horizon for c in clusters}
    return Instance(
        grid=TimeGrid(slot_minutes=slot_minutes, horizon_slots=horizon),
        resources=("gpu",),
        clusters=tuple(clusters),
        carbon_g_per_kwh={ClusterName(k): tuple(v) for k, v in carbon.items()},
        jobs=tuple(jobs),
    )


def crowded_gpu_jobs(
    rng: np.random.Generator,
    n_jobs: int,
    horizon: int,
    *,
    max_gpu: int,
    release_below: int,
    slack: tuple[int, int],
) -> list[Job]:
    """``n_jobs`` jobs of 1..``max_gpu`` gpu and 1-4 slots, released before
    ``release_below``, with ``slack[0]``..``slack[1]`` slots of slack (the deadline capped
    at ``horizon``): instances whose exact sub-problems are hard for their size. Draws per
    job, in order: runtime, release, slack, gpu."""
    jobs = []
    for i in range(n_jobs):
        runtime = int(rng.integers(1, 5))
        release = int(rng.integers(0, release_below))
        extra = int(rng.integers(slack[0], slack[1] + 1))
        jobs.append(
            job(
                f"j{i}",
                gpu=float(rng.integers(1, max_gpu + 1)),
                runtime=runtime,
                release=release,
                deadline=min(horizon, release + runtime + extra),
            )
        )
    return jobs


def pin_cli_clock(monkeypatch: pytest.MonkeyPatch, at: datetime) -> ManualClock:
    """Pin the CLI's one clock (``carbonshift.cli._clock``) at ``at`` (aware UTC) for a test:
    ``advise``, ``forecast show``, ``controller --check``, ``hub --check`` and ``status`` then
    read ``at`` as now, and so do the providers they build."""
    clock = ManualClock(at)
    monkeypatch.setattr("carbonshift.cli._clock.CLOCK", clock)
    return clock


class FrozenClock:
    """A controller clock (``carbonshift.k8s.clock.Clock``) stopped at ``at`` (aware UTC):
    sleeps and back-offs return at once (webhook, extender and server tests)."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at

    async def sleep_until(self, moment: datetime) -> None:
        return None

    async def backoff(self, seconds: float) -> None:
        return None
