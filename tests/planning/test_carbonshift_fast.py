"""The fast paths of ``carbonshift``: planned range-minimum queries and, above 3,000 jobs,
the vectorised check of which jobs the improvement pass may move (docs/design/0002)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from carbonshift.domain import Instance, check_feasibility, score_plan
from carbonshift.planning import run_policy
from carbonshift.planning.aggregate import class_columns
from carbonshift.planning.lagrangian import (
    class_range_plan,
    classes_of,
    dual_ascent,
    evaluate,
    range_min,
    range_plan,
    shape_costs,
    unique_rows,
    unit_grams,
)
from carbonshift.planning.policies import carbonshift as cs
from carbonshift.planning.problem import arrays_of
from tests.builders import cluster, instance, job
from tests.planning.strategies import instances

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(1, 20),
    st.integers(0, 2**32 - 1),
)
def test_range_min_is_the_first_least_value_of_each_window(
    shapes: int, clusters: int, slots: int, seed: int
) -> None:
    """With and without a plan, each query's value and slot are those of the first least
    entry of its window (small integers, so ties are common)."""
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 4, (shapes, clusters, slots)).astype(float)
    n = 12
    shape = rng.integers(0, shapes, n)
    lo = rng.integers(0, slots, n)
    hi = np.minimum(slots - 1, lo + rng.integers(0, slots, n))
    plan = range_plan(shape, lo, hi, shapes, clusters, slots)
    for got_v, got_s in (range_min(table, shape, lo, hi), range_min(table, shape, lo, hi, plan)):
        for q in range(n):
            window = table[shape[q], :, lo[q] : hi[q] + 1]
            want_v = window.min(axis=1)
            want_s = lo[q] + window.argmin(axis=1)
            assert np.array_equal(got_v[q], want_v)
            assert np.array_equal(got_s[q], want_s)


@_SETTINGS
@given(st.integers(0, 12), st.integers(1, 5), st.booleans(), st.integers(0, 2**32 - 1))
def test_unique_rows_is_numpys_unique_over_rows(
    rows: int, cols: int, wide: bool, seed: int
) -> None:
    """The rows in lexicographic order and each row's index among them, as
    ``np.unique(axis=0)``; ``wide`` values too large for one 62-bit code take that path."""
    rng = np.random.default_rng(seed)
    top = 2**40 if wide else 3
    key = rng.integers(0, top, (rows, cols)).astype(np.int64)
    want_rows, want_inverse = np.unique(key, axis=0, return_inverse=True)
    got_rows, got_inverse, got_first = unique_rows(key)
    assert np.array_equal(got_rows, want_rows)
    assert np.array_equal(got_inverse, want_inverse.reshape(-1))
    assert np.array_equal(key[got_first], got_rows)


@_SETTINGS
@given(
    instances(max_jobs=8, max_horizon=12, max_clusters=3, future=False),
    st.integers(1, 3),
    st.integers(0, 2**32 - 1),
)
def test_shape_costs_are_the_prefix_differences_of_the_mixed_prices(
    inst: Instance, resources: int, seed: int
) -> None:
    """Each shape's cost at each (cluster, start) is, float for float, the difference of
    the mix-weighted price prefixes (``tensordot``) at its run's end and start, and
    ``inf`` where the run passes the horizon: one resource (the fast path) and several."""
    classes = classes_of(arrays_of(inst))
    rng = np.random.default_rng(seed)
    _, m, h = unit_grams(arrays_of(inst)).shape
    mix = rng.random((classes.shape_runtime.shape[0], resources))
    mix /= mix.sum(axis=1, keepdims=True)  # one resource: all ones
    classes = replace(classes, shape_mix=mix)
    price = rng.random((resources, m, h)) * 100
    got = shape_costs(classes, price)
    prefix = np.zeros((resources, m, h + 1))
    np.cumsum(price, axis=2, out=prefix[:, :, 1:])
    mixed = np.tensordot(mix, prefix, axes=(1, 0))
    for g, runtime in enumerate(classes.shape_runtime.tolist()):
        for s in range(h):
            if s + runtime > h:
                assert np.all(got[g, :, s] == np.inf)
            else:
                want = mixed[g, :, s + runtime] - mixed[g, :, s]
                assert np.array_equal(got[g, :, s], want)


@_SETTINGS
@given(
    instances(max_jobs=8, max_horizon=12, max_clusters=3, future=False),
    st.integers(0, 2**32 - 1),
)
def test_evaluate_is_each_class_at_its_first_least_priced_start(inst: Instance, seed: int) -> None:
    """``L`` and its subgradient are those of every class at its least priced on-time start
    (ties: the lower cluster, then the earlier slot), window by window; integral prices
    so that ties are common."""
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    base = unit_grams(arrays)
    free = arrays.free_units
    m, k, h = free.shape
    prices = np.random.default_rng(seed).integers(0, 3, free.shape).astype(float)
    got = evaluate(classes, base, prices, free)
    table = shape_costs(classes, base + prices.transpose(1, 0, 2))
    want_value = -float(np.sum(prices * free))
    want_usage = np.zeros((m, k, h))
    for c in range(classes.class_shape.shape[0]):
        g, lo, hi = classes.class_shape[c], classes.class_lo[c], classes.class_hi[c]
        options = [
            (table[g, cl, s], cl, s)
            for cl in range(m)
            if classes.class_allowed[c, cl]
            for s in range(lo, hi + 1)
        ]
        value, where, start = min(options)
        want_value += classes.class_weight[c] * value
        end = start + classes.shape_runtime[g]
        want_usage[where, :, start:end] += classes.class_demand[c][:, None]
    assert got.value_g == pytest.approx(want_value, rel=1e-12, abs=1e-9)
    assert np.allclose(got.subgradient, want_usage - free, rtol=0, atol=1e-9)
    # the plan the ascent passes (the pairs outside each class's clusters read +inf): the
    # same floats, to the bit
    masked = class_range_plan(classes, m, h, patterns=False)
    got_masked = evaluate(classes, base, prices, free, masked)
    assert got_masked.value_g == got.value_g
    assert np.array_equal(got_masked.subgradient, got.subgradient)
    # one query per class on the table of each pattern of allowed clusters' least entries
    # (the ascent's plan where patterns are few): the same floats, ties alike
    by_pattern = class_range_plan(classes, m, h, patterns=True)
    got_pattern = evaluate(classes, base, prices, free, by_pattern)
    assert got_pattern.value_g == got.value_g
    assert np.array_equal(got_pattern.subgradient, got.subgradient)


@_SETTINGS
@given(st.integers(1, 6), st.integers(1, 30), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_pattern_plan_answers_as_the_per_cluster_queries(
    clusters: int, slots: int, n_jobs: int, seed: int
) -> None:
    """On random classes with random allowed clusters (a few patterns, so several classes
    share one) and integral prices (ties common, also across clusters and slots), the
    pattern plan's ``L`` and subgradient are those of the per-cluster plan, to the bit."""
    rng = np.random.default_rng(seed)
    patterns = rng.random((3, clusters)) < 0.5
    patterns[:, rng.integers(0, clusters)] = True
    jobs = []
    for i in range(n_jobs):
        release = int(rng.integers(0, slots))
        runtime = int(rng.integers(1, slots - release + 1))
        allowed = patterns[rng.integers(0, 3)]
        jobs.append(
            job(
                f"j{i}",
                gpu=float(rng.integers(1, 4)),
                runtime=runtime,
                release=release,
                deadline=int(rng.integers(release + runtime, slots + 1)),
                allowed=[f"c{c}" for c in np.flatnonzero(allowed)],
            )
        )
    inst = instance(
        jobs,
        [cluster(f"c{c}", gpu=10.0) for c in range(clusters)],
        {f"c{c}": [float(v) for v in rng.integers(0, 3, slots)] for c in range(clusters)},
        horizon=slots,
    )
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    base = unit_grams(arrays)
    free = arrays.free_units
    m, _, h = free.shape
    prices = rng.integers(0, 2, free.shape).astype(float)
    want = evaluate(classes, base, prices, free, class_range_plan(classes, m, h, patterns=False))
    got = evaluate(classes, base, prices, free, class_range_plan(classes, m, h, patterns=True))
    assert got.value_g == want.value_g
    assert np.array_equal(got.subgradient, want.subgradient)


