"""The workload vocabulary: construction rules, ordering, selection."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from carbonshift.errors import InputError
from carbonshift.workloads import Workload, WorkloadJob


def wjob(
    job_id: str = "a",
    *,
    submit_h: float = 0.0,
    runtime_h: float = 1.0,
    gpu: float = 1.0,
    deadline_h: float | None = None,
    critical: bool = False,
) -> WorkloadJob:
    return WorkloadJob(
        id=job_id,
        submit_h=submit_h,
        runtime_h=runtime_h,
        demand={"gpu": gpu},
        deadline_h=deadline_h,
        critical=critical,
    )


@pytest.mark.parametrize(
    ("kwargs", "want_in_message"),
    [
        pytest.param({"submit_h": -1.0}, "submit_h is -1.0 h", id="negative-submit"),
        pytest.param({"runtime_h": 0.0}, "runtime_h is 0.0 h", id="zero-runtime"),
        pytest.param({"runtime_h": math.inf}, "runtime_h is inf h", id="infinite-runtime"),
        pytest.param({"gpu": -1.0}, "demand['gpu'] is -1.0", id="negative-demand"),
        pytest.param({"gpu": 0.0}, "no demand > 0", id="no-demand"),
        pytest.param({"deadline_h": math.nan}, "deadline_h is nan", id="nan-deadline"),
    ],
)
def test_workload_job_refuses_bad_values(kwargs: dict[str, float], want_in_message: str) -> None:
    with pytest.raises(InputError, match=re.escape(want_in_message)):
        wjob(**kwargs)  # type: ignore[arg-type]


def test_a_deadline_before_the_job_can_finish_is_allowed() -> None:
    job = wjob(submit_h=5.0, runtime_h=2.0, deadline_h=1.0)

    assert job.deadline_h == 1.0


def test_from_jobs_sorts_by_submission_and_round_trips() -> None:
    jobs = [
        wjob("late", submit_h=3.0, deadline_h=9.0),
        wjob("early", submit_h=1.0, critical=True),
        wjob("tie", submit_h=3.0, gpu=2.0),
    ]

    workload = Workload.from_jobs(jobs, source="test")

    assert workload.ids == ("early", "late", "tie")  # ties keep input order
    assert list(workload) == [jobs[1], jobs[0], jobs[2]]
    assert workload.resources == ("gpu",)
    assert workload.has_deadline().tolist() == [False, True, False]


def test_columns_are_read_only() -> None:
    workload = Workload.from_jobs([wjob()])

    with pytest.raises(ValueError, match="read-only"):
        workload.submit_h[0] = 5.0


def test_arriving_selects_a_half_open_window() -> None:
    workload = Workload.from_jobs([wjob(str(h), submit_h=float(h)) for h in range(5)])

    window = workload.arriving(1.0, 3.0)

    assert window.ids == ("1", "2")
    np.testing.assert_allclose(window.submit_h, [1.0, 2.0])


def test_take_with_a_mask() -> None:
    workload = Workload.from_jobs([wjob(str(h), submit_h=float(h)) for h in range(4)])

    picked = workload.take(workload.submit_h % 2 == 0)

    assert picked.ids == ("0", "2")


@pytest.mark.parametrize(
    ("columns", "want_in_message"),
    [
        pytest.param(
            {"runtime_h": [1.0, -1.0]}, "runtime_h is -1.0 for workload job 'b'", id="neg"
        ),
        pytest.param({"demand": {"gpu": [1.0, 0.0]}}, "'b' has no demand > 0", id="no-demand"),
        pytest.param({"ids": ["a", "a"]}, "'a' appears twice", id="duplicate-id"),
        pytest.param({"submit_h": [0.0]}, "different lengths", id="ragged"),
        pytest.param({"deadline_h": [1.0, math.inf]}, "deadline_h is inf", id="inf-deadline"),
    ],
)
def test_from_columns_checks_every_value(columns: dict[str, object], want_in_message: str) -> None:
    base: dict[str, object] = {
        "ids": ["a", "b"],
        "submit_h": [0.0, 1.0],
        "runtime_h": [1.0, 1.0],
        "demand": {"gpu": [1.0, 1.0]},
    }
    base.update(columns)

    with pytest.raises(InputError, match=want_in_message):
        Workload.from_columns(**base)  # type: ignore[arg-type]


def test_from_jobs_refuses_a_resource_not_listed() -> None:
    with pytest.raises(InputError, match=r"asks for resources \['gpu'\]"):
        Workload.from_jobs([wjob()], resources=["cpu"])
