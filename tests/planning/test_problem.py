"""The start-time formulation: columns, rows and coefficients against plain loops."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carbonshift.domain import Cluster, ClusterName, Instance, Job, JobId, TimeGrid, job_carbon_g
from carbonshift.errors import InputError
from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.problem import (
    InstanceArrays,
    arrays_of,
    balanced_units,
    build_problem,
    build_starts,
    carbon_g,
    caspian_z1,
    caspian_z2,
    caspian_z3,
    gru,
    linear_program,
    on_time_program,
)
from carbonshift.planning.types import PlanContext
from tests.builders import cluster, instance, job
from tests.planning.strategies import instances


def _loop_starts(inst: Instance, on_time_only: bool) -> list[tuple[int, int, int]]:
    out = []
    horizon = inst.grid.horizon_slots
    for i, j in enumerate(inst.jobs):
        for c, cl in enumerate(inst.clusters):
            if not j.allows(cl.name):
                continue
            for s in range(j.release_slot, horizon - j.runtime_slots + 1):
                if on_time_only and s + j.runtime_slots > j.deadline_slot:
                    continue
                out.append((i, c, s))
    return out


@settings(max_examples=60, deadline=None)
@given(instances())
def test_starts_are_exactly_the_feasible_starts(inst: Instance) -> None:
    arrays = arrays_of(inst)
    for on_time_only in (False, True):
        starts = build_starts(arrays, on_time_only=on_time_only)
        got = list(
            zip(
                starts.job.tolist(),
                starts.cluster.tolist(),
                starts.start_slot.tolist(),
                strict=True,
            )
        )
        assert got == _loop_starts(inst, on_time_only)


@settings(max_examples=60, deadline=None)
@given(instances())
def test_coefficients_match_the_domain_definitions(inst: Instance) -> None:
    arrays = arrays_of(inst)
    starts = build_starts(arrays, on_time_only=False)
    grams = carbon_g(arrays, starts)
    green = gru(arrays, starts)
    z2, z3 = caspian_z2(arrays, starts), caspian_z3(arrays, starts)
    first = inst.resources[0]
    for v, (i, c, s) in enumerate(_loop_starts(inst, False)):
        j, cl = inst.jobs[i], inst.clusters[c]
        assert grams[v] == pytest.approx(job_carbon_g(inst, j, cl, s), rel=1e-9, abs=1e-9)
        ci = inst.carbon_g_per_kwh[cl.name]
        want_gru = sum(
            j.demand.get(first, 0.0) / max(1.0, ci[t]) for t in range(s, s + j.runtime_slots)
        )
        assert green[v] == pytest.approx(want_gru, rel=1e-9, abs=1e-12)
        assert z2[v] == pytest.approx(1 / max(1, j.runtime_slots + s - j.deadline_slot))
        assert z3[v] == pytest.approx(1 / (s + j.runtime_slots))


def test_z1_leaves_out_slots_without_capacity_or_power() -> None:
    inst = instance(
        [job("a", gpu=2, runtime=2)],
        [cluster("c1", gpu=(4.0, 0.0, 2.0), watts=200.0), cluster("c2", gpu=4.0, watts=0.0)],
        {"c1": [100.0, 50.0, 0.0], "c2": [10.0, 10.0, 10.0]},
        horizon=3,
    )
    arrays = arrays_of(inst)
    starts = build_starts(arrays, on_time_only=False)
    z1 = caspian_z1(arrays, starts)
    want = {
        (0, 0): 2 * (1 / (4 * 100 * 200)),  # slot 1 has no capacity: left out
        (0, 1): 2 * (1 / (2 * 1 * 200)),  # slot 1 left out, slot 2 intensity floored at 1
        (1, 0): 0.0,  # no power factor: left out
        (1, 1): 0.0,
    }
    got = {
        (int(c), int(s)): float(v)
        for c, s, v in zip(starts.cluster, starts.start_slot, z1, strict=True)
    }
    assert got == pytest.approx(want)


@settings(max_examples=60, deadline=None)
@given(instances())
def test_matrix_rows_are_capacity_then_jobs_then_future(inst: Instance) -> None:
    arrays = arrays_of(inst)
    problem = build_problem(arrays, on_time_only=True, with_future=True)
    dense = problem.matrix.toarray()
    n_cap = problem.capacity_key.shape[0]
    _, k, h = arrays.free_units.shape
    n_x = len(problem.starts)
    for col, (i, c, s) in enumerate(_loop_starts(inst, True)):
        want = np.zeros(n_cap)
        for t in range(s, s + int(arrays.runtime_slots[i])):
            for r in range(k):
                amount = arrays.demand_units[i, r]
                if amount > 0:
                    row = int(np.searchsorted(problem.capacity_key, (c * k + r) * h + t))
                    want[row] = amount
        np.testing.assert_allclose(dense[:n_cap, col], want)
        assert dense[n_cap + i, col] == 1.0
        assert dense[n_cap:, col].sum() == 1.0
    for zc in range(len(problem.future)):
        col = n_x + zc
        assert dense[n_cap : n_cap + arrays.n_jobs, col].sum() == 0
        assert dense[n_cap + arrays.n_jobs :, col].sum() == 1.0
    assert problem.row_upper[n_cap:].tolist() == [1.0] * (dense.shape[0] - n_cap)


def test_a_restricted_program_keeps_every_row_and_only_the_columns_kept() -> None:
    inst = instance(
        [job("a", gpu=1.0, deadline=3), job("b", gpu=2.0, deadline=3)],
        [cluster(gpu=2.0)],
        {"c1": [100.0, 200.0, 300.0]},
        horizon=3,
    )
    problem = build_problem(arrays_of(inst), on_time_only=True)
    grams = np.arange(1.0, len(problem.starts) + 1.0)
    whole = on_time_program(problem, grams)
    keep = np.array([0, 2, len(problem.starts) - 1], dtype=np.int64)
    sub = whole.restricted_to(keep)
    np.testing.assert_array_equal(sub.objective, grams[keep])
    np.testing.assert_array_equal(sub.matrix.toarray(), whole.matrix.toarray()[:, keep])
    np.testing.assert_array_equal(sub.row_upper, whole.row_upper)
    assert whole.row_lower is not None
    assert sub.row_lower is not None
    np.testing.assert_array_equal(sub.row_lower, whole.row_lower)
    assert (sub.n_integer, sub.n_columns, sub.maximise) == (3, 3, False)


def test_memory_follows_the_feasible_starts() -> None:
    jobs = [job(f"j{i}", gpu=1, runtime=3, release=i % 5, deadline=20) for i in range(200)]
    inst = instance(jobs, [cluster("a"), cluster("b")], horizon=24)
    problem = build_problem(arrays_of(inst), on_time_only=True)
    want_starts = sum(2 * (17 - j.release_slot + 1) for j in jobs)
    assert len(problem.starts) == want_starts
    assert problem.matrix.nnz == want_starts * (3 + 1)  # 3 capacity slots + the job row


def test_held_capacity_is_taken_off() -> None:
    inst = instance([job("a", gpu=1)], [cluster("c1", gpu=4.0)], horizon=2)
    held = np.zeros((1, 1, 2))
    held[0, 0, 0] = 3.0
    arrays = arrays_of(inst, PlanContext(held_units=held))
    assert arrays.free_units[0, 0].tolist() == [1.0, 4.0]
    assert arrays.capacity_units[0, 0].tolist() == [4.0, 4.0]


def test_held_capacity_of_the_wrong_shape_is_an_input_error() -> None:
    inst = instance([job("a")], horizon=2)
    with pytest.raises(InputError, match="held_units has shape"):
        arrays_of(inst, PlanContext(held_units=np.zeros((2, 1, 2))))


def test_objective_length_must_match_columns() -> None:
    inst = instance([job("a")], horizon=2)
    problem = build_problem(arrays_of(inst), on_time_only=False)
    with pytest.raises(InputError, match="coefficients"):
        linear_program(problem, np.zeros(len(problem.starts) + 1))


def _partly_filled(inst: Instance, data: st.DataObject) -> tuple[InstanceArrays, CapacityLedger]:
    """The instance's arrays and a ledger filled by placing each job where drawn, if it fits."""
    arrays = arrays_of(inst)
    ledger = CapacityLedger(arrays)
    for j in range(arrays.n_jobs):
        m = data.draw(st.integers(0, arrays.n_clusters - 1))
        s = data.draw(st.integers(0, arrays.horizon_slots - 1))
        if ledger.fits(j, m, s):
            ledger.place(j, m, s)
    return arrays, ledger