@_SETTINGS
@given(instances(max_jobs=12, max_horizon=8, max_clusters=3, future=False))
def test_groups_are_numpys_unique_rows_of_shape_and_demand(inst: Instance) -> None:
    """``_Groups.of``: the groups, their order and their demand of ``np.unique`` over the
    rows (shape, demand per resource), which it computes through integer codes."""
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    key = np.column_stack([classes.shape.astype(float), arrays.demand_units])
    want_rows, want_inverse = np.unique(key, axis=0, return_inverse=True)
    got = cs._Groups.of(arrays, classes)
    assert np.array_equal(got.of_job, want_inverse.reshape(-1))
    assert np.array_equal(got.shape, want_rows[:, 0].astype(np.int64))
    assert np.array_equal(got.demand, want_rows[:, 1:])
    assert np.array_equal(got.runtime, classes.shape_runtime[got.shape])


@_SETTINGS
@given(instances(max_jobs=6, max_horizon=6, max_clusters=2, future=False))
def test_movable_flags_every_job_that_a_reinsertion_would_move(inst: Instance) -> None:
    """After a greedy plan, every on-time job that taking out and putting back at its
    cheapest on-time start with room would move to a strictly cheaper start is one that
    ``_movable`` flags (it may flag more, never fewer)."""
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    state = cs._place_all(arrays, classes, table, table)
    placed = np.flatnonzero(state.cluster >= 0)
    on_time = placed[
        state.start[placed] + arrays.runtime_slots[placed] <= arrays.deadline_slot[placed]
    ]
    cost = cs._unit_cost(arrays, classes, state, table)
    groups = cs._Groups.of(arrays, classes)
    flagged = cs._movable(arrays, classes, groups, state, table, on_time, cost)
    placer = cs._Placer(arrays, classes, state)
    for j, flag in zip(on_time.tolist(), flagged.tolist(), strict=True):
        before = (int(state.cluster[j]), int(state.start[j]))
        placer.remove(j)
        where = placer.cheapest(j, table)
        placer.place(j, before)
        assert where is not None  # its own start is free again
        moved_cost = table[classes.shape[j], where[0], where[1]]
        want_flag = moved_cost < cost[j] * (1 - 1e-12) - 1e-12
        assert flag or not want_flag, (j, before, where)


