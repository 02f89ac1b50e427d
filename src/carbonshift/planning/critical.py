"""Critical jobs first: one wrapper that makes any policy honour ``critical``.

docs/formats.md says a critical job should start as early as possible. Policies built around
an objective of their own (Caspian's LP, the CJPS roundings, FLUIDOS's least grams) have no
place for that rule, so :func:`critical_first` applies it around them: each critical job,
in release order, takes its earliest start that fits over all its allowed clusters (ties:
the fewest grams), its units are then held like running work (``PlanContext.held_units``),
and the wrapped policy plans the other jobs around them. A critical job that fits nowhere in
the horizon is unscheduled, with a note.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from carbonshift.domain import Assignment, Instance, JobId, Plan, grams_of
from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.policies._common import release_order
from carbonshift.planning.problem import InstanceArrays, arrays_of
from carbonshift.planning.types import PlanContext, PolicyResult

__all__ = ["critical_first", "start_grams"]

Runner = Callable[[Instance, PlanContext | None], PolicyResult]


def start_grams(arrays: InstanceArrays, job: int, cluster: int) -> np.ndarray:
    """Operational + embodied grams of ``job`` on ``cluster`` for every start slot (inf
    where its run would pass the horizon)."""
    runtime = int(arrays.runtime_slots[job])
    horizon = arrays.horizon_slots
    kw = float(
        arrays.demand_units[job] @ arrays.watts_per_unit[cluster] / 1000.0 * arrays.pue[cluster]
    )
    embodied = float(arrays.demand_units[job] @ arrays.embodied_g_per_unit_hour[cluster])
    grams = np.full(horizon, np.inf)
    if runtime <= horizon:
        prefix = np.concatenate([[0.0], np.cumsum(arrays.ci_g_per_kwh[cluster])])
        window = prefix[runtime:] - prefix[:-runtime]
        grams[: horizon - runtime + 1] = grams_of(
            kw, arrays.slot_hours * window, embodied, runtime * arrays.slot_hours
        )
    return grams


def _earliest(arrays: InstanceArrays, ledger: CapacityLedger, job: int) -> tuple[int, int] | None:
    """(cluster, start) of the earliest fitting start at or after release; ties: fewest grams."""
    release = int(arrays.release_slot[job])
    best: tuple[int, float, int] | None = None
    for cluster in np.flatnonzero(arrays.allowed[job]):
        fits = np.flatnonzero(ledger.fitting_starts(job, int(cluster)))
        fits = fits[fits >= release]
        if fits.size == 0:
            continue
        start = int(fits[0])
        grams = float(start_grams(arrays, job, int(cluster))[start])
        if best is None or (start, grams) < (best[0], best[1]):
            best = (start, grams, int(cluster))
    return None if best is None else (best[2], best[0])


def critical_first(run: Runner, instance: Instance, context: PlanContext | None) -> PolicyResult:
    """Place critical jobs at their earliest start, then let ``run`` plan the rest."""
    critical = [i for i, job in enumerate(instance.jobs) if job.critical]
    if not critical:
        return run(instance, context)
    began = time.perf_counter()
    arrays = arrays_of(instance, context)
    ledger = CapacityLedger(arrays)
    placed: dict[int, tuple[int, int]] = {}
    for job in (i for i in release_order(arrays) if arrays.critical[i]):
        where = _earliest(arrays, ledger, job)
        if where is not None:
            ledger.place(job, *where)
            placed[job] = where
    held = arrays.capacity_units - ledger.free_units
    placing_s = time.perf_counter() - began
    rest = replace(instance, jobs=tuple(j for j in instance.jobs if not j.critical))
    # the caller's context with the critical jobs' room held: every other field (the
    # slots waited, where slot 0 lies on the caller's axis) goes through as it came
    inner = run(
        rest,
        PlanContext(held_units=held) if context is None else replace(context, held_units=held),
    )
    jobs, clusters = instance.jobs, instance.clusters
    notes: dict[JobId, str] = dict(inner.notes)
    assignments = list(inner.plan.assignments)
    unscheduled = list(inner.plan.unscheduled)
    for job in critical:
        if job in placed:
            cluster, start = placed[job]
            assignments.append(Assignment(jobs[job].id, clusters[cluster].name, start))
            notes[jobs[job].id] = "critical: its earliest start that fits (fewest grams on ties)"
        else:
            unscheduled.append(jobs[job].id)
            notes[jobs[job].id] = "critical, but it fits on no allowed cluster in the horizon"
    order = {job.id: i for i, job in enumerate(jobs)}
    assignments.sort(key=lambda a: (a.start_slot, order[a.job]))
    unscheduled.sort(key=order.__getitem__)
    plan = Plan.of(
        inner.plan.policy, assignments, unscheduled, inner.plan.solve_seconds + placing_s
    )
    return replace(inner, plan=plan, notes=notes)
