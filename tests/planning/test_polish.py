"""The MIP neighbourhood search of ``carbonshift`` (planning/policies/_polish.py): it keeps
capacity, keeps every job on time, never raises grams, and finds exchanges of several jobs
that the greedy, its re-insertions and the ruin-and-recreate do not."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carbonshift.domain import Instance
from carbonshift.planning import run_policy
from carbonshift.planning.lagrangian import JobClasses, classes_of, shape_costs, unit_grams
from carbonshift.planning.policies import carbonshift as cs
from carbonshift.planning.policies._polish import PolishStats, polish
from carbonshift.planning.problem import CAPACITY_TOLERANCE, InstanceArrays, arrays_of
from tests.builders import cluster, instance, job
from tests.planning.strategies import instances
from tests.planning.test_carbonshift import HEURISTIC, assert_stage_never_costs, congested

_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: the policy without its exact MILP stage, so that the plan is the heuristics' own


def _greedy(
    inst: Instance,
) -> tuple[InstanceArrays, JobClasses, npt.NDArray[np.float64], npt.NDArray[np.float64], Any]:
    """A plan by the greedy and its re-insertions and search (no LP, no polish), with the
    arrays, classes and grams table it was made with."""
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    own = cs._own_best_fast(arrays, classes, table)
    state = cs._place_all(arrays, classes, table, table)
    cs._improve(arrays, classes, state, table, own, 3)
    cs._ruin_recreate(arrays, classes, state, table, own, budget=200, seed=0)
    cs._improve(arrays, classes, state, table, own, 3)
    return arrays, classes, table, own, state


def _run_polish(
    arrays: InstanceArrays,
    classes: JobClasses,
    table: npt.NDArray[np.float64],
    own: npt.NDArray[np.float64],
    state: Any,
    **overrides: Any,
) -> PolishStats:
    """:func:`polish` on ``state`` with a small budget (``overrides`` change it)."""
    budget: dict[str, Any] = {
        "steps": 10,
        "max_jobs": 10,
        "max_columns": 100,
        "max_nodes": 20,
        "lp_iterations": 10_000,
        "cpu_limit_s": 30.0,
        "seed": 0,
    }
    return polish(
        arrays,
        classes,
        table,
        state.free,
        state.cluster,
        state.start,
        own,
        **(budget | overrides),
    )


def _used(arrays: InstanceArrays, state: Any) -> npt.NDArray[np.float64]:
    """Units each placed job holds per (cluster, resource, slot), summed afresh."""
    used = np.zeros_like(arrays.free_units)
    for j in np.flatnonzero(state.cluster >= 0):
        m, s = int(state.cluster[j]), int(state.start[j])
        r = int(arrays.runtime_slots[j])
        used[m, :, s : s + r] += arrays.demand_units[j][:, None]
    return used


def _big_for_two_small() -> Instance:
    """One clean slot on cluster ``a`` of 4 units, a dirty ``b`` of 10: jobs of 3, 2 and 2
    units (largest first, the 3 takes the clean cells and both 2s go dirty)."""
    return instance(
        [job("big", gpu=3.0), job("s1", gpu=2.0), job("s2", gpu=2.0)],
        [cluster("a", gpu=4.0), cluster("b", gpu=10.0)],
        {"a": [10.0], "b": [500.0]},
        horizon=1,
    )


def test_an_exchange_of_two_small_jobs_for_a_large_one_is_found() -> None:
    """One clean slot on cluster ``a`` of 4 units, a dirty ``b`` of 10: jobs of 3, 2 and 2
    units. Largest first, the 3 takes the clean cells and both 2s go dirty; no single
    re-insertion helps, and the ruin-and-recreate's ejection (a 2 in, the 3 out to ``b``)
    costs grams. The optimum swaps the 3 for both 2s; the polish finds it."""
    arrays, classes, table, own, state = _greedy(_big_for_two_small())
    before = cs._grams(arrays, classes, state, table)
    want_g = (4 * 10.0 + 3 * 500.0) * 1.0  # kW per unit x g/kWh x 1 h
    assert before > want_g * (1 + 1e-9), "the greedy alone should miss the swap"
    calls: list[int] = []
    done = _run_polish(
        arrays, classes, table, own, state, rounds=3, between=lambda: calls.append(1)
    )
    got_g = cs._grams(arrays, classes, state, table)
    assert got_g == want_g
    assert done.kept >= 1
    assert done.saved_g == pytest.approx(before - want_g)
    assert list(state.cluster) == [1, 0, 0]
    # one window held every job and was solved to optimality: one round, then the caller's
    # moves once, and no further rounds
    assert calls == [1]


@_SETTINGS
@given(
    st.one_of(instances(max_jobs=7, max_horizon=6, future=False), congested()), st.integers(0, 3)
)
def test_polish_keeps_capacity_and_deadlines_and_never_raises_grams(
    inst: Instance, seed: int
) -> None:
    """On a heuristic plan: after the polish, the free units are the capacity less what the
    placed jobs hold (summed afresh) and none below zero; every job on time before is on
    time after and every placed job stays placed; the grams never rise."""
    arrays, classes, table, own, state = _greedy(inst)
    placed_before = state.cluster >= 0
    deadline = arrays.deadline_slot
    runtime = arrays.runtime_slots
    on_time_before = placed_before & (state.start + runtime <= deadline)
    grams_before = cs._grams(arrays, classes, state, table)
    polish(
        arrays,
        classes,
        table,
        state.free,
        state.cluster,
        state.start,
        own,
        steps=8,
        max_jobs=4,
        max_columns=200,
        max_nodes=20,
        lp_iterations=100_000,
        cpu_limit_s=60.0,
        seed=seed,
    )
    want_free = arrays.free_units - _used(arrays, state)
    assert np.allclose(state.free, want_free, atol=1e-9)
    assert np.all(state.free >= -CAPACITY_TOLERANCE)
    placed_after = state.cluster >= 0
    assert np.array_equal(placed_after, placed_before)
    on_time_after = placed_after & (state.start + runtime <= deadline)
    assert np.all(on_time_after[on_time_before])
    grams_after = cs._grams(arrays, classes, state, table)
    assert grams_after <= grams_before * (1 + 1e-12) + 1e-9


@_SETTINGS
@given(st.one_of(instances(max_jobs=7, max_horizon=6, future=False), congested()))
def test_the_policy_with_polish_is_feasible_as_late_and_never_dearer(inst: Instance) -> None:
    """Through the policy: the same plan stages with and without the polish; with it the
    plan is feasible, exactly as late, leaves out the same jobs and is never dearer, and
    the bound does not change."""
    assert_stage_never_costs(inst, {"polish_steps": 0})


def test_the_polish_is_deterministic_for_a_seed() -> None:
    """Twice on the same instance, the same plan (the budget counts HiGHS iterations, so
    the CPU guard, far away here, decides nothing)."""
    rng = np.random.default_rng(5)
    clusters = [cluster(f"c{i}", gpu=6.0) for i in range(3)]
    carbon = {f"c{i}": [float(v) for v in rng.integers(50, 500, 8)] for i in range(3)}
    jobs = []
    for i in range(24):
        runtime = int(rng.integers(1, 3))
        release = int(rng.integers(0, 8 - runtime))
        jobs.append(
            job(
                f"j{i}",
                gpu=float(rng.integers(1, 4)),
                runtime=runtime,
                release=release,
                deadline=min(8, release + runtime + int(rng.integers(0, 4))),
            )
        )
    inst = instance(jobs, clusters, carbon, horizon=8)
    params = {**HEURISTIC, "bound": "lagrangian", "polish_cpu_s": 600.0}
    first = run_policy("carbonshift", inst, params)
    second = run_policy("carbonshift", inst, params)
    assert first.stats.get("polish_steps", 0) > 0, "the instance should leave the polish work"
    assert first.plan.assignments == second.plan.assignments


def test_a_solver_failure_leaves_the_plan_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    """When HiGHS fails inside the polish, the search stops and the plan, its free units
    included, is exactly the one it was given."""
    from carbonshift.errors import SolverError
    from carbonshift.planning.policies import _polish

    def failing(*args: object, **kwargs: object) -> None:
        raise SolverError("HiGHS failed (a test double)")

    monkeypatch.setattr(_polish, "solve", failing)
    arrays, classes, table, own, state = _greedy(_big_for_two_small())
    want = (state.free.copy(), state.cluster.copy(), state.start.copy())
    done = _run_polish(arrays, classes, table, own, state)
    assert done.kept == 0
    assert np.array_equal(state.free, want[0])
    assert np.array_equal(state.cluster, want[1])
    assert np.array_equal(state.start, want[2])


def test_a_sub_milp_s_time_limit_is_a_hang_guard_not_the_cpu_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HiGHS counts wall seconds: a sub-MILP given the CPU left (0.1 s here, after 29.9 s of
    a 30 s guard) is cut short on a loaded machine, and the plan depends on the load. Its
    limit is the guard's own multiple, whatever the CPU spent; the node limit ends it."""
    from types import SimpleNamespace

    from carbonshift.planning.policies import _polish

    ticks = iter([0.0])
    monkeypatch.setattr(_polish, "time", SimpleNamespace(thread_time=lambda: next(ticks, 29.9)))
    limits: list[float] = []
    solve = _polish.solve

    def spy(program: Any, options: Any, **kwargs: Any) -> Any:
        limits.append(options.time_limit_s)
        return solve(program, options, **kwargs)

    monkeypatch.setattr(_polish, "solve", spy)
    arrays, classes, table, own, state = _greedy(_big_for_two_small())

    done = _run_polish(arrays, classes, table, own, state, cpu_limit_s=30.0)

    assert limits, "the polish should solve a sub-MILP"
    assert min(limits) >= 30.0  # at least the whole guard, whatever the CPU spent
    assert done.kept == 1
