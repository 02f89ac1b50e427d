"""Phantom jobs for the forecast future demand (planning/lookahead.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from carbonshift.domain import Assignment, ClusterName, Instance, JobId, Plan, check_feasibility
from carbonshift.errors import InputError
from carbonshift.formats import instance_from_dict
from carbonshift.planning.lookahead import (
    PHANTOM_PREFIX,
    planned_with_reserve,
    real_bound,
    real_part,
    with_phantoms,
)
from carbonshift.planning.registry import run_policy
from carbonshift.planning.types import PlanStatus, PolicyResult


def instance(future: list[float] | None) -> dict[str, object]:
    """One GPU; carbon 50 now, 10 next hour, 100 after. The pending job alone would wait
    for the clean hour; work forecast to arrive during this hour (``future[0]``, planned
    from the next) makes starting now the cheaper whole."""
    data: dict[str, object] = {
        "version": 1,
        "slot_minutes": 60,
        "horizon_slots": 3,
        "resources": ["gpu"],
        "clusters": [{"name": "a", "capacity": {"gpu": 1}, "watts_per_unit": {"gpu": 1000}}],
        "carbon_g_per_kwh": {"a": [50, 10, 100]},
        "jobs": [{"id": "pending", "demand": {"gpu": 1}, "runtime_slots": 1}],
    }
    if future is not None:
        data["future_demand"] = {"gpu": future}
    return data


def test_phantoms_follow_the_forecast_shaped_like_the_pending_work() -> None:
    inst = instance_from_dict(
        {
            **instance([2.5, 1.0, 4.0]),
            "horizon_slots": 3,
            "jobs": [
                {"id": "x", "demand": {"gpu": 2}, "runtime_slots": 2, "deadline_slot": 3},
                {"id": "y", "demand": {"gpu": 2}, "runtime_slots": 2, "deadline_slot": 3},
            ],
            "clusters": [{"name": "a", "capacity": {"gpu": 4}, "watts_per_unit": {"gpu": 1}}],
        }
    )
    phantoms = [j for j in with_phantoms(inst, 1.0).jobs if j.id.startswith(PHANTOM_PREFIX)]
    # what arrives during slot 0 (2.5 units) is first planned at slot 1, in pieces of the
    # median demand (2); slot 1's unit at slot 2; slot 2's arrives past the horizon's last
    # round; runtimes cut to the horizon; windows the pending work's median (3 slots)
    assert [
        (j.release_slot, j.demand["gpu"], j.runtime_slots, j.deadline_slot) for j in phantoms
    ] == [
        (1, 2.0, 2, 3),
        (1, 0.5, 2, 3),
        (2, 1.0, 1, 3),
    ]
    half = [j for j in with_phantoms(inst, 0.5).jobs if j.id.startswith(PHANTOM_PREFIX)]
    assert sum(j.demand["gpu"] for j in half) == pytest.approx(0.5 * 3.5)


def test_phantom_windows_are_the_pending_work_s_windows_as_it_arrived() -> None:
    """Two jobs due in 2 slots, one of which has already waited 4: as they arrived, their
    windows were 2 and 6 slots, so the phantoms get the median, 4 (not 2)."""
    inst = instance_from_dict(
        {
            **instance([1.0] + [0.0] * 7),
            "horizon_slots": 8,
            "carbon_g_per_kwh": {"a": [50.0] * 8},
            "jobs": [
                {"id": "new", "demand": {"gpu": 1}, "runtime_slots": 1, "deadline_slot": 2},
                {"id": "old", "demand": {"gpu": 1}, "runtime_slots": 1, "deadline_slot": 2},
            ],
        }
    )

    fresh = [j for j in with_phantoms(inst, 1.0).jobs if j.id.startswith(PHANTOM_PREFIX)]
    waited = with_phantoms(inst, 1.0, {"old": 4}).jobs
    phantoms = [j for j in waited if j.id.startswith(PHANTOM_PREFIX)]

    assert [(j.release_slot, j.deadline_slot) for j in fresh] == [(1, 3)]
    assert [(j.release_slot, j.deadline_slot) for j in phantoms] == [(1, 5)]


def test_nothing_changes_without_a_forecast_a_pending_job_or_a_weight() -> None:
    without = instance_from_dict(instance(None))
    assert with_phantoms(without, 1.0) is without
    forecast = instance_from_dict(instance([0.0, 1.0, 0.0]))
    assert with_phantoms(forecast, 0.0) is forecast
    empty = replace(forecast, jobs=())
    assert with_phantoms(empty, 1.0) is empty


def test_room_kept_for_forecast_work_moves_the_pending_job_to_now() -> None:
    """Alone, the pending job takes the clean hour (10 g); with one unit forecast to arrive
    then, it starts now (50 g) so that the arrival gets the clean hour instead of 100 g."""
    alone = run_policy("carbonshift", instance_from_dict(instance([1.0, 0.0, 0.0])))
    assert [(a.job, a.start_slot) for a in alone.plan.assignments] == [("pending", 1)]

    inst = instance_from_dict(instance([1.0, 0.0, 0.0]))
    answer = run_policy("carbonshift", with_phantoms(inst, 1.0))
    real = real_part(answer, {JobId("pending")})
    assert [(a.job, a.start_slot) for a in real.plan.assignments] == [("pending", 0)]
    assert real.bound is None  # the bound was for the instance with phantoms
    assert real_bound(inst, None, real, iterations=300).lower_bound_g == pytest.approx(10.0)
    assert check_feasibility(inst, real.plan) == []


def test_bad_weights_and_clashing_ids_are_named() -> None:
    inst = instance_from_dict(instance([0.0, 1.0, 0.0]))
    for weight in (-1.0, float("nan"), 11.0):
        with pytest.raises(InputError, match="reserve_future_demand"):
            with_phantoms(inst, weight)
    clash = replace(inst, jobs=(replace(inst.jobs[0], id=JobId(f"{PHANTOM_PREFIX}1-0")),))
    with pytest.raises(InputError, match="names phantom jobs"):
        with_phantoms(clash, 1.0)


def test_the_carbonshift_policy_reserves_room_when_asked() -> None:
    inst = instance_from_dict(instance([1.0, 0.0, 0.0]))
    default = run_policy("carbonshift", inst)
    reserving = run_policy("carbonshift", inst, {"reserve_future_demand": 1.0})
    assert [(a.job, a.start_slot) for a in default.plan.assignments] == [("pending", 1)]
    assert [(a.job, a.start_slot) for a in reserving.plan.assignments] == [("pending", 0)]
    assert default.bound is not None
    # the bound is the real job's own (its clean hour, 10 g), not the phantoms' instance's,
    # and the plan that starts now for them (50 g) is 4 times above it
    assert reserving.bound is not None
    assert reserving.bound.lower_bound_g is not None
    assert reserving.bound.lower_bound_g == pytest.approx(10.0, rel=1e-6)
    assert reserving.bound.gap == pytest.approx(4.0, rel=1e-6)
    assert (
        run_policy("carbonshift", inst, {"reserve_future_demand": 1.0, "bound": "none"}).bound
        is None
    )
    with pytest.raises(InputError, match="reserve_future_demand"):
        run_policy("carbonshift", inst, {"reserve_future_demand": -0.5})


def test_no_bound_for_a_plan_that_leaves_a_real_job_late() -> None:
    """Two one-hour jobs due in the first hour on one GPU: no plan puts both on time, so
    no bound is certified, as the policy itself reports it."""
    data = instance([1.0, 0.0, 0.0])
    data["jobs"] = [
        {"id": "a", "demand": {"gpu": 1}, "runtime_slots": 1, "deadline_slot": 1},
        {"id": "b", "demand": {"gpu": 1}, "runtime_slots": 1, "deadline_slot": 1},
    ]
    answer = run_policy("carbonshift", instance_from_dict(data), {"reserve_future_demand": 1.0})
    assert answer.bound is not None
    assert answer.bound.lower_bound_g is None
    assert answer.bound.gap is None


def test_phantoms_never_make_a_real_job_later_than_the_plan_without_them() -> None:
    """A planner that weighs a phantom's lateness as a real job's may put the real job
    late to keep phantoms on time; then the plan without phantoms is made and kept."""
    inst = instance_from_dict(
        {
            **instance([1.0, 0.0, 0.0]),
            "jobs": [{"id": "r", "demand": {"gpu": 1}, "runtime_slots": 1, "deadline_slot": 1}],
        }
    )
    seen: list[int] = []

    def planner(planned: Instance) -> PolicyResult:
        seen.append(len(planned.jobs))
        start = 1 if len(planned.jobs) > 1 else 0  # with phantoms: the real job late
        return PolicyResult(
            plan=Plan.of("stub", [Assignment(JobId("r"), ClusterName("a"), start)], []),
            status=PlanStatus.FEASIBLE,
        )

    answer = planned_with_reserve(inst, 1.0, planner)

    assert seen == [2, 1]
    assert [(a.job, a.start_slot) for a in answer.plan.assignments] == [("r", 0)]


def test_sampled_phantoms_spread_over_the_pending_shapes() -> None:
    """A short, tight, small job on any cluster and a long, loose, large one on cluster b
    only: ``shapes="sample"`` gives phantoms of both shapes (each with its own runtime,
    window, demand and clusters), where ``median`` gives one shape; the forecast units of
    each slot are the same either way."""
    inst = instance_from_dict(
        {
            **instance([4.0, 4.0, 4.0] + [0.0] * 5),
            "horizon_slots": 8,
            "carbon_g_per_kwh": {"a": [50.0] * 8, "b": [50.0] * 8},
            "clusters": [
                {"name": "a", "capacity": {"gpu": 8}, "watts_per_unit": {"gpu": 1}},
                {"name": "b", "capacity": {"gpu": 8}, "watts_per_unit": {"gpu": 1}},
            ],
            "jobs": [
                {"id": "short", "demand": {"gpu": 1}, "runtime_slots": 1, "deadline_slot": 2},
                {
                    "id": "long",
                    "demand": {"gpu": 3},
                    "runtime_slots": 4,
                    "deadline_slot": 7,
                    "allowed_clusters": ["b"],
                },
            ],
        }
    )

    def phantoms(shapes: str) -> list[tuple[int, int, int, float, frozenset[str] | None]]:
        return [
            (
                j.release_slot,
                j.runtime_slots,
                j.deadline_slot - j.release_slot,
                j.demand["gpu"],
                j.allowed_clusters,
            )
            for j in with_phantoms(inst, 1.0, shapes=shapes).jobs
            if j.id.startswith(PHANTOM_PREFIX)
        ]

    b = frozenset({ClusterName("b")})
    want_sample = [
        (1, 1, 2, 1.0, None),  # slot 0's 4 units: short (1), long (3)
        (1, 4, 7, 3.0, b),
        (2, 1, 2, 1.0, None),  # slot 1's: in turn again
        (2, 4, 6, 3.0, b),  # the window cut at the horizon (8)
        (3, 1, 2, 1.0, None),
        (3, 4, 5, 3.0, b),
    ]
    assert phantoms("sample") == want_sample
    median = phantoms("median")
    assert {(r, w) for _, r, w, _, _ in median} <= {(2, 4), (2, 5), (2, 6)}
    for slot in (1, 2, 3):
        for shapes in ("sample", "median"):
            got = sum(d for s, _, _, d, _ in phantoms(shapes) if s == slot)
            assert got == pytest.approx(4.0)


def test_unknown_phantom_shapes_are_refused() -> None:
    inst = instance_from_dict(instance([1.0, 0.0, 0.0]))
    with pytest.raises(InputError, match="reserve_shapes 'quantile'"):
        with_phantoms(inst, 1.0, shapes="quantile")


def test_arrival_shapes_weigh_the_pending_jobs_back_to_the_arrival_mix() -> None:
    """A job stays pending for up to its slack as it arrived + 1 rounds, so the pending
    jobs over-represent the loose ones. ``shapes="arrivals"`` takes each pending shape in
    proportion to 1 / (slack + 1): a job with slack 1 twice as often as one with slack 3
    (``sample`` takes them in turn), with the forecast units of each slot unchanged; with
    equal slacks it is ``sample``."""
    inst = instance_from_dict(
        {
            **instance([9.0] * 6 + [0.0] * 6),
            "horizon_slots": 12,
            "carbon_g_per_kwh": {"a": [50.0] * 12},
            "clusters": [{"name": "a", "capacity": {"gpu": 8}, "watts_per_unit": {"gpu": 1}}],
            "jobs": [
                {"id": "tight", "demand": {"gpu": 1}, "runtime_slots": 1, "deadline_slot": 2},
                {"id": "loose", "demand": {"gpu": 1}, "runtime_slots": 1, "deadline_slot": 4},
            ],
        }
    )

    def runtimes_and_windows(data: Instance, shapes: str) -> list[tuple[int, int, float]]:
        return [
            (j.release_slot, j.deadline_slot - j.release_slot, j.demand["gpu"])
            for j in with_phantoms(data, 1.0, shapes=shapes).jobs
            if j.id.startswith(PHANTOM_PREFIX)
        ]

    arrivals = runtimes_and_windows(inst, "arrivals")
    sample = runtimes_and_windows(inst, "sample")
    want_tight, want_loose = 36, 18  # 54 one-unit phantoms, 2 : 1
    assert sum(1 for _, w, _ in arrivals if w == 2) == want_tight
    assert sum(1 for _, w, _ in arrivals if w == 4) == want_loose
    assert sum(1 for _, w, _ in sample if w == 2) == sum(1 for _, w, _ in sample if w == 4)
    for slot in range(1, 7):
        assert sum(d for s, _, d in arrivals if s == slot) == pytest.approx(9.0)
    alike = replace(inst, jobs=tuple(replace(j, deadline_slot=2) for j in inst.jobs))
    assert runtimes_and_windows(alike, "arrivals") == runtimes_and_windows(alike, "sample")


def _round(origin_slot: int, ids: list[str]) -> Instance:
    """Pending jobs ``ids`` (``j1``..``j6``: runtime ``k`` slots, due ``2k + 2`` slots after
    hour 10) seen at slot ``origin_slot`` >= 10, having waited since 10; 3 units forecast to
    arrive per slot."""
    horizon = 48
    return instance_from_dict(
        {
            **instance([3.0] * horizon),
            "horizon_slots": horizon,
            "carbon_g_per_kwh": {"a": [50.0] * horizon},
            "clusters": [{"name": "a", "capacity": {"gpu": 8}, "watts_per_unit": {"gpu": 1}}],
            "jobs": [
                {
                    "id": name,
                    "demand": {"gpu": 1},
                    "runtime_slots": int(name[1:]),
                    "deadline_slot": 2 * int(name[1:]) + 2 - (origin_slot - 10),
                }
                for name in ids
            ],
        }
    )


def _phantom_shapes(
    inst: Instance, origin_slot: int, shapes: str
) -> dict[tuple[int, int], tuple[int, int]]:
    """(arrival slot on the caller's axis, piece) -> (runtime, window as it arrived) of each
    phantom, for slots 12-30 (clear of the horizon's cut)."""
    waited = {str(job.id): origin_slot - 10 for job in inst.jobs}
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for job in with_phantoms(inst, 1.0, waited, shapes=shapes, origin_slot=origin_slot).jobs:
        if not job.id.startswith(PHANTOM_PREFIX):
            continue
        slot, piece = (int(x) for x in job.id.removeprefix(PHANTOM_PREFIX).split("-"))
        if 12 <= origin_slot + slot <= 30:
            window = job.deadline_slot - job.release_slot
            out[(origin_slot + slot, piece)] = (job.runtime_slots, window)
    return out


@pytest.mark.parametrize(
    ("shapes", "want_kept_at_least", "want_kept_at_most"),
    [
        pytest.param("stable", 1.0, 1.0, id="stable-keeps-every-phantom-it-can"),
        pytest.param("sample", 0.0, 0.5, id="sample-reshuffles-when-one-job-starts"),
    ],
)
def test_stable_phantoms_keep_their_shape_when_a_pending_job_starts(
    shapes: str, want_kept_at_least: float, want_kept_at_most: float
) -> None:
    """Round 10 sees j1..j6; j1 starts, and round 11 sees j2..j6 with the same forecast.
    A phantom arriving at the same slot of the caller's axis keeps its shape under
    ``stable`` unless it had j1's (the job that left); ``sample``'s turn restarts each round,
    so most phantoms change shape and the plan around them follows."""
    ids = [f"j{k}" for k in range(1, 7)]
    before = _phantom_shapes(_round(10, ids), 10, shapes)
    after = _phantom_shapes(_round(11, ids[1:]), 11, shapes)
    j1 = (1, 2 * 1 + 2)  # j1's runtime and window as it arrived
    comparable = [key for key, shape in before.items() if shape != j1 and key in after]
    assert len(comparable) >= 40
    kept = sum(before[key] == after[key] for key in comparable) / len(comparable)
    assert want_kept_at_least <= kept <= want_kept_at_most
    if shapes == "stable":  # every shape still taken, about equally often (57 pieces)
        counts = [sum(1 for s in before.values() if s == (k, 2 * k + 2)) for k in range(1, 7)]
        assert min(counts) >= 4
