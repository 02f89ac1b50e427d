"""Cluster pairs of the MIP neighbourhood search (planning/policies/_polish.py,
``polish_pairs``; design note 0002 step 7h, bench/planner.md (y)): every movable job on
two clusters freed at once with its starts on both, so that the clean cluster is packed
tighter and a job leaves the dirty one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carbonshift.domain import Instance
from carbonshift.errors import InputError
from carbonshift.planning import run_policy
from carbonshift.planning.lagrangian import classes_of, shape_costs, unit_grams
from carbonshift.planning.policies import _polish
from carbonshift.planning.policies import carbonshift as cs
from carbonshift.planning.problem import arrays_of
from carbonshift.planning.registry import round_params
from tests.builders import cluster, instance, job
from tests.planning.strategies import instances
from tests.planning.test_carbonshift import assert_stage_never_costs, congested


def _loose(gpu_a: float = 4.0) -> Instance:
    """Cluster ``a`` clean (``gpu_a`` units, 4 unless said), ``b`` dirty (10), 4 slots.
    ``small`` (2 units, 2 slots, any start) runs on ``a`` at slot 1, which leaves no 2
    slots of 4 units there; ``big`` (4 units, 2 slots, any start) runs dirty. Packed
    tighter (``small`` at slot 2, ``big`` at slot 0, both on ``a``) nothing runs dirty."""
    return instance(
        [job("small", gpu=2.0, runtime=2, deadline=4), job("big", gpu=4.0, runtime=2, deadline=4)],
        [cluster("a", gpu=gpu_a), cluster("b", gpu=10.0)],
        {"a": [10.0] * 4, "b": [500.0] * 4},
        horizon=4,
    )


def _plan(inst: Instance) -> tuple[object, object, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The arrays, classes, grams table, free units and starts of the plan above (by hand:
    ``small`` on ``a`` at slot 1, ``big`` on ``b`` at slot 0)."""
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    cluster_of = np.array([0, 1], dtype=np.int64)
    start = np.array([1, 0], dtype=np.int64)
    free = arrays.free_units.copy()
    for j in range(2):
        r = int(arrays.runtime_slots[j])
        free[cluster_of[j], :, start[j] : start[j] + r] -= arrays.demand_units[j][:, None]
    return arrays, classes, table, free, cluster_of, start


