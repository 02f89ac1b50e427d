"""The time-indexed LP aggregated over job classes: arrays only, no solver import.

Jobs of one class (:class:`~carbonshift.planning.lagrangian.JobClasses`: same runtime,
demand mix, on-time window and allowed clusters) are interchangeable up to their size, so
the LP over ``x[j, m, s]`` has the same optimum as the LP over ``z[c, m, s]`` in [0, 1], the
share of the class's summed demand started at ``(m, s)``: any ``z`` splits back into an
``x`` with the same grams and the same capacity use. Much smaller than the job LP when many
jobs share a class (the synthetic families: 455 classes for 10,000 CJPS jobs).

Flow form. A run covers consecutive slots, so the capacity rows (``sum`` of the runs
covering ``(m, k, t)`` at most ``free[m, k, t]``) are written through a usage column
``u[m, k, t]`` in ``[0, free[m, k, t]]`` and one row per cell, ``u[t] - u[t - 1] = (demand
started at t) - (demand ending at t)``: the rows of the original are the running sums of
these, an invertible change of rows, so the LP is the same one. A start column then has
two entries per resource (its first slot and the slot after its run) instead of one per
slot of its run: trace 10,000 jobs, 161k entries instead of 659k, 0.4 s of HiGHS dual
simplex instead of 1.5 s (bench/planner.md). The capacity prices of the original rows are
the reduced costs of the usage columns (:meth:`ClassProgram.prices`). The row form (one
capacity row per cell a run touches, ``flow=False``) is the same LP; the policy keeps it
up to 3,000 jobs, where it is fast enough and its optimal vertex is the one those plans
round.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from carbonshift.planning.backends.highs import LpMethod, SolveOptions
from carbonshift.planning.lagrangian import JobClasses
from carbonshift.planning.problem import InstanceArrays, LinearProgram

__all__ = [
    "ClassColumns",
    "ClassProgram",
    "class_columns",
    "class_program",
    "column_index",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True, eq=False)
class ClassColumns:
    """The columns of the class LP: class, cluster and start of each."""

    klass: IntArray
    cluster: IntArray
    start_slot: IntArray

    def __len__(self) -> int:
        return int(self.klass.shape[0])

    def subset(self, keep: IntArray) -> ClassColumns:
        """The columns ``keep`` (indices, ascending: the class order is kept)."""
        return ClassColumns(self.klass[keep], self.cluster[keep], self.start_slot[keep])


def class_columns(classes: JobClasses) -> ClassColumns:
    """One column per class, allowed cluster and start in the class's window."""
    width = classes.class_hi - classes.class_lo + 1
    pair_c, pair_m = np.nonzero(classes.class_allowed)
    per = width[pair_c]
    klass = np.repeat(pair_c.astype(np.int64), per)
    cluster = np.repeat(pair_m.astype(np.int64), per)
    first = np.cumsum(per) - per
    offset = np.arange(int(per.sum()), dtype=np.int64) - np.repeat(first, per)
    return ClassColumns(klass=klass, cluster=cluster, start_slot=classes.class_lo[klass] + offset)


def column_index(
    classes: JobClasses, klass: IntArray, cluster: IntArray, start_slot: IntArray
) -> IntArray:
    """The index in :func:`class_columns` of each (class, allowed cluster, start in the
    class's window); the caller checks those conditions. Columns run class by class, then
    over the class's allowed clusters in order, then over its window."""
    width = classes.class_hi - classes.class_lo + 1
    per_class = classes.class_allowed.sum(axis=1) * width
    first = np.cumsum(per_class) - per_class
    rank = np.cumsum(classes.class_allowed, axis=1) - 1  # a cluster's place among the allowed
    index: IntArray = (
        first[klass] + rank[klass, cluster] * width[klass] + start_slot - classes.class_lo[klass]
    )
    return index


@dataclass(frozen=True, slots=True, eq=False)
class ClassProgram:
    """The class LP: ``program``'s first ``len(columns)`` columns are the start shares
    ``z``. Flow form (``capacity_key`` None): then one usage column per (cluster, resource,
    slot), ``(m, k, h)`` in C order; scaled by construction, solve it without the back
    end's row scaling. Row form: its first rows are the capacity rows of the cells
    ``capacity_key`` (flat indices into ``(m, k, h)``)."""

    program: LinearProgram
    columns: ClassColumns
    cells: tuple[int, int, int]
    capacity_key: IntArray | None = None

    def share(self, values: FloatArray) -> FloatArray:
        """The start shares of a solution's column values, clipped to [0, 1]."""
        result: FloatArray = np.clip(values[: len(self.columns)], 0.0, 1.0)
        return result

    def prices(self, reduced_costs: FloatArray, row_duals: FloatArray) -> FloatArray:
        """Capacity prices ``(m, k, h)`` >= 0 per unit-slot from a solution's duals (HiGHS's
        sign convention, minimising): in flow form minus the usage columns' reduced costs
        (the multipliers of ``u <= free``), in row form minus the capacity rows' duals. At
        an LP optimum these are optimal Lagrangian prices; any prices >= 0 give a valid
        bound through :func:`~carbonshift.planning.lagrangian.evaluate`."""
        result = np.zeros(self.cells)
        if self.capacity_key is None:
            usage = reduced_costs[len(self.columns) :]
            result = np.maximum(-usage, 0.0).reshape(self.cells)
        else:
            flat = result.reshape(-1)
            flat[self.capacity_key] = np.maximum(-row_duals[: self.capacity_key.shape[0]], 0.0)
        return result


