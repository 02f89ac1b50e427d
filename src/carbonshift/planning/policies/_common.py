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
    clusters = instance.clusters
    indexes = list(order) if order is not None else range(len(jobs))
    assignments = [
        Assignment(jobs[i].id, clusters[chosen[i][0]].name, int(chosen[i][1]))
        for i in sorted(indexes, key=lambda i: (chosen[i][1], i) if i in chosen else (0, i))
        if i in chosen
    ]
    unscheduled = [jobs[i].id for i in range(len(jobs)) if i not in chosen]
    plan = Plan.of(policy, assignments, unscheduled, seconds)
    job_notes: dict[JobId, str] = {}
    for i, text in (notes or {}).items():
        job_notes[jobs[i].id] = text
    return PolicyResult(plan=plan, status=status, notes=job_notes, stats=dict(stats or {}))
