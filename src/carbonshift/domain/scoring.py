"""Scores and feasibility of a plan, exactly as docs/formats.md (plan) defines them.

Everyone computes scores the same way (slot_h = slot_minutes / 60):

- ``operational_g``: over assigned jobs and occupied slots,
  ``sum_k demand[k] * watts_per_unit[k] / 1000 * pue * slot_h * carbon_g_per_kwh[cluster][slot]``;
- ``embodied_g``: over assigned jobs, ``sum_k demand[k] * embodied_g_per_unit_hour[k] *
  runtime_slots * slot_h``;
- ``gru``: over clusters and slots, (demand of the first resource running there) /
  ``max(1, carbon_g_per_kwh)``;
- ``on_time``, ``late``, ``unscheduled``: job counts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from carbonshift.domain.grams import embodied_g, operational_g, run_grams
from carbonshift.domain.model import Assignment, Cluster, Instance, Job, Plan

__all__ = [
    "Scores",
    "Violation",
    "ViolationKind",
    "check_feasibility",
    "is_on_time",
    "job_carbon_g",
    "score_plan",
]


@dataclass(frozen=True, slots=True)
class Scores:
    """The scores of a plan (docs/formats.md (plan))."""

    operational_g: float
    embodied_g: float
    gru: float
    on_time: int
    late: int
    unscheduled: int

    @property
    def carbon_g(self) -> float:
        """Operational plus embodied grams."""
        return self.operational_g + self.embodied_g


class ViolationKind(StrEnum):
    """What a feasibility violation is about."""

    UNKNOWN_JOB = "unknown_job"
    MISSING_JOB = "missing_job"
    DUPLICATE_JOB = "duplicate_job"
    UNKNOWN_CLUSTER = "unknown_cluster"
    NOT_ALLOWED = "not_allowed"
    BEFORE_RELEASE = "before_release"
    PAST_HORIZON = "past_horizon"
    OVER_CAPACITY = "over_capacity"


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule of a plan, with a message that says what and where."""

    kind: ViolationKind
    message: str
    job: str | None = None
    cluster: str | None = None
    slot: int | None = None
    resource: str | None = None


def is_on_time(job: Job, start_slot: int) -> bool:
    """On time when ``start + runtime_slots <= deadline_slot``."""
    return start_slot + job.runtime_slots <= job.deadline_slot


def job_carbon_g(instance: Instance, job: Job, cluster: Cluster, start_slot: int) -> float:
    """Operational plus embodied grams of ``job`` started at ``start_slot`` on ``cluster``.

    This is ``c_ijs`` of ALGORITHMS.md: the carbon series is summed over the occupied slots.
    """
    slot_h = instance.grid.slot_hours
    series = instance.carbon_g_per_kwh[cluster.name]
    ci_sum = float(sum(series[start_slot : start_slot + job.runtime_slots]))
    return run_grams(job.demand, cluster, slot_h * ci_sum, job.runtime_slots * slot_h)


def score_plan(instance: Instance, plan: Plan) -> Scores:
    """Compute the scores of ``plan`` on ``instance``.

    Assignments to unknown jobs or clusters are ignored here; :func:`check_feasibility`
    reports them. Slots past the horizon contribute nothing to carbon or GRU.
    """
    jobs = {job.id: job for job in instance.jobs}
    clusters = {cluster.name: cluster for cluster in instance.clusters}
    horizon = instance.grid.horizon_slots
    first = instance.resources[0]
    slot_h = instance.grid.slot_hours
    use = {name: np.zeros(horizon) for name in clusters}
    operational = embodied = 0.0
    on_time = late = 0
    for assignment in plan.assignments:
        job = jobs.get(assignment.job)
        cluster = clusters.get(assignment.cluster)
        if job is None or cluster is None:
            continue
        start = assignment.start_slot
        stop = min(start + job.runtime_slots, horizon)
        lo = max(start, 0)
        ci_sum = float(sum(instance.carbon_g_per_kwh[cluster.name][lo:stop])) if stop > lo else 0.0
        operational += operational_g(job.demand, cluster, slot_h * ci_sum)
        embodied += embodied_g(job.demand, cluster, job.runtime_slots * slot_h)
        if stop > lo:
            use[cluster.name][lo:stop] += job.demand.get(first, 0.0)
        if is_on_time(job, start):
            on_time += 1
        else:
            late += 1
    gru = 0.0
    for name, used in use.items():
        ci = np.maximum(1.0, np.asarray(instance.carbon_g_per_kwh[name], dtype=float))
        gru += float(np.sum(used / ci))
    return Scores(
        operational_g=operational,
        embodied_g=embodied,
        gru=gru,
        on_time=on_time,
        late=late,
        unscheduled=len(plan.unscheduled),
    )


