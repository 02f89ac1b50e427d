"""The class LP in flow form (planning/aggregate.py) and the bound taken from its duals: the
same optimum as the job-level time-indexed LP, and ``L`` at its capacity prices a valid
lower bound that meets that optimum (docs/design/0002)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from carbonshift.domain import Instance, check_feasibility, score_plan
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


@_SETTINGS
@given(instances(max_jobs=6, max_horizon=6, max_clusters=2, future=False))
def test_the_flow_form_has_the_job_lps_optimum_and_its_prices_certify_it(inst: Instance) -> None:
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    if arrays.n_jobs == 0 or not classes.every_job_can_be_on_time:
        return
    base = unit_grams(arrays)
    table = shape_costs(classes, base)
    lp = cs._solve_class_lp(arrays, classes, base, table, class_columns(classes), 30.0)
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


@_SETTINGS
@given(instances(max_jobs=6, max_horizon=6, max_clusters=2, future=False))
def test_above_the_small_size_the_lp_path_plans_feasibly_under_a_valid_bound(
    inst: Instance,
) -> None:
    """With the large-instance path forced (the LP's prices instead of a dual ascent): a
    feasible plan, and a bound at most the job LP's optimum and the plan's grams."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cs, "_SMALL_JOBS", 0)
        result = run_policy("carbonshift", inst, {"exact_max_starts": 0})
    assert check_feasibility(inst, result.plan) == []
    assert result.bound is not None
    bound = result.bound.lower_bound_g
    if bound is None:
        return
    grams = score_plan(inst, result.plan).carbon_g
    assert bound <= grams + tolerance(grams)
    optimum = job_lp_optimum(inst)
    assert optimum is not None  # a bound is reported only when every job is on time
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
    ],
)
def test_the_class_lp_is_solved_up_to_its_column_limits(
    params: dict[str, float], want_lp: bool
) -> None:
    inst = congested()
    result = run_policy("carbonshift", inst, {"exact_max_starts": 0, **params})
    assert ("lp_bound_g" in result.stats) is want_lp
    optimum = job_lp_optimum(inst)
    assert optimum is not None
    assert result.bound is not None
    assert result.bound.lower_bound_g is not None
    assert result.bound.lower_bound_g <= optimum + tolerance(optimum)
