"""Why each job got its cluster and slot, or why it is unscheduled (``plan --explain``).

Facts are recomputed from the instance and the plan (carbon of the chosen start, the
cleanest on-time start, whether any start had room once the other jobs were placed); the
policy's own note (:attr:`PolicyResult.notes`) says which rule decided.
"""

from __future__ import annotations

import numpy as np

from carbonshift.domain import Instance, JobId, job_carbon_g
from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.problem import InstanceArrays, arrays_of, build_starts, carbon_g
from carbonshift.planning.types import PlanContext, PolicyResult

__all__ = ["explain"]


def explain(
    instance: Instance, result: PolicyResult, context: PlanContext | None = None
) -> dict[JobId, str]:
    """One sentence per job, in instance order."""
    arrays = arrays_of(instance, context)
    index = {job.id: i for i, job in enumerate(instance.jobs)}
    names = [c.name for c in instance.clusters]
    cluster_index = {name: c for c, name in enumerate(names)}
    starts = build_starts(arrays, on_time_only=True)
    grams = carbon_g(arrays, starts)
    bounds = np.searchsorted(starts.job, np.arange(arrays.n_jobs + 1))
    ledger = CapacityLedger(arrays)
    assigned = {}
    for a in result.plan.assignments:
        i = index.get(a.job)
        c = cluster_index.get(a.cluster)
        if i is None or c is None:
            continue
        assigned[i] = (c, a.start_slot)
        if ledger.fits(i, c, a.start_slot):
            ledger.place(i, c, a.start_slot)
    slot_h = instance.grid.slot_hours
    out: dict[JobId, str] = {}
    for i, job in enumerate(instance.jobs):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        cleanest = ""
        if hi > lo:
            best = lo + int(np.argmin(grams[lo:hi]))
            cleanest = (
                f"cleanest on-time start {grams[best]:.6g} g "
                f"({names[int(starts.cluster[best])]} slot {int(starts.start_slot[best])})"
            )
        note = result.notes.get(job.id, "")
        if i in assigned:
            c, s = assigned[i]
            end = s + job.runtime_slots
            lateness = end - job.deadline_slot
            timing = "on time" if lateness <= 0 else f"late by {lateness * slot_h:g} h"
            mine = job_carbon_g(instance, job, instance.clusters[c], s)
            parts = [f"{names[c]} slot {s}..{end - 1}, {timing}, {mine:.6g} g"]
            parts.append(cleanest or "no on-time start exists in the horizon")
        else:
            parts = ["unscheduled: " + _why_unscheduled(arrays, ledger, i, hi > lo)]
            if cleanest:
                parts.append(cleanest)
        if note:
            parts.append(note)
        out[job.id] = "; ".join(parts)
    return out


def _why_unscheduled(
    arrays: InstanceArrays, ledger: CapacityLedger, i: int, has_on_time: bool
) -> str:
    release = int(arrays.release_slot[i])
    runtime = int(arrays.runtime_slots[i])
    horizon = arrays.horizon_slots
    if release + runtime > horizon:
        return (
            f"release slot {release} + runtime {runtime} slots passes the horizon ({horizon} slots)"
        )
    allowed = np.flatnonzero(arrays.allowed[i])
    if allowed.size == 0:
        return "no cluster is allowed"
    need = arrays.demand_units[i]
    peak = arrays.free_units[allowed].max(axis=2)  # (allowed, k)
    if not np.any(np.all(peak + 1e-9 >= need[None, :], axis=1)):
        return "its demand exceeds the free capacity of every allowed cluster in every slot"
    for c in allowed:
        ok = ledger.fitting_starts(i, int(c))
        ok[:release] = False
        if ok.any():
            s = int(np.flatnonzero(ok)[0])
            late = "" if has_on_time else " (late: no on-time start exists)"
            return f"room existed (e.g. slot {s}){late} but the policy did not take it"
    return "every start with room is taken by the jobs placed before it"
