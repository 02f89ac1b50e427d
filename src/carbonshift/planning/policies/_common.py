"""Helpers shared by the policies: turning chosen (job, cluster, start) triples into results."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from carbonshift.domain import Assignment, Instance, JobId, Plan
from carbonshift.planning.problem import InstanceArrays
from carbonshift.planning.types import PlanStatus, PolicyResult

__all__ = ["release_order", "result_of"]


def release_order(arrays: InstanceArrays) -> list[int]:
    """Job indexes by release slot, then input order (a FIFO queue)."""
    return [int(i) for i in np.argsort(arrays.release_slot, kind="stable")]


def result_of(
    instance: Instance,
    policy: str,
    chosen: Mapping[int, tuple[int, int]],
    *,
    seconds: float,
    status: PlanStatus = PlanStatus.FEASIBLE,
    notes: Mapping[int, str] | None = None,
    stats: Mapping[str, float] | None = None,
    order: Iterable[int] | None = None,
) -> PolicyResult:
    """A result listing every job once: ``chosen`` maps job index -> (cluster index, start)."""
    jobs = instance.jobs
    names = [c.name for c in instance.clusters]
    # by start, then index, as one stable sort of arrays (a key function per job cost 0.01 s
    # of a 10,000-job plan); ``order`` only says which jobs to list
    listed = list(order) if order is not None else range(len(jobs))
    index = np.fromiter((i for i in listed if i in chosen), dtype=np.int64)
    start = np.fromiter((chosen[i][1] for i in index.tolist()), dtype=np.int64, count=len(index))
    ranked = index[np.lexsort((index, start))].tolist()
    assignments = [
        Assignment(jobs[i].id, names[cluster], int(slot))
        for i, (cluster, slot) in zip(ranked, map(chosen.__getitem__, ranked), strict=True)
    ]
    unscheduled = [job.id for i, job in enumerate(jobs) if i not in chosen]
    plan = Plan.of(policy, assignments, unscheduled, seconds)
    job_notes: dict[JobId, str] = {}
    for i, text in (notes or {}).items():
        job_notes[jobs[i].id] = text
    return PolicyResult(plan=plan, status=status, notes=job_notes, stats=dict(stats or {}))
