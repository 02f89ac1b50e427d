"""Scores and feasibility, hand-computed against CONTRACTS.md section 2."""

from __future__ import annotations

import pytest

from carbonshift.domain import (
    Assignment,
    ClusterName,
    JobId,
    Plan,
    ViolationKind,
    check_feasibility,
    job_carbon_g,
    score_plan,
)
from tests.builders import cluster, instance, job


def _plan(*assignments: tuple[str, str, int], unscheduled: tuple[str, ...] = ()) -> Plan:
    return Plan.of(
        "test",
        [Assignment(JobId(j), ClusterName(c), s) for j, c, s in assignments],
        [JobId(u) for u in unscheduled],
    )


def test_scores_one_job_by_hand() -> None:
    # 2 GPUs x 200 W = 0.4 kW, PUE 1.5 -> 0.6 kW; 30-minute slots (0.5 h);
    # slots 1 and 2 at 100 and 300 g/kWh -> 0.6 * 0.5 * (100 + 300) = 120 g.
    # Embodied: 2 units x 10 g/unit-h x 2 slots x 0.5 h = 20 g.
    # GRU: 2 / 100 + 2 / 300.
    inst = instance(
        [job("a", gpu=2, runtime=2, deadline=3)],
        [cluster("c1", gpu=4, watts=200, pue=1.5, embodied=10)],
        {"c1": [50, 100, 300, 80]},
        slot_minutes=30,
    )
    scores = score_plan(inst, _plan(("a", "c1", 1)))
    want_operational_g = 0.6 * 0.5 * 400
    assert scores.operational_g == pytest.approx(want_operational_g, rel=1e-12)
    assert scores.embodied_g == pytest.approx(20.0, rel=1e-12)
    assert scores.gru == pytest.approx(2 / 100 + 2 / 300, rel=1e-12)
    assert (scores.on_time, scores.late, scores.unscheduled) == (1, 0, 0)
    assert scores.carbon_g == pytest.approx(want_operational_g + 20.0)
    assert job_carbon_g(inst, inst.jobs[0], inst.clusters[0], 1) == pytest.approx(140.0)


@pytest.mark.parametrize(
    ("start", "deadline", "want_on_time"),
    [
        pytest.param(0, 2, True, id="finishes-exactly-at-deadline"),
        pytest.param(1, 2, False, id="one-slot-late"),
        pytest.param(0, -5, False, id="deadline-already-past"),
    ],
)
def test_on_time_rule(start: int, deadline: int, want_on_time: bool) -> None:
    inst = instance([job("a", runtime=2, deadline=deadline)], horizon=4)
    scores = score_plan(inst, _plan(("a", "c1", start)))
    assert (scores.on_time, scores.late) == ((1, 0) if want_on_time else (0, 1))


def test_gru_floors_intensity_at_one() -> None:
    inst = instance([job("a", gpu=3)], carbon={"c1": [0.0, 0.5, 2.0, 2.0]})
    assert score_plan(inst, _plan(("a", "c1", 0))).gru == pytest.approx(3.0)
    assert score_plan(inst, _plan(("a", "c1", 2))).gru == pytest.approx(1.5)


def test_gru_counts_first_resource_only_and_pue_not_at_all() -> None:
    inst = instance([job("a", gpu=2)], [cluster(pue=3.0)], carbon={"c1": [10.0] * 4})
    assert score_plan(inst, _plan(("a", "c1", 0))).gru == pytest.approx(0.2)


def test_feasible_plan_has_no_violations() -> None:
    inst = instance([job("a", gpu=2, runtime=2), job("b", gpu=2, runtime=2)])
    assert check_feasibility(inst, _plan(("a", "c1", 0), ("b", "c1", 0))) == []


@pytest.mark.parametrize(
    ("plan", "want_kinds"),
    [
        pytest.param(
            _plan(("a", "c1", 0), ("b", "c1", 1)), {ViolationKind.OVER_CAPACITY}, id="overlap"
        ),
        pytest.param(_plan(("a", "c1", 0)), {ViolationKind.MISSING_JOB}, id="b-missing"),
        pytest.param(
            _plan(("a", "c1", 0), ("b", "c1", 2), unscheduled=("b",)),
            {ViolationKind.DUPLICATE_JOB},
            id="b-twice",
        ),
        pytest.param(
            _plan(("a", "c9", 0), ("b", "c1", 2)), {ViolationKind.UNKNOWN_CLUSTER}, id="no-c9"
        ),
        pytest.param(
            _plan(("a", "c1", 0), ("b", "c1", 2), ("zz", "c1", 0)),
            {ViolationKind.UNKNOWN_JOB},
            id="unknown-job",
        ),
        pytest.param(
            _plan(("a", "c1", 0), ("b", "c1", 3)), {ViolationKind.PAST_HORIZON}, id="past-horizon"
        ),
        pytest.param(
            _plan(("a", "c1", 0), unscheduled=("b",)),
            set(),
            id="unscheduled-is-fine",
        ),
    ],
)
def test_violations(plan: Plan, want_kinds: set[ViolationKind]) -> None:
    inst = instance([job("a", gpu=3, runtime=2), job("b", gpu=3, runtime=2)])
    got = check_feasibility(inst, plan)
    assert {v.kind for v in got} == want_kinds


def test_release_and_allowed_clusters_are_checked() -> None:
    inst = instance(
        [job("a", release=2, allowed=["c2"])],
        [cluster("c1"), cluster("c2")],
    )
    got = check_feasibility(inst, _plan(("a", "c1", 1)))
    assert {v.kind for v in got} == {ViolationKind.BEFORE_RELEASE, ViolationKind.NOT_ALLOWED}
    assert all("'a'" in v.message for v in got)


def test_time_varying_capacity() -> None:
    inst = instance([job("a", gpu=3, runtime=2)], [cluster(gpu=(4.0, 4.0, 2.0, 4.0))])
    assert check_feasibility(inst, _plan(("a", "c1", 0))) == []
    got = check_feasibility(inst, _plan(("a", "c1", 1)))
    assert [(v.kind, v.slot) for v in got] == [(ViolationKind.OVER_CAPACITY, 2)]
