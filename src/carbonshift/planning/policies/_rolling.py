"""Slot-by-slot release rules (threshold, window) turned into a whole-horizon plan.

An online rule answers, each slot, "release this job now, on which clusters?". To plan a
static horizon we replay the rule forward over the forecast: at slot ``t`` each pending job
that the rule releases tries its clusters in order and starts at ``t`` where it fits; a
released job that finds no room stays in the queue (as in front of a default scheduler) and
tries again next slot. Online, only the slot-0 decisions are acted on. A job the replay
leaves out (never released, or released with no room from then on) takes its latest start
with room, if any: no job that fits is left out (issue 13).
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
    gave_up: list[int] = []  # no start left that ends within the horizon
    for t in range(horizon):
        if len(pending) == 0:
            break
        ready = arrays.release_slot[pending] <= t
        too_late = ready & (t + arrays.runtime_slots[pending] > horizon)
        gave_up.extend(int(i) for i in pending[too_late])
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
    # fail open (issue 13: no job that fits anywhere is left out): a job still pending, in
    # release order, takes its latest start with room on an allowed cluster (the latest, so
    # that online, where only slot 0 is acted on, it waits as long as it can)
    rank = {job: r for r, job in enumerate(release_order(arrays))}
    for i in sorted([*gave_up, *(int(j) for j in pending)], key=rank.__getitem__):
        why = (
            f"{released[i]} at slot {released_at[i]}; found no room from then"
            if i in released
            else f"{name}: not released while a start ending within the horizon was left"
        )
        best: tuple[int, int] | None = None
        for cluster in (int(c) for c in np.flatnonzero(arrays.allowed[i])):
            ok = ledger.fitting_starts(i, cluster)
            ok[: min(int(arrays.release_slot[i]), horizon)] = False
            hits = np.flatnonzero(ok)
            if hits.size and (best is None or int(hits[-1]) > best[1]):
                best = (cluster, int(hits[-1]))
        if best is None:
            notes[i] = f"{why}; no start with room before the horizon"
            continue
        ledger.place(i, *best)
        chosen[i] = best
        notes[i] = f"{why}; its latest start with room (slot {best[1]}, fail open)"
    return chosen, notes


def _may(
    may_release: MayRelease | None, t: int, jobs: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    if may_release is None:
        return np.ones(len(jobs), dtype=bool)
    return np.asarray(may_release(t, jobs), dtype=bool)
