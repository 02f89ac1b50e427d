"""The online rolling-horizon API: the one planning seam of the simulator, the controller and
the hub (docs/design/0002, "One planning seam").

:func:`build_snapshot` turns "now" into the planner's view: each caller maps its own objects
onto :class:`PendingWork` (work to plan), :class:`HeldWork` (running or committed work that
holds capacity), domain clusters and a per-cluster forecast, all in hours on the caller's own
time axis, and gets one :class:`Snapshot` built with the slot rules of
:mod:`carbonshift.domain.slots`.

A :class:`Snapshot` is "now" seen by the planner: slot 0 is the current slot, the instance's
jobs are the PENDING jobs (release and deadline relative to now; a job that arrived earlier
has release 0), ``carbon_g_per_kwh`` is the forecast from now, and :class:`RunningJob` lists
work already running, which is fixed and holds capacity for its remaining slots.
:func:`plan_snapshot` runs a policy and answers a :class:`Decision`: the pending jobs to
start now (start slot 0), and the tentative plan for the rest, to be re-planned next period.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from carbonshift.domain import (
    Assignment,
    Cluster,
    ClusterName,
    Instance,
    Job,
    JobId,
    Plan,
    TimeGrid,
)
from carbonshift.domain import slots as slot_rules
from carbonshift.errors import InputError
from carbonshift.planning.hold import HoldOutcome, HoldRule, apply_hold_rule
from carbonshift.planning.registry import run_policy
from carbonshift.planning.types import PlanContext, PolicyResult

__all__ = [
    "Decision",
    "HeldWork",
    "PendingWork",
    "RunningJob",
    "Snapshot",
    "build_snapshot",
    "held_units",
    "plan_snapshot",
]


@dataclass(frozen=True, slots=True)
class RunningJob:
    """Work already running on ``cluster``: it holds ``demand`` (units per resource) in
    slots ``first_slot .. remaining_slots - 1`` (``first_slot`` > 0: committed work that
    starts later). It is never moved."""

    id: JobId
    cluster: ClusterName
    demand: Mapping[str, float]
    remaining_slots: int
    first_slot: int = 0

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
    previous: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    """Job id -> (cluster, start slot) an earlier round planned (hysteresis)."""
    exempt: frozenset[str] = frozenset()
    """Pending ids that are running work planned again (no release limit)."""
    origin_slot: int = 0
    """Slot 0's index on the caller's time axis (whole slots since its hour 0)."""

    def hold(
        self,
        plan: Plan,
        rule: HoldRule,
        released_this_slot: int = 0,
        reserved_units: npt.NDArray[np.float64] | None = None,
    ) -> HoldOutcome:
        """The policy's ``plan`` after the hold rules (:mod:`carbonshift.planning.hold`);
        ``released_this_slot``: releases earlier passes of the same slot already made;
        ``reserved_units``: the policy's room for future work (``PolicyResult``)."""
        return apply_hold_rule(
            self.instance,
            self.context(),
            plan,
            rule,
            previous=self.previous,
            exempt=self.exempt,
            released_this_slot=released_this_slot,
            reserved_units=reserved_units,
        )

    def context(self) -> PlanContext:
        """The policy's context: units held by running work, slots waited, the round
        before's plan (the incumbent)."""
        return PlanContext(
            held_units=held_units(self.instance, self.running),
            waited_slots=dict(self.waited_slots),
            origin_slot=self.origin_slot,
            incumbent=dict(self.previous),
        )


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


@dataclass(frozen=True, slots=True)
class PendingWork:
    """Work to plan now, in hours on the caller's time axis.

    ``runtime_h`` is what is left to run; ``deadline_h`` is absolute (``inf``: none, never
    late); ``submit_h`` counts ``waited_slots`` (None: not counted, e.g. running work planned
    again); ``allowed_clusters`` None means every cluster.
    """

    id: str
    demand: Mapping[str, float]
    runtime_h: float
    deadline_h: float
    submit_h: float | None = None
    critical: bool = False
    allowed_clusters: frozenset[str] | None = None
    running: bool = False
    """Running work planned again (interruptible): not counted by the release rate limit."""
    planned_cluster: str | None = None
    planned_start_h: float | None = None
    """Where and when an earlier round planned it (the hold rule's hysteresis keeps it)."""


@dataclass(frozen=True, slots=True)
class HeldWork:
    """Running or committed work that holds ``demand`` on ``cluster`` from ``start_h`` (None:
    already running) until ``end_h`` (None: past the whole horizon), hours on the caller's
    axis. Resources the planner does not plan are ignored."""

    id: str
    cluster: str
    demand: Mapping[str, float]
    end_h: float | None
    start_h: float | None = None


