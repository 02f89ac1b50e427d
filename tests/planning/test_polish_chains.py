"""Chain windows of the MIP neighbourhood search (planning/policies/_polish.py,
``_chain_window``; bench/planner.md section (v)): a window that follows who holds the room
a job would rather have, across clusters and slots, where the window by spans takes the
jobs nearest in time."""

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


def _blocked() -> Instance:
    """Cluster ``a`` clean (2 units), ``b`` dirty (10). ``want`` (2 units, due after slot
    0) runs dirty because ``blocker`` (2 units, due at the horizon's end) holds ``a`` at
    slot 0; three small jobs with ``want``'s own span run dirty beside it."""
    near = [job(f"near{i}", gpu=1.0, deadline=1) for i in range(3)]
    return instance(
        [job("want", gpu=2.0, deadline=1), job("blocker", gpu=2.0, deadline=6), *near],
        [cluster("a", gpu=2.0), cluster("b", gpu=10.0)],
        {"a": [10.0] * 6, "b": [500.0] * 6},
        horizon=6,
    )


def _plan(inst: Instance) -> tuple[object, object, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The arrays, classes, grams table, free units and starts of the plan above (by hand:
    ``blocker`` on ``a`` at slot 0, every other job on ``b`` at slot 0)."""
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    cluster_of = np.array([1, 0, 1, 1, 1], dtype=np.int64)
    start = np.zeros(5, dtype=np.int64)
    free = arrays.free_units.copy()
    for j in range(5):
        free[cluster_of[j], :, 0:1] -= arrays.demand_units[j][:, None]
    return arrays, classes, table, free, cluster_of, start


def test_a_chain_window_takes_the_job_that_holds_the_cheaper_room() -> None:
    """With room for two jobs, the chain window of ``want`` takes ``blocker`` (it holds
    ``want``'s cheaper cell on ``a``); the window by spans takes a job of ``want``'s own
    span instead, and cannot find the swap."""
    arrays, classes, table, _, cluster_of, start = _plan(_blocked())
    movable = np.ones(5, dtype=bool)
    rng = np.random.default_rng(0)
    want_window = [0, 1]

    got = _polish._chain_window(arrays, classes, table, cluster_of, start, movable, 0, rng, 2, 1000)
    by_span = _polish._window(arrays, classes, movable, 0, np.random.default_rng(0), 2, 1000)

    assert got.tolist() == want_window
    assert 1 not in by_span.tolist()


def test_a_chain_window_respects_its_limits_and_the_movable_jobs() -> None:
    """No job that may not move, no more than ``max_jobs`` jobs, no more than
    ``max_columns`` on-time starts: a chain with ``blocker`` held is ``want`` alone."""
    arrays, classes, table, _, cluster_of, start = _plan(_blocked())
    movable = np.ones(5, dtype=bool)
    movable[1] = False
    rng = np.random.default_rng(0)

    held = _polish._chain_window(
        arrays, classes, table, cluster_of, start, movable, 0, rng, 5, 1000
    )
    narrow = _polish._chain_window(
        arrays, classes, table, cluster_of, start, np.ones(5, dtype=bool), 0, rng, 5, 2
    )

    assert held.tolist() == [0]
    assert narrow.tolist() == [0]  # want's 2 starts fill the columns; blocker has 12


def test_the_polish_with_chain_windows_makes_the_swap() -> None:
    """Through :func:`polish` with every window a chain (``chain_every = 1``) and windows
    of two jobs: ``want`` takes ``a`` at slot 0 and ``blocker`` a later slot on ``a``."""
    inst = _blocked()
    arrays, classes, table, free, cluster_of, start = _plan(inst)
    own = cs._own_best_fast(arrays, classes, table)

    done = _polish.polish(
        arrays,
        classes,
        table,
        free,
        cluster_of,
        start,
        own,
        steps=4,
        max_jobs=2,
        max_columns=1000,
        max_nodes=20,
        lp_iterations=10_000,
        cpu_limit_s=30.0,
        seed=0,
        chain_every=1,
    )

    assert done.kept >= 1
    assert (cluster_of[0], start[0]) == (0, 0)
    assert cluster_of[1] == 0
    assert start[1] > 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(instances(max_jobs=7, max_horizon=6, future=False), congested()))
def test_the_policy_with_chain_windows_is_feasible_as_late_and_never_dearer(
    inst: Instance,
) -> None:
    """Through the policy: with the chain windows' step (7g, the last search step) the plan
    is feasible, exactly as late, leaves out the same jobs and is never dearer than with it
    off, and the bound does not change."""
    assert_stage_never_costs(inst, {"polish_chain_lp_iterations": 0})


def test_the_rounds_turn_the_chain_windows_off() -> None:
    """The simulator's, controller's and hub's rounds plan as before (no step 7g), unless
    the caller asks for it."""
    assert round_params("carbonshift", {})["polish_chain_lp_iterations"] == 0
    assert (
        round_params("carbonshift", {"polish_chain_lp_iterations": 500})[
            "polish_chain_lp_iterations"
        ]
        == 500
    )


def test_a_negative_chain_budget_is_refused_with_the_fix() -> None:
    """A budget below 0 is bad input: the message names the parameter and its range."""
    with pytest.raises(InputError, match="polish_chain_lp_iterations"):
        run_policy("carbonshift", _blocked(), {"polish_chain_lp_iterations": -1})
