"""Every policy honours ``critical`` (CONTRACTS: start as early as possible), or says why not."""

from __future__ import annotations

import pytest

from carbonshift.domain import Instance, JobId, check_feasibility
from carbonshift.formats import instance_from_dict
from carbonshift.planning.critical import critical_first
from carbonshift.planning.registry import POLICIES, run_policy
from carbonshift.planning.types import PlanContext, PolicyResult

#: asap's whole rule is arrival order; --list-policies says that critical jobs take no
#: precedence there (and in exact under objective=gru, tested below)
NOT_HONOURING = {"asap"}


def instance(critical_release: int = 0) -> dict[str, object]:
    # one GPU, carbon falling all day: a carbon-aware policy would push everything late,
    # and the non-critical job, listed first, would take slot 0 under arrival order
    return {
        "version": 1,
        "slot_minutes": 60,
        "horizon_slots": 6,
        "resources": ["gpu"],
        "clusters": [
            {"name": "a", "capacity": {"gpu": 1}, "watts_per_unit": {"gpu": 300}},
            {"name": "b", "capacity": {"gpu": 1}, "watts_per_unit": {"gpu": 300}},
        ],
        "carbon_g_per_kwh": {
            "a": [500, 400, 300, 200, 100, 50],
            "b": [450, 420, 320, 210, 90, 60],
        },
        "jobs": [
            {"id": "plain-1", "demand": {"gpu": 1}, "runtime_slots": 1, "allowed_clusters": ["b"]},
            {"id": "plain-2", "demand": {"gpu": 1}, "runtime_slots": 2},
            {
                "id": "urgent",
                "demand": {"gpu": 1},
                "runtime_slots": 2,
                "release_slot": critical_release,
                "critical": True,
            },
        ],
    }


@pytest.mark.parametrize("policy", sorted(set(POLICIES) - NOT_HONOURING))
def test_a_critical_job_starts_at_its_earliest_feasible_slot(policy: str) -> None:
    inst = instance_from_dict(instance(critical_release=1))
    result = run_policy(policy, inst)
    starts = {a.job: (a.cluster, a.start_slot) for a in result.plan.assignments}
    # release 1, both clusters free at 1: earliest start 1; ties by grams -> cluster a
    # (400 + 300 < 420 + 320)
    assert starts["urgent"][1] == 1
    if policy not in ("threshold", "window"):  # those two start it at once on any cluster
        assert starts["urgent"] == ("a", 1)
    assert not check_feasibility(inst, result.plan)
    placed = set(starts) | set(result.plan.unscheduled)
    assert placed == {"plain-1", "plain-2", "urgent"}


@pytest.mark.parametrize("policy", sorted(NOT_HONOURING))
def test_the_others_say_in_their_summary_that_critical_jobs_take_no_precedence(
    policy: str,
) -> None:
    assert "critical jobs take no precedence" in POLICIES[policy].summary


def test_exact_on_gru_is_the_cjps_optimum_and_says_critical_jobs_take_no_precedence() -> None:
    assert "objective=gru" in POLICIES["exact"].summary
    assert "critical jobs take no precedence" in POLICIES["exact"].summary
    inst = instance_from_dict(instance(critical_release=1))
    starts = {
        a.job: a.start_slot
        for a in run_policy("exact", inst, {"objective": "gru"}).plan.assignments
    }
    assert starts["urgent"] > 1  # GRU pushes it to the clean end of the day


def test_window_warns_that_it_does_not_choose_where_with_several_clusters(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from carbonshift.planning.policies import window as window_module

    window_module._warn_multi_cluster.cache_clear()
    with caplog.at_level("WARNING"):
        run_policy("window", instance_from_dict(instance()))
    want = "single-cluster time shifter: with 2 clusters"
    assert any(want in r.getMessage() for r in caplog.records)


def test_the_rest_is_planned_with_the_callers_context_and_the_critical_jobs_room_held() -> None:
    inst = instance_from_dict(instance(critical_release=1))
    seen: list[PlanContext | None] = []

    def inner(rest: Instance, context: PlanContext | None) -> PolicyResult:
        seen.append(context)
        return run_policy("asap", rest)

    context = PlanContext(waited_slots={JobId("plain-2"): 3}, origin_slot=7)
    critical_first(inner, inst, context)
    (got,) = seen
    assert got is not None
    assert got.origin_slot == 7  # before, a new PlanContext dropped it (0)
    assert got.waited_slots == {JobId("plain-2"): 3}
    assert got.held_units is not None
    # the urgent job (1 gpu, slots 1-2) holds its cluster's room there and nowhere else
    assert float(got.held_units.sum()) == 2.0
