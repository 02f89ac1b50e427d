"""Hold only when it pays: minimum saving, hysteresis and the release rate limit (issue 13.3)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from carbonshift.domain import Assignment, ClusterName, Job, JobId, Plan, check_feasibility
from carbonshift.errors import InputError
from carbonshift.planning import HeldWork, PendingWork, build_snapshot, plan_snapshot
from carbonshift.planning.hold import HoldRule, apply_hold_rule, plan_moves
from carbonshift.planning.types import PlanContext
from tests.builders import cluster, instance, job

ON = HoldRule(min_saving_g=1.0, min_saving_pct=1.0)


def plan_of(*starts: tuple[str, int], where: str = "c1") -> Plan:
    return Plan.of("test", [Assignment(JobId(j), ClusterName(where), s) for j, s in starts])


def starts(plan: Plan) -> dict[str, int]:
    return {a.job: a.start_slot for a in plan.assignments}


@dataclass(frozen=True)
class Case:
    id: str
    carbon: list[float]
    planned_slot: int
    rule: HoldRule
    want_slot: int
    want_reason: str | None = None
    gpu_capacity: float = 4.0
    held_now: float = 0.0


CASES = [
    Case(
        # the reproducer: the controller held a Job 1 h to save 0.0 g
        id="flat-forecast-saves-nothing-so-it-starts-now",
        carbon=[300.0] * 4,
        planned_slot=1,
        rule=ON,
        want_slot=0,
        want_reason="saving 0.0 g below min_saving_g 1 g: started now",
    ),
    Case(
        id="a-real-saving-keeps-the-hold",
        carbon=[400.0, 400.0, 100.0, 400.0],
        planned_slot=2,
        rule=ON,
        want_slot=2,
    ),
    Case(
        # 1 kW x 1 h: 1000 g now, 995 g later: 5 g saved but only 0.5 %
        id="grams-above-but-percent-below-starts-now",
        carbon=[1000.0, 995.0, 1000.0, 1000.0],
        planned_slot=1,
        rule=ON,
        want_slot=0,
        want_reason="0.5 % below min_saving_pct 1 %: started now",
    ),
    Case(
        id="no-room-now-so-the-hold-is-about-room-and-stays",
        carbon=[300.0] * 4,
        planned_slot=1,
        rule=ON,
        want_slot=1,
        held_now=4.0,
    ),
    Case(
        id="rule-off-changes-nothing",
        carbon=[300.0] * 4,
        planned_slot=1,
        rule=HoldRule(),
        want_slot=1,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_hold_must_pay(case: Case) -> None:
    inst = instance([job("a", deadline=4)], [cluster(gpu=case.gpu_capacity)], {"c1": case.carbon})
    held = np.zeros((1, 1, 4))
    held[0, 0, 0] = case.held_now
    context = PlanContext(held_units=held)
    got = apply_hold_rule(inst, context, plan_of(("a", case.planned_slot)), case.rule)
    assert starts(got.plan) == {"a": case.want_slot}
    if case.want_reason is None:
        assert got.reasons == {}
    else:
        assert set(got.reasons) == {"a"}
        assert case.want_reason in got.reasons[JobId("a")]


@pytest.mark.parametrize(
    ("new_slot", "carbon", "want_slot", "want_kept"),
    [
        # previous plan: slot 1 (101 g/kWh); the new plan moves to slot 2 for 1 g: kept
        pytest.param(2, [400.0, 101.0, 100.0, 400.0], 1, True, id="crumb-improvement-is-ignored"),
        # the new plan saves 61 g (60 %) against slot 1: moved
        pytest.param(2, [400.0, 161.0, 100.0, 400.0], 2, False, id="real-improvement-moves-it"),
    ],
)
def test_replans_do_not_flap(
    new_slot: int, carbon: list[float], want_slot: int, want_kept: bool
) -> None:
    inst = instance([job("a", deadline=4)], carbon={"c1": carbon})
    rule = HoldRule(replan_min_improvement_g=5.0, replan_min_improvement_pct=5.0)
    got = apply_hold_rule(inst, None, plan_of(("a", new_slot)), rule, previous={"a": ("c1", 1)})
    assert starts(got.plan) == {"a": want_slot}
    assert ("kept its planned start" in got.reasons.get(JobId("a"), "")) is want_kept


REPLAN = HoldRule(replan_min_improvement_g=5.0, replan_min_improvement_pct=5.0)


@pytest.mark.parametrize(
    ("new", "previous", "want", "want_kept"),
    [
        pytest.param(
            # one slot each; a re-plan swaps them for 1 g: each alone finds its earlier
            # start taken by the other, so they go back together
            {"a": 2, "b": 1},
            {"a": 1, "b": 2},
            {"a": 1, "b": 2},
            {"a", "b"},
            id="two-jobs-that-swapped-crumb-starts-both-keep-theirs",
        ),
        pytest.param(
            {"a": 3, "b": 1, "c": 2},
            {"a": 1, "b": 2, "c": 3},
            {"a": 1, "b": 2, "c": 3},
            {"a", "b", "c"},
            id="a-ring-of-three-keeps-its-starts",
        ),
        pytest.param(
            # c is new and took a's earlier slot 1: a cannot go back, so b, which would
            # take a's new slot 2, stays where the new plan put it too
            {"a": 2, "b": 3, "c": 1},
            {"a": 1, "b": 2},
            {"a": 2, "b": 3, "c": 1},
            set(),
            id="a-job-that-cannot-go-back-keeps-the-others-from-taking-its-new-start",
        ),
    ],
)
def test_jobs_blocked_one_by_one_move_back_together(
    new: dict[str, int], previous: dict[str, int], want: dict[str, int], want_kept: set[str]
) -> None:
    """Capacity 1 gpu, 1-gpu jobs of one slot, a forecast that wobbles by 1 g/kWh: crumbs."""
    inst = instance(
        [job(k, deadline=4) for k in sorted(new)],
        [cluster(gpu=1.0)],
        {"c1": [400.0, 100.0, 101.0, 100.5]},
    )
    got = apply_hold_rule(
        inst,
        None,
        plan_of(*new.items()),
        REPLAN,
        previous={k: ("c1", s) for k, s in previous.items()},
    )
    assert starts(got.plan) == want
    assert set(got.reasons) == want_kept
    assert all("kept its planned start" in why for why in got.reasons.values())
    assert check_feasibility(inst, got.plan) == []


def test_a_round_by_round_replan_does_not_flap() -> None:
    """Forecasts that wobble by 1 g/kWh between two slots: without hysteresis the planned
    start flips every round; with it, it stays."""
    rule = HoldRule(replan_min_improvement_g=5.0, replan_min_improvement_pct=5.0)
    forecasts = [[400.0, 400.0, 100.0, 101.0, 400.0], [400.0, 400.0, 101.0, 100.0, 400.0]] * 3
    for hysteresis, want_moves in ((HoldRule(), 5), (rule, 0)):
        previous: dict[str, tuple[str, int]] = {}
        moves = 0
        for carbon in forecasts:
            snap = build_snapshot(
                now_h=0.0,
                slot_minutes=60,
                resources=("gpu",),
                clusters=[cluster()],
                forecast_g_per_kwh={"c1": carbon},
                pending=[
                    PendingWork(
                        "a",
                        {"gpu": 1.0},
                        runtime_h=1.0,
                        deadline_h=5.0,
                        planned_cluster=previous.get("a", (None, 0))[0],
                        planned_start_h=float(previous["a"][1]) if "a" in previous else None,
                    )
                ],
            )
            decision = plan_snapshot(snap, "fluidos", rule=hysteresis)
            (a,) = decision.plan.assignments
            if "a" in previous and previous["a"][1] != a.start_slot:
                moves += 1
            previous["a"] = (str(a.cluster), a.start_slot)
        assert moves == want_moves, hysteresis


def test_release_rate_limit_releases_the_most_urgent_first_and_never_makes_one_late() -> None:
    jobs = [
        job("slack", deadline=4),
        job("urgent", deadline=2),
        job("tight", deadline=1),  # slot 1 would make it late: it starts now whatever the limit
        job("middle", deadline=3),
    ]
    inst = instance(jobs, [cluster(gpu=8.0)])
    plan = plan_of(*((j.id, 0) for j in jobs))
    got = apply_hold_rule(inst, None, plan, HoldRule(max_releases_per_slot=2))
    want = {"tight": 0, "urgent": 0, "middle": 1, "slack": 1}
    assert starts(got.plan) == want
    assert set(got.reasons) == {"middle", "slack"}
    assert all("release rate limit" in r for r in got.reasons.values())
    assert check_feasibility(inst, got.plan) == []
    assert all(j.deadline_slot >= starts(got.plan)[j.id] + j.runtime_slots for j in jobs)


def test_running_work_is_not_counted_by_the_release_limit() -> None:
    snap = build_snapshot(
        now_h=0.0,
        slot_minutes=60,
        resources=("gpu",),
        clusters=[cluster(gpu=8.0)],
        forecast_g_per_kwh={"c1": [100.0] * 4},
        pending=[
            PendingWork(
                "r", {"gpu": 1.0}, 1.0, 4.0, running=True, allowed_clusters=frozenset({"c1"})
            ),
            PendingWork("p", {"gpu": 1.0}, 1.0, 4.0),
        ],
        running=[HeldWork("x", "c1", {"gpu": 1.0, "memory": 3.0}, end_h=1.5)],
    )
    decision = plan_snapshot(snap, "asap", rule=HoldRule(max_releases_per_slot=1))
    assert starts(decision.plan) == {"r": 0, "p": 0}


def test_negative_thresholds_are_input_errors() -> None:
    with pytest.raises(InputError, match=r"min_saving_g is -1\.0 g"):
        HoldRule(min_saving_g=-1.0)


def test_a_job_not_yet_released_is_never_started_now() -> None:
    inst = instance([job("a", release=2, deadline=4)], carbon={"c1": [300.0] * 4})
    rule = HoldRule(1.0, 1.0, replan_min_improvement_g=5.0, replan_min_improvement_pct=5.0)
    got = apply_hold_rule(inst, None, plan_of(("a", 3)), rule, previous={"a": ("c1", 1)})
    assert starts(got.plan) == {"a": 3}
    assert got.reasons == {}


@pytest.mark.parametrize(
    ("reserved_gpu_at_slot_1", "want_slot"),
    [
        # nothing reserved: the move for 1 g is undone (crumbs)
        pytest.param(0.0, 1, id="no-reserve-the-crumb-move-is-undone"),
        # the plan keeps slot 1 of the only GPU for work still to come: the job stays
        # where the new plan put it, the reserve's room is not free to go back to
        pytest.param(1.0, 2, id="the-reserves-room-is-not-taken-back"),
    ],
)
def test_the_hysteresis_does_not_move_a_job_back_into_the_reserve(
    reserved_gpu_at_slot_1: float, want_slot: int
) -> None:
    inst = instance(
        [job("a", deadline=4)],
        clusters=[cluster(gpu=1.0)],
        carbon={"c1": [400.0, 101.0, 100.0, 400.0]},
    )
    reserved = np.zeros((1, 1, 4))
    reserved[0, 0, 1] = reserved_gpu_at_slot_1
    got = apply_hold_rule(
        inst, None, plan_of(("a", 2)), REPLAN, previous={"a": ("c1", 1)}, reserved_units=reserved
    )
    assert starts(got.plan) == {"a": want_slot}


def test_plan_moves_lists_each_changed_start_with_its_grams() -> None:
    """1 kW x 1 h: slot 1 is 101 g, slot 2 100 g, slot 3 400 g."""
    inst = instance(
        [job("a", deadline=4), job("b", deadline=4), job("c", deadline=4)],
        carbon={"c1": [400.0, 101.0, 100.0, 400.0]},
    )
    plan = plan_of(("a", 2), ("b", 3), ("c", 1))
    moves = plan_moves(inst, None, plan, {"a": ("c1", 1), "b": ("c1", 2), "c": ("c1", 1)})
    got = {m.job: (m.from_slot, m.to_slot, round(m.gain_g, 6)) for m in moves}
    assert got == {"a": (1, 2, 1.0), "b": (2, 3, -300.0)}


@pytest.mark.parametrize(
    ("one", "held_gpu_at_slot_1", "earlier", "new", "want", "want_kept"),
    [
        # 1 kW x 1 h: slot 1 is 101 g, slot 2 100 g; the move to slot 2 saves 1 g (1 %)
        pytest.param(job("a", deadline=4), 0.0, 1, 2, 1, True, id="a-1-g-move-keeps-its-start"),
        # from slot 3 (400 g) the move saves 300 g (75 %): it stands
        pytest.param(job("a", deadline=4), 0.0, 3, 2, 2, False, id="a-300-g-move-stands"),
        # work that runs in slot 1 now fills the only GPU: the earlier start no longer fits
        pytest.param(
            job("a", deadline=4), 1.0, 1, 2, 2, False, id="an-earlier-start-that-no-longer-fits"
        ),
        # the deadline is now slot 1: the earlier start (slot 1) would be late, slot 0 is not
        pytest.param(job("a", deadline=1), 0.0, 1, 0, 0, False, id="an-earlier-start-now-late"),
        # a critical job that the new plan starts earlier (slot 1, 1 g dearer) is never put
        # back to its later start
        pytest.param(
            job("a", deadline=4, critical=True), 0.0, 2, 1, 1, False, id="critical-never-later"
        ),
    ],
)
def test_the_hysteresis_keeps_an_earlier_start_only_when_it_is_still_valid_and_the_move_is_crumbs(
    one: Job, held_gpu_at_slot_1: float, earlier: int, new: int, want: int, want_kept: bool
) -> None:
    inst = instance(
        [one],
        clusters=[cluster(gpu=1.0)],
        carbon={"c1": [101.0, 101.0, 100.0, 400.0]},
    )
    held = np.zeros((1, 1, 4))
    held[0, 0, 1] = held_gpu_at_slot_1
    got = apply_hold_rule(
        inst,
        PlanContext(held_units=held),
        plan_of(("a", new)),
        REPLAN,
        previous={"a": ("c1", earlier)},
    )
    assert starts(got.plan) == {"a": want}
    assert (JobId("a") in got.reasons) is want_kept
