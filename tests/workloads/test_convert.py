"""Real time to slots (CONTRACTS.md section 3, "Time"): ceil for runtime, floor for deadline."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from carbonshift.domain import ClusterName, JobId
from carbonshift.errors import InputError
from carbonshift.workloads import (
    Workload,
    WorkloadJob,
    deadline_slot,
    release_slot,
    runtime_slots,
    slot_times,
    to_planning_jobs,
)


@pytest.mark.parametrize(
    ("runtime_h", "slot_minutes", "want_slots"),
    [
        pytest.param(1.0, 60, 1, id="exactly-one-slot"),
        pytest.param(1.01, 60, 2, id="a-bit-more-takes-another-slot"),
        pytest.param(0.01, 60, 1, id="short-job-takes-one-slot"),
        pytest.param(0.5, 30, 1, id="half-hour-on-half-hour-slots"),
        pytest.param(0.1 * 3, 18, 1, id="float-noise-0.30000000000000004-h"),
        pytest.param(2.5, 60, 3, id="two-and-a-half-hours"),
        pytest.param(11 / 60, 5, 3, id="eleven-minutes-on-5-minute-slots"),
    ],
)
def test_runtime_slots_is_the_ceiling(runtime_h: float, slot_minutes: int, want_slots: int) -> None:
    assert runtime_slots(runtime_h, slot_minutes) == want_slots


@pytest.mark.parametrize(
    ("submit_h", "origin_h", "slot_minutes", "want_release"),
    [
        pytest.param(0.0, 0.0, 60, 0, id="at-the-origin"),
        pytest.param(0.2, 0.0, 60, 1, id="mid-slot-waits-for-the-next-boundary"),
        pytest.param(1.0, 0.0, 60, 1, id="on-a-boundary-starts-there"),
        pytest.param(3.0, 5.0, 60, 0, id="arrived-before-the-origin-is-release-0"),
        pytest.param(5.75, 5.0, 30, 2, id="later-origin-half-hour-slots"),
        pytest.param(0.7, 0.0, 42, 1, id="float-noise-on-42-minute-slots"),
    ],
)
def test_release_is_the_first_boundary_at_or_after_arrival(
    submit_h: float, origin_h: float, slot_minutes: int, want_release: int
) -> None:
    assert release_slot(submit_h, slot_minutes, origin_h) == want_release


@pytest.mark.parametrize(
    ("deadline_h", "origin_h", "slot_minutes", "want_deadline"),
    [
        pytest.param(4.0, 0.0, 60, 4, id="on-a-boundary"),
        pytest.param(4.9, 0.0, 60, 4, id="mid-slot-rounds-down"),
        pytest.param(2.0, 5.0, 60, -3, id="passed-deadline-is-negative"),
        pytest.param(0.7, 0.0, 6, 7, id="float-noise-0.7-over-0.1-is-6.999"),
    ],
)
def test_deadline_slot_is_the_floor(
    deadline_h: float, origin_h: float, slot_minutes: int, want_deadline: int
) -> None:
    assert deadline_slot(deadline_h, slot_minutes, origin_h) == want_deadline


def test_to_planning_jobs_carries_demand_criticality_and_clusters() -> None:
    jobs = [
        WorkloadJob(
            id="a",
            submit_h=0.5,
            runtime_h=1.5,
            demand={"gpu": 2.0, "cpu": 0.0},
            deadline_h=6.2,
            critical=True,
        ),
        WorkloadJob(id="b", submit_h=2.0, runtime_h=0.25, demand={"gpu": 0.0, "cpu": 4.0}),
    ]

    a, b = to_planning_jobs(
        jobs, slot_minutes=60, origin_h=0.0, horizon_slots=24, allowed_clusters=["c1"]
    )

    assert (a.id, a.release_slot, a.runtime_slots, a.deadline_slot) == (JobId("a"), 1, 2, 6)
    assert a.demand == {"gpu": 2.0}
    assert a.critical
    assert a.allowed_clusters == frozenset({ClusterName("c1")})
    # no deadline: horizon_slots (CONTRACTS.md section 1 default)
    assert (b.release_slot, b.runtime_slots, b.deadline_slot) == (2, 1, 24)
    assert b.demand == {"cpu": 4.0}


def test_no_deadline_without_a_horizon_is_an_input_error() -> None:
    jobs = [WorkloadJob(id="a", submit_h=0.0, runtime_h=1.0, demand={"gpu": 1.0})]

    with pytest.raises(InputError, match="pass horizon_slots"):
        to_planning_jobs(jobs, slot_minutes=60)


def test_bad_slot_length() -> None:
    with pytest.raises(InputError, match="slot_minutes is 0"):
        runtime_slots(1.0, 0)


times_h = st.floats(min_value=0.0, max_value=500.0, allow_nan=False)


@given(
    submit=times_h,
    runtime=st.floats(min_value=1e-3, max_value=100.0),
    slack=st.floats(min_value=-50.0, max_value=100.0),
    origin=times_h,
    slot_minutes=st.sampled_from([5, 15, 30, 60, 90]),
)
def test_vectorised_rules_agree_with_the_scalar_ones(
    submit: float, runtime: float, slack: float, origin: float, slot_minutes: int
) -> None:
    job = WorkloadJob(
        id="x",
        submit_h=submit,
        runtime_h=runtime,
        demand={"gpu": 1.0},
        deadline_h=submit + runtime + slack,
    )
    times = slot_times(Workload.from_jobs([job]), slot_minutes=slot_minutes, origin_h=origin)

    assert times.release_slot[0] == release_slot(submit, slot_minutes, origin)
    assert times.runtime_slots[0] == runtime_slots(runtime, slot_minutes)
    assert times.deadline_slot[0] == deadline_slot(submit + runtime + slack, slot_minutes, origin)
    slot_h = slot_minutes / 60
    # a slot-boundary start at release never precedes the arrival; the run fits the slots
    assert origin + times.release_slot[0] * slot_h >= submit - 1e-6 or times.release_slot[0] == 0
    assert times.runtime_slots[0] * slot_h >= runtime - 1e-6
