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
import numpy.typing as npt

from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.policies._common import release_order
from carbonshift.planning.problem import InstanceArrays

__all__ = ["MayRelease", "Rule", "replay_rule"]

#: (slot, job index) -> (clusters to try in order, reason); an empty tuple means "wait".
Rule = Callable[[int, int], tuple[Sequence[int], str]]
#: (slot, job indexes) -> False where the rule certainly answers "wait" at that slot (a fast,
#: vectorised pre-check; True means "ask the rule").
MayRelease = Callable[[int, npt.NDArray[np.int64]], npt.NDArray[np.bool_]]


def replay_rule(
    arrays: InstanceArrays,
    ledger: CapacityLedger,
    rule: Rule,
    name: str,
    may_release: MayRelease | None = None,
) -> tuple[dict[int, tuple[int, int]], dict[int, str]]:
    """Chosen (cluster, start) per job and a note per job.

    ``may_release`` lets a rule skip, in one numpy pass per slot, the jobs it would hold
    anyway (the plans are the same; only the number of Python calls changes).
    """
    horizon = arrays.horizon_slots
    chosen: dict[int, tuple[int, int]] = {}
    notes: dict[int, str] = {}
    released: dict[int, str] = {}
    released_at: dict[int, int] = {}
    is_released = np.zeros(len(arrays.runtime_slots), dtype=bool)
    pending = np.asarray(release_order(arrays), dtype=np.int64)
    for t in range(horizon):
        if len(pending) == 0:
            break
        ready = arrays.release_slot[pending] <= t
        too_late = ready & (t + arrays.runtime_slots[pending] > horizon)
        for i in pending[too_late]:
            notes.setdefault(int(i), f"{name}: no start left that ends within the horizon")
        pending = pending[~too_late]
        ready = ready[~too_late]
        ask = ready & (is_released[pending] | _may(may_release, t, pending))
        placed: set[int] = set()
        for i in (int(j) for j in pending[ask]):
            if is_released[i]:
                clusters: Sequence[int] = [int(c) for c in np.flatnonzero(arrays.allowed[i])]
                reason = released[i]
            else:
                clusters, reason = rule(t, i)
                if clusters:
                    released[i] = reason
                    is_released[i] = True
            for c in clusters:
                if ledger.fits(i, c, t):
                    ledger.place(i, c, t)
                    chosen[i] = (c, t)
                    placed.add(i)
                    notes[i] = (
                        reason
                        if t == released_at.setdefault(i, t)
                        else (f"{reason} at slot {released_at[i]}; waited for room until slot {t}")
                    )
                    break
            else:
                if clusters:
                    released_at.setdefault(i, t)
        if placed:
            pending = pending[~np.isin(pending, list(placed))]
    for i in (int(j) for j in pending):
        if i in released:
            notes[i] = f"{released[i]} at slot {released_at[i]}; found no room before the horizon"
        else:
            notes[i] = f"{name}: not released before the horizon ended"
    return chosen, notes


def _may(
    may_release: MayRelease | None, t: int, jobs: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    if may_release is None:
        return np.ones(len(jobs), dtype=bool)
    return np.asarray(may_release(t, jobs), dtype=bool)
