"""The online API: running work holds capacity; the answer says what starts now."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carbonshift.domain import Assignment, ClusterName, Instance, JobId, Plan, check_feasibility
from carbonshift.errors import InputError
from carbonshift.planning import (
    POLICIES,
    PendingWork,
    RunningJob,
    Snapshot,
    build_snapshot,
    held_units,
    plan_snapshot,
)
from tests.builders import cluster, instance, job
from tests.planning.strategies import instances


def _running(cluster_name: str, gpu: float, remaining: int, job_id: str = "r1") -> RunningJob:
    return RunningJob(JobId(job_id), ClusterName(cluster_name), {"gpu": gpu}, remaining)


def test_running_work_holds_capacity_and_pushes_pending_work_elsewhere() -> None:
    inst = instance(
        [job("a", gpu=2, runtime=1, deadline=4)],
        [cluster("clean", gpu=2.0), cluster("dirty", gpu=2.0)],
        {"clean": [10.0] * 4, "dirty": [500.0] * 4},
    )
    free = plan_snapshot(Snapshot(inst), "fluidos")
    busy = plan_snapshot(Snapshot(inst, running=(_running("clean", 2, 4),)), "fluidos")
    assert free.start_now == (Assignment(JobId("a"), ClusterName("clean"), 0),)
    assert busy.start_now == (Assignment(JobId("a"), ClusterName("dirty"), 0),)
    assert busy.held == ()


def test_jobs_planned_later_are_held_with_a_tentative_start() -> None:
    inst = instance(
        [job("now", gpu=1, deadline=1), job("later", gpu=1, deadline=4)],
        [cluster("c1", gpu=4.0)],
        {"c1": [300.0, 300.0, 10.0, 300.0]},
    )
    decision = plan_snapshot(Snapshot(inst), "fluidos")
    assert [a.job for a in decision.start_now] == ["now"]
    assert decision.held == ("later",)
    assert {a.job: a.start_slot for a in decision.plan.assignments}["later"] == 2
    assert decision.planner_seconds >= 0


@pytest.mark.parametrize(
    ("running", "want_message"),
    [
        (_running("nowhere", 1, 1), "unknown cluster 'nowhere'"),
        (_running("c1", 1, 1, job_id="j1"), "both running and pending"),
        (RunningJob(JobId("r"), ClusterName("c1"), {"tpu": 1}, 1), "resource 'tpu'"),
    ],
    ids=["unknown-cluster", "running-and-pending", "unknown-resource"],
)
def test_inconsistent_snapshots_are_input_errors(running: RunningJob, want_message: str) -> None:
    with pytest.raises(InputError, match=want_message):
        plan_snapshot(Snapshot(instance([job("j1")]), running=(running,)), "asap")


def test_negative_remaining_slots_is_an_input_error() -> None:
    with pytest.raises(InputError, match="remaining_slots is -1"):
        _running("c1", 1, -1)


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    inst: Instance = draw(instances())
    running = []
    for n in range(draw(st.integers(0, 2))):
        c = draw(st.sampled_from(inst.clusters))
        running.append(
            RunningJob(
                JobId(f"run{n}"),
                c.name,
                {inst.resources[0]: 1.0},
                draw(st.integers(0, inst.grid.horizon_slots + 1)),
            )
        )
    return Snapshot(inst, tuple(running), {j.id: draw(st.integers(0, 30)) for j in inst.jobs})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots())
def test_pending_plan_fits_beside_running_work(snapshot: Snapshot) -> None:
    inst = snapshot.instance
    held = held_units(inst, snapshot.running)
    for policy in (p for p in POLICIES if p != "rr"):
        decision = plan_snapshot(
            snapshot, policy, {"time_limit_s": 5} if policy == "exact" else None
        )
        assert check_feasibility(inst, decision.plan) == [], policy
        use = np.zeros_like(held)
        jobs = {j.id: j for j in inst.jobs}
        for a in decision.plan.assignments:
            c = [cl.name for cl in inst.clusters].index(a.cluster)
            for k, r in enumerate(inst.resources):
                use[c, k, a.start_slot : a.start_slot + jobs[a.job].runtime_slots] += jobs[
                    a.job
                ].demand.get(r, 0.0)
        caps = np.array(
            [
                [
                    [cl.capacity_at(r, t) for t in range(inst.grid.horizon_slots)]
                    for r in inst.resources
                ]
                for cl in inst.clusters
            ]
        )
        assert np.all(use <= np.maximum(caps - held, 0) + 1e-9), policy
        assert {a.job for a in decision.start_now} == {
            a.job for a in decision.plan.assignments if a.start_slot == 0
        }
        assert set(decision.held) | {a.job for a in decision.start_now} == set(jobs)


def test_plan_of_an_empty_snapshot_is_empty() -> None:
    decision = plan_snapshot(Snapshot(instance([])), "caspian")
    assert decision.plan == Plan("caspian", (), (), decision.plan.solve_seconds)


@pytest.mark.parametrize(
    ("now_h", "slot_minutes", "want_origin_slot"),
    [
        pytest.param(0.0, 60, 0, id="hour-0"),
        pytest.param(7.0, 60, 7, id="hourly-slots"),
        pytest.param(2.5, 30, 5, id="half-hour-slots"),
        pytest.param(3.999999999999, 60, 4, id="float-noise-at-a-boundary"),
    ],
)
def test_the_seam_tells_the_policy_which_slot_of_the_callers_axis_is_slot_0(
    now_h: float, slot_minutes: int, want_origin_slot: int
) -> None:
    """``PlanContext.origin_slot``: phantoms of the reserve keep their shapes by it
    (``reserve_shapes = stable``), so every caller of the seam fills it alike."""
    snap = build_snapshot(
        now_h=now_h,
        slot_minutes=slot_minutes,
        resources=("gpu",),
        clusters=[cluster()],
        forecast_g_per_kwh={"c1": [100.0] * 4},
        pending=[PendingWork("a", {"gpu": 1.0}, runtime_h=1.0, deadline_h=now_h + 2.0)],
    )
    assert snap.context().origin_slot == want_origin_slot
