"""Lagrangian prices on (cluster, resource, slot) and the certified lower bound they give.

Relax the capacity rows of the time-indexed LP (every on-time start ``x[j, m, s]`` in
[0, 1], one start per job, capacity per cluster, resource and slot) with prices
``lambda >= 0``. For ANY such prices

    L(lambda) = sum_j min over on-time (m, s) of [c_jms + sum_k d_jk sum_{t=s}^{s+r_j-1}
                lambda[m, k, t]] - sum lambda * free_capacity

is at most the LP optimum, hence at most the grams of every feasible plan that puts every
job on time (weak duality; Fisher, "The Lagrangian relaxation method for solving integer
programming problems", Management Science 1981). The relaxed problem splits per job and has
the integrality property, so ``max L`` equals the LP optimum; :func:`dual_ascent`
approaches it with projected subgradient steps of Polyak's rule (Held, Wolfe and Crowder,
"Validation of subgradient optimization", Math. Programming 1974). See
docs/design/0002-carbonshift-planner.md.

Speed: a job's option cost is ``w_j * (dir_j . U[m, r_j, s])`` with ``w_j`` the job's summed
demand and ``dir_j = d_j / w_j``. Jobs of one *shape* (runtime, demand mix) share the table
``U``; jobs of one *class* (shape, on-time window, allowed clusters) share the minimum. The
minimum over a window of starts is a range-minimum query on a sparse table, so one
evaluation costs O(shapes x clusters x slots x log slots + classes x clusters), not
O(jobs x clusters x slots).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from carbonshift.planning.problem import InstanceArrays

__all__ = [
    "DUAL_TARGET_GAP",
    "AscentState",
    "DualResult",
    "JobClasses",
    "PatternPlan",
    "RangePlan",
    "classes_of",
    "dual_ascent",
    "evaluate",
    "pattern_plan",
    "range_min",
    "range_plan",
    "shape_costs",
    "shape_costs_error_g",
    "unique_rows",
    "unit_grams",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: :func:`dual_ascent` stops once its bound is within this share of ``upper_g``
DUAL_TARGET_GAP = 1e-4


def unit_grams(arrays: InstanceArrays, *, embodied: bool = True) -> FloatArray:
    """Grams of one unit of each resource held one slot: ``(resources, clusters, slots)``.

    ``watts / 1000 * pue * slot_h * ci`` (operational) plus ``embodied_g_per_unit_hour *
    slot_h`` (docs/formats.md (plan)); without ``embodied`` the second term is left out.
    """
    h = arrays.slot_hours
    op = (arrays.watts_per_unit * arrays.pue[:, None] / 1000.0 * h).T[:, :, None] * (
        arrays.ci_g_per_kwh[None, :, :]
    )
    if embodied:
        op = op + (arrays.embodied_g_per_unit_hour.T * h)[:, :, None]
    result: FloatArray = np.ascontiguousarray(op)
    return result


@dataclass(frozen=True, slots=True, eq=False)
class JobClasses:
    """Jobs grouped for pricing. Per job: ``weight`` (summed demand), ``shape``, ``klass``
    (-1: no start in the horizon on an allowed cluster), ``lo``/``hi`` the window priced
    (the on-time starts, or every start when the job has no on-time one) and ``on_time``
    (whether that window is on time). Per shape: runtime and demand mix. Per class: shape,
    window, allowed clusters, summed weight and summed demand per resource."""

    weight: FloatArray  # (n,)
    shape: IntArray  # (n,)
    klass: IntArray  # (n,)
    lo: IntArray  # (n,)
    hi: IntArray  # (n,)
    on_time: BoolArray  # (n,)
    shape_runtime: IntArray  # (G,)
    shape_mix: FloatArray  # (G, k)
    class_shape: IntArray  # (C,)
    class_lo: IntArray  # (C,)
    class_hi: IntArray  # (C,)
    class_allowed: BoolArray  # (C, m)
    class_weight: FloatArray  # (C,)
    class_demand: FloatArray  # (C, k)

    @property
    def every_job_can_be_on_time(self) -> bool:
        """Whether every job has an on-time start on some allowed cluster (ignoring room)."""
        return bool(np.all(self.on_time))


def classes_of(arrays: InstanceArrays, own_shape: BoolArray | None = None) -> JobClasses:
    """Group the jobs of ``arrays`` into shapes and classes (see the module docstring).
    ``own_shape``: jobs that get a shape (hence a class and a table row) of their own, for
    costs that are theirs alone (a re-plan's move penalty, planning/incumbent.py)."""
    n, h = arrays.n_jobs, arrays.horizon_slots
    demand = arrays.demand_units
    weight = demand.sum(axis=1)
    mix = demand / np.where(weight > 0, weight, 1.0)[:, None]
    runtime = arrays.runtime_slots
    lo = arrays.release_slot.copy()
    last = h - runtime
    on_time_hi = np.minimum(last, arrays.latest_on_time_start)
    any_allowed = arrays.allowed.any(axis=1)
    on_time = (on_time_hi >= lo) & any_allowed
    hi = np.where(on_time, on_time_hi, last)
    usable = (hi >= lo) & any_allowed
    shape_key = np.column_stack([runtime.astype(float), mix])
    if own_shape is not None and np.any(own_shape):
        tag = np.where(own_shape, np.arange(1, n + 1), 0).astype(float)
        shape_key = np.column_stack([shape_key, tag])
    shape_rows, shape = np.unique(shape_key, axis=0, return_inverse=True)
    shape = shape.reshape(-1).astype(np.int64)
    klass = np.full(n, -1, dtype=np.int64)
    idx = np.flatnonzero(usable)
    bits = arrays.allowed[idx].astype(np.int64)
    key = np.column_stack([shape[idx], lo[idx], hi[idx], bits])
    rows, inverse, _ = unique_rows(key)
    klass[idx] = inverse
    c = rows.shape[0]
    class_weight = np.bincount(inverse, weights=weight[idx], minlength=c).astype(float)
    class_demand = np.zeros((c, demand.shape[1]))
    for r in range(demand.shape[1]):
        class_demand[:, r] = np.bincount(inverse, weights=demand[idx, r], minlength=c)
    return JobClasses(
        weight=weight,
        shape=shape,
        klass=klass,
        lo=lo,
        hi=hi,
        on_time=on_time,
        shape_runtime=shape_rows[:, 0].astype(np.int64),
        shape_mix=np.ascontiguousarray(shape_rows[:, 1 : 1 + demand.shape[1]]),
        class_shape=rows[:, 0].astype(np.int64),
        class_lo=rows[:, 1].astype(np.int64),
        class_hi=rows[:, 2].astype(np.int64),
        class_allowed=rows[:, 3:].astype(bool),
        class_weight=class_weight,
        class_demand=class_demand,
    )


def unique_rows(key: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """``np.unique(key, axis=0, return_index=True, return_inverse=True)`` of non-negative
    integer rows, as (rows, inverse, first: a row of ``key`` for each of ``rows``): each row
    read as one number (mixed radix, so the order is the rows' lexicographic order) where it
    fits in 62 bits, a 1-D ``unique`` several times faster than ``axis=0``."""
    radix = [int(v) + 1 for v in key.max(axis=0, initial=0)] if key.shape[0] else []
    if key.shape[0] == 0 or int(key.min()) < 0 or math.prod(radix) >= 2**62:
        rows, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        return rows, inverse.reshape(-1).astype(np.int64), first.astype(np.int64)
    code = np.zeros(key.shape[0], dtype=np.int64)
    for col, base in enumerate(radix):
        code = code * base + key[:, col]
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return key[first], inverse.reshape(-1).astype(np.int64), first.astype(np.int64)


def shape_costs(classes: JobClasses, price: FloatArray) -> FloatArray:
    """Cost per unit of weight of each shape started at each (cluster, slot): ``(G, m, h)``,
    ``+inf`` where the run would pass the horizon. ``price`` is ``(k, m, h)`` per unit-slot."""
    k, m, h = price.shape
    prefix = np.zeros((k, m, h + 1))
    np.cumsum(price, axis=2, out=prefix[:, :, 1:])
    if k == 1:
        # one resource: one product per entry, the floats of tensordot's, without its
        # reshapes (called at every step of a dual ascent: 29 against 61 us a call on
        # ten-zone 10,000)
        mixed = classes.shape_mix[:, :1, None] * prefix[0]  # (G, m, h + 1)
    else:
        mixed = np.tensordot(classes.shape_mix, prefix, axes=(1, 0))
    g = mixed.shape[0]
    end = np.arange(h)[None, :] + classes.shape_runtime[:, None]  # (G, h)
    inside = end <= h
    # the prefix at each run's end, by flat index into mixed
    row = (np.arange(g * m, dtype=np.int64) * (h + 1)).reshape(g, m, 1)
    stop = np.take(mixed, row + np.minimum(end, h)[:, None, :])
    cost: FloatArray = np.where(inside[:, None, :], stop - mixed[:, :, :h], np.inf)
    return cost


def shape_costs_error_g(classes: JobClasses, price: FloatArray) -> float:
    """A bound on how far the grams of any one start of every job together, read from
    :func:`shape_costs` of ``price``, lie from their exact sums.

    A cost there is the difference of two prefix sums; each sum's rounding is at most
    about ``h`` ulps of the row's total, which the difference keeps while the cost may be
    far smaller (a 1e5 g/kWh spike followed by 1e-9 g/kWh slots: the cost of a start after
    the spike was off by 2 % and the LP bound rose above the exact LP). Per job: its weight
    times ``4 (h + k + 2) eps`` times the largest row total of its shape; summed over jobs.
    A bound computed on those costs, lowered by this, bounds the exact costs' optimum."""
    k, _m, h = price.shape
    totals = classes.shape_mix @ price.sum(axis=2)  # (G, m): the prefix sums' ends
    worst = totals.max(axis=1, initial=0.0)[classes.shape]
    eps = float(np.finfo(np.float64).eps)
    return float(classes.weight @ worst) * 4.0 * float(h + k + 2) * eps


@dataclass(frozen=True, slots=True, eq=False)
class RangePlan:
    """Where :func:`range_min` reads each query's two overlapping blocks: flat indices into
    the sparse table ``(levels, G, m, h)``, ``(queries, m)`` each. Depends only on the
    queries and the table's shape, so one plan serves every evaluation of a dual ascent."""

    first: IntArray
    second: IntArray
    levels: int
    # ``first`` and ``second`` with the pairs outside ``allowed`` (:func:`range_plan`)
    # pointing at the table's trailing ``+inf``: the allowed minima in two takes, without
    # a mask at every evaluation (None: no ``allowed`` given)
    first_allowed: IntArray | None = None
    second_allowed: IntArray | None = None


def range_plan(
    shape: IntArray,
    lo: IntArray,
    hi: IntArray,
    n_shapes: int,
    m: int,
    h: int,
    allowed: BoolArray | None = None,
) -> RangePlan:
    """The :class:`RangePlan` of the queries ``(shape, lo .. hi)`` on a ``(n_shapes, m, h)``
    table; with ``allowed`` (``(queries, m)``) also its indices that read ``+inf`` outside
    it."""
    length = np.maximum(hi - lo + 1, 1)
    level = np.floor(np.log2(length)).astype(np.int64)
    levels = int(np.floor(np.log2(max(h, 1)))) + 1
    span = np.left_shift(1, level)
    cluster = np.arange(m, dtype=np.int64)[None, :]
    block = ((level * n_shapes + shape)[:, None] * m + cluster) * h
    first, second = block + lo[:, None], block + (hi - span + 1)[:, None]
    if allowed is None:
        return RangePlan(first=first, second=second, levels=levels)
    outside = levels * n_shapes * m * h  # the trailing +inf of _sparse_table
    return RangePlan(
        first=first,
        second=second,
        levels=levels,
        first_allowed=np.where(allowed, first, outside),
        second_allowed=np.where(allowed, second, outside),
    )


@dataclass(frozen=True, slots=True, eq=False)
class PatternPlan:
    """Each class's window as ONE range query (not one per cluster) on the table of the
    least entry over each pattern of allowed clusters: ``allowed`` ``(P, m)`` the distinct
    patterns, rows ``pattern * G + shape`` of ``h`` slots; ``first`` and ``second`` ``(C,)``
    flat indices of each class's two blocks into the ``(levels, P * G, h)`` sparse table of
    :func:`_pattern_sparse_table`. Depends only on the classes and the table's shape."""

    allowed: BoolArray
    first: IntArray
    second: IntArray
    levels: int
    # -0.0 on each pattern's clusters, +inf elsewhere ``(P, 1, m)``: added, the entries
    # outside the pattern read +inf and the others keep their bits (x + -0.0 is x)
    outside: FloatArray
    # the level-0 keys' slots, ``(P * G * h,)``
    slots: IntArray


def _patterns(classes: JobClasses) -> tuple[BoolArray, IntArray]:
    """The distinct rows of ``classes.class_allowed`` and each class's among them."""
    rows, pattern, _ = unique_rows(classes.class_allowed.astype(np.int64))
    return rows.astype(bool), pattern


def pattern_plan(
    classes: JobClasses, m: int, h: int, patterns: tuple[BoolArray, IntArray] | None = None
) -> PatternPlan:
    """The :class:`PatternPlan` of each class's on-time window and allowed clusters on a
    ``(shapes, m, h)`` table (``patterns``: :func:`_patterns` of ``classes``, when known)."""
    allowed, pattern = _patterns(classes) if patterns is None else patterns
    n_shapes = classes.shape_runtime.shape[0]
    row = pattern * n_shapes + classes.class_shape
    lo, hi = classes.class_lo, classes.class_hi
    level = np.floor(np.log2(np.maximum(hi - lo + 1, 1))).astype(np.int64)
    # only the levels some query reads (ten-zone: windows of at most 25 slots, 5 of 6)
    levels = int(level.max(initial=0)) + 1
    size = allowed.shape[0] * n_shapes * h
    block = level * size + row * h
    return PatternPlan(
        allowed=allowed,
        first=block + lo,
        second=block + hi - np.left_shift(1, level) + 1,
        levels=levels,
        outside=np.where(allowed, -0.0, np.inf)[:, None, :],
        slots=np.tile(np.arange(h, dtype=np.int64), allowed.shape[0] * n_shapes),
    )


#: :func:`class_range_plan` answers by patterns of allowed clusters (:class:`PatternPlan`)
#: when their rows (patterns x shapes) are at most this share of the classes: one query
#: per class on a table of ``patterns x shapes`` rows instead of one per (class, cluster)
#: (ten-zone 10,000: 4 x 8 rows, 3,942 classes)
PATTERN_ROWS_SHARE = 0.25


def class_range_plan(
    classes: JobClasses, m: int, h: int, *, patterns: bool | None = None
) -> RangePlan | PatternPlan:
    """What the ascent passes to :func:`evaluate` at every step for each class's on-time
    window and allowed clusters: the :class:`RangePlan` (its pairs outside the allowed
    clusters reading ``+inf``, :attr:`RangePlan.first_allowed`), or, where there are few
    patterns of allowed clusters (:data:`PATTERN_ROWS_SHARE`; ``patterns`` forces either),
    the :class:`PatternPlan`. Both give :func:`evaluate` the same answer, float for float."""
    found = None
    if patterns is None:
        found = _patterns(classes)
        rows = found[0].shape[0] * classes.shape_runtime.shape[0]
        n_classes = classes.class_shape.shape[0]
        patterns = n_classes > 0 and rows <= PATTERN_ROWS_SHARE * n_classes
    if patterns:
        return pattern_plan(classes, m, h, found)
    return range_plan(
        classes.class_shape,
        classes.class_lo,
        classes.class_hi,
        classes.shape_runtime.shape[0],
        m,
        h,
        classes.class_allowed,
    )


def _sparse_table(table: FloatArray, levels: int) -> tuple[FloatArray, IntArray]:
    """The sparse table of ``table`` ``(G, m, h)`` over its last axis, flattened: level
    ``l`` holds the minimum of the ``2**l`` slots from each slot and the first slot where
    it is reached (ties to the earlier block); one trailing entry past them, ``+inf`` at
    slot 0 (where :attr:`RangePlan.first_allowed` points outside the allowed pairs)."""
    g, m, h = table.shape
    size = levels * g * m * h
    flat_values = np.empty(size + 1)
    flat_slots = np.empty(size + 1, dtype=np.int64)
    flat_values[size], flat_slots[size] = np.inf, 0
    values = flat_values[:size].reshape(levels, g, m, h)
    slots = flat_slots[:size].reshape(levels, g, m, h)
    values[0] = table
    slots[0] = np.arange(h)
    width = 1
    for level in range(1, levels):
        n = h - 2 * width + 1  # blocks that fit; past them inf and slot 0
        values[level, :, :, n:] = np.inf
        slots[level, :, :, n:] = 0
        a_v, b_v = values[level - 1, :, :, :n], values[level - 1, :, :, width : width + n]
        a_i, b_i = slots[level - 1, :, :, :n], slots[level - 1, :, :, width : width + n]
        take_b = b_v < a_v
        # the earlier block, the later one where it is strictly less (copies in place: 81
        # against 105 us on ten-zone 10,000's 8 shapes, called at every ascent step)
        np.copyto(values[level, :, :, :n], a_v)
        np.copyto(values[level, :, :, :n], b_v, where=take_b)
        np.copyto(slots[level, :, :, :n], a_i)
        np.copyto(slots[level, :, :, :n], b_i, where=take_b)
        width *= 2
    return flat_values, flat_slots


def _pattern_sparse_table(table: FloatArray, plan: PatternPlan) -> tuple[FloatArray, IntArray]:
    """The sparse table, flattened ``(levels, P * G, h)``, of each (pattern, shape, slot)'s
    least entry of ``table`` ``(G, m, h)`` over the pattern's clusters, with its key
    ``cluster * h + slot``; a block's entry is its least (value, key) pair, so that a
    query's answer is the least value, then the lowest cluster, then the earliest slot
    (the ties of :func:`evaluate`'s per-cluster queries). Entries whose block passes the
    end of its row are never read by a query (a block inside the row reads only entries
    inside it); they hold values of the next row, or +inf and key 0 at the table's end."""
    g, m, h = table.shape
    size = plan.allowed.shape[0] * g * h
    # per (pattern, shape, slot) the least entry over the pattern's clusters, the lowest
    # cluster on ties (argmin's first); +inf outside the pattern
    masked = (table.transpose(0, 2, 1).reshape(1, g * h, m) + plan.outside).reshape(size, m)
    cluster = masked.argmin(axis=1)
    # each level's last ``2**(level - 1)`` entries, past the blocks computed: +inf, key 0
    values = np.full(plan.levels * size, np.inf)
    keys = np.zeros(plan.levels * size, dtype=np.int64)
    np.take(masked.reshape(-1), np.arange(0, size * m, m) + cluster, out=values[:size])
    np.multiply(cluster, h, out=keys[:size])
    keys[:size] += plan.slots
    width = 1
    for level in range(1, plan.levels):
        below, here, n = (level - 1) * size, level * size, size - width
        a_v, b_v = values[below : below + n], values[below + width : below + width + n]
        a_k, b_k = keys[below : below + n], keys[below + width : below + width + n]
        take_b = b_v < a_v
        take_b |= (b_v == a_v) & (b_k < a_k)
        np.minimum(a_v, b_v, out=values[here : here + n])
        np.copyto(keys[here : here + n], np.where(take_b, b_k, a_k))
        width *= 2
    return values, keys


def range_min(
    table: FloatArray,
    shape: IntArray,
    lo: IntArray,
    hi: IntArray,
    plan: RangePlan | None = None,
) -> tuple[FloatArray, IntArray]:
    """Minimum of ``table[shape[c], m, lo[c] .. hi[c]]`` and its slot, for every class ``c``
    and cluster ``m`` (sparse table, O(1) per query): ``(C, m)`` values and slots. ``plan``
    (:func:`range_plan` of the same queries) saves recomputing where each query reads."""
    g, m, h = table.shape
    if plan is None:
        plan = range_plan(shape, lo, hi, g, m, h)
    flat_v, flat_i = _sparse_table(table, plan.levels)
    va, vb = flat_v[plan.first], flat_v[plan.second]
    take = vb < va
    best: FloatArray = np.where(take, vb, va)
    where: IntArray = np.where(take, flat_i[plan.second], flat_i[plan.first])
    return best, where


@dataclass(frozen=True, slots=True, eq=False)
class Evaluation:
    """``L(lambda)`` and a subgradient at ``lambda`` (``(m, k, h)``)."""

    value_g: float
    subgradient: FloatArray


def evaluate(
    classes: JobClasses,
    base: FloatArray,
    prices: FloatArray,
    free: FloatArray,
    plan: RangePlan | PatternPlan | None = None,
) -> Evaluation:
    """``L(prices)`` over the classes (jobs without a start in the horizon left out) and the
    subgradient ``usage - free`` of the relaxed capacity rows. ``base`` is ``(k, m, h)``
    grams per unit-slot, ``prices`` and ``free`` are ``(m, k, h)``."""
    m, k, h = free.shape
    price = base + prices.transpose(1, 0, 2)
    table = shape_costs(classes, price)
    g = table.shape[0]
    if plan is None:
        plan = range_plan(classes.class_shape, classes.class_lo, classes.class_hi, g, m, h)
    if isinstance(plan, PatternPlan):
        # one query per class on the patterns' table: the least value, then the lowest
        # cluster, then the earliest slot, as below (bench/planner.md (x))
        flat_v, flat_k = _pattern_sparse_table(table, plan)
        va, vb = np.take(flat_v, plan.first), np.take(flat_v, plan.second)
        ka, kb = np.take(flat_k, plan.first), np.take(flat_k, plan.second)
        take_b = vb < va
        take_b |= (vb == va) & (kb < ka)
        best = np.minimum(va, vb)
        key = np.where(take_b, kb, ka)
        cluster = key // h
        start = key - cluster * h
    else:
        # as range_min, but the slot read for each class's chosen cluster only (the same
        # answer: the minimum's value, ties to the lower cluster, then the earlier slot)
        flat_v, flat_i = _sparse_table(table, plan.levels)
        if plan.first_allowed is not None and plan.second_allowed is not None:
            # the same floats as the mask below, in two takes
            values = np.minimum(
                np.take(flat_v, plan.first_allowed), np.take(flat_v, plan.second_allowed)
            )
        else:
            values = np.where(
                classes.class_allowed,
                np.minimum(np.take(flat_v, plan.first), np.take(flat_v, plan.second)),
                np.inf,
            )
        cluster = np.argmin(values, axis=1)
        rows = np.arange(values.shape[0])
        best = values[rows, cluster]
        first, second = plan.first[rows, cluster], plan.second[rows, cluster]
        start = np.where(flat_v[second] < flat_v[first], flat_i[second], flat_i[first])
    value = float(classes.class_weight @ best) - float(np.sum(prices * free))
    end = start + classes.shape_runtime[classes.class_shape]
    diff = np.zeros((m, k, h + 1))
    size = m * (h + 1)
    for r in range(k):
        demand = classes.class_demand[:, r]
        diff[:, r, :] = (
            np.bincount(cluster * (h + 1) + start, weights=demand, minlength=size)
            - np.bincount(cluster * (h + 1) + end, weights=demand, minlength=size)
        ).reshape(m, h + 1)
    usage = np.cumsum(diff, axis=2)[:, :, :h]
    return Evaluation(value_g=value, subgradient=usage - free)


@dataclass(frozen=True, slots=True, eq=False)
class DualResult:
    """The best ``L`` found (a lower bound on every on-time plan's grams, when every job
    has an on-time start) and its prices ``(m, k, h)``."""

    bound_g: float
    prices: FloatArray
    iterations: int
    resume: AscentState | None = None


@dataclass(frozen=True, slots=True, eq=False)
class AscentState:
    """Where an ascent stopped, to go on with it: the best value and prices so far, the
    prices reached, the step factor, the deflected direction and the steps without
    progress. Going on from here is the same ascent as one run of the summed iterations
    (when the upper bound has not changed in between)."""

    best_value_g: float
    best_prices: FloatArray
    prices: FloatArray
    theta: float
    direction: FloatArray
    stall: int


def dual_ascent(
    classes: JobClasses,
    base: FloatArray,
    free: FloatArray,
    *,
    upper_g: float,
    iterations: int,
    prices: FloatArray | None = None,
    resume: AscentState | None = None,
    cpu_limit_s: float = float("inf"),
    target_gap: float = DUAL_TARGET_GAP,
    patience: int = 20,
    deflection: float = 0.8,
) -> DualResult:
    """Projected subgradient ascent on ``L`` with Polyak steps towards ``upper_g`` (the grams
    of a known plan), halving the step factor after ``patience`` steps without progress. Stops after
    ``iterations``, when the bound is within ``target_gap`` of ``upper_g`` or, a guard, after
    ``cpu_limit_s`` CPU seconds of this thread (``time.thread_time``; not wall time, which a
    loaded machine stretches: where the guard binds the answer depends on the machine's speed
    only). ``resume`` (a result's ``resume``) goes on with an
    earlier ascent instead of starting from ``prices`` with a fresh step factor."""
    lam = np.zeros(free.shape) if prices is None else prices.copy()
    best_value, best_lam = -np.inf, lam.copy()
    theta, stall, done = 1.0, 0, 0
    direction = np.zeros(free.shape)
    if resume is not None:
        lam, direction, theta = resume.prices.copy(), resume.direction.copy(), resume.theta
        stall = resume.stall
        best_value, best_lam = resume.best_value_g, resume.best_prices
    stop_cpu_s = time.thread_time() + cpu_limit_s
    m, _, h = free.shape
    plan = class_range_plan(classes, m, h)
    for done in range(1, iterations + 1):
        ev = evaluate(classes, base, lam, free, plan)
        if (done == 1 and resume is None) or ev.value_g > best_value + 1e-12 * max(
            1.0, abs(best_value)
        ):
            best_value, best_lam, stall = ev.value_g, lam.copy(), 0
        else:
            stall += 1
            if stall >= patience:
                theta, stall = theta / 2, 0
        if upper_g - best_value <= target_gap * max(abs(upper_g), 1e-12):
            break
        if time.thread_time() > stop_cpu_s or theta < 1e-5:
            break
        g = np.where((lam <= 0) & (ev.subgradient < 0), 0.0, ev.subgradient)
        # deflected direction (Camerini, Fratta and Maffioli 1975): damps the zig-zag
        direction = g + deflection * direction
        norm2 = float(np.sum(direction * direction))
        if float(np.sum(g * g)) <= 0 or norm2 <= 0:
            break  # the relaxed optimum respects capacity: L is the LP optimum
        gap = max(upper_g - ev.value_g, 1e-9 * max(abs(upper_g), 1.0))
        lam = np.maximum(lam + theta * gap / norm2 * direction, 0.0)
    state = AscentState(float(best_value), best_lam, lam, theta, direction, stall)
    return DualResult(bound_g=float(best_value), prices=best_lam, iterations=done, resume=state)
