"""``explain``: one sentence per job that says why."""

from __future__ import annotations

import pytest

from carbonshift.domain import Assignment, ClusterName, JobId, Plan
from carbonshift.planning import PlanStatus, PolicyResult, explain, run_policy
from tests.builders import cluster, instance, job

INSTANCE = instance(
    [
        job("placed", gpu=2, runtime=1, deadline=2),
        job("too-long", gpu=1, runtime=3, release=2),
        job("too-big", gpu=9),
        job("crowded-out", gpu=2, runtime=4, deadline=4),
        job("left-out", gpu=1, runtime=1, deadline=4),
    ],
    [cluster("c1", gpu=2.0)],
    {"c1": [100.0, 50.0, 300.0, 400.0]},
)


def _result(assignments: list[tuple[str, int]], notes: dict[str, str]) -> PolicyResult:
    placed = {job_id for job_id, _ in assignments}
    plan = Plan.of(
        "hand",
        [Assignment(JobId(j), ClusterName("c1"), s) for j, s in assignments],
        [j.id for j in INSTANCE.jobs if j.id not in placed],
    )
    return PolicyResult(plan, PlanStatus.FEASIBLE, {JobId(k): v for k, v in notes.items()})


@pytest.mark.parametrize(
    ("job_id", "want_parts"),
    [
        (
            "placed",
            [
                "c1 slot 1..1, on time, 100 g",
                "cleanest on-time start 100 g (c1 slot 1)",
                "hand: chose it",
            ],
        ),
        ("too-long", ["unscheduled: release slot 2 + runtime 3 slots passes the horizon"]),
        ("too-big", ["exceeds the free capacity of every allowed cluster"]),
        ("crowded-out", ["every start with room is taken by the jobs placed before it"]),
        (
            "left-out",
            ["room existed (e.g. slot 0) but the policy did not take it", "hand: dropped"],
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_each_job_gets_its_reason(job_id: str, want_parts: list[str]) -> None:
    result = _result([("placed", 1)], {"placed": "hand: chose it", "left-out": "hand: dropped"})
    text = explain(INSTANCE, result)[JobId(job_id)]
    for part in want_parts:
        assert part in text


def test_late_assignment_says_by_how_much() -> None:
    inst = instance([job("a", gpu=1, runtime=2, deadline=1)], horizon=3)
    text = explain(inst, run_policy("asap", inst))[JobId("a")]
    assert "late by 1 h" in text
    assert "no on-time start exists in the horizon" in text