def build_snapshot(
    *,
    now_h: float,
    slot_minutes: int,
    resources: Sequence[str],
    clusters: Sequence[Cluster],
    forecast_g_per_kwh: Mapping[str, Sequence[float] | npt.NDArray[np.float64]],
    pending: Sequence[PendingWork],
    running: Sequence[HeldWork] = (),
    future_demand: Sequence[float] | npt.NDArray[np.float64] | None = None,
) -> Snapshot:
    """The planner's view at ``now_h`` (the start of slot 0): one instance and its context.

    Slot rules (:mod:`carbonshift.domain.slots`): pending work has release 0,
    ``runtime_slots = ceil(runtime_h / slot)``, ``deadline_slot = floor((deadline_h - now_h) /
    slot)``; held work holds every slot it touches within the horizon; ``waited_slots`` counts
    whole slots since submission. The horizon is the forecast's length (every cluster's
    forecast must have the same, and cover the longest pending run: see
    :func:`carbonshift.domain.slots.horizon_slots`); negative intensities count as 0.
    ``future_demand`` (CJPS) is the first resource's forecast arrivals per slot.
    """
    lengths = {len(forecast_g_per_kwh.get(c.name, ())) for c in clusters}
    if len(lengths) != 1 or 0 in lengths:
        raise InputError(
            f"forecast lengths are {sorted(lengths)} slots across clusters "
            f"{[c.name for c in clusters]}; give every cluster the same horizon (>= 1 slot)"
        )
    horizon = lengths.pop()
    names = {c.name for c in clusters}
    planned = set(resources)
    jobs = tuple(
        Job(
            id=JobId(work.id),
            demand=dict(work.demand),
            runtime_slots=slot_rules.runtime_slots(work.runtime_h, slot_minutes),
            release_slot=0,
            deadline_slot=slot_rules.deadline_slot(work.deadline_h, slot_minutes, now_h),
            critical=work.critical,
            allowed_clusters=(
                None
                if work.allowed_clusters is None
                else frozenset(ClusterName(c) for c in work.allowed_clusters)
            ),
        )
        for work in pending
    )
    held = tuple(
        RunningJob(
            id=JobId(work.id),
            cluster=ClusterName(work.cluster),
            demand={r: a for r, a in work.demand.items() if r in planned},
            remaining_slots=(
                horizon
                if work.end_h is None
                else max(0, slot_rules.end_slot(work.end_h, slot_minutes, now_h))
            ),
            first_slot=(
                0
                if work.start_h is None
                else slot_rules.start_slot_of(work.start_h, slot_minutes, now_h)
            ),
        )
        for work in running
        if work.cluster in names
    )
    instance = Instance(
        grid=TimeGrid(slot_minutes=slot_minutes, horizon_slots=horizon),
        resources=tuple(resources),
        clusters=tuple(clusters),
        carbon_g_per_kwh={
            ClusterName(c.name): tuple(max(float(v), 0.0) for v in forecast_g_per_kwh[c.name])
            for c in clusters
        },
        jobs=jobs,
        future_demand=(
            None
            if future_demand is None
            else {resources[0]: tuple(max(float(v), 0.0) for v in future_demand)}
        ),
    )
    waited = {
        work.id: slot_rules.waited_slots(work.submit_h, slot_minutes, now_h)
        for work in pending
        if work.submit_h is not None
    }
    previous = {
        work.id: (
            work.planned_cluster,
            slot_rules.start_slot_of(work.planned_start_h, slot_minutes, now_h),
        )
        for work in pending
        if work.planned_cluster is not None
        and work.planned_start_h is not None
        and not work.running
    }
    return Snapshot(
        instance=instance,
        running=held,
        waited_slots=waited,
        previous=previous,
        exempt=frozenset(work.id for work in pending if work.running),
        origin_slot=slot_rules.start_slot_of(now_h, slot_minutes, 0.0),
    )


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
            held[c, k, max(0, run.first_slot) : min(run.remaining_slots, horizon)] += amount
    return held


def plan_snapshot(
    snapshot: Snapshot,
    policy: str,
    params: Mapping[str, Any] | None = None,
    rule: HoldRule | None = None,
) -> Decision:
    """Plan the pending jobs of ``snapshot`` with ``policy`` around the running work.

    Raises :class:`~carbonshift.errors.InputError` for unknown policies or parameters and
    inconsistent snapshots; an infeasible or partial plan is a result (see
    ``decision.result.status`` and ``decision.plan.unscheduled``).
    """
    began = time.perf_counter()
    result = run_policy(policy, snapshot.instance, params, snapshot.context())
    if rule is not None:
        held_plan = snapshot.hold(result.plan, rule, reserved_units=result.reserved_units)
        notes = {**result.notes, **held_plan.reasons}
        result = replace(result, plan=held_plan.plan, notes=notes)
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