def _pairs(
    lp_iterations: int,
    max_columns: int = 100,
    gpu_a: float = 4.0,
    target_g: float | None = None,
) -> tuple[_polish.PolishStats, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_polish.polish_pairs` on the plan of :func:`_plan` with a budget of
    ``lp_iterations`` and windows of ``max_columns`` (``a`` of ``gpu_a`` units), stopping
    at ``target_g``: what it did, and the free units and starts after it."""
    arrays, classes, table, free, cluster_of, start = _plan(_loose(gpu_a))
    own = cs._own_best_fast(arrays, classes, table)
    done = _polish.polish_pairs(
        arrays,
        classes,
        table,
        free,
        cluster_of,
        start,
        own,
        max_columns=max_columns,
        lp_iterations=lp_iterations,
        cpu_limit_s=30.0,
        target_g=target_g,
    )
    return done, free, cluster_of, start


def test_a_pair_window_packs_the_clean_cluster_tighter() -> None:
    """``small`` moves within ``a`` so that ``big`` leaves ``b``: neither job alone can
    lower its grams (``small`` is on its cheapest cluster already; ``big`` has no room on
    ``a``), both at once can."""
    done, free, cluster_of, start = _pairs(10_000)

    assert done.kept == 1
    assert done.saved_g > 0
    assert cluster_of.tolist() == [0, 0]
    assert sorted([(int(start[0]), 2), (int(start[1]), 4)]) in ([(0, 4), (2, 2)], [(0, 2), (2, 4)])
    assert np.all(free >= -1e-9)  # the room the two jobs hold is taken off ``free``
    assert float(free[0].sum()) == pytest.approx(4.0 * 4 - 2 * 2 - 4 * 2)


def _two_loose() -> Instance:
    """:func:`_loose` twice over: jobs ``s1`` and ``b1`` on clusters ``a1`` (clean) and
    ``d1`` (dirty), ``s2`` and ``b2`` on ``a2`` and ``d2``; the second pair dirtier."""
    jobs, clusters, carbon = [], [], {}
    for k, dirty in ((1, 500.0), (2, 900.0)):
        pair = [f"a{k}", f"d{k}"]
        jobs += [
            job(f"s{k}", gpu=2.0, runtime=2, deadline=4, allowed=pair),
            job(f"b{k}", gpu=4.0, runtime=2, deadline=4, allowed=pair),
        ]
        clusters += [cluster(f"a{k}", gpu=4.0), cluster(f"d{k}", gpu=10.0)]
        carbon |= {f"a{k}": [10.0] * 4, f"d{k}": [dirty] * 4}
    return instance(jobs, clusters, carbon, horizon=4)


def test_the_pairs_stop_once_the_plan_reaches_its_target() -> None:
    """Two pairs of clusters, each with :func:`_loose`'s plan: each needs its own window,
    and the search goes on past them (it cannot know that nothing more is to gain). With a
    target the first kept window reaches, the search ends at the next, unsolved."""
    inst = _two_loose()
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    names = [c.name for c in inst.clusters]
    # the loose plan: s_k on a_k at slot 1, b_k on d_k at slot 0; packed: both on a_k
    loose_m = np.array([names.index(n) for n in ("a1", "d1", "a2", "d2")], dtype=np.int64)
    loose_s = np.array([1, 0, 1, 0], dtype=np.int64)

    def grams(m: np.ndarray, s: np.ndarray) -> float:
        return float(classes.weight @ table[classes.shape, m, s])

    def run(target_g: float | None) -> tuple[_polish.PolishStats, np.ndarray]:
        cluster_of, start = loose_m.copy(), loose_s.copy()
        free = arrays.free_units.copy()
        for j in range(4):
            free[cluster_of[j], :, start[j] : start[j] + 2] -= arrays.demand_units[j][:, None]
        own = cs._own_best_fast(arrays, classes, table)
        done = _polish.polish_pairs(
            arrays, classes, table, free, cluster_of, start, own,
            max_columns=100, lp_iterations=10_000, cpu_limit_s=30.0, target_g=target_g,
        )  # fmt: skip
        return done, cluster_of

    whole, cluster_of = run(None)
    assert whole.kept == 2
    assert whole.steps > 2  # then larger windows, which keep nothing
    assert cluster_of.tolist() == [loose_m[0], loose_m[0], loose_m[2], loose_m[2]]
    # either pair packed alone reaches it (the one that saves less: the first pair)
    one_packed = grams(np.array([loose_m[0], loose_m[0], loose_m[2], loose_m[3]]), loose_s)
    reached, _ = run(one_packed * (1 + 1e-9))
    assert reached.kept == 1
    assert reached.steps < whole.steps
    out_of_reach, _ = run(grams(loose_m, loose_s) * 0.01)
    assert (out_of_reach.kept, out_of_reach.steps) == (whole.kept, whole.steps)


def test_a_pair_window_respects_its_budget() -> None:
    """No simplex iterations to spend: nothing is solved and the plan stays."""
    done, _, cluster_of, start = _pairs(0)

    assert (done.steps, done.kept) == (0, 0)
    assert cluster_of.tolist() == [0, 1]
    assert start.tolist() == [1, 0]


def _window_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The window sizes :func:`_polish.polish_pairs` asks :func:`_polish._pair_groups` for,
    in order, as the search runs."""
    asked: list[int] = []
    groups = _polish._pair_groups

    def spy(freed: np.ndarray, start: np.ndarray, options: np.ndarray, size: int) -> object:
        asked.append(size)
        return groups(freed, start, options, size)

    monkeypatch.setattr(_polish, "_pair_groups", spy)
    return asked


def test_the_windows_grow_until_a_sweep_of_the_largest_keeps_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``a`` too small for ``big`` (3 units), no window can lighten the plan, yet
    ``big`` pays above its own cheapest start: each sweep keeps nothing, so the windows
    grow through a quarter of 12 starts, 12 and 24, and the search ends there."""
    asked = _window_sizes(monkeypatch)
    done, _, cluster_of, start = _pairs(10_000, max_columns=12, gpu_a=3.0)

    assert asked == [3, 12, 24]
    assert (done.steps, done.kept) == (3, 0)
    assert (cluster_of.tolist(), start.tolist()) == ([0, 1], [1, 0])


def test_the_first_windows_hand_over_past_their_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows of a quarter of 48 starts already hold both jobs, and keep them there; with
    no share of the budget for the first size, the window of 12 is not solved and the
    next size's (48) packs ``a`` instead."""
    asked = _window_sizes(monkeypatch)
    done, _, cluster_of, _ = _pairs(10_000, max_columns=48)

    assert asked == [12]
    assert (done.kept, done.steps, cluster_of.tolist()) == (1, 1, [0, 0])

    monkeypatch.setattr(_polish, "PAIR_FIRST_SHARE", 0.0)
    asked.clear()
    done, _, cluster_of, _ = _pairs(10_000, max_columns=48)

    assert asked == [12, 48]
    assert (done.kept, done.steps, cluster_of.tolist()) == (1, 1, [0, 0])


def test_pair_groups_keep_to_the_columns_and_overlap_by_half() -> None:
    """Windows along the horizon: none over ``max_columns`` starts (unless one job alone),
    each after the first starting with the later half of the one before, every job in
    one at least."""
    freed = np.arange(8, dtype=np.int64)
    start = np.array([7, 0, 3, 1, 6, 2, 5, 4], dtype=np.int64)
    options = np.full(8, 10, dtype=np.int64)

    groups = _polish._pair_groups(freed, start, options, 40)

    by_start = [sorted(int(start[j]) for j in g) for g in groups]
    assert by_start[0] == [0, 1, 2, 3]
    assert by_start[1] == [2, 3, 4, 5]
    assert all(int(options[g].sum()) <= 40 for g in groups)
    assert set(np.concatenate(groups).tolist()) == set(range(8))


def test_pair_order_leaves_out_pairs_where_nothing_is_paid() -> None:
    """A pair is tried only when a job on it pays above its own cheapest start."""
    arrays, classes, table, _, cluster_of, start = _plan(_loose())
    own = cs._own_best_fast(arrays, classes, table)
    movable = np.ones(2, dtype=bool)

    assert _polish._pair_order(arrays, classes, table, cluster_of, start, own, movable) == [(0, 1)]
    assert (
        _polish._pair_order(
            arrays, classes, table, np.array([0, 0]), np.array([2, 0]), own, movable
        )
        == []
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(instances(max_jobs=7, max_horizon=6, future=False), congested()))
def test_the_policy_with_cluster_pairs_is_feasible_as_late_and_never_dearer(
    inst: Instance,
) -> None:
    """Through the policy: with the cluster pairs' step (7h) the plan is feasible, exactly
    as late, leaves out the same jobs and is never dearer than with it off, and the bound
    does not change."""
    assert_stage_never_costs(inst, {"pair_lp_iterations": 0})


def test_the_rounds_turn_the_cluster_pairs_off() -> None:
    """The simulator's, controller's and hub's rounds plan as before (no step 7h), unless
    the caller asks for it."""
    assert round_params("carbonshift", {})["pair_lp_iterations"] == 0
    assert round_params("carbonshift", {"pair_lp_iterations": 500})["pair_lp_iterations"] == 500


def test_the_rounds_keep_the_support_milps_500_nodes() -> None:
    """Static plans stop the support MILP (step 7b) at 100 nodes; the rounds keep the 500
    of before, so the online plans do not change (bench/planner.md (z))."""
    assert cs.carbonshift.__kwdefaults__["support_nodes"] == 100
    assert round_params("carbonshift", {})["support_nodes"] == 500
    assert round_params("carbonshift", {"support_nodes": 100})["support_nodes"] == 100


@pytest.mark.parametrize("name", ["pair_lp_iterations", "pair_columns"])
def test_a_negative_pair_setting_is_refused_with_the_fix(name: str) -> None:
    """A budget or window below 0 is bad input: the message names the parameter."""
    with pytest.raises(InputError, match=name):
        run_policy("carbonshift", _loose(), {name: -1})
