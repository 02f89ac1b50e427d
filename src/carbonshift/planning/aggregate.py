"""The time-indexed LP aggregated over job classes: arrays only, no solver import.

Jobs of one class (:class:`~carbonshift.planning.lagrangian.JobClasses`: same runtime,
demand mix, on-time window and allowed clusters) are interchangeable up to their size, so
the LP over ``x[j, m, s]`` has the same optimum as the LP over ``z[c, m, s]`` in [0, 1], the
share of the class's summed demand started at ``(m, s)``: any ``z`` splits back into an
``x`` with the same grams and the same capacity use. Columns: one per class, allowed
cluster and on-time start; rows: capacity per (cluster, resource, slot) touched, then one
row ``sum z = 1`` per class. Much smaller than the job LP when many jobs share a class (the
synthetic families: 455 classes for 10,000 CJPS jobs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from carbonshift.planning.lagrangian import JobClasses
from carbonshift.planning.problem import InstanceArrays, LinearProgram

__all__ = ["ClassColumns", "class_columns", "class_program"]

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


def class_program(
    arrays: InstanceArrays, classes: JobClasses, table: FloatArray, columns: ClassColumns
) -> LinearProgram:
    """Minimise grams: ``table`` is :func:`~carbonshift.planning.lagrangian.shape_costs`
    (grams per unit of weight of each shape, cluster and start)."""
    _, k, h = arrays.free_units.shape
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
    return LinearProgram(
        objective=cost.astype(float),
        matrix=matrix,
        row_upper=upper,
        maximise=False,
        n_integer=n,
        row_lower=lower,
    )
