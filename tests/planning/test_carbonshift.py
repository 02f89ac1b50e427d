"""The ``carbonshift`` policy: least grams with every deadline kept, and a certified bound."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carbonshift.domain import Instance, check_feasibility, is_on_time, score_plan
from carbonshift.formats import PlanBound, plan_from_dict, plan_to_dict, write_plan
from carbonshift.planning import run_policy
from carbonshift.planning.backends.highs import SolveOptions, solve
from carbonshift.planning.problem import arrays_of, build_problem, carbon_g, on_time_program
from carbonshift.planning.types import SolveStatus
from tests.builders import cluster, instance, job
from tests.planning.strategies import all_plans, instances

#: the heuristic alone (no exact MILP fallback), and the policy as shipped
HEURISTIC = {"exact_max_starts": 0}
SHIPPED: dict[str, Any] = {}


def lateness_slots(inst: Instance, plan_assignments: Any) -> int:
    jobs = {j.id: j for j in inst.jobs}
    return sum(
        max(0, a.start_slot + jobs[a.job].runtime_slots - jobs[a.job].deadline_slot)
        for a in plan_assignments
    )


def best_on_time_grams(inst: Instance) -> float | None:
    """The least grams of a feasible plan with every job on time, by exhaustive search."""
    best = None
    for plan in all_plans(inst, on_time_only=True):
        if plan.unscheduled:
            continue
        grams = score_plan(inst, plan).carbon_g
        best = grams if best is None else min(best, grams)
    return best


def milp_on_time_grams(inst: Instance) -> float | None:
    """The least grams with every job on time, by the HiGHS MILP (None: infeasible)."""
    arrays = arrays_of(inst)
    problem = build_problem(arrays, on_time_only=True)
    program = on_time_program(problem, carbon_g(arrays, problem.starts))
    solution = solve(program, SolveOptions(integer=True, mip_gap=0.0, time_limit_s=30))
    if solution.status is SolveStatus.INFEASIBLE:
        return None
    assert solution.status is SolveStatus.OPTIMAL
    return solution.objective


@dataclass(frozen=True)
class Case:
    id: str
    instance: Instance
    want_starts: dict[str, tuple[str, int] | None]  # job -> (cluster, start) or None
    want_late_slots: int
    want_bound: bool  # whether a bound is certified


CASES = [
    Case(
        "one-job-waits-for-the-clean-slot",
        instance(
            [job("a", gpu=2, runtime=1, deadline=4)],
            [cluster("c1", gpu=4.0)],
            {"c1": [400.0, 100.0, 300.0, 200.0]},
        ),
        want_starts={"a": ("c1", 1)},
        want_late_slots=0,
        want_bound=True,
    ),
    Case(
        "the-deadline-is-hard-even-when-later-is-cleaner",
        instance(
            [job("a", gpu=1, runtime=2, deadline=2)],
            [cluster("c1", gpu=1.0)],
            {"c1": [500.0, 500.0, 10.0, 10.0]},
        ),
        want_starts={"a": ("c1", 0)},
        want_late_slots=0,
        want_bound=True,
    ),
    Case(
        "packing-beats-greed",  # the big job takes the clean slots only if the small ones move
        instance(
            [
                job("big", gpu=3, runtime=2, deadline=4),
                job("s1", gpu=2, runtime=1, deadline=4),
                job("s2", gpu=2, runtime=1, deadline=4),
            ],
            [cluster("c1", gpu=3.0)],
            {"c1": [10.0, 10.0, 200.0, 400.0]},
        ),
        want_starts={"big": ("c1", 0)},
        want_late_slots=0,
        want_bound=True,
    ),
    Case(
        "two-jobs-cannot-both-be-on-time-so-one-slot-late-and-no-bound",
        instance(
            [job("a", gpu=1, runtime=1, deadline=1), job("b", gpu=1, runtime=1, deadline=1)],
            [cluster("c1", gpu=1.0)],
            {"c1": [100.0, 10.0, 10.0, 10.0]},
        ),
        want_starts={},
        want_late_slots=1,
        want_bound=False,
    ),
    Case(
        "a-job-too-big-for-every-cluster-is-left-out-the-rest-planned",
        instance(
            [job("huge", gpu=9), job("ok", gpu=1, deadline=4)],
            [cluster("c1", gpu=2.0)],
            {"c1": [300.0, 100.0, 200.0, 400.0]},
        ),
        want_starts={"huge": None, "ok": ("c1", 1)},
        want_late_slots=0,
        want_bound=False,
    ),
    Case(
        "a-critical-job-starts-earliest-on-the-cleaner-of-two-free-clusters",
        instance(
            [job("now", gpu=1, runtime=1, release=1, deadline=4, critical=True)],
            [cluster("dirty", gpu=1.0), cluster("clean", gpu=1.0)],
            {"dirty": [500.0] * 4, "clean": [300.0, 300.0, 1.0, 1.0]},
        ),
        want_starts={"now": ("clean", 1)},
        want_late_slots=0,
        want_bound=True,
    ),
    Case(
        "the-second-critical-job-takes-the-dirty-cluster-now-rather-than-wait",
        instance(
            [
                job("first", gpu=1, runtime=2, deadline=4, critical=True),
                job("second", gpu=1, runtime=2, deadline=4, critical=True),
            ],
            [cluster("dirty", gpu=1.0), cluster("clean", gpu=1.0)],
            {"dirty": [500.0] * 4, "clean": [1.0] * 4},
        ),
        want_starts={"first": ("clean", 0), "second": ("dirty", 0)},
        want_late_slots=0,
        want_bound=True,
    ),
]


@pytest.mark.parametrize("params", [HEURISTIC, SHIPPED], ids=["heuristic", "shipped"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_cases(case: Case, params: dict[str, Any]) -> None:
    inst = case.instance
    result = run_policy("carbonshift", inst, params)
    plan = result.plan
    assert check_feasibility(inst, plan) == []
    starts = {a.job: (a.cluster, a.start_slot) for a in plan.assignments}
    for job_id, want in case.want_starts.items():
        assert starts.get(job_id) == want, result.notes.get(job_id)
    assert lateness_slots(inst, plan.assignments) == case.want_late_slots
    assert result.bound is not None
    grams = score_plan(inst, plan).carbon_g
    if case.want_bound:
        optimum = milp_on_time_grams(inst)
        assert optimum is not None
        assert result.bound.lower_bound_g is not None
        assert result.bound.lower_bound_g <= optimum + 1e-9
        assert result.bound.lower_bound_g <= grams + 1e-9
        want_gap = (grams - result.bound.lower_bound_g) / result.bound.lower_bound_g
        assert result.bound.gap == pytest.approx(want_gap)
    else:
        assert result.bound == PlanBound(None, None)


def test_on_golden_instances_the_plan_is_the_milp_optimum() -> None:
    for case in CASES:
        if not case.want_bound or any(j.critical for j in case.instance.jobs):
            continue
        plan = run_policy("carbonshift", case.instance, HEURISTIC).plan
        optimum = milp_on_time_grams(case.instance)
        assert score_plan(case.instance, plan).carbon_g == pytest.approx(optimum), case.id


def test_operational_objective_ignores_embodied_carbon_but_bounds_the_total() -> None:
    # clean grid but heavy embodied carbon on "green"; "plain" has none and a dirtier grid
    inst = instance(
        [job("a", gpu=1, runtime=2, deadline=4)],
        [cluster("green", gpu=1.0, embodied=900.0), cluster("plain", gpu=1.0)],
        {"green": [10.0] * 4, "plain": [200.0] * 4},
    )
    carbon = run_policy("carbonshift", inst, HEURISTIC)
    operational = run_policy("carbonshift", inst, {**HEURISTIC, "objective": "operational"})
    assert carbon.plan.assignments[0].cluster == "plain"
    assert operational.plan.assignments[0].cluster == "green"
    for result in (carbon, operational):
        grams = score_plan(inst, result.plan).carbon_g
        assert result.bound is not None
        assert result.bound.lower_bound_g is not None
        assert result.bound.lower_bound_g <= grams + 1e-9
        assert result.bound.lower_bound_g <= score_plan(inst, carbon.plan).carbon_g + 1e-9


@pytest.mark.parametrize("bound", ["lagrangian", "lp", "auto"])
def test_every_bound_method_is_valid_and_lp_is_exact_on_a_congested_instance(bound: str) -> None:
    jobs = [job(f"j{i}", gpu=1 + i % 3, runtime=1 + i % 2, deadline=6) for i in range(8)]
    inst = instance(
        jobs,
        [cluster("a", gpu=3.0), cluster("b", gpu=2.0, watts=500.0)],
        {"a": [50.0, 60.0, 300.0, 310.0, 320.0, 330.0], "b": [100.0] * 6},
        horizon=6,
    )
    result = run_policy("carbonshift", inst, {**HEURISTIC, "bound": bound})
    optimum = milp_on_time_grams(inst)
    assert optimum is not None
    assert result.bound is not None
    assert result.bound.lower_bound_g is not None
    assert result.bound.lower_bound_g <= optimum + 1e-6
    assert result.bound.lower_bound_g > 0.9 * optimum  # a bound worth reporting
    assert lateness_slots(inst, result.plan.assignments) == 0


def test_no_bound_asked_gives_no_bound_object() -> None:
    inst = CASES[0].instance
    assert run_policy("carbonshift", inst, {"bound": "none"}).bound is None


def test_the_plan_json_carries_the_bound_and_reads_back(tmp_path: Path) -> None:
    inst = CASES[2].instance
    result = run_policy("carbonshift", inst)
    path = tmp_path / "plan.json"
    write_plan(result.plan, path, score_plan(inst, result.plan), result.bound)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert set(data["bound"]) == {"lower_bound_g", "gap"}
    assert (
        data["bound"]["lower_bound_g"]
        <= data["scores"]["operational_g"] + (data["scores"]["embodied_g"])
    )
    assert plan_from_dict(data) == result.plan


def test_strict_json_refuses_a_non_finite_number() -> None:
    plan = CASES[0].instance
    result = run_policy("carbonshift", plan)
    data = plan_to_dict(result.plan, bound=PlanBound(None, None))
    assert json.loads(json.dumps(data, allow_nan=False))["bound"] == {
        "lower_bound_g": None,
        "gap": None,
    }
    assert PlanBound.of(math.inf, 1.0) == PlanBound(None, None)
    assert PlanBound.of(0.0, 1.0) == PlanBound(0.0, None)


_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(instances(max_jobs=4, max_horizon=5, future=False))
def test_random_small_instances(inst: Instance) -> None:
    """Feasible; every job listed once; no job left out that fits alone; the bound is at most
    the plan's grams and the exhaustive optimum; every job on time whenever some plan does
    it (the shipped policy), and then the bound is certified."""
    optimum = best_on_time_grams(inst)
    for params in (HEURISTIC, SHIPPED):
        result = run_policy("carbonshift", inst, params)
        plan = result.plan
        assert check_feasibility(inst, plan) == []
        grams = score_plan(inst, plan).carbon_g
        assert result.bound is not None
        bound = result.bound.lower_bound_g
        if bound is not None:
            assert optimum is not None
            assert bound <= grams + 1e-9 * max(1.0, grams)
            assert bound <= optimum + 1e-9 * max(1.0, optimum)
        horizon = inst.grid.horizon_slots
        for job_id in plan.unscheduled:
            one = next(j for j in inst.jobs if j.id == job_id)
            fits_alone = any(
                one.allows(c.name)
                and all(
                    c.capacity_at(r, t) >= a
                    for r, a in one.demand.items()
                    for t in range(s, s + one.runtime_slots)
                )
                for c in inst.clusters
                for s in range(one.release_slot, horizon - one.runtime_slots + 1)
            )
            assert not fits_alone or len(inst.jobs) > 1, job_id
        if params is SHIPPED and optimum is not None and not any(j.critical for j in inst.jobs):
            jobs = {j.id: j for j in inst.jobs}
            assert not plan.unscheduled
            assert all(is_on_time(jobs[a.job], a.start_slot) for a in plan.assignments)
            assert bound is not None
            assert grams == pytest.approx(optimum, rel=1e-6, abs=1e-9)


@st.composite
def congested(draw: st.DrawFn) -> Instance:
    """Few units on two or three clusters, many small jobs, carbon that differs: the clean
    cells are fought over, so the search has moves to try."""
    horizon = draw(st.integers(2, 6))
    names = ["c0", "c1", "c2"][: draw(st.integers(2, 3))]
    clusters = [cluster(n, gpu=float(draw(st.integers(1, 3)))) for n in names]
    carbon = {
        n: [
            float(v)
            for v in draw(st.lists(st.integers(0, 500), min_size=horizon, max_size=horizon))
        ]
        for n in names
    }
    jobs = []
    for i in range(draw(st.integers(2, 8))):
        runtime = draw(st.integers(1, min(2, horizon)))
        release = draw(st.integers(0, horizon - runtime))
        jobs.append(
            job(
                f"j{i}",
                gpu=float(draw(st.integers(1, 2))),
                runtime=runtime,
                release=release,
                deadline=draw(st.integers(release + runtime, horizon)),
                allowed=draw(st.sampled_from([None, names[:1], names[1:]])),
            )
        )
    return instance(jobs, clusters, carbon, horizon=horizon)


@_SETTINGS
@given(st.one_of(instances(max_jobs=7, max_horizon=6, future=False), congested()))
def test_the_search_never_costs_grams_nor_lateness(inst: Instance) -> None:
    """The ruin-and-recreate search only keeps moves that lower grams with every job on
    time: against the same policy without it, the plan is feasible, as late and never
    dearer, and its bound is the same."""
    assert_stage_never_costs(inst, {"search_factor": 0})


def _crowded_late(variant: int) -> Instance:
    """Three instances CI's random examples found (2026-11-26): a two-slot job bound to
    ``c0`` cannot be on time (a two-unit job needs all of ``c0`` by slot 2), so a plan
    that counts only the lateness of placed jobs preferred leaving it out."""
    if variant == 0:
        clusters = [cluster("c0", gpu=2.0), cluster("c1", gpu=1.0), cluster("c2", gpu=1.0)]
        carbon = {"c0": [0, 0, 1, 0], "c1": [0, 1, 0, 0], "c2": [0, 0, 0, 1]}
        jobs = [
            job("j0", runtime=2, deadline=4),
            job("j1", deadline=1),
            job("j2", gpu=2.0, deadline=2),
            job("j3", deadline=2),
            job("j4", runtime=2, deadline=2),
            job("j5", gpu=2.0, release=1, deadline=3),
        ]
    else:
        clusters = [cluster("c0", gpu=2.0), cluster("c1", gpu=1.0), cluster("c2", gpu=2.0)]
        carbon = {"c0": [0, 0, 1, 0], "c1": [0, 0, 0, 0], "c2": [1, 0, 0, 0]}
        jobs = [
            job("j0", runtime=2, deadline=2, allowed=["c1", "c2"]),
            job("j1", deadline=1),
            job("j2", gpu=2.0, deadline=1),
            job("j3", deadline=variant),
            job("j4", runtime=2, deadline=3),
            job("j5", gpu=2.0, release=2, deadline=3),
        ]
    jobs.append(job("j6", runtime=2, deadline=2, allowed=["c0"]))
    floats = {name: [float(v) for v in values] for name, values in carbon.items()}
    return instance(jobs, clusters, floats, horizon=4)


@pytest.mark.parametrize("variant", [0, 1, 2])
@pytest.mark.parametrize("stage_off", [{"search_factor": 0}, {"polish_steps": 0}])
def test_no_stage_prefers_leaving_a_job_out(variant: int, stage_off: dict[str, Any]) -> None:
    """Every job fits somewhere in these horizons: the heuristic places all of them, with
    or without each improving stage, and the stages never make the plan later or dearer."""
    inst = _crowded_late(variant)
    assert run_policy("carbonshift", inst, {**HEURISTIC, **stage_off}).plan.unscheduled == ()
    assert_stage_never_costs(inst, stage_off)


def test_a_plan_that_leaves_a_job_out_loses_to_a_late_one() -> None:
    """The crowded case's optimum is late by 2 slots with every job placed; the heuristic
    reaches the same lateness (its grams may be higher: no exact MILP here)."""
    inst = _crowded_late(0)
    exact = run_policy("carbonshift", inst, SHIPPED).plan
    heuristic = run_policy("carbonshift", inst, HEURISTIC).plan
    assert exact.unscheduled == heuristic.unscheduled == ()
    assert lateness_slots(inst, heuristic.assignments) == lateness_slots(inst, exact.assignments)
    assert lateness_slots(inst, exact.assignments) == 2


def assert_stage_never_costs(inst: Instance, stage_off: dict[str, Any]) -> None:
    """Against the same policy with one improving stage off (``stage_off``), the plan is
    feasible and never worse in the policy's order (total lateness first, then grams; CI
    found instances where the full policy ends less late and so dearer), leaves out no
    more jobs, and its bound is the same."""
    without = run_policy("carbonshift", inst, {**HEURISTIC, **stage_off})
    result = run_policy("carbonshift", inst, HEURISTIC)
    assert check_feasibility(inst, result.plan) == []
    late = lateness_slots(inst, result.plan.assignments)
    late_without = lateness_slots(inst, without.plan.assignments)
    assert late <= late_without
    assert len(result.plan.unscheduled) <= len(without.plan.unscheduled)
    if late == late_without:
        grams = score_plan(inst, result.plan).carbon_g
        assert grams <= score_plan(inst, without.plan).carbon_g * (1 + 1e-12) + 1e-9
    assert (result.bound is None) == (without.bound is None)
    if result.bound is not None and without.bound is not None:
        assert result.bound.lower_bound_g == without.bound.lower_bound_g
