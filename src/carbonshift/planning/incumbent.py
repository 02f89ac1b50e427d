"""The incumbent inside the objective: a re-plan pays for moving a job off its last plan.

Issue 13 item 3 (no flapping). An online round knows where the round before planned each
pending job (``PlanContext.incumbent``, filled by the planning seam from what the hold
rule already has). :func:`move_penalty` turns that into a stated price: every start of job
``j`` other than its incumbent (cluster, start slot) costs ``penalty_g[j]`` grams more,

    penalty_g[j] = move_penalty_g + move_penalty_pct / 100 * grams of j at its incumbent,

so a displaced job is moved only when the whole plan gains more than that (a proximal
term on the last plan, as in rolling-horizon scheduling's "plan nervousness" penalty;
Blackburn, Kropp and Millen, "A comparison of strategies to dampen nervousness in MRP
systems", Management Science 1986). The policy adds it to the per-unit cost tables its
LP, greedy and searches read (:meth:`MovePenalty.table`): each job with an incumbent
has a shape of its own (``classes_of(..., own_shape=...)``) so its row of a table is its
own. The certified bound and the reported grams never see it: the bound is computed on the
unpenalised costs (docs/design/0002, step 9).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from carbonshift.domain import Instance
from carbonshift.errors import InputError
from carbonshift.planning.problem import InstanceArrays

__all__ = ["MovePenalty", "check_penalty", "move_penalty"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True, eq=False)
class MovePenalty:
    """Per job with an incumbent: its index, incumbent cluster and start slot, and the grams
    a start elsewhere costs it (all of length ``len(job)``; none: no penalty)."""

    job: IntArray
    cluster: IntArray
    start: IntArray
    penalty_g: FloatArray

    @property
    def active(self) -> bool:
        """Whether any start costs more than its grams."""
        return bool(self.job.size)

    def own_shape(self, n_jobs: int) -> BoolArray:
        """Jobs that need a shape of their own (their table rows carry their penalty)."""
        mask = np.zeros(n_jobs, dtype=bool)
        mask[self.job] = True
        return mask

    def table(self, table: FloatArray, shape: IntArray, weight: FloatArray) -> FloatArray:
        """``table`` (per unit of weight: shape, cluster, start) with each penalised job's
        row raised by its penalty per unit of weight everywhere but at its incumbent.
        ``shape``/``weight``: per job, as in :class:`~carbonshift.planning.lagrangian.
        JobClasses`; each penalised job's shape must be its own."""
        if not self.active:
            return table
        rows = shape[self.job]
        per_unit = self.penalty_g / weight[self.job]
        out = table.copy()
        out[rows] += per_unit[:, None, None]
        out[rows, self.cluster, self.start] -= per_unit
        return out

    def of_starts(
        self, job: IntArray, cluster: IntArray, start: IntArray, n_jobs: int
    ) -> FloatArray:
        """The penalty of each listed start (job, cluster, start slot), grams."""
        pen = np.zeros(n_jobs)
        pen[self.job] = self.penalty_g
        at_c = np.full(n_jobs, -1, dtype=np.int64)
        at_s = np.full(n_jobs, -1, dtype=np.int64)
        at_c[self.job], at_s[self.job] = self.cluster, self.start
        away = (cluster != at_c[job]) | (start != at_s[job])
        result: FloatArray = np.where(away, pen[job], 0.0)
        return result


_NONE = MovePenalty(
    np.zeros(0, dtype=np.int64),
    np.zeros(0, dtype=np.int64),
    np.zeros(0, dtype=np.int64),
    np.zeros(0),
)


def check_penalty(move_penalty_g: float, move_penalty_pct: float) -> None:
    """:class:`InputError` for a negative or non-finite penalty."""
    for name, value, unit in (
        ("move_penalty_g", move_penalty_g, "grams"),
        ("move_penalty_pct", move_penalty_pct, "% of the job's grams at its last planned start"),
    ):
        if not np.isfinite(value) or value < 0:
            raise InputError(
                f"{name} is {value}; give the {unit} a re-plan must gain to move a job off its "
                "last planned start, >= 0 (0: off)"
            )


def move_penalty(
    instance: Instance,
    arrays: InstanceArrays,
    incumbent: Mapping[str, tuple[str, int]],
    base: FloatArray,
    *,
    move_penalty_g: float,
    move_penalty_pct: float,
) -> MovePenalty:
    """The penalty of each job whose incumbent is still an on-time start on an allowed
    cluster (not critical, some demand); ``base``: grams of one unit held one slot
    ``(resources, clusters, slots)`` (:func:`~carbonshift.planning.lagrangian.unit_grams`),
    for the share. Jobs without one, or with an
    incumbent that no longer fits its window, are free to move (the hold rule's step 1 then
    drops that start too)."""
    check_penalty(move_penalty_g, move_penalty_pct)
    if not incumbent or (move_penalty_g == 0 and move_penalty_pct == 0):
        return _NONE
    index = {str(cluster.name): c for c, cluster in enumerate(instance.clusters)}
    rows = [
        (j, index.get(incumbent[job.id][0], -1), int(incumbent[job.id][1]))
        for j, job in enumerate(instance.jobs)
        if job.id in incumbent
    ]
    if not rows:
        return _NONE
    job, cluster, start = (np.array(col, dtype=np.int64) for col in zip(*rows, strict=True))
    weight = arrays.demand_units[job].sum(axis=1)
    last = np.minimum(
        arrays.horizon_slots - arrays.runtime_slots[job], arrays.latest_on_time_start[job]
    )
    ok = (cluster >= 0) & (start >= arrays.release_slot[job]) & (start <= last) & (weight > 0)
    ok &= ~arrays.critical[job]
    ok[ok] = arrays.allowed[job[ok], cluster[ok]]
    job, cluster, start, weight = job[ok], cluster[ok], start[ok], weight[ok]
    prefix = np.zeros((base.shape[0], base.shape[1], base.shape[2] + 1))
    np.cumsum(base, axis=2, out=prefix[:, :, 1:])
    end = start + arrays.runtime_slots[job]
    per_unit = prefix[:, cluster, end] - prefix[:, cluster, start]  # (k, jobs)
    at_grams = np.einsum("jk,kj->j", arrays.demand_units[job], per_unit)
    penalty = move_penalty_g + move_penalty_pct / 100.0 * np.maximum(at_grams, 0.0)
    keep = penalty > 0
    return MovePenalty(job[keep], cluster[keep], start[keep], penalty[keep])
