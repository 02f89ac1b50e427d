"""``fluidos``: the FLUIDOS carbon-aware meta-orchestrator's per-request choice."""

from __future__ import annotations

import time

import numpy as np

from carbonshift.domain import Instance
from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.policies._common import release_order, result_of
from carbonshift.planning.problem import arrays_of, build_starts, carbon_g
from carbonshift.planning.types import PlanContext, PolicyResult

__all__ = ["fluidos"]


def fluidos(
    instance: Instance, context: PlanContext | None = None, *, late_fallback: bool = True
) -> PolicyResult:
    """Each job in arrival order takes the (cluster, start) with the least operational +
    embodied grams among those that fit the remaining capacity and meet its deadline.

    Roch-Neirey, FLUIDOS thesis, chapter 3 section 4.2, eqs. 3.1-3.3 (operational = power x
    intensity x duration, embodied = node embodied / lifetime x duration x power share), read
    as ALGORITHMS.md fixes it: operational carbon is integrated over the occupied slots
    (``c_ijs``) and embodied carbon is charged per unit-hour. Deadlines are completions.

    The thesis gives a request that cannot meet its deadline no start; with ``late_fallback``
    (default) such a job takes its earliest fitting start instead (least lateness, fail open),
    and ``--explain`` says so. Without it the job is unscheduled.
    """
    began = time.perf_counter()
    arrays = arrays_of(instance, context)
    starts = build_starts(arrays, on_time_only=False)
    grams = carbon_g(arrays, starts)
    bounds = np.searchsorted(starts.job, np.arange(arrays.n_jobs + 1))
    ledger = CapacityLedger(arrays)
    chosen: dict[int, tuple[int, int]] = {}
    notes: dict[int, str] = {}
    for i in release_order(arrays):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        cluster = starts.cluster[lo:hi]
        start = starts.start_slot[lo:hi]
        fit = ledger.fitting_starts_everywhere(i)[cluster, start]
        on_time = start <= arrays.latest_on_time_start[i]
        candidates = np.flatnonzero(fit & on_time)
        if candidates.size:
            # least grams; ties: earliest start, then the cluster listed first
            pick = candidates[
                np.lexsort((cluster[candidates], start[candidates], grams[lo:hi][candidates]))[0]
            ]
            notes[i] = (
                f"fluidos: least carbon ({grams[lo + pick]:.6g} g) of {candidates.size} "
                "on-time starts with room"
            )
        elif late_fallback and fit.any():
            late = np.flatnonzero(fit)
            pick = late[np.lexsort((cluster[late], start[late]))[0]]
            notes[i] = "fluidos: no on-time start has room; earliest start with room (late)"
        else:
            notes[i] = (
                "fluidos: no on-time start has room"
                if fit.any()
                else "fluidos: no start with room before the horizon"
            )
            continue
        c, s = int(cluster[pick]), int(start[pick])
        ledger.place(i, c, s)
        chosen[i] = (c, s)
    return result_of(instance, "fluidos", chosen, seconds=time.perf_counter() - began, notes=notes)
