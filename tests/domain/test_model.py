"""Construction rules of the domain model: bad values raise InputError naming value and fix."""

from __future__ import annotations

import pytest

from carbonshift.domain import Cluster, ClusterName, Instance, Job, JobId, TimeGrid
from carbonshift.errors import InputError
from tests.builders import cluster, instance, job


@pytest.mark.parametrize(
    ("build", "want_in_message"),
    [
        pytest.param(lambda: job(runtime=0), "runtime_slots is 0", id="zero-runtime"),
        pytest.param(lambda: job(release=-1), "release_slot is -1", id="negative-release"),
        pytest.param(lambda: job(gpu=-2), "is -2", id="negative-demand"),
        pytest.param(lambda: job(gpu=0), "no demand > 0", id="no-demand"),
        pytest.param(lambda: cluster(gpu=-1), "capacity['gpu'] is -1", id="negative-capacity"),
        pytest.param(lambda: cluster(pue=float("nan")), "pue", id="nan-pue"),
        pytest.param(lambda: TimeGrid(0, 4), "slot_minutes is 0", id="zero-slot"),
        pytest.param(
            lambda: instance([job()], carbon={"c1": [1.0, 2.0]}),
            "has 2 values; it needs exactly horizon_slots = 4",
            id="carbon-wrong-length",
        ),
        pytest.param(lambda: instance([job("a"), job("a")]), "appears twice", id="duplicate-job"),
        pytest.param(
            lambda: instance([job(allowed=["nowhere"])]), "unknown clusters", id="bad-allowed"
        ),
        pytest.param(
            lambda: instance([job()], [cluster(gpu=(1.0, 2.0))]),
            "give one number or exactly horizon_slots = 4",
            id="capacity-wrong-length",
        ),
    ],
)
def test_bad_values_are_refused(build: object, want_in_message: str) -> None:
    with pytest.raises(InputError, match=None) as info:
        build()  # type: ignore[operator]
    assert want_in_message in str(info.value)


def test_unknown_resource_is_named() -> None:
    bad = Job(id=JobId("j"), demand={"tpu": 1.0}, runtime_slots=1, deadline_slot=3)
    with pytest.raises(InputError, match=r"resources \['tpu'\]"):
        instance([bad])


def test_deadline_in_the_past_is_valid() -> None:
    inst = instance([job(deadline=-3)])
    assert inst.jobs[0].deadline_slot == -3


def test_cluster_lookup() -> None:
    inst = Instance(
        grid=TimeGrid(60, 2),
        resources=("gpu",),
        clusters=(Cluster(ClusterName("x"), {"gpu": 1.0}, {"gpu": 1.0}),),
        carbon_g_per_kwh={ClusterName("x"): (1.0, 2.0)},
        jobs=(),
    )
    assert inst.cluster("x").capacity_at("gpu", 1) == 1.0
    assert inst.cluster("x").capacity_at("cpu", 0) == 0.0
    with pytest.raises(InputError, match="unknown cluster 'y'"):
        inst.cluster("y")
