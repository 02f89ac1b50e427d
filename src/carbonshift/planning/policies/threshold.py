"""``threshold``: start when the forecast is clean enough, or when the deadline forces it."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from carbonshift.domain import Instance
from carbonshift.errors import InputError
from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.policies._common import result_of
from carbonshift.planning.policies._rolling import replay_rule
from carbonshift.planning.problem import arrays_of
from carbonshift.planning.types import PlanContext, PolicyResult

__all__ = ["threshold"]


def threshold(
    instance: Instance,
    context: PlanContext | None = None,
    *,
    threshold_g_per_kwh: float = -1.0,
    quantile: float = 0.5,
) -> PolicyResult:
    """A pending job starts at slot ``t`` on an allowed cluster whose forecast intensity at
    ``t`` is at most the threshold (cleanest first), or, once ``t`` reaches its latest
    on-time start ``deadline - runtime``, on any allowed cluster with room (cleanest first).
    Critical jobs start at once (through the registry they are placed first, at their
    earliest start that fits: planning/critical.py). A job the replay never starts takes
    its latest start with room (_rolling.py). This is the rule production carbon-aware Kubernetes
    schedulers apply today (e.g. a KEDA-style carbon-intensity threshold); no seed paper.

    ``threshold_g_per_kwh`` < 0 (default) means: use the ``quantile`` (default 0.5, the
    median) of all forecast values of the instance.
    """
    if not 0 <= quantile <= 1:
        raise InputError(f"quantile is {quantile}; give a fraction in [0, 1]")
    began = time.perf_counter()
    arrays = arrays_of(instance, context)
    ci = arrays.ci_g_per_kwh
    limit = (
        float(np.quantile(ci, quantile)) if threshold_g_per_kwh < 0 else float(threshold_g_per_kwh)
    )
    latest = arrays.latest_on_time_start
    # per slot, clusters from cleanest to dirtiest; per job, its allowed clusters
    order = [[int(c) for c in column] for column in np.argsort(ci, axis=0, kind="stable").T]
    allowed = [[bool(a) for a in row] for row in arrays.allowed]
    clean_now = ci <= limit
    clean_reason = f"threshold: forecast at or under {limit:.6g} g/kWh"

    def rule(t: int, i: int) -> tuple[Sequence[int], str]:
        mine = allowed[i]
        if arrays.critical[i]:
            return [c for c, ok in enumerate(mine) if ok], "threshold: critical, starts at once"
        if t >= latest[i]:
            return [c for c in order[t] if mine[c]], (
                f"threshold: latest on-time start (slot {latest[i]}) reached; starts regardless"
            )
        return [c for c in order[t] if mine[c] and clean_now[c, t]], clean_reason

    chosen, notes = replay_rule(arrays, CapacityLedger(arrays), rule, "threshold")
    return result_of(
        instance,
        "threshold",
        chosen,
        seconds=time.perf_counter() - began,
        notes=notes,
        stats={"threshold_g_per_kwh": limit},
    )
