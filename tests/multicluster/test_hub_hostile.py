"""The hub reads intent through the controller's parser: the values that killed the
controller (issue 12, item 1) leave a hub workload unheld, they never raise."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from carbonshift.k8s.intent import NotHeld
from carbonshift.k8s.multicluster import HubConfig
from carbonshift.k8s.multicluster.workloads import HubWorkload, read_workload
from tests.multicluster.harness import hub_job

NOW = datetime(2023, 6, 1, tzinfo=UTC)
CONFIG = HubConfig().controller_config()


@pytest.mark.parametrize(
    ("annotation", "value"),
    [
        ("carbonshift.io/deadline", "0001-01-01T00:00:00Z"),
        ("carbonshift.io/deadline", "9999999d"),
        ("carbonshift.io/expected-runtime", "1000000000000d"),
        ("carbonshift.io/expected-runtime", "9" * 400 + "d"),
        ("carbonshift.io/restart-overhead", "9" * 400 + "d"),
        ("carbonshift.io/done-seconds", "1e999"),
    ],
    ids=["deadline-year-one", "deadline-ten-million-days", "runtime-trillion-days",
         "runtime-400-nines", "overhead-400-nines", "done-seconds-infinite"],
)  # fmt: skip
def test_hostile_annotations_leave_a_hub_job_unheld(annotation: str, value: str) -> None:
    job = hub_job("j", interruptible=True)
    job["metadata"]["annotations"][annotation] = value
    if annotation == "carbonshift.io/expected-runtime":
        job["spec"]["template"]["metadata"]["annotations"][annotation] = value

    got = read_workload("Job", job, CONFIG, NOW, {})

    assert isinstance(got, NotHeld)
    assert got.unusable


def test_a_well_formed_hub_job_is_read() -> None:
    assert isinstance(read_workload("Job", hub_job("j"), CONFIG, NOW, {}), HubWorkload)


def test_reading_a_hub_job_leaves_the_object_as_it_was() -> None:
    import copy

    job = hub_job("j")
    want = copy.deepcopy(job)

    got = read_workload("Job", job, CONFIG, NOW, {})

    assert isinstance(got, HubWorkload)
    assert got.intent.kind == "Job"
    assert job == want  # no managed label added, the hub label kept, no kind set
