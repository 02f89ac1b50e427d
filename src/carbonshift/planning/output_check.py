"""The check where a policy's answer enters carbonshift: a plan that names the instance's
jobs and clusters, each job once, every start inside the contract (docs/formats.md, plan).

Policies are plugins (``register_policy``, entry points, ``module:function``), so their
output is input: a buggy one must not make ``plan``, the simulator, the controller or the
hub write an invalid plan silently. Capacity is not checked here: an over-full plan is a
result the scores and ``check_feasibility`` report, not a broken answer.
"""

from __future__ import annotations

import numpy as np

from carbonshift.domain import Assignment, Instance, Plan
from carbonshift.errors import InputError

__all__ = ["PolicyOutputError", "check_policy_output"]

#: at most this many problems are listed in one message
_SHOWN = 5


class PolicyOutputError(InputError):
    """A policy returned a plan that breaks the plan contract (its code needs the fix)."""


def _fail(name: str, problems: list[str]) -> PolicyOutputError:
    more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
    return PolicyOutputError(
        f"policy {name!r} returned an invalid plan: {'; '.join(problems[:_SHOWN])}{more}; fix "
        "the policy: each job of the instance appears once, in assignments or unscheduled, "
        "on an allowed cluster, with release_slot <= start_slot and start_slot + "
        "runtime_slots <= horizon_slots (docs/formats.md, plan)"
    )


def check_policy_output(name: str, instance: Instance, plan: object) -> None:
    """Raise :class:`PolicyOutputError` naming policy ``name`` when ``plan`` is not a valid
    answer to ``instance``. Vectorised over assignments (a few ms at 10,000 jobs)."""
    if not isinstance(plan, Plan):
        raise _fail(name, [f"the plan is a {type(plan).__name__}, not a Plan"])
    index = {job.id: i for i, job in enumerate(instance.jobs)}
    clusters = {cluster.name: c for c, cluster in enumerate(instance.clusters)}
    problems: list[str] = []
    assignments = plan.assignments
    kinds = set(map(type, assignments))
    if not kinds <= {Assignment}:
        bad = next(k for k in kinds if k is not Assignment)
        raise _fail(name, [f"an assignment is a {bad.__name__}, not an Assignment"])
    # Assignment itself makes start_slot an int (domain/model.py): only ids are looked up here
    job_ix = np.array([index.get(a.job, -1) for a in assignments], dtype=np.int64)
    cluster_ix = np.array([clusters.get(a.cluster, -1) for a in assignments], dtype=np.int64)
    starts = [a.start_slot for a in assignments]
    try:
        start_arr = np.array(starts, dtype=np.int64)
    except OverflowError:  # a start beyond +-2**63 slots is outside every horizon
        huge = [a for a in assignments if not -(2**62) < a.start_slot < 2**62]
        raise _fail(
            name,
            [f"job {a.job!r} starts at slot {a.start_slot}, outside the horizon" for a in huge],
        ) from None
    for i in np.flatnonzero(job_ix < 0):
        problems.append(f"assignment names unknown job {assignments[i].job!r}")
    for i in np.flatnonzero(cluster_ix < 0):
        problems.append(
            f"job {assignments[i].job!r} is on unknown cluster {assignments[i].cluster!r}"
        )
    known = (job_ix >= 0) & (cluster_ix >= 0)
    release = np.array([job.release_slot for job in instance.jobs], dtype=np.int64)
    runtime = np.array([job.runtime_slots for job in instance.jobs], dtype=np.int64)
    horizon = instance.grid.horizon_slots
    ix = np.where(known, job_ix, 0)
    early = known & (start_arr < release[ix])
    late = known & (start_arr + runtime[ix] > horizon)
    for i in np.flatnonzero(early):
        problems.append(
            f"job {assignments[i].job!r} starts at slot {int(start_arr[i])}, before its "
            f"release_slot {int(release[ix[i]])}"
        )
    for i in np.flatnonzero(late):
        problems.append(
            f"job {assignments[i].job!r} starts at slot {int(start_arr[i])} and runs "
            f"{int(runtime[ix[i]])} slot(s), past the horizon of {horizon} slots"
        )
    restricted = [j for j, job in enumerate(instance.jobs) if job.allowed_clusters is not None]
    if restricted:
        for i in np.flatnonzero(known & np.isin(job_ix, restricted)):
            job = instance.jobs[int(job_ix[i])]
            if not job.allows(assignments[i].cluster):
                problems.append(
                    f"job {job.id!r} is on cluster {assignments[i].cluster!r}, not one of its "
                    f"allowed_clusters {sorted(job.allowed_clusters or ())}"
                )
    unscheduled_ix = [index.get(j, -1) for j in plan.unscheduled]
    for job_id, u in zip(plan.unscheduled, unscheduled_ix, strict=True):
        if u < 0:
            problems.append(f"unscheduled names unknown job {job_id!r}")
    counted = np.concatenate([job_ix, np.asarray(unscheduled_ix, dtype=np.int64)])
    seen = np.bincount(counted[counted >= 0], minlength=len(index))
    for k in np.flatnonzero(seen > 1):
        problems.append(f"job {instance.jobs[k].id!r} appears {int(seen[k])} times")
    for k in np.flatnonzero(seen == 0):
        problems.append(f"job {instance.jobs[k].id!r} is neither assigned nor unscheduled")
    if problems:
        raise _fail(name, problems)
