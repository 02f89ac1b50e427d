"""The core of the class LP (``carbonshift`` above 3,000 jobs where the class LP is too
large; docs/design/0002-carbonshift-planner.md, step 2b): its columns, and the policy with
it on against it off. Small instances take the large path here because ``_SMALL_JOBS`` is
set to 0 and the LP limits to 0, so that the class LP counts as too large."""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carbonshift.domain import Instance, check_feasibility, score_plan
from carbonshift.planning import run_policy
from carbonshift.planning.aggregate import class_columns, column_index
from carbonshift.planning.lagrangian import classes_of, shape_costs, unit_grams
from carbonshift.planning.policies import carbonshift as cs
from carbonshift.planning.problem import arrays_of
from carbonshift.planning.types import PolicyResult
from tests.builders import cluster, instance, job
from tests.planning.strategies import instances
from tests.planning.test_carbonshift import congested

_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: the class LP "too large", no exact MILP: what is left is the greedy, the ascent and the core
_LARGE_PATH = {"lp_max_columns": 0, "lp_columns_per_job": 0, "exact_max_starts": 0}


def _plan(inst: Instance, **params: Any) -> PolicyResult:
    with mock.patch.object(cs, "_SMALL_JOBS", 0):
        return run_policy("carbonshift", inst, {**_LARGE_PATH, **params})


def _key(inst: Instance, result: PolicyResult) -> tuple[int, int, float]:
    """Jobs left out, total lateness (slots), grams: the order plans are compared in."""
    jobs = {j.id: j for j in inst.jobs}
    late = sum(
        max(0, a.start_slot + jobs[a.job].runtime_slots - jobs[a.job].deadline_slot)
        for a in result.plan.assignments
    )
    return len(result.plan.unscheduled), late, score_plan(inst, result.plan).carbon_g


def _spread(n_jobs: int, seed: int) -> Instance:
    """Ten-zone in small: three clusters, jobs of 1-3 units and 1-3 slots with spread
    releases and windows, some allowed on one cluster only; capacity for 60 % of the work."""
    rng = np.random.default_rng(seed)
    horizon = 12
    names = ["a", "b", "c"]
    runtime = rng.integers(1, 4, n_jobs)
    release = rng.integers(0, horizon - 3, n_jobs)
    demand = rng.integers(1, 4, n_jobs)
    deadline = np.minimum(release + np.ceil(rng.uniform(1.5, 3.0, n_jobs) * runtime), horizon)
    capacity = float(np.ceil(np.sum(demand * runtime) / (0.6 * len(names) * horizon)))
    carbon = {n: [float(v) for v in rng.integers(50, 500, horizon)] for n in names}
    jobs = [
        job(
            f"j{i}",
            gpu=float(demand[i]),
            runtime=int(runtime[i]),
            release=int(release[i]),
            deadline=int(deadline[i]),
            allowed=[names[i % 3]] if i % 4 == 0 else None,
        )
        for i in range(n_jobs)
    ]
    return instance(jobs, [cluster(n, gpu=capacity) for n in names], carbon, horizon=horizon)


@settings(max_examples=30, deadline=None)
@given(instances(max_jobs=7, max_horizon=6, future=False))
def test_column_index_finds_every_column(inst: Instance) -> None:
    """``column_index`` of each column's (class, cluster, start) is that column."""
    classes = classes_of(arrays_of(inst))
    columns = class_columns(classes)
    index = column_index(classes, columns.klass, columns.cluster, columns.start_slot)
    assert np.array_equal(index, np.arange(len(columns)))


def test_the_core_keeps_the_cheapest_priced_columns_and_the_plans_starts() -> None:
    """Per class the ``per_class`` columns of least priced cost, and every on-time start of
    the plan given, whatever its price."""
    inst = _spread(40, 1)
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    columns = class_columns(classes)
    state = cs._place_all(arrays, classes, table, table)
    want_per_class = 2
    keep = cs._core_columns(arrays, classes, columns, table, state, want_per_class)
    kept = np.zeros(len(columns), dtype=bool)
    kept[keep] = True
    priced = table[classes.class_shape[columns.klass], columns.cluster, columns.start_slot]
    for c in range(classes.class_shape.shape[0]):
        mine = np.flatnonzero(columns.klass == c)
        cheapest = mine[np.argsort(priced[mine], kind="stable")[:want_per_class]]
        assert kept[cheapest].all()
    on_time = np.flatnonzero(
        (state.cluster >= 0) & (state.start + arrays.runtime_slots <= arrays.deadline_slot)
    )
    assert on_time.size > 0
    for j in on_time:
        hit = (
            (columns.klass[keep] == classes.klass[j])
            & (columns.cluster[keep] == state.cluster[j])
            & (columns.start_slot[keep] == state.start[j])
        )
        assert hit.sum() == 1


@_SETTINGS
@given(st.one_of(instances(max_jobs=7, max_horizon=6, future=False), congested()))
def test_the_core_path_is_feasible_and_never_worse_than_without_it(inst: Instance) -> None:
    """With the core on and off: plans that keep capacity, place every job that the plan
    without the core places, and never rise in (jobs left out, lateness, grams)."""
    on = _plan(inst)
    off = _plan(inst, core_columns=0)
    assert check_feasibility(inst, on.plan) == []
    assert check_feasibility(inst, off.plan) == []
    want_on, want_off = _key(inst, on), _key(inst, off)
    assert want_on[:2] <= want_off[:2]
    if want_on[:2] == want_off[:2]:
        assert want_on[2] <= want_off[2] * (1 + 1e-9) + 1e-9
    if on.bound is not None and on.bound.lower_bound_g is not None:
        assert on.bound.lower_bound_g <= want_on[2] * (1 + 1e-9) + 1e-9


def test_the_core_path_runs_and_gains_on_a_spread_instance() -> None:
    """On ten-zone in small the core LP is solved, its rounding put on time, and the plan
    has fewer grams than without it, every job on time in both; the bound stays below the
    plan and below the whole class LP's optimum."""
    inst = _spread(150, 0)
    on = _plan(inst)
    off = _plan(inst, core_columns=0)
    assert on.stats["core_columns"] > 0
    assert "core_columns" not in off.stats
    want_on, want_off = _key(inst, on), _key(inst, off)
    assert want_on[:2] == (0, 0)
    assert want_off[:2] == (0, 0)
    assert want_on[2] < want_off[2]
    assert on.bound is not None
    assert on.bound.lower_bound_g is not None
    assert on.bound.lower_bound_g <= want_on[2]
    # a bound on every on-time plan, so at most the whole class LP's optimum
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    base = unit_grams(arrays)
    table = shape_costs(classes, base)
    whole = cs._solve_class_lp(arrays, classes, base, table, class_columns(classes), 60.0)
    assert whole.optimum_g is not None
    assert on.bound.lower_bound_g <= whole.optimum_g * (1 + 1e-9)


def test_the_core_path_stays_off_above_its_size_limit() -> None:
    """``core_max_jobs`` below the jobs: the plan of ``core_columns = 0``."""
    inst = _spread(60, 2)
    limited = _plan(inst, core_max_jobs=59)
    off = _plan(inst, core_columns=0)
    assert "core_columns" not in limited.stats
    assert _key(inst, limited) == _key(inst, off)
