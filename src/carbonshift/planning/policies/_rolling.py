"""Slot-by-slot release rules (threshold, window) turned into a whole-horizon plan.

An online rule answers, each slot, "release this job now, on which clusters?". To plan a
static horizon we replay the rule forward over the forecast: at slot ``t`` each pending job
that the rule releases tries its clusters in order and starts at ``t`` where it fits; a
released job that finds no room stays in the queue (as in front of a default scheduler) and
tries again next slot. Online, only the slot-0 decisions are acted on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.policies._common import release_order
from carbonshift.planning.problem import InstanceArrays

__all__ = ["Rule", "replay_rule"]

#: (slot, job index) -> (clusters to try in order, reason); an empty tuple means "wait".
Rule = Callable[[int, int], tuple[Sequence[int], str]]


def replay_rule(
    arrays: InstanceArrays, ledger: CapacityLedger, rule: Rule, name: str
) -> tuple[dict[int, tuple[int, int]], dict[int, str]]:
    """Chosen (cluster, start) per job and a note per job."""
    horizon = arrays.horizon_slots
    chosen: dict[int, tuple[int, int]] = {}
    notes: dict[int, str] = {}
    released: dict[int, str] = {}
    released_at: dict[int, int] = {}
    pending = release_order(arrays)
    for t in range(horizon):
        waiting: list[int] = []
        for pos, i in enumerate(pending):
            if arrays.release_slot[i] > t:
                waiting.extend(pending[pos:])
                break
            if t + int(arrays.runtime_slots[i]) > horizon:
                notes.setdefault(i, f"{name}: no start left that ends within the horizon")
                continue
            if i in released:
                clusters: Sequence[int] = [int(c) for c in np.flatnonzero(arrays.allowed[i])]
                reason = released[i]
            else:
                clusters, reason = rule(t, i)
                if clusters:
                    released[i] = reason
            for c in clusters:
                if ledger.fits(i, c, t):
                    ledger.place(i, c, t)
                    chosen[i] = (c, t)
                    notes[i] = (
                        reason
                        if t == released_at.setdefault(i, t)
                        else (f"{reason} at slot {released_at[i]}; waited for room until slot {t}")
                    )
                    break
            else:
                if clusters:
                    released_at.setdefault(i, t)
                waiting.append(i)
        pending = waiting
    for i in pending:
        if i in released:
            notes[i] = f"{released[i]} at slot {released_at[i]}; found no room before the horizon"
        else:
            notes[i] = f"{name}: not released before the horizon ended"
    return chosen, notes
