"""``window``: the CO2 scheduler's release rule (Piontek, Univ. Stuttgart master thesis)."""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from carbonshift.domain import Instance
from carbonshift.errors import InputError
from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.policies._common import result_of
from carbonshift.planning.policies._rolling import replay_rule
from carbonshift.planning.problem import arrays_of
from carbonshift.planning.types import PlanContext, PolicyResult

_log = logging.getLogger(__name__)

__all__ = ["best_window_slots", "window"]


def best_window_slots(
    ci_g_per_kwh: npt.NDArray[np.float64], window_slots: int, lookahead_slots: int
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
    """``[cluster, t]``: whether the W-slot window starting at ``t`` has the least mean
    forecast among the windows starting in ``t .. t + lookahead - W`` (rolling; windows
    near the horizon's end are averaged over the slots that remain), and each window's mean."""
    m, h = ci_g_per_kwh.shape
    prefix = np.concatenate([np.zeros((m, 1)), np.cumsum(ci_g_per_kwh, axis=1)], axis=1)
    start = np.arange(h)
    end = np.minimum(start + window_slots, h)
    mean = (prefix[:, end] - prefix[:, start]) / (end - start)
    out = np.zeros((m, h), dtype=bool)
    span = max(lookahead_slots - window_slots, 0)
    for t in range(h):
        last = min(t + span, h - 1)
        out[:, t] = mean[:, t] <= mean[:, t : last + 1].min(axis=1) + 1e-9
    return out, mean


@functools.cache
def _warn_multi_cluster(clusters: int) -> None:
    """Say once per process (and cluster count) that ``window`` shifts in time only."""
    _log.warning(
        "window is the CO2 scheduler's single-cluster time shifter: with %d clusters it "
        "waits for each cluster's clean window but does not weigh where a job runs; use "
        "carbonshift or fluidos to choose the place as well",
        clusters,
    )


def window(
    instance: Instance,
    context: PlanContext | None = None,
    *,
    window_hours: float = 6.0,
    lookahead_hours: float = 24.0,
    max_wait_hours: float = 24.0,
    base_limit: float = 0.95,
    load_factor: float = 0.1,
) -> PolicyResult:
    """Piontek, chapters 6-8 and 10, as ALGORITHMS.md states it. Each slot a pending job is
    released when: it is critical; or it has waited ``max_wait_hours`` (24 h; time waited
    before slot 0 comes from ``context.waited_slots``); or its latest on-time start has come;
    or the slot begins the least-mean W-hour window (``window_hours``, default 6) of the next
    ``lookahead_hours`` (rolling, UTC) on an allowed cluster whose first-resource use is below
    ``base_limit - load_factor x predicted load`` (0.95 - 0.1 x load; load = forecast demand
    / total capacity, 0 without ``future_demand``). A released job starts where it fits
    (the window's cluster, else clusters in listed order) or queues for room. Through the
    registry, critical jobs are placed first at their earliest start that fits
    (planning/critical.py); a job the replay never starts takes its latest start with room
    (_rolling.py).

    The thesis forecasts with a weighted moving average of last year's data; here the
    forecast is the instance's ``carbon_g_per_kwh`` (the forecaster is the carbon layer's).
    The thesis used calendar-day windows; we use a rolling look-ahead.
    """
    for name, value in (
        ("window_hours", window_hours),
        ("lookahead_hours", lookahead_hours),
        ("max_wait_hours", max_wait_hours),
    ):
        if not value > 0:
            raise InputError(f"{name} is {value} h; give a number of hours > 0")
    began = time.perf_counter()
    if len(instance.clusters) > 1:
        _warn_multi_cluster(len(instance.clusters))
    arrays = arrays_of(instance, context)
    slot_h = arrays.slot_hours
    w_slots = max(1, math.ceil(window_hours / slot_h - 1e-9))
    look_slots = max(w_slots, math.ceil(lookahead_hours / slot_h - 1e-9))
    max_wait = math.ceil(max_wait_hours / slot_h - 1e-9)
    in_window, window_mean = best_window_slots(arrays.ci_g_per_kwh, w_slots, look_slots)
    total_cap = arrays.capacity_units[:, 0, :].sum(axis=0)
    load = np.divide(
        arrays.future_units, total_cap, out=np.zeros_like(total_cap), where=total_cap > 0
    )
    use_limit = base_limit - load_factor * load
    waited_before = context.waited_slots if context is not None else {}
    ledger = CapacityLedger(arrays)
    latest = arrays.latest_on_time_start
    ids = [job.id for job in instance.jobs]

    allowed_lists = [[int(c) for c in np.flatnonzero(row)] for row in arrays.allowed]
    waited_at_0 = np.array(
        [waited_before.get(ids[i], 0) - int(arrays.release_slot[i]) for i in range(len(ids))],
        dtype=np.int64,
    )
    # the first slot at which a job must go: it has waited max_wait or its latest start came
    forced_from = np.minimum(max_wait - waited_at_0, latest)
    any_window: npt.NDArray[np.bool_] = np.asarray(in_window.any(axis=0), dtype=bool)

    def may_release(t: int, jobs: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """False where the rule surely waits: not critical, not forced, and no allowed
        cluster both in its window at ``t`` and under the use limit now (use only grows
        while the slot's jobs are placed, so a cluster over the limit stays over it)."""
        must = arrays.critical[jobs] | (t >= forced_from[jobs])
        if not any_window[t]:
            return must
        open_now = np.array(
            [
                bool(in_window[c, t]) and ledger.used_fraction(c, 0, t) < use_limit[t] - 1e-12
                for c in range(in_window.shape[0])
            ]
        )
        return np.asarray(must | np.any(arrays.allowed[jobs][:, open_now], axis=1), dtype=bool)

    def rule(t: int, i: int) -> tuple[Sequence[int], str]:
        allowed = allowed_lists[i]
        waited = int(waited_at_0[i]) + t
        if arrays.critical[i]:
            return allowed, "window: critical, released at once"
        if waited >= max_wait:
            return allowed, f"window: waited {waited * slot_h:g} h (limit {max_wait_hours:g} h)"
        if t >= latest[i]:
            return allowed, f"window: latest on-time start (slot {latest[i]}) reached"
        if not any_window[t]:
            return [], ""
        good = [
            c
            for c in allowed
            if in_window[c, t] and ledger.used_fraction(c, 0, t) < use_limit[t] - 1e-12
        ]
        if good:
            good.sort(key=lambda c: window_mean[c, t])  # several clusters: cleanest window first
            return good + [c for c in allowed if c not in good], (
                f"window: slot {t} begins the cleanest {window_hours:g} h window of the next "
                f"{lookahead_hours:g} h, use under {use_limit[t]:.3g}"
            )
        return [], ""

    chosen, notes = replay_rule(arrays, ledger, rule, "window", may_release)
    return result_of(
        instance,
        "window",
        chosen,
        seconds=time.perf_counter() - began,
        notes=notes,
        stats={"window_slots": float(w_slots)},
    )
