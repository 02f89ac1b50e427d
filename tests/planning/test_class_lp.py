"""The class LP in both forms (planning/aggregate.py) and the bound taken from its duals: the
same optimum as the job-level time-indexed LP, and ``L`` at its capacity prices a valid
lower bound that meets that optimum (docs/design/0002)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carbonshift.domain import (
    Cluster,
    ClusterName,
    Instance,
    Job,
    JobId,
    TimeGrid,
    check_feasibility,
    is_on_time,
    score_plan,
)
from carbonshift.planning import run_policy
from carbonshift.planning.aggregate import class_columns
from carbonshift.planning.backends.highs import SolveOptions, solve
from carbonshift.planning.lagrangian import classes_of, shape_costs, unit_grams
from carbonshift.planning.policies import carbonshift as cs
from carbonshift.planning.problem import arrays_of, build_problem, carbon_g, on_time_program
from carbonshift.planning.types import SolveStatus
from tests.builders import cluster, instance, job
from tests.planning.strategies import instances

_SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def crowded(draw: st.DrawFn) -> Instance:
    """Jobs that can each be on time, one or two resources, with non-integral demands and
    capacities (so that the power-of-two scalings matter) on one to three clusters whose
    clean slots are fought over: the LP is mostly feasible with capacity rows that bind."""
    horizon = draw(st.integers(3, 5))
    resources = ("gpu", "mem")[: draw(st.integers(1, 2))]
    names = ["c0", "c1", "c2"][: draw(st.integers(1, 3))]
    size = st.sampled_from([0.5, 1.0, 1.5])
    clusters = [
        Cluster(
            name=ClusterName(n),
            capacity={r: draw(st.sampled_from([1.5, 2.0, 3.0, 4.5])) for r in resources},
            watts_per_unit={r: float(draw(st.integers(0, 400))) for r in resources},
            embodied_g_per_unit_hour={resources[0]: float(draw(st.integers(0, 20)))},
        )
        for n in names
    ]
    carbon = {
        ClusterName(n): tuple(
            float(v)
            for v in draw(st.lists(st.integers(0, 600), min_size=horizon, max_size=horizon))
        )
        for n in names
    }
    jobs = []
    for i in range(draw(st.integers(3, 10))):
        runtime = draw(st.integers(1, 2))
        release = draw(st.integers(0, horizon - runtime))
        jobs.append(
            Job(
                id=JobId(f"j{i}"),
                demand={r: draw(size) for r in resources},
                runtime_slots=runtime,
                release_slot=release,
                deadline_slot=draw(st.integers(release + runtime, horizon)),
                allowed_clusters=draw(
                    st.one_of(st.none(), st.just(frozenset({ClusterName(names[0])})))
                ),
            )
        )
    return Instance(
        grid=TimeGrid(slot_minutes=60, horizon_slots=horizon),
        resources=resources,
        clusters=tuple(clusters),
        carbon_g_per_kwh=carbon,
        jobs=tuple(jobs),
    )


def job_lp_optimum(inst: Instance) -> float | None:
    """The job-level LP (every on-time start, capacity per cluster, resource and slot) by
    HiGHS with its defaults; None when infeasible."""
    arrays = arrays_of(inst)
    problem = build_problem(arrays, on_time_only=True)
    program = on_time_program(problem, carbon_g(arrays, problem.starts))
    solution = solve(program, SolveOptions(time_limit_s=30))
    if solution.status is SolveStatus.INFEASIBLE:
        return None
    assert solution.status is SolveStatus.OPTIMAL
    return solution.objective


def tolerance(value: float) -> float:
    return 1e-6 * max(1.0, abs(value))


@pytest.mark.parametrize("flow", [True, False], ids=["flow-form", "row-form"])
@_SETTINGS
@given(st.one_of(crowded(), instances(max_jobs=6, max_horizon=6, max_clusters=2, future=False)))
def test_the_class_lp_has_the_job_lps_optimum_and_its_prices_certify_it(
    flow: bool, inst: Instance
) -> None:
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    if arrays.n_jobs == 0 or not classes.every_job_can_be_on_time:
        return
    base = unit_grams(arrays)
    table = shape_costs(classes, base)
    columns = class_columns(classes)
    lp = cs._solve_class_lp(arrays, classes, base, table, columns, 30.0, flow=flow)
    want_optimum = job_lp_optimum(inst)
    if want_optimum is None:
        assert lp.infeasible
        assert lp.bound_g is None
        return
    assert lp.optimum_g == pytest.approx(want_optimum, rel=1e-6, abs=1e-6)
    assert lp.prices is not None
    assert (lp.prices >= 0).all()
    assert lp.bound_g is not None
    assert lp.bound_g <= want_optimum + tolerance(want_optimum)
    assert lp.bound_g >= want_optimum - tolerance(want_optimum)  # the duals are optimal
    assert lp.share.shape == (len(lp.columns),)


@pytest.mark.parametrize("objective", ["carbon", "operational"])
@_SETTINGS
@given(st.one_of(crowded(), instances(max_jobs=6, max_horizon=6, max_clusters=2, future=False)))
def test_above_the_small_size_the_lp_path_plans_feasibly_under_a_valid_bound(
    objective: str, inst: Instance
) -> None:
    """With the large-instance path forced (the LP's prices instead of a dual ascent): a
    feasible plan, and a bound (on operational + embodied grams whatever the objective) at
    most the job LP's optimum and, when the plan puts every job on time, its grams (a late
    plan carries the bound too where the all-on-time LP is feasible; it may weigh less, its
    jobs left out or late)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cs, "_SMALL_JOBS", 0)
        result = run_policy("carbonshift", inst, {"exact_max_starts": 0, "objective": objective})
    assert check_feasibility(inst, result.plan) == []
    assert result.bound is not None
    bound = result.bound.lower_bound_g
    if bound is None:
        return
    if not result.plan.unscheduled and all(
        is_on_time(inst.job(a.job), a.start_slot) for a in result.plan.assignments
    ):
        grams = score_plan(inst, result.plan).carbon_g
        assert bound <= grams + tolerance(grams)
    optimum = job_lp_optimum(inst)
    assert optimum is not None  # a bound only where the all-on-time LP is feasible
    assert bound <= optimum + tolerance(optimum)


