"""Cluster bands (``_polish.polish_bands(per_cluster=True)``, docs/design/0002-carbonshift-
planner.md step 7d): one cluster's slots at a time, the jobs running there and the jobs whose
least priced start lies there freed at once, each with few starts, re-planned by one
sub-MILP; kept only when lighter and within capacity, swept again while a sweep keeps one.
On the policy: up to 3,000 jobs, after the time bands (core path) or the support MILP (the
whole class LP's path)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carbonshift.domain import Instance, check_feasibility, score_plan
from carbonshift.planning import run_policy
from carbonshift.planning.policies import carbonshift as cs
from carbonshift.planning.policies._polish import PolishStats, polish_bands
from carbonshift.planning.problem import CAPACITY_TOLERANCE
from tests.builders import cluster, instance, job
from tests.planning.strategies import instances
from tests.planning.test_carbonshift import congested
from tests.planning.test_core_lp import _LARGE_PATH, _key, _spread
from tests.planning.test_polish import _greedy, _used
from tests.planning.test_polish_bands import placed

_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _wanted_clean_cell_taken() -> tuple[Any, ...]:
    """Cluster ``a`` has one clean slot of 2 gpu, ``b`` is dirty and roomy. Job ``small``
    (1 gpu) sits in ``a``'s clean slot and ``big`` (2 gpu) on ``b``: ``big``'s least priced
    start is ``a``'s clean slot, where ``small`` is in its way. The optimum swaps them."""
    jobs = [job("small", gpu=1.0, deadline=1), job("big", gpu=2.0, deadline=1)]
    inst = instance(
        jobs,
        [cluster("a", gpu=2.0), cluster("b", gpu=10.0)],
        {"a": [10.0], "b": [500.0]},
        horizon=1,
    )
    return (inst, *placed(inst, [(0, 0), (1, 0)]))


def _cluster_bands(
    arrays: Any, classes: Any, table: Any, state: Any, **overrides: Any
) -> PolishStats:
    budget: dict[str, Any] = {
        "max_columns": 100,
        "max_nodes": 20,
        "lp_iterations": 100_000,
        "cpu_limit_s": 60.0,
    }
    return polish_bands(
        arrays,
        classes,
        table,
        state.free,
        state.cluster,
        state.start,
        table,  # priced as the grams
        np.zeros(0, dtype=np.int64),
        per_cluster=True,
        **(budget | overrides),
    )


@pytest.mark.parametrize(
    ("max_columns", "want_cluster", "want_kept"),
    [
        pytest.param(100, [1, 0], 1, id="big-pulled-into-the-clean-cell-small-moves-out"),
        pytest.param(1, [0, 1], 0, id="band-over-max-columns-skipped"),
    ],
)
def test_a_job_wanting_a_cells_slot_is_freed_with_the_jobs_running_there(
    max_columns: int, want_cluster: list[int], want_kept: int
) -> None:
    """``big`` runs on ``b``, so a band of ``a`` frees it only because its least priced
    start is there; the sub-MILP then swaps the two jobs."""
    _, arrays, classes, table, state = _wanted_clean_cell_taken()
    before_g = cs._grams(arrays, classes, state, table)
    done = _cluster_bands(arrays, classes, table, state, max_columns=max_columns)
    assert [int(m) for m in state.cluster] == want_cluster
    assert done.kept == want_kept
    after_g = cs._grams(arrays, classes, state, table)
    assert done.saved_g == pytest.approx(before_g - after_g)
    np.testing.assert_allclose(state.free, arrays.free_units - _used(arrays, state))
    assert float(state.free.min()) >= -1e-9


@_SETTINGS
@given(st.one_of(instances(max_jobs=7, max_horizon=6, future=False), congested()))
def test_cluster_bands_keep_capacity_and_deadlines_never_raise_grams_and_repeat(
    inst: Instance,
) -> None:
    """On a heuristic plan: after the cluster bands the free units are the capacity less
    what the placed jobs hold (summed afresh) and none below zero; every job on time before
    is on time after and every placed job stays placed; the grams never rise; and the same
    plan twice from the same start (the budget counts simplex iterations)."""
    arrays, classes, table, _, state = _greedy(inst)
    placed_before = state.cluster >= 0
    runtime, deadline = arrays.runtime_slots, arrays.deadline_slot
    on_time_before = placed_before & (state.start + runtime <= deadline)
    grams_before = cs._grams(arrays, classes, state, table)
    twin = cs._copy(state)
    _cluster_bands(arrays, classes, table, state)
    _cluster_bands(arrays, classes, table, twin)
    assert np.array_equal(state.cluster, twin.cluster)
    assert np.array_equal(state.start, twin.start)
    assert np.allclose(state.free, arrays.free_units - _used(arrays, state), atol=1e-9)
    assert np.all(state.free >= -CAPACITY_TOLERANCE)
    placed_after = state.cluster >= 0
    assert np.array_equal(placed_after, placed_before)
    on_time_after = placed_after & (state.start + runtime <= deadline)
    assert np.all(on_time_after[on_time_before])
    assert cs._grams(arrays, classes, state, table) <= grams_before * (1 + 1e-12) + 1e-9


def test_the_policy_runs_the_cluster_bands_and_they_never_make_the_plan_heavier() -> None:
    """On the cores' path and on the whole class LP's path (after the support MILP): the
    step runs, the plan is feasible, on time, no heavier than with it off, and the same
    twice. (The time bands are off on both paths: here they leave the plan within the
    bound's 0.1 %, where no later step runs; so are the cluster pairs, step 7h, which
    found a lighter plan from the plan without the cluster bands.)"""
    inst = _spread(60, 2)
    limits = {k: v for k, v in _LARGE_PATH.items() if k != "core_small_jobs"}
    cores = {
        **limits,
        "core_small_jobs": 0,
        "search_factor": 0,
        "polish_steps": 0,
        "band_columns": 0,
        "pair_lp_iterations": 0,
    }
    whole = {"search_factor": 0, "polish_steps": 0, "band_columns": 0, "pair_lp_iterations": 0}
    for params in (cores, whole):
        on = run_policy("carbonshift", inst, params)
        again = run_policy("carbonshift", inst, params)
        off = run_policy("carbonshift", inst, {**params, "cluster_band_columns": 0})
        assert on.stats["cluster_band_steps"] > 0
        assert "cluster_band_steps" not in off.stats
        assert on.plan.assignments == again.plan.assignments
        for result in (on, off):
            assert check_feasibility(inst, result.plan) == []
            assert _key(inst, result)[:2] == (0, 0)
        assert score_plan(inst, on.plan).carbon_g <= score_plan(inst, off.plan).carbon_g + 1e-9
