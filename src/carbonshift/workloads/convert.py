"""From real time to slots: workload jobs become planning jobs (docs/formats.md (scenario), "Time").

The scalar rules live in :mod:`carbonshift.domain.slots` (re-exported here); this module
vectorises them over a whole workload.

For a slot of ``slot_h`` hours and a planning origin ``origin_h`` (hours since the workload's
start, where slot 0 begins):

- ``runtime_slots = ceil(runtime_h / slot_h)`` (at least 1; execution still lasts the exact
  ``runtime_h``);
- ``release_slot`` = the first slot boundary at or after the submission, relative to the
  origin, never negative: ``max(0, ceil((submit_h - origin_h) / slot_h))``;
- ``deadline_slot = floor((deadline_h - origin_h) / slot_h)`` (it may be negative: a job
  whose deadline has passed can only be late); a job without a deadline gets
  ``horizon_slots`` (docs/formats.md (planning instance) default).

Quotients within 1e-9 slot of a whole number count as that number, so that 0.5 h on
30-minute slots is exactly 1 slot despite floating point.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from carbonshift.domain import ClusterName, Job, JobId
from carbonshift.domain.slots import (
    SLOT_EPS,
    deadline_slot,
    release_slot,
    runtime_slots,
    slot_hours,
)
from carbonshift.errors import InputError
from carbonshift.workloads.model import Workload, WorkloadJob

__all__ = [
    "SlotTimes",
    "deadline_slot",
    "release_slot",
    "runtime_slots",
    "slot_times",
    "to_planning_jobs",
]

IntArray = npt.NDArray[np.int64]
_EPS = SLOT_EPS
_slot_h = slot_hours


@dataclass(frozen=True, slots=True, eq=False)
class SlotTimes:
    """Per job of a workload (same order): release, run length and deadline in slots."""

    release_slot: IntArray
    runtime_slots: IntArray
    deadline_slot: IntArray


def slot_times(
    workload: Workload,
    *,
    slot_minutes: int,
    origin_h: float = 0.0,
    horizon_slots: int | None = None,
) -> SlotTimes:
    """The slot rules of the module docstring, vectorised over a whole workload."""
    slot_h = _slot_h(slot_minutes)
    runtime = np.maximum(1, np.ceil(workload.runtime_h / slot_h - _EPS)).astype(np.int64)
    release = np.maximum(0, np.ceil((workload.submit_h - origin_h) / slot_h - _EPS)).astype(
        np.int64
    )
    has = workload.has_deadline()
    if not has.all() and horizon_slots is None:
        missing = workload.ids[int(np.flatnonzero(~has)[0])]
        raise InputError(
            f"workload job {missing!r} has no deadline; pass horizon_slots (the default "
            "deadline_slot) or give the workload deadlines (deadline_factor)"
        )
    raw = np.floor((np.where(has, workload.deadline_h, 0.0) - origin_h) / slot_h + _EPS)
    deadline = np.where(has, raw, horizon_slots if horizon_slots is not None else 0).astype(
        np.int64
    )
    return SlotTimes(release, runtime, deadline)


def to_planning_jobs(
    jobs: Workload | Iterable[WorkloadJob],
    *,
    slot_minutes: int,
    origin_h: float = 0.0,
    horizon_slots: int | None = None,
    allowed_clusters: Iterable[str] | None = None,
) -> list[Job]:
    """Planning jobs (:class:`carbonshift.domain.Job`) for ``jobs`` on the given slot grid.

    ``origin_h`` is where slot 0 begins, in hours since the workload's start. Demand and
    criticality are carried over; ``allowed_clusters`` (default: all) applies to every job.
    """
    workload = jobs if isinstance(jobs, Workload) else Workload.from_jobs(jobs)
    times = slot_times(
        workload, slot_minutes=slot_minutes, origin_h=origin_h, horizon_slots=horizon_slots
    )
    allowed = (
        None if allowed_clusters is None else frozenset(ClusterName(c) for c in allowed_clusters)
    )
    demand_columns = {k: v.tolist() for k, v in workload.demand.items()}
    release = times.release_slot.tolist()
    runtime = times.runtime_slots.tolist()
    deadline = times.deadline_slot.tolist()
    critical = workload.critical.tolist()
    return [
        Job(
            id=JobId(job_id),
            demand={k: column[i] for k, column in demand_columns.items() if column[i] != 0},
            runtime_slots=runtime[i],
            deadline_slot=deadline[i],
            release_slot=release[i],
            allowed_clusters=allowed,
            critical=critical[i],
        )
        for i, job_id in enumerate(workload.ids)
    ]