@given(instances(), st.data())
@settings(max_examples=60, deadline=None)
def test_fitting_starts_everywhere_is_every_clusters_fitting_starts(
    inst: Instance, data: st.DataObject
) -> None:
    """The ledger's all-clusters fit (FLUIDOS asks it once a job) against one cluster at a
    time, on a ledger part filled by placing some jobs where they fit."""
    arrays, ledger = _partly_filled(inst, data)
    for j in range(arrays.n_jobs):
        want = np.stack([ledger.fitting_starts(j, m) for m in range(arrays.n_clusters)])
        assert np.array_equal(ledger.fitting_starts_everywhere(j), want)


@given(instances(), st.data())
@settings(max_examples=60, deadline=None)
def test_fits_now_everywhere_is_slot_zero_of_every_clusters_fit(
    inst: Instance, data: st.DataObject
) -> None:
    """The hold rule's slot-0 fit (one per held job and round) against each cluster's
    ``fits`` at slot 0 and ``fitting_starts_everywhere``'s first column, on a ledger part
    filled by placing some jobs where they fit."""
    arrays, ledger = _partly_filled(inst, data)
    for j in range(arrays.n_jobs):
        want = [ledger.fits(j, m, 0) for m in range(arrays.n_clusters)]
        got = ledger.fits_now_everywhere(j)
        assert got.tolist() == want
        assert np.array_equal(got, ledger.fitting_starts_everywhere(j)[:, 0])


