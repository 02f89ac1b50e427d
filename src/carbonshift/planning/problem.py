"""Build the start-time formulation as arrays: no solver imports, no policy logic.

Variables ``x[i, j, s]`` exist only for feasible starts: job ``i`` on an allowed cluster
``j`` at a slot ``s`` with ``release_i <= s <= horizon - runtime_i`` (and, when asked,
``s <= deadline_i - runtime_i``, the CJPS on-time rule). They are held as three parallel
index arrays (:class:`Starts`), so memory is proportional to the number of feasible starts,
with no Python object per variable. Optional future-demand columns ``z[j, t, t']`` (CJPS eqs.
3-5) reserve a fraction of the demand forecast for slot ``t'`` in a slot ``t >= t'``.

Rows of the constraint matrix, in order:

1. capacity: one row per (cluster, resource, slot) that some column touches, upper bound the
   free capacity there (CJPS eq. 5, Caspian constraint 5, over every resource);
2. jobs: one row per job, ``sum_{j,s} x[i, j, s] <= 1`` (each job at most once);
3. future demand: one row per forecast slot ``t'``, ``sum_{j,t} z[j, t, t'] <= 1`` (eq. 3).

Objective coefficients for each family are separate functions of :class:`Starts`:
:func:`carbon_g` (operational + embodied grams, ALGORITHMS.md ``c_ijs``), :func:`gru`
(CJPS eq. 6), :func:`caspian_z1`, :func:`caspian_z2`, :func:`caspian_z3` (Caspian eqs. 1-3).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from carbonshift.domain import Instance, grams_of
from carbonshift.errors import InputError
from carbonshift.planning.types import PlanContext

__all__ = [
    "FutureColumns",
    "InstanceArrays",
    "LinearProgram",
    "StartProblem",
    "Starts",
    "arrays_of",
    "build_problem",
    "build_starts",
    "carbon_g",
    "caspian_z1",
    "caspian_z2",
    "caspian_z3",
    "every_job_once",
    "future_gru",
    "gru",
    "linear_program",
    "on_time_program",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Capacity is compared with this slack so that float sums of demands do not flip a fit.
CAPACITY_TOLERANCE = 1e-9


@dataclass(frozen=True, slots=True, eq=False)
class InstanceArrays:
    """Dense per-instance arrays in instance order (jobs ``n``, clusters ``m``, resources
    ``k``, slots ``h``).

    ``capacity_units`` is the clusters' capacity; ``free_units`` that capacity less what the
    context holds (running jobs). ``future_units`` is the first resource's demand forecast
    (zeros when the instance has none).
    """

    demand_units: FloatArray  # (n, k)
    runtime_slots: IntArray  # (n,)
    release_slot: IntArray  # (n,)
    deadline_slot: IntArray  # (n,)
    critical: BoolArray  # (n,)
    allowed: BoolArray  # (n, m)
    capacity_units: FloatArray  # (m, k, h)
    free_units: FloatArray  # (m, k, h)
    watts_per_unit: FloatArray  # (m, k)
    embodied_g_per_unit_hour: FloatArray  # (m, k)
    pue: FloatArray  # (m,)
    ci_g_per_kwh: FloatArray  # (m, h)
    future_units: FloatArray  # (h,)
    slot_hours: float

    @property
    def n_jobs(self) -> int:
        return int(self.runtime_slots.shape[0])

    @property
    def n_clusters(self) -> int:
        return int(self.pue.shape[0])

    @property
    def horizon_slots(self) -> int:
        return int(self.ci_g_per_kwh.shape[1])

    @property
    def latest_on_time_start(self) -> IntArray:
        """``deadline - runtime``: the last start slot that finishes by the deadline."""
        return self.deadline_slot - self.runtime_slots


def arrays_of(instance: Instance, context: PlanContext | None = None) -> InstanceArrays:
    """Dense arrays of ``instance``; capacity held in ``context`` is taken off ``free_units``."""
    horizon = instance.grid.horizon_slots
    resources = instance.resources
    jobs = instance.jobs
    clusters = instance.clusters
    n, m, k = len(jobs), len(clusters), len(resources)
    demand = np.array(
        [[job.demand.get(r, 0.0) for r in resources] for job in jobs], dtype=float
    ).reshape(n, k)
    capacity = np.zeros((m, k, horizon))
    for c, cluster in enumerate(clusters):
        for r, resource in enumerate(resources):
            cap = cluster.capacity.get(resource, 0.0)
            capacity[c, r, :] = np.asarray(cap, dtype=float)
    free = capacity.copy()
    if context is not None and context.held_units is not None:
        held = np.asarray(context.held_units, dtype=float)
        if held.shape != capacity.shape:
            raise InputError(
                f"held_units has shape {held.shape}; it must be (clusters, resources, "
                f"horizon_slots) = {capacity.shape} in instance order"
            )
        free = np.maximum(capacity - held, 0.0)
    names = [cluster.name for cluster in clusters]
    allowed = np.ones((n, m), dtype=bool)
    for i, job in enumerate(jobs):
        if job.allowed_clusters is not None:
            allowed[i] = [name in job.allowed_clusters for name in names]
    future = np.zeros(horizon)
    if instance.future_demand is not None and resources[0] in instance.future_demand:
        future = np.asarray(instance.future_demand[resources[0]], dtype=float)
    return InstanceArrays(
        demand_units=demand,
        runtime_slots=np.array([job.runtime_slots for job in jobs], dtype=np.int64),
        release_slot=np.array([job.release_slot for job in jobs], dtype=np.int64),
        deadline_slot=np.array([job.deadline_slot for job in jobs], dtype=np.int64),
        critical=np.array([job.critical for job in jobs], dtype=bool),
        allowed=allowed,
        capacity_units=capacity,
        free_units=free,
        watts_per_unit=np.array(
            [[c.watts_per_unit.get(r, 0.0) for r in resources] for c in clusters], dtype=float
        ).reshape(m, k),
        embodied_g_per_unit_hour=np.array(
            [[c.embodied_g_per_unit_hour.get(r, 0.0) for r in resources] for c in clusters],
            dtype=float,
        ).reshape(m, k),
        pue=np.array([c.pue for c in clusters], dtype=float),
        ci_g_per_kwh=np.array(
            [instance.carbon_g_per_kwh[name] for name in names], dtype=float
        ).reshape(m, horizon),
        future_units=future,
        slot_hours=instance.grid.slot_hours,
    )


@dataclass(frozen=True, slots=True, eq=False)
class Starts:
    """Feasible starts as parallel arrays, sorted by job then cluster then slot."""

    job: IntArray
    cluster: IntArray
    start_slot: IntArray

    def __len__(self) -> int:
        return int(self.job.shape[0])


#: The largest power of two :func:`balanced_units` multiplies a resource by.
_MAX_UNIT_EXPONENT = 200


def balanced_units(arrays: InstanceArrays) -> InstanceArrays:
    """``arrays`` with each resource counted in a unit of its own, so that every resource's
    mean capacity is within a factor of about 1.4 of the largest's: demands and capacity of
    a resource times ``2**e`` (``e >= 0``), its watts and embodied grams per unit divided by
    it. The problem is the same (every start's grams, every fit), but a planner that sums
    or compares resources (prices' steps, jobs' sizes) sees them on one scale, so its plan
    no longer depends much on the instance's units (memory in MiB or GiB, 1,024 = 2**10:
    arrays that differ by one power of two over every resource). Powers of two keep every
    product and sum exact and only tighten the absolute room tolerance; where a division
    would not be exact, or with one resource, ``arrays`` is returned as it is."""
    k = arrays.demand_units.shape[1]
    if k < 2:
        return arrays
    # each resource's mean capacity over the cells that have some
    held = arrays.capacity_units > 0
    count = held.sum(axis=(0, 2))
    level = np.divide(
        np.where(held, arrays.capacity_units, 0.0).sum(axis=(0, 2)),
        count,
        out=np.zeros(k),
        where=count > 0,
    )
    if np.count_nonzero(level > 0) < 2 or not np.all(np.isfinite(level)):
        return arrays
    ratio = np.divide(level.max(), level, out=np.ones(k), where=level > 0)
    factor = np.exp2(np.clip(np.round(np.log2(ratio)), 0, _MAX_UNIT_EXPONENT))
    if np.all(factor == 1.0):
        return arrays
    cell = factor[None, :, None]
    scaled = replace(
        arrays,
        demand_units=arrays.demand_units * factor,
        capacity_units=arrays.capacity_units * cell,
        free_units=arrays.free_units * cell,
        watts_per_unit=arrays.watts_per_unit / factor,
        embodied_g_per_unit_hour=arrays.embodied_g_per_unit_hour / factor,
        future_units=arrays.future_units * factor[0],
    )
    # a power of two is exact unless a product overflows or a quotient loses bits
    exact = (
        np.array_equal(scaled.watts_per_unit * factor, arrays.watts_per_unit)
        and np.array_equal(
            scaled.embodied_g_per_unit_hour * factor, arrays.embodied_g_per_unit_hour
        )
        and bool(np.all(np.isfinite(scaled.demand_units)))
        and bool(np.all(np.isfinite(scaled.capacity_units)))
        and bool(np.all(np.isfinite(scaled.future_units)))
    )
    return scaled if exact else arrays


def build_starts(arrays: InstanceArrays, *, on_time_only: bool) -> Starts:
    """Every feasible start: allowed cluster, ``release <= s <= horizon - runtime``.

    With ``on_time_only`` also ``s <= deadline - runtime`` (CJPS: on-time starts only; our
    on-time rule lets a job finish exactly at its deadline, one slot looser than CJPS eq. 2).
    Jobs whose demand exceeds a cluster's capacity in every slot still get columns: the
    capacity rows keep them out.
    """
    lo = arrays.release_slot
    hi = arrays.horizon_slots - arrays.runtime_slots
    if on_time_only:
        hi = np.minimum(hi, arrays.latest_on_time_start)
    count = np.maximum(hi - lo + 1, 0)
    pair_job, pair_cluster = np.nonzero(arrays.allowed)
    per_pair = count[pair_job]
    total = int(per_pair.sum())
    job = np.repeat(pair_job.astype(np.int64), per_pair)
    cluster = np.repeat(pair_cluster.astype(np.int64), per_pair)
    first = np.cumsum(per_pair) - per_pair
    offset = np.arange(total, dtype=np.int64) - np.repeat(first, per_pair)
    start = lo[job] + offset
    return Starts(job=job, cluster=cluster, start_slot=start)


def _window_sum(
    per_slot: FloatArray, cluster: IntArray, start: IntArray, length: IntArray
) -> FloatArray:
    """``sum_{t=s}^{s+l-1} per_slot[c, t]`` for every (c, s, l), through prefix sums."""
    prefix = np.zeros((per_slot.shape[0], per_slot.shape[1] + 1))
    np.cumsum(per_slot, axis=1, out=prefix[:, 1:])
    result: FloatArray = prefix[cluster, start + length] - prefix[cluster, start]
    return result


def carbon_g(arrays: InstanceArrays, starts: Starts) -> FloatArray:
    """Operational + embodied grams of each start (``c_ijs`` of ALGORITHMS.md; FLUIDOS eqs.
    3.1-3.3 integrated over the occupied slots)."""
    job, cluster, start = starts.job, starts.cluster, starts.start_slot
    runtime = arrays.runtime_slots[job]
    ci_sum = _window_sum(arrays.ci_g_per_kwh, cluster, start, runtime)
    watts = arrays.demand_units @ arrays.watts_per_unit.T  # (n, m) W per job
    embodied = arrays.demand_units @ arrays.embodied_g_per_unit_hour.T  # (n, m) g per hour
    h = arrays.slot_hours
    result: FloatArray = grams_of(
        watts[job, cluster] / 1000.0 * arrays.pue[cluster],
        h * ci_sum,
        embodied[job, cluster],
        runtime * h,
    )
    return result


def _inverse_ci(arrays: InstanceArrays) -> FloatArray:
    result: FloatArray = 1.0 / np.maximum(1.0, arrays.ci_g_per_kwh)
    return result


def gru(arrays: InstanceArrays, starts: Starts) -> FloatArray:
    """Green resource utilisation of each start (CJPS eq. 6, job part): first-resource
    demand over ``max(1, I)`` summed over the occupied slots."""
    runtime = arrays.runtime_slots[starts.job]
    per_slot = _window_sum(_inverse_ci(arrays), starts.cluster, starts.start_slot, runtime)
    result: FloatArray = arrays.demand_units[starts.job, 0] * per_slot
    return result


def caspian_z1(arrays: InstanceArrays, starts: Starts) -> FloatArray:
    """Caspian eq. 1 coefficient: ``r_i sum_t 1 / (C_j^t max(1, I_j^t) rho_j)`` over the
    occupied slots, first resource; terms with ``C = 0`` or ``rho = 0`` are left out."""
    cap = arrays.capacity_units[:, 0, :]
    rho = arrays.watts_per_unit[:, 0][:, None]
    denominator = cap * np.maximum(1.0, arrays.ci_g_per_kwh) * rho
    weight = np.divide(1.0, denominator, out=np.zeros_like(denominator), where=denominator > 0)
    runtime = arrays.runtime_slots[starts.job]
    per_slot = _window_sum(weight, starts.cluster, starts.start_slot, runtime)
    result: FloatArray = arrays.demand_units[starts.job, 0] * per_slot
    return result


def caspian_z2(arrays: InstanceArrays, starts: Starts) -> FloatArray:
    """Caspian eq. 2 coefficient: ``1 / gamma(i, s)``, ``gamma = max(1, l_i + s - d_i)``."""
    runtime = arrays.runtime_slots[starts.job]
    gamma = np.maximum(1, runtime + starts.start_slot - arrays.deadline_slot[starts.job])
    result: FloatArray = 1.0 / gamma.astype(float)
    return result


def caspian_z3(arrays: InstanceArrays, starts: Starts) -> FloatArray:
    """Caspian eq. 3 coefficient: ``1 / lambda(i, s)``, ``lambda = s + l_i`` (>= 1)."""
    runtime = arrays.runtime_slots[starts.job]
    result: FloatArray = 1.0 / (starts.start_slot + runtime).astype(float)
    return result


@dataclass(frozen=True, slots=True, eq=False)
class FutureColumns:
    """Future-demand columns ``z[j, t, t']``: cluster, slot used ``t`` and arrival ``t'``."""

    cluster: IntArray
    slot: IntArray
    arrival_slot: IntArray
    units: FloatArray  # R^{t'} of each column

    def __len__(self) -> int:
        return int(self.cluster.shape[0])


def _future_columns(arrays: InstanceArrays) -> FutureColumns:
    arrivals = np.flatnonzero(arrays.future_units > 0)
    horizon, m = arrays.horizon_slots, arrays.n_clusters
    per_arrival = (horizon - arrivals) * m
    total = int(per_arrival.sum())
    arrival = np.repeat(arrivals.astype(np.int64), per_arrival)
    first = np.cumsum(per_arrival) - per_arrival
    offset = np.arange(total, dtype=np.int64) - np.repeat(first, per_arrival)
    slot = arrival + offset // m
    cluster = offset % m
    return FutureColumns(
        cluster=cluster, slot=slot, arrival_slot=arrival, units=arrays.future_units[arrival]
    )


def future_gru(arrays: InstanceArrays, future: FutureColumns) -> FloatArray:
    """CJPS eq. 6, future part (before the weight ``gamma``): ``R^{t'} / max(1, I_j^t)``."""
    result: FloatArray = future.units * _inverse_ci(arrays)[future.cluster, future.slot]
    return result


@dataclass(frozen=True, slots=True, eq=False)
class StartProblem:
    """The constraint side of the start-time formulation.

    Columns are the starts (``len(starts)``) then the future columns. ``capacity_key`` gives
    each capacity row's flat index into ``(clusters, resources, slots)``.
    """

    arrays: InstanceArrays
    starts: Starts
    future: FutureColumns
    matrix: sp.csc_matrix
    row_upper: FloatArray
    capacity_key: IntArray

    @property
    def n_columns(self) -> int:
        return len(self.starts) + len(self.future)


def build_problem(
    arrays: InstanceArrays, *, on_time_only: bool, with_future: bool = False
) -> StartProblem:
    """Starts, capacity rows over every resource, job rows and (optionally) future rows."""
    starts = build_starts(arrays, on_time_only=on_time_only)
    future = _future_columns(arrays) if with_future else _future_columns_empty()
    _, k, h = arrays.free_units.shape
    n_x = len(starts)
    # Capacity entries: one per (start, occupied slot, resource with demand > 0).
    runtime = arrays.runtime_slots[starts.job]
    column = np.repeat(np.arange(n_x, dtype=np.int64), runtime)
    first = np.cumsum(runtime) - runtime
    slot = starts.start_slot[column] + (np.arange(column.shape[0]) - np.repeat(first, runtime))
    cols, keys, vals = [], [], []
    for r in range(k):
        amount = arrays.demand_units[starts.job[column], r]
        used = amount > 0
        cols.append(column[used])
        keys.append((starts.cluster[column[used]] * k + r) * h + slot[used])
        vals.append(amount[used])
    if len(future):
        cols.append(n_x + np.arange(len(future), dtype=np.int64))
        keys.append((future.cluster * k + 0) * h + future.slot)
        vals.append(future.units)
    all_keys = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    capacity_key, cap_row = np.unique(all_keys, return_inverse=True)
    n_cap = capacity_key.shape[0]
    # Job rows.
    job_rows = n_cap + starts.job
    # Future rows: one per arrival slot that has columns.
    arrival_key, arrival_row = np.unique(future.arrival_slot, return_inverse=True)
    n_job_rows = arrays.n_jobs
    row = np.concatenate(
        [cap_row.astype(np.int64), job_rows, n_cap + n_job_rows + arrival_row.astype(np.int64)]
    )
    col = np.concatenate(
        [*cols, np.arange(n_x, dtype=np.int64), n_x + np.arange(len(future), dtype=np.int64)]
    )
    val = np.concatenate([*vals, np.ones(n_x), np.ones(len(future))])
    n_rows = n_cap + n_job_rows + arrival_key.shape[0]
    matrix = sp.csc_matrix((val, (row, col)), shape=(n_rows, n_x + len(future)))
    row_upper = np.concatenate(
        [arrays.free_units.reshape(-1)[capacity_key], np.ones(n_job_rows + arrival_key.shape[0])]
    )
    return StartProblem(
        arrays=arrays,
        starts=starts,
        future=future,
        matrix=matrix,
        row_upper=row_upper,
        capacity_key=capacity_key.astype(np.int64),
    )


def _future_columns_empty() -> FutureColumns:
    empty = np.zeros(0, dtype=np.int64)
    return FutureColumns(cluster=empty, slot=empty, arrival_slot=empty, units=np.zeros(0))


@dataclass(frozen=True, slots=True, eq=False)
class LinearProgram:
    """``max/min c.x`` s.t. ``row_lower <= A x <= row_upper``, ``0 <= x <= column_upper``;
    the first ``n_integer`` columns are binary when solved as a MILP. ``row_lower`` None: no
    lower bounds (``-inf``); ``column_upper`` None: 1 for every column."""

    objective: FloatArray
    matrix: sp.csc_matrix
    row_upper: FloatArray
    maximise: bool
    n_integer: int
    row_lower: FloatArray | None = None
    column_upper: FloatArray | None = None

    @property
    def n_columns(self) -> int:
        return int(self.objective.shape[0])

    def restricted_to(self, keep: npt.NDArray[np.int64]) -> LinearProgram:
        """The program on the columns ``keep`` only (every row kept), each of them integer
        when solved as a MILP: a sub-MILP of the starts a step allows."""
        return LinearProgram(
            objective=self.objective[keep],
            matrix=self.matrix[:, keep],
            row_upper=self.row_upper,
            maximise=self.maximise,
            n_integer=int(keep.shape[0]),
            row_lower=self.row_lower,
            column_upper=None if self.column_upper is None else self.column_upper[keep],
        )


def linear_program(
    problem: StartProblem,
    objective: FloatArray,
    *,
    future_objective: FloatArray | None = None,
    maximise: bool = True,
) -> LinearProgram:
    """Pair the constraint side with objective coefficients (x part, then z part)."""
    if objective.shape[0] != len(problem.starts):
        raise InputError(
            f"objective has {objective.shape[0]} coefficients; the problem has "
            f"{len(problem.starts)} start columns"
        )
    z = future_objective if future_objective is not None else np.zeros(len(problem.future))
    return LinearProgram(
        objective=np.concatenate([objective, z]).astype(float),
        matrix=problem.matrix,
        row_upper=problem.row_upper,
        maximise=maximise,
        n_integer=len(problem.starts),
    )


def on_time_program(problem: StartProblem, grams: FloatArray) -> LinearProgram:
    """The time-indexed LP of the ``carbonshift`` bound: minimise ``grams . x`` with every
    job started exactly once (job rows ``= 1``) over the starts of ``problem`` (build it
    with ``on_time_only=True``), capacity rows as built. Infeasible when some job has no
    on-time start or capacity cannot hold every job on time."""
    return every_job_once(problem, grams)


def every_job_once(problem: StartProblem, cost: FloatArray) -> LinearProgram:
    """Minimise ``cost . x`` with every job started exactly once (job rows ``= 1``) over the
    starts of ``problem``, capacity rows as built: :func:`on_time_program` over on-time
    starts; over every start (``on_time_only=False``) a late plan's model (step 8b of the
    ``carbonshift`` policy, with the lateness as ``cost``)."""
    if len(problem.future):
        raise InputError("every_job_once takes a problem built without future-demand columns")
    lp = linear_program(problem, cost, maximise=False)
    n_cap = problem.capacity_key.shape[0]
    lower = np.full(lp.row_upper.shape[0], -np.inf)
    lower[n_cap : n_cap + problem.arrays.n_jobs] = 1.0
    return LinearProgram(
        objective=lp.objective,
        matrix=lp.matrix,
        row_upper=lp.row_upper,
        maximise=False,
        n_integer=lp.n_integer,
        row_lower=lower,
    )