@_SETTINGS
@given(instances(max_jobs=5, max_horizon=6, max_clusters=2, future=False))
def test_the_large_instance_path_gives_feasible_plans_and_valid_bounds(
    inst: Instance,
) -> None:
    """With the large-instance path forced on small instances (one placement round, the
    filtered improvement pass): feasible, and the bound at most the plan's grams."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cs, "_SMALL_JOBS", 0)
        result = run_policy("carbonshift", inst, {"exact_max_starts": 0})
    assert check_feasibility(inst, result.plan) == []
    grams = score_plan(inst, result.plan).carbon_g
    assert result.bound is not None
    if result.bound.lower_bound_g is not None:
        assert result.bound.lower_bound_g <= grams + 1e-9 * max(1.0, grams)


@_SETTINGS
@given(
    instances(max_jobs=6, max_horizon=6, max_clusters=2, future=False),
    st.integers(1, 60),
    st.integers(1, 60),
)
def test_an_ascent_resumed_is_the_same_ascent_as_one_run(
    inst: Instance, first: int, then: int
) -> None:
    """``resume`` goes on with the ascent: two legs of ``first`` and ``then`` steps give the
    bound and prices of one run of ``first + then`` steps (the same upper bound)."""
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    base = unit_grams(arrays)
    upper_g = 2.0 * float(np.sum(base)) * float(np.sum(arrays.demand_units)) + 1.0
    whole = dual_ascent(classes, base, arrays.free_units, upper_g=upper_g, iterations=first + then)
    leg = dual_ascent(classes, base, arrays.free_units, upper_g=upper_g, iterations=first)
    if leg.iterations < first:  # it stopped early (converged): nothing to go on with
        assert whole.iterations == leg.iterations
        assert whole.bound_g == leg.bound_g
        return
    rest = dual_ascent(
        classes, base, arrays.free_units, upper_g=upper_g, iterations=then, resume=leg.resume
    )
    assert rest.bound_g == pytest.approx(whole.bound_g, rel=1e-12, abs=1e-12)
    assert np.allclose(rest.prices, whole.prices, rtol=1e-12, atol=1e-12)


#: found by hypothesis: the random greedy puts j0 (deadline 1) late at slot 1 behind j1; the
#: search ejects j0 from j1's cleaner cell, places j1 there, and puts j0 back on time
_LATE_JOB_PUT_BACK_ON_TIME = instance(
    [job("j0", gpu=1.0, deadline=1), job("j1", gpu=2.0, deadline=2)],
    [cluster("c0", gpu=2.0, watts=1.0), cluster("c1", gpu=0.0, watts=0.0)],
    {"c0": [1.0, 0.0], "c1": [0.0, 0.0]},
    horizon=2,
    slot_minutes=30,
)


@_SETTINGS
@given(
    instances(max_jobs=8, max_horizon=8, max_clusters=2, future=False),
    st.integers(0, 3),
)
@example(_LATE_JOB_PUT_BACK_ON_TIME, 1)
def test_ruin_and_recreate_never_costs_grams_nor_breaks_a_plan(inst: Instance, seed: int) -> None:
    """From a greedy plan on random costs (far from the least grams), the search keeps
    capacity, every job placed, every on-time job on time and each late one where it was
    or on time; its grams never rise; the same seed gives the same plan."""
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    own = cs._own_best_fast(arrays, classes, table)
    noise = np.random.default_rng(seed).random(table.shape)
    first = cs._place_all(arrays, classes, np.where(np.isfinite(table), noise, np.inf), table)
    want_grams = cs._grams(arrays, classes, first, table)
    want_placed = first.cluster >= 0
    late = want_placed & (first.start + arrays.runtime_slots > arrays.deadline_slot)
    plans = []
    for _ in range(2):
        state = cs._State(first.free.copy(), first.cluster.copy(), first.start.copy())
        cs._ruin_recreate(arrays, classes, state, table, own, budget=60, seed=seed)
        plans.append(state)
    state = plans[0]
    assert np.all(state.free >= -1e-9)
    used = np.zeros_like(state.free)
    for j in np.flatnonzero(state.cluster >= 0):
        m, s, r = state.cluster[j], state.start[j], arrays.runtime_slots[j]
        used[m, :, s : s + r] += arrays.demand_units[j][:, None]
        assert arrays.allowed[j, m]
        assert arrays.release_slot[j] <= s <= arrays.horizon_slots - r
    assert np.allclose(arrays.free_units - used, state.free)
    assert np.array_equal(state.cluster >= 0, want_placed)
    on_time = state.start + arrays.runtime_slots <= arrays.deadline_slot
    assert np.all(on_time[want_placed & ~late])
    # a late job that could be on time may be in the way of a move and put back on time
    # (hypothesis found one: two jobs on one cluster, swapped); otherwise it stays put
    stayed = (state.cluster == first.cluster) & (state.start == first.start)
    assert np.all((stayed | on_time)[late])
    assert cs._grams(arrays, classes, state, table) <= want_grams * (1 + 1e-12) + 1e-9
    assert np.array_equal(plans[1].cluster, state.cluster)
    assert np.array_equal(plans[1].start, state.start)


def test_ruin_and_recreate_ejects_a_flexible_job_from_the_clean_cell_a_tight_one_needs() -> None:
    """One gpu on a clean and on a dirty cluster, two slots. The greedy puts the flexible
    job at the clean first slot, so the job that must run in slot 0 goes to the dirty
    cluster, and no single re-insertion helps; one ejection puts the tight job on the clean
    slot 0 and the flexible one on the clean slot 1."""
    inst = instance(
        [job("flexible", deadline=2), job("tight", deadline=1)],
        [cluster("clean", gpu=1.0), cluster("dirty", gpu=1.0)],
        {"clean": [10.0, 20.0], "dirty": [100.0, 100.0]},
        horizon=2,
    )
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    own = cs._own_best_fast(arrays, classes, table)
    state = cs._place_all(arrays, classes, table, table)
    cs._improve(arrays, classes, state, table, own, 3)
    assert (state.cluster.tolist(), state.start.tolist()) == ([0, 1], [0, 0])  # greedy
    kept = cs._ruin_recreate(arrays, classes, state, table, own, budget=100, seed=0)
    want_cluster, want_start = [0, 0], [1, 0]
    assert (state.cluster.tolist(), state.start.tolist()) == (want_cluster, want_start)
    assert kept == 1


def _generic_placer(patch: pytest.MonkeyPatch) -> None:
    """Every ``_Placer`` on the code path of several resources (``room()`` per job, no
    ``_Room``): the reference for the one-resource fast paths."""
    init = cs._Placer.__init__

    def generic(self: cs._Placer, *args: object) -> None:
        init(self, *args)  # type: ignore[arg-type]
        self.single = False
        self.nz = [np.flatnonzero(row > 0) for row in self.a.demand_units]
        self.need = [self.a.demand_units[j, nz] for j, nz in enumerate(self.nz)]

    patch.setattr(cs._Placer, "__init__", generic)


@st.composite
def _crowded(draw: st.DrawFn) -> Instance:
    """One resource, up to 24 jobs on 1-3 small clusters: starts taken by the jobs before
    (a block's choices made stale) are common."""
    horizon = draw(st.integers(1, 6))
    names = [f"c{c}" for c in range(draw(st.integers(1, 3)))]
    jobs = [
        job(
            f"j{i}",
            gpu=float(draw(st.integers(1, 3))),
            runtime=draw(st.integers(1, horizon)),
            release=draw(st.integers(0, horizon - 1)),
            deadline=draw(st.integers(1, horizon + 1)),
            allowed=draw(st.one_of(st.none(), st.lists(st.sampled_from(names), min_size=1))),
            critical=draw(st.integers(0, 9)) == 0,
        )
        for i in range(draw(st.integers(0, 24)))
    ]
    clusters = [
        cluster(name, gpu=float(draw(st.integers(1, 4))), watts=float(draw(st.integers(0, 3))))
        for name in names
    ]
    carbon: dict[str, Sequence[float]] = {
        name: [
            float(v) for v in draw(st.lists(st.integers(0, 3), min_size=horizon, max_size=horizon))
        ]
        for name in names
    }
    return instance(jobs, clusters, carbon, horizon=horizon)


@_SETTINGS
@given(
    st.one_of(_crowded(), instances(max_jobs=14, max_horizon=8, max_clusters=3, future=False)),
    st.integers(1, 5),
    st.integers(0, 2**32 - 1),
)
def test_the_block_placements_are_the_job_by_job_placements(
    inst: Instance, block: int, seed: int
) -> None:
    """One resource: the greedy placement that chooses the starts of ``block`` jobs at once
    (``_Placer.place_cheapest``) and the LP rounding on ``_Room`` give the plans, free room
    included, of the job-by-job code path, for a guide with many ties and a random share."""
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    rng = np.random.default_rng(seed)
    guide = np.where(np.isfinite(table), rng.integers(0, 3, table.shape).astype(float), np.inf)
    columns = class_columns(classes)
    share = rng.integers(0, 3, len(columns)).astype(float)
    for c in range(classes.class_shape.shape[0]):  # each class's share sums to 1
        mine = columns.klass == c
        share[mine] = share[mine] / share[mine].sum() if share[mine].sum() else 1.0 / mine.sum()

    def plans() -> list[cs._State]:
        return [
            cs._place_all(arrays, classes, guide, table),
            cs._place_all(arrays, classes, guide, table, tight_first=True),
            cs._place_from_lp(arrays, classes, columns, share, table, guide),
        ]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cs, "_BLOCK_JOBS", block)
        got = plans()
        _generic_placer(patch)
        want = plans()
    for got_state, want_state in zip(got, want, strict=True):
        assert np.array_equal(got_state.cluster, want_state.cluster)
        assert np.array_equal(got_state.start, want_state.start)
        assert np.array_equal(got_state.free, want_state.free)
