"""The online rolling-horizon API: what the simulator and the controller call every period.

A :class:`Snapshot` is "now" seen by the planner: slot 0 is the current slot, the instance's
jobs are the PENDING jobs (release and deadline relative to now; a job that arrived earlier
has release 0), ``carbon_g_per_kwh`` is the forecast from now, and :class:`RunningJob` lists
work already running, which is fixed and holds capacity for its remaining slots.
:func:`plan_snapshot` runs a policy and answers a :class:`Decision`: the pending jobs to
start now (start slot 0), and the tentative plan for the rest, to be re-planned next period.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from carbonshift.domain import Assignment, ClusterName, Instance, JobId, Plan
from carbonshift.errors import InputError
from carbonshift.planning.registry import run_policy
from carbonshift.planning.types import PlanContext, PolicyResult

__all__ = ["Decision", "RunningJob", "Snapshot", "held_units", "plan_snapshot"]


@dataclass(frozen=True, slots=True)
class RunningJob:
    """Work already running on ``cluster``: it holds ``demand`` (units per resource) for
    ``remaining_slots`` more slots, from slot 0 on. It is never moved."""

    id: JobId
    cluster: ClusterName
    demand: Mapping[str, float]
    remaining_slots: int

    def __post_init__(self) -> None:
        if self.remaining_slots < 0:
            raise InputError(
                f"remaining_slots is {self.remaining_slots} for running job {self.id!r}; give "
                "the whole number of slots (>= 0) it still occupies from now"
            )


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The planner's view now: pending jobs and forecast (``instance``), running work, and
    how long each pending job has already waited (``waited_slots``, job id -> slots before
    slot 0; the window rule releases a job after 24 h of waiting)."""

    instance: Instance
    running: tuple[RunningJob, ...] = ()
    waited_slots: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Decision:
    """A policy's answer for now: ``start_now`` (pending jobs to release at slot 0, with
    their cluster), ``held`` (pending jobs not starting now, with their tentative start in
    ``plan`` or listed unscheduled), and the full result (status, notes, figures)."""

    start_now: tuple[Assignment, ...]
    held: tuple[JobId, ...]
    plan: Plan
    result: PolicyResult
    planner_seconds: float


def held_units(instance: Instance, running: tuple[RunningJob, ...]) -> npt.NDArray[np.float64]:
    """Units held by running work, shape (clusters, resources, horizon_slots)."""
    horizon = instance.grid.horizon_slots
    index = {cluster.name: c for c, cluster in enumerate(instance.clusters)}
    resources = {r: k for k, r in enumerate(instance.resources)}
    held = np.zeros((len(instance.clusters), len(instance.resources), horizon))
    pending = {job.id for job in instance.jobs}
    for run in running:
        c = index.get(run.cluster)
        if c is None:
            raise InputError(
                f"running job {run.id!r} is on unknown cluster {run.cluster!r}; known: "
                f"{sorted(index)}"
            )
        if run.id in pending:
            raise InputError(
                f"job {run.id!r} is both running and pending; list it in one place only"
            )
        for resource, amount in run.demand.items():
            k = resources.get(resource)
            if k is None:
                raise InputError(
                    f"running job {run.id!r} asks for resource {resource!r}, not in resources "
                    f"{list(instance.resources)}"
                )
            held[c, k, : min(run.remaining_slots, horizon)] += amount
    return held


def plan_snapshot(
    snapshot: Snapshot, policy: str, params: Mapping[str, Any] | None = None
) -> Decision:
    """Plan the pending jobs of ``snapshot`` with ``policy`` around the running work.

    Raises :class:`~carbonshift.errors.InputError` for unknown policies or parameters and
    inconsistent snapshots; an infeasible or partial plan is a result (see
    ``decision.result.status`` and ``decision.plan.unscheduled``).
    """
    began = time.perf_counter()
    context = PlanContext(
        held_units=held_units(snapshot.instance, snapshot.running),
        waited_slots=dict(snapshot.waited_slots),
    )
    result = run_policy(policy, snapshot.instance, params, context)
    start_now = tuple(a for a in result.plan.assignments if a.start_slot == 0)
    now_ids = {a.job for a in start_now}
    held = tuple(job.id for job in snapshot.instance.jobs if job.id not in now_ids)
    return Decision(
        start_now=start_now,
        held=held,
        plan=result.plan,
        result=result,
        planner_seconds=time.perf_counter() - began,
    )