def check_feasibility(
    instance: Instance, plan: Plan, *, tolerance: float = 1e-9
) -> list[Violation]:
    """List every violation of ``plan``: an empty list means the plan is feasible.

    Checks that every job appears exactly once (assigned or unscheduled), that assignments
    name known jobs and clusters, respect ``release_slot``, the horizon and
    ``allowed_clusters``, and that no cluster, slot and resource is over capacity.
    """
    violations: list[Violation] = []
    jobs: dict[str, Job] = {job.id: job for job in instance.jobs}
    clusters: dict[str, Cluster] = {cluster.name: cluster for cluster in instance.clusters}
    horizon = instance.grid.horizon_slots
    mentioned = Counter([a.job for a in plan.assignments] + list(plan.unscheduled))
    for job_id, count in mentioned.items():
        if job_id not in jobs:
            violations.append(
                Violation(ViolationKind.UNKNOWN_JOB, f"plan names unknown job {job_id!r}", job_id)
            )
        elif count > 1:
            violations.append(
                Violation(
                    ViolationKind.DUPLICATE_JOB,
                    f"job {job_id!r} appears {count} times; it must appear exactly once",
                    job_id,
                )
            )
    for missing_id in jobs:
        if missing_id not in mentioned:
            violations.append(
                Violation(
                    ViolationKind.MISSING_JOB,
                    f"job {missing_id!r} is neither assigned nor unscheduled",
                    missing_id,
                )
            )
    use: dict[tuple[str, str], np.ndarray] = {
        (name, resource): np.zeros(horizon) for name in clusters for resource in instance.resources
    }
    for assignment in plan.assignments:
        violations.extend(_check_assignment(instance, assignment, jobs, clusters))
        job = jobs.get(assignment.job)
        if job is None or assignment.cluster not in clusters:
            continue
        lo = max(assignment.start_slot, 0)
        hi = min(assignment.start_slot + job.runtime_slots, horizon)
        for resource, amount in job.demand.items():
            if hi > lo:
                use[(assignment.cluster, resource)][lo:hi] += amount
    for (name, resource), used in use.items():
        cluster = clusters[name]
        cap = np.array([cluster.capacity_at(resource, s) for s in range(horizon)])
        for slot in np.flatnonzero(used > cap + tolerance):
            violations.append(
                Violation(
                    ViolationKind.OVER_CAPACITY,
                    f"cluster {name!r} slot {int(slot)} uses {used[slot]:g} {resource}, over its "
                    f"capacity {cap[slot]:g}",
                    cluster=name,
                    slot=int(slot),
                    resource=resource,
                )
            )
    return violations


def _check_assignment(
    instance: Instance,
    assignment: Assignment,
    jobs: dict[str, Job],
    clusters: dict[str, Cluster],
) -> list[Violation]:
    out: list[Violation] = []
    job = jobs.get(assignment.job)
    if job is None:
        return out
    where = f"job {job.id!r}"
    if assignment.cluster not in clusters:
        out.append(
            Violation(
                ViolationKind.UNKNOWN_CLUSTER,
                f"{where} is assigned to unknown cluster {assignment.cluster!r}",
                job.id,
                assignment.cluster,
            )
        )
    elif not job.allows(assignment.cluster):
        out.append(
            Violation(
                ViolationKind.NOT_ALLOWED,
                f"{where} may not run on cluster {assignment.cluster!r}; allowed: "
                f"{sorted(job.allowed_clusters or ())}",
                job.id,
                assignment.cluster,
            )
        )
    if assignment.start_slot < job.release_slot:
        out.append(
            Violation(
                ViolationKind.BEFORE_RELEASE,
                f"{where} starts at slot {assignment.start_slot}, before its release_slot "
                f"{job.release_slot}",
                job.id,
                assignment.cluster,
                assignment.start_slot,
            )
        )
    end = assignment.start_slot + job.runtime_slots
    if end > instance.grid.horizon_slots:
        out.append(
            Violation(
                ViolationKind.PAST_HORIZON,
                f"{where} ends at slot {end}, past horizon_slots {instance.grid.horizon_slots}",
                job.id,
                assignment.cluster,
                assignment.start_slot,
            )
        )
    return out
