"""``greenest``: each job, in release order, takes its cleanest fitting start.

A user's own policy, written only against the public :mod:`carbonshift.policy` module.
Per job (first come, first served), among the allowed clusters and the starts that fit in
the capacity left, before its deadline and at most ``max_wait_slots`` after its release, it
takes the start whose run sees the least forecast intensity (g/kWh, summed over the run's
slots and weighted by the cluster's watts per unit). A job with no on-time room takes its
earliest fitting start; a job that fits nowhere is unscheduled.
"""

from __future__ import annotations

import time

import numpy as np

from carbonshift.policy import (
    CapacityLedger,
    Instance,
    PlanContext,
    PolicyResult,
    arrays_of,
    build_result,
    register_policy,
    release_order,
)


@register_policy("greenest", params={"max_wait_slots": 24})
def greenest(
    instance: Instance, context: PlanContext | None = None, max_wait_slots: int = 24
) -> PolicyResult:
    """Each job, in release order, takes its cleanest fitting start (bounded wait)."""
    began = time.perf_counter()
    arrays = arrays_of(instance, context)
    ledger = CapacityLedger(arrays)
    horizon = arrays.horizon_slots
    chosen: dict[int, tuple[int, int]] = {}
    notes: dict[int, str] = {}
    for job in release_order(arrays):
        runtime = int(arrays.runtime_slots[job])
        release = int(arrays.release_slot[job])
        latest = min(int(arrays.latest_on_time_start[job]), release + max_wait_slots)
        best: tuple[float, int, int] | None = None
        earliest: tuple[int, int] | None = None
        for cluster in np.flatnonzero(arrays.allowed[job]):
            c = int(cluster)
            ok = ledger.fitting_starts(job, c)
            ok[: min(release, horizon)] = False
            hits = np.flatnonzero(ok)
            if not hits.size:
                continue
            if earliest is None or int(hits[0]) < earliest[1]:
                earliest = (c, int(hits[0]))
            sums = np.convolve(arrays.ci_g_per_kwh[c], np.ones(runtime), mode="valid")
            cost = sums * float(arrays.watts_per_unit[c].max()) * float(arrays.pue[c])
            for start in hits[hits <= latest]:
                candidate = (float(cost[start]), int(start), c)
                if best is None or candidate < best:
                    best = candidate
        if best is not None:
            chosen[job] = (best[2], best[1])
            notes[job] = f"greenest: cleanest on-time start (cost {best[0]:.0f})"
        elif earliest is not None:
            chosen[job] = earliest
            notes[job] = "greenest: no on-time room; earliest fitting start"
        else:
            notes[job] = "greenest: no room on any allowed cluster before the horizon"
            continue
        ledger.place(job, *chosen[job])
    return build_result(instance, "greenest", chosen, began=began, notes=notes)