def _two_resource(memory_unit: float) -> Instance:
    """Two jobs and two clusters with cpu and memory, memory counted in ``memory_unit``
    GiB (1 / 1024: MiB)."""
    gib = 1.0 / memory_unit
    clusters = [
        Cluster(
            name=ClusterName(name),
            capacity={"cpu": cpu, "memory": memory * gib},
            watts_per_unit={"cpu": 10.0, "memory": 0.375 / gib},
            embodied_g_per_unit_hour={"cpu": 1.5, "memory": 0.25 / gib},
        )
        for name, cpu, memory in (("a", 16.0, 64.0), ("b", 8.0, 256.0))
    ]
    jobs = [
        Job(
            id=JobId(f"j{i}"),
            demand={"cpu": cpu, "memory": memory * gib},
            runtime_slots=2,
            release_slot=0,
            deadline_slot=4,
        )
        for i, (cpu, memory) in enumerate(((4.0, 48.0), (2.0, 200.0)))
    ]
    return Instance(
        grid=TimeGrid(slot_minutes=60, horizon_slots=4),
        resources=("cpu", "memory"),
        clusters=tuple(clusters),
        carbon_g_per_kwh={"a": (100.0, 50.0, 80.0, 20.0), "b": (300.0, 10.0, 10.0, 90.0)},
        jobs=tuple(jobs),
    )


@pytest.mark.parametrize("memory_unit", [1.0, 1.0 / 1024, 1024.0, 3.0])
def test_balanced_units_keep_every_starts_grams_and_put_the_resources_on_one_scale(
    memory_unit: float,
) -> None:
    arrays = arrays_of(_two_resource(memory_unit))
    balanced = balanced_units(arrays)
    starts = build_starts(arrays, on_time_only=False)
    # the same grams to the bit (powers of two), the same rows of room
    assert np.array_equal(carbon_g(balanced, starts), carbon_g(arrays, starts))
    factor = balanced.demand_units[0] / arrays.demand_units[0]
    assert np.all(factor >= 1)
    assert np.all(np.log2(factor) == np.round(np.log2(factor)))
    assert np.array_equal(balanced.capacity_units, arrays.capacity_units * factor[None, :, None])
    assert np.array_equal(balanced.free_units, arrays.free_units * factor[None, :, None])
    # mean capacities within a factor of sqrt(2) of one another, whatever the memory unit
    level = balanced.capacity_units.mean(axis=(0, 2))
    assert level.max() / level.min() <= 2**0.5
    # GiB, MiB or 1,024 GiB: the same arrays up to one power of two over every resource
    gib = balanced_units(arrays_of(_two_resource(1.0))).demand_units
    ratio = balanced.demand_units / gib
    assert np.all(ratio == ratio[0, 0]) == (memory_unit != 3.0)


def test_balanced_units_leave_one_resource_and_inexact_units_alone() -> None:
    one = arrays_of(instance([job()], [cluster()]))
    assert balanced_units(one) is one
    # memory's watts per unit so small that dividing them by a power of two loses bits
    tiny = _two_resource(1.0)
    tiny = replace(
        tiny,
        clusters=tuple(
            replace(c, watts_per_unit={"cpu": 5e-324, "memory": 0.375}) for c in tiny.clusters
        ),
    )
    arrays = arrays_of(tiny)
    assert balanced_units(arrays) is arrays
