"""``asap``: the carbon-agnostic baseline, a FIFO queue in front of the default scheduler."""

from __future__ import annotations

import time

import numpy as np

from carbonshift.domain import Instance
from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.policies._common import release_order, result_of
from carbonshift.planning.problem import arrays_of
from carbonshift.planning.types import PlanContext, PolicyResult

__all__ = ["asap"]


def asap(instance: Instance, context: PlanContext | None = None) -> PolicyResult:
    """Jobs in release order take their earliest fitting start; ties go to the cluster listed
    first. Carbon-agnostic: the baseline of every carbon-saving figure (Caspian section V's
    "baseline" and the CO2 scheduler's default kube-scheduler play this role in the papers).
    A job that fits nowhere before the horizon ends is unscheduled.
    """
    began = time.perf_counter()
    arrays = arrays_of(instance, context)
    ledger = CapacityLedger(arrays)
    chosen: dict[int, tuple[int, int]] = {}
    notes: dict[int, str] = {}
    horizon = arrays.horizon_slots
    for i in release_order(arrays):
        release = int(arrays.release_slot[i])
        best: tuple[int, int] | None = None
        for c in np.flatnonzero(arrays.allowed[i]):
            ok = ledger.fitting_starts(i, int(c))
            ok[: min(release, horizon)] = False
            hits = np.flatnonzero(ok)
            if hits.size and (best is None or int(hits[0]) < best[1]):
                best = (int(c), int(hits[0]))
        if best is None:
            notes[i] = "asap: no allowed cluster has room for it in any slot before the horizon"
            continue
        ledger.place(i, *best)
        chosen[i] = best
        notes[i] = "asap: earliest slot with room, first listed cluster on ties"
    return result_of(instance, "asap", chosen, seconds=time.perf_counter() - began, notes=notes)