def class_program(
    arrays: InstanceArrays,
    classes: JobClasses,
    table: FloatArray,
    columns: ClassColumns,
    *,
    flow: bool = True,
) -> ClassProgram:
    """Minimise grams: ``table`` is :func:`~carbonshift.planning.lagrangian.shape_costs`
    (grams per unit of weight of each shape, cluster and start). Flow form (module
    docstring): one flow row per (cluster, resource, slot), then ``sum z = 1`` per class;
    ``flow=False``: one capacity row per cell a run touches, then the class rows."""
    if not flow:
        return _row_program(arrays, classes, table, columns)
    m, k, h = arrays.free_units.shape
    n_classes = classes.class_shape.shape[0]
    shape = classes.class_shape[columns.klass]
    weight = classes.class_weight[columns.klass]
    cost = table[shape, columns.cluster, columns.start_slot] * weight
    end = columns.start_slot + classes.shape_runtime[shape]
    n = len(columns)
    n_cells = m * k * h
    # the rows of resource r in units of its largest job demand (a power of two: exact),
    # the same for all of them: HiGHS's dual simplex is much slower on this form when each
    # row is scaled on its own (trace 10,000 jobs: 1.3 s against 0.4 s), see SolveOptions
    largest = arrays.demand_units.max(axis=0, initial=0.0)
    unit = np.where(largest > 0, np.exp2(np.round(np.log2(np.maximum(largest, 1e-300)))), 1.0)
    rows, cols, vals = [], [], []
    for r in range(k):
        amount = classes.shape_mix[shape, r] * weight / unit[r]
        used = np.flatnonzero(amount > 0)
        cell = (columns.cluster[used] * k + r) * h
        rows.append(cell + columns.start_slot[used])
        cols.append(used)
        vals.append(-amount[used])
        inside = end[used] < h  # a run ending at the horizon leaves no row to enter
        rows.append(cell[inside] + end[used][inside])
        cols.append(used[inside])
        vals.append(amount[used][inside])
    cells = np.arange(n_cells, dtype=np.int64)
    later = cells[cells % h > 0]
    per_cell = 1.0 / np.repeat(np.tile(unit, m), h)  # (m, k, h) in C order
    rows += [cells, later, n_cells + columns.klass]
    cols += [n + cells, n + later - 1, np.arange(n, dtype=np.int64)]
    vals += [per_cell, -per_cell[later], np.ones(n)]
    matrix = sp.csc_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(n_cells + n_classes, n + n_cells),
    )
    bounds = np.concatenate([np.zeros(n_cells), np.ones(n_classes)])
    program = LinearProgram(
        objective=np.concatenate([cost.astype(float), np.zeros(n_cells)]),
        matrix=matrix,
        row_upper=bounds,
        maximise=False,
        n_integer=n,
        row_lower=bounds.copy(),
        column_upper=np.concatenate([np.ones(n), arrays.free_units.reshape(-1)]),
    )
    return ClassProgram(program=program, columns=columns, cells=(m, k, h))


def _row_program(
    arrays: InstanceArrays, classes: JobClasses, table: FloatArray, columns: ClassColumns
) -> ClassProgram:
    m, k, h = arrays.free_units.shape
    n_classes = classes.class_shape.shape[0]
    shape = classes.class_shape[columns.klass]
    weight = classes.class_weight[columns.klass]
    cost = table[shape, columns.cluster, columns.start_slot] * weight
    runtime = classes.shape_runtime[shape]
    n = len(columns)
    col = np.repeat(np.arange(n, dtype=np.int64), runtime)
    first = np.cumsum(runtime) - runtime
    slot = columns.start_slot[col] + (np.arange(col.shape[0]) - np.repeat(first, runtime))
    keys, cols, vals = [], [], []
    for r in range(k):
        amount = classes.shape_mix[shape[col], r] * weight[col]
        used = amount > 0
        keys.append((columns.cluster[col[used]] * k + r) * h + slot[used])
        cols.append(col[used])
        vals.append(amount[used])
    capacity_key, cap_row = np.unique(np.concatenate(keys), return_inverse=True)
    n_cap = capacity_key.shape[0]
    row = np.concatenate([cap_row.reshape(-1).astype(np.int64), n_cap + columns.klass])
    column = np.concatenate([*cols, np.arange(n, dtype=np.int64)])
    value = np.concatenate([*vals, np.ones(n)])
    matrix = sp.csc_matrix((value, (row, column)), shape=(n_cap + n_classes, n))
    upper = np.concatenate([arrays.free_units.reshape(-1)[capacity_key], np.ones(n_classes)])
    lower = np.concatenate([np.full(n_cap, -np.inf), np.ones(n_classes)])
    program = LinearProgram(
        objective=cost.astype(float),
        matrix=matrix,
        row_upper=upper,
        maximise=False,
        n_integer=n,
        row_lower=lower,
    )
    return ClassProgram(program, columns, (m, k, h), capacity_key.astype(np.int64))


def class_lp_options(
    time_limit_s: float, *, flow: bool = True, method: LpMethod = LpMethod.SIMPLEX
) -> SolveOptions:
    """HiGHS options for :func:`class_program`: dual simplex (or ``method``); in flow form
    without presolve and scaling (the form is scaled by construction: trace 10,000 jobs,
    0.4 s against 1.3 s with them), in row form with HiGHS's defaults."""
    if not flow:
        return SolveOptions(method=method, time_limit_s=time_limit_s)
    return SolveOptions(
        method=method,
        time_limit_s=time_limit_s,
        presolve=False,
        scaling=False,
        row_scaling=False,
    )