def congested() -> Instance:
    jobs = [job(f"j{i}", gpu=1 + i % 3, runtime=1 + i % 2, deadline=6) for i in range(8)]
    return instance(
        jobs,
        [cluster("a", gpu=3.0), cluster("b", gpu=2.0, watts=500.0)],
        {"a": [50.0, 60.0, 300.0, 310.0, 320.0, 330.0], "b": [100.0] * 6},
        horizon=6,
    )


@pytest.mark.parametrize(
    ("params", "want_lp"),
    [
        pytest.param({"lp_max_columns": 0, "lp_columns_per_job": 0}, False, id="both-off"),
        pytest.param({"lp_max_columns": 0, "lp_columns_per_job": 100}, True, id="per-job"),
        pytest.param({"lp_max_columns": 1000, "lp_columns_per_job": 0}, True, id="max-columns"),
        pytest.param({"lp_max_columns": 0, "lp_columns_per_job": 0.5}, False, id="too-many"),
        # up to 3,000 jobs the late-job repair (on by default) has the LP solved whatever
        # its size; the limits hold with it off
        pytest.param(
            {"lp_max_columns": 0, "lp_columns_per_job": 0, "late_repair_jobs": 30},
            True,
            id="late-repair",
        ),
    ],
)
def test_the_class_lp_is_solved_up_to_its_column_limits(
    params: dict[str, float], want_lp: bool
) -> None:
    inst = congested()
    result = run_policy(
        "carbonshift", inst, {"exact_max_starts": 0, "late_repair_jobs": 0, **params}
    )
    assert ("lp_bound_g" in result.stats) is want_lp
    optimum = job_lp_optimum(inst)
    assert optimum is not None
    assert result.bound is not None
    assert result.bound.lower_bound_g is not None
    assert result.bound.lower_bound_g <= optimum + tolerance(optimum)
