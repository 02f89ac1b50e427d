"""The late-job repair of ``carbonshift`` (planning/policies/_polish.py, ``repair_late``):
it puts a late job on time by an exchange with its neighbours, keeps capacity, keeps every
on-time job on time, and never raises (lateness, grams)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carbonshift.domain import Instance, check_feasibility
from carbonshift.planning import run_policy
from carbonshift.planning.lagrangian import classes_of, shape_costs, unit_grams
from carbonshift.planning.policies import carbonshift as cs
from carbonshift.planning.policies._polish import _use, repair_late
from carbonshift.planning.problem import CAPACITY_TOLERANCE, arrays_of
from tests.builders import cluster, instance, job
from tests.planning.strategies import instances
from tests.planning.test_carbonshift import congested
from tests.planning.test_polish import _greedy, _used

_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_BUDGET = {"max_jobs": 4, "max_columns": 200, "max_nodes": 20, "rounds": 8, "cpu_limit_s": 60.0}


def test_a_late_job_is_put_on_time_by_moving_its_neighbour() -> None:
    """One cluster of 2 units, two slots: ``x`` must run in slot 0, ``y`` may run in either.
    With ``y`` in slot 0 and ``x`` late in slot 1, no start of ``x`` alone has room; the
    repair swaps them, and both are on time."""
    inst = instance(
        [
            job("x", gpu=2.0, runtime=1, release=0, deadline=1),
            job("y", gpu=2.0, runtime=1, release=0, deadline=2),
        ],
        [cluster("a", gpu=2.0)],
        {"a": [100.0, 200.0]},
        horizon=2,
    )
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    state = cs._State(
        free=arrays.free_units.copy(),
        cluster=np.array([0, 0], dtype=np.int64),
        start=np.array([1, 0], dtype=np.int64),
    )
    for j in range(2):
        _use(arrays, state.free, j, 0, int(state.start[j]), -1.0)
    assert cs._lateness_slots(arrays, state) == 1
    done = repair_late(
        arrays, classes, table, state.free, state.cluster, state.start, seed=0, **_BUDGET
    )
    assert list(state.start) == [0, 1]
    assert done.slots_removed == 1
    assert cs._lateness_slots(arrays, state) == 0
    assert np.allclose(state.free, arrays.free_units - _used(arrays, state), atol=1e-9)


@_SETTINGS
@given(
    st.one_of(instances(max_jobs=7, max_horizon=6, future=False), congested()), st.integers(0, 3)
)
def test_the_repair_keeps_capacity_and_on_time_jobs_and_never_raises_lateness_then_grams(
    inst: Instance, seed: int
) -> None:
    """On a heuristic plan: after the repair the free units are the capacity less what the
    placed jobs hold (summed afresh) and none below zero; placed jobs stay placed; jobs on
    time stay on time; (total lateness, grams) never rises."""
    arrays, classes, table, _, state = _greedy(inst)
    placed_before = state.cluster >= 0
    runtime, deadline = arrays.runtime_slots, arrays.deadline_slot
    on_time_before = placed_before & (state.start + runtime <= deadline)
    late_before = cs._lateness_slots(arrays, state)
    grams_before = cs._grams(arrays, classes, state, table)
    done = repair_late(
        arrays, classes, table, state.free, state.cluster, state.start, seed=seed, **_BUDGET
    )
    assert np.allclose(state.free, arrays.free_units - _used(arrays, state), atol=1e-9)
    assert np.all(state.free >= -CAPACITY_TOLERANCE)
    placed_after = state.cluster >= 0
    assert np.array_equal(placed_after, placed_before)
    assert np.all((placed_after & (state.start + runtime <= deadline))[on_time_before])
    late_after = cs._lateness_slots(arrays, state)
    assert late_after == late_before - done.slots_removed
    assert late_after <= late_before
    if late_after == late_before:
        assert cs._grams(arrays, classes, state, table) <= grams_before * (1 + 1e-12) + 1e-9


@_SETTINGS
@given(st.one_of(instances(max_jobs=7, max_horizon=6, future=False), congested()))
def test_the_policy_with_or_without_the_repair_is_feasible(inst: Instance) -> None:
    """Through the policy, with the repair on (the default) and off: feasible plans."""
    on = run_policy("carbonshift", inst, {"exact_max_starts": 0})
    off = run_policy("carbonshift", inst, {"exact_max_starts": 0, "late_repair_jobs": 0})
    assert check_feasibility(inst, on.plan) == []
    assert check_feasibility(inst, off.plan) == []
