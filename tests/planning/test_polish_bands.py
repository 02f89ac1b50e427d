"""Time bands (``_polish.polish_bands``, docs/design/0002-carbonshift-planner.md step 7c):
every movable job running in a band of slots freed at once, each with few starts (its own,
the LP's support, its least priced), re-planned by one sub-MILP; kept only when lighter
and within capacity. On the policy: where the cores stand in for the class LP, and (with
``lp_bands``) where the whole class LP is solved."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from carbonshift.domain import check_feasibility, score_plan
from carbonshift.errors import InputError
from carbonshift.planning import run_policy
from carbonshift.planning.lagrangian import classes_of, shape_costs, unit_grams
from carbonshift.planning.policies import carbonshift as cs
from carbonshift.planning.policies._polish import polish_bands
from carbonshift.planning.problem import arrays_of
from tests.builders import cluster, instance, job
from tests.planning.test_core_lp import _LARGE_PATH, _key, _spread


def placed(inst: Any, wheres: list[tuple[int, int]]) -> tuple[Any, ...]:
    """``inst``'s arrays, classes, grams table and a placement state with job ``j`` at
    ``wheres[j]`` (cluster index, start slot)."""
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    n_jobs = len(inst.jobs)
    state = cs._State(
        free=arrays.free_units.copy(),
        cluster=np.full(n_jobs, -1, dtype=np.int64),
        start=np.full(n_jobs, -1, dtype=np.int64),
    )
    placer = cs._Placer(arrays, classes, state)
    for j, where in enumerate(wheres):
        placer.place(j, where)
    return arrays, classes, table, state


def _two_jobs_crossed() -> tuple[Any, ...]:
    """Two jobs of 2 gpu (one slot, any of three) on 2 gpu per slot, slots ever dirtier;
    the plan puts them in the two dearest slots, the clean one idle."""
    jobs = [job("a", gpu=2.0, deadline=3), job("b", gpu=2.0, deadline=3)]
    inst = instance(jobs, [cluster(gpu=2.0)], {"c1": [100.0, 200.0, 300.0]}, horizon=3)
    return placed(inst, [(0, 2), (0, 1)])


@pytest.mark.parametrize(
    ("max_columns", "want_starts", "want_kept"),
    [
        pytest.param(100, [0, 1], 1, id="room-for-the-band-lighter"),
        pytest.param(1, [1, 2], 0, id="band-over-max-columns-skipped"),
    ],
)
def test_a_band_is_re_planned_when_it_fits_max_columns(
    max_columns: int, want_starts: list[int], want_kept: int
) -> None:
    arrays, classes, table, state = _two_jobs_crossed()
    before_g = cs._grams(arrays, classes, state, table)
    done = polish_bands(
        arrays,
        classes,
        table,
        state.free,
        state.cluster,
        state.start,
        table,  # priced as the grams: each job's two cheapest starts are slots 0 and 1
        np.zeros(0, dtype=np.int64),
        max_columns=max_columns,
        max_nodes=20,
        lp_iterations=10_000,
        cpu_limit_s=10.0,
    )
    assert sorted(int(s) for s in state.start) == want_starts
    assert done.kept == want_kept
    after_g = cs._grams(arrays, classes, state, table)
    assert after_g <= before_g
    assert done.saved_g == pytest.approx(before_g - after_g)
    # the cells held are those of the plan's starts, and none is over capacity
    want_free = arrays.free_units.copy()
    for j in range(2):
        want_free[0, :, int(state.start[j])] -= arrays.demand_units[j]
    np.testing.assert_allclose(state.free, want_free)
    assert float(state.free.min()) >= -1e-9


def test_the_cores_path_runs_the_bands_and_they_never_make_the_plan_heavier() -> None:
    """Up to 3,000 jobs where the cores stand in for the class LP: the bands run after the
    polish (``band_columns`` > 0) and the plan is feasible, on time and no heavier than with
    them off."""
    inst = _spread(60, 2)
    limits = {k: v for k, v in _LARGE_PATH.items() if k != "core_small_jobs"}
    params = {**limits, "core_small_jobs": 0, "search_factor": 0, "polish_steps": 0}
    on = run_policy("carbonshift", inst, params)
    off = run_policy("carbonshift", inst, {**params, "band_columns": 0})
    assert on.stats["band_steps"] > 0
    assert "band_steps" not in off.stats
    for result in (on, off):
        assert check_feasibility(inst, result.plan) == []
        assert _key(inst, result)[:2] == (0, 0)
    assert score_plan(inst, on.plan).carbon_g <= score_plan(inst, off.plan).carbon_g + 1e-9


def test_the_whole_lp_path_runs_the_bands_on_its_support_with_lp_bands() -> None:
    """Where the whole class LP is solved (up to 3,000 jobs), ``lp_bands`` (on by default)
    runs the time bands on the LP's support after the polish: here, the search, the polish,
    the support MILP, the cluster bands and the cluster pairs off (the pairs find the same
    lighter plan without the bands), a lighter plan than with it off (the bands kept
    sub-MILPs); the plans feasible and on time. The simulator's rounds turn it off."""
    inst = _spread(60, 0)
    params = {
        "exact_max_starts": 0,
        "search_factor": 0,
        "polish_steps": 0,
        "support_nodes": 0,
        "cluster_band_columns": 0,
        "pair_lp_iterations": 0,
    }
    on = run_policy("carbonshift", inst, params)
    off = run_policy("carbonshift", inst, {**params, "lp_bands": False})
    assert "lp_optimum_g" in on.stats  # the whole class LP, not the cores
    assert on.stats["band_steps"] > 0
    assert on.stats["band_kept"] > 0
    assert "band_steps" not in off.stats
    for result in (on, off):
        assert check_feasibility(inst, result.plan) == []
        assert _key(inst, result)[:2] == (0, 0)
    assert score_plan(inst, on.plan).carbon_g < score_plan(inst, off.plan).carbon_g - 1.0


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_on_the_whole_lp_path_the_bands_never_make_the_plan_heavier(seed: int) -> None:
    """With ``lp_bands`` the time bands run after the cluster bands there, and keep only
    lighter sub-MILPs: the plan is the one without them or lighter, the same twice."""
    inst = _spread(60, seed)
    params = {"exact_max_starts": 0, "search_factor": 0, "polish_steps": 0}
    on = run_policy("carbonshift", inst, params)
    again = run_policy("carbonshift", inst, params)
    off = run_policy("carbonshift", inst, {**params, "lp_bands": False})
    assert on.plan.assignments == again.plan.assignments
    assert check_feasibility(inst, on.plan) == []
    assert _key(inst, on)[:2] == (0, 0)
    assert score_plan(inst, on.plan).carbon_g <= score_plan(inst, off.plan).carbon_g + 1e-9


def test_the_rounds_turn_the_whole_lp_bands_off() -> None:
    from carbonshift.planning.registry import round_params

    assert round_params("carbonshift", {})["lp_bands"] is False
    assert round_params("carbonshift", {"lp_bands": True})["lp_bands"] is True


@pytest.mark.parametrize(
    "name",
    ["band_columns", "band_lp_iterations", "cluster_band_columns", "cluster_band_lp_iterations"],
)
def test_band_options_are_checked(name: str) -> None:
    inst = _spread(6, 0)
    with pytest.raises(InputError, match=name):
        run_policy("carbonshift", inst, {name: -1})
