"""Every policy on instances built from the embedded real carbon data (slow tier)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from carbonshift.carbon.embedded import load_series
from carbonshift.domain import (
    Cluster,
    ClusterName,
    Instance,
    Job,
    JobId,
    TimeGrid,
    ViolationKind,
    check_feasibility,
)
from carbonshift.planning import POLICIES, run_policy


def _instance(zones: tuple[str, ...], start: datetime, seed: int) -> Instance:
    horizon = 36
    rng = np.random.default_rng(seed)
    carbon = {}
    for zone in zones:
        series = load_series(zone)
        first = int((start - series.start).total_seconds() // 3600)
        carbon[ClusterName(zone)] = tuple(
            float(v) for v in series.values_g_per_kwh[first : first + horizon]
        )
    clusters = tuple(
        Cluster(ClusterName(z), {"gpu": 16.0, "mem": 256.0}, {"gpu": 300.0}, 1.2, {"gpu": 2.0}, z)
        for z in zones
    )
    jobs = []
    for i in range(40):
        runtime = int(rng.integers(1, 8))
        release = int(rng.integers(0, 20))
        jobs.append(
            Job(
                id=JobId(f"j{i}"),
                demand={"gpu": float(rng.integers(1, 6)), "mem": float(rng.integers(0, 64))},
                runtime_slots=runtime,
                release_slot=release,
                deadline_slot=release + runtime + int(rng.integers(0, 16)),
                critical=bool(rng.random() < 0.1),
            )
        )
    return Instance(
        TimeGrid(60, horizon),
        ("gpu", "mem"),
        clusters,
        carbon,
        tuple(jobs),
        {"gpu": tuple(float(v) for v in rng.integers(0, 6, horizon))},
    )


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("zones", "start"),
    [
        (("DE", "AU-NSW", "BR-CS"), datetime(2021, 3, 7, 5, tzinfo=UTC)),
        (("GB", "US-CAL-CISO"), datetime(2022, 7, 19, 13, tzinfo=UTC)),
        (("CL-SEN", "JP-TK", "IN-WE"), datetime(2023, 12, 30, 0, tzinfo=UTC)),
    ],
    ids=["de-au-br-2021-spring", "gb-california-2022-summer", "three-continents-2023-end"],
)
def test_every_policy_on_real_carbon(zones: tuple[str, ...], start: datetime) -> None:
    inst = _instance(zones, start, seed=start.year)
    for policy in POLICIES:
        params = {"time_limit_s": 3} if policy == "exact" else None
        result = run_policy(policy, inst, params)
        kinds = {v.kind for v in check_feasibility(inst, result.plan)}
        if policy == "rr":
            assert kinds <= {ViolationKind.OVER_CAPACITY}
        else:
            assert kinds == set(), policy
