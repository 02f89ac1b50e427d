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
    Critical jobs start at once. This is the rule production carbon-aware Kubernetes
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

    def rule(t: int, i: int) -> tuple[Sequence[int], str]:
        allowed = np.flatnonzero(arrays.allowed[i])
        by_ci = allowed[np.argsort(ci[allowed, t], kind="stable")]
        if arrays.critical[i]:
            return [int(c) for c in allowed], "threshold: critical, starts at once"
        if t >= latest[i]:
            return [int(c) for c in by_ci], (
                f"threshold: latest on-time start (slot {latest[i]}) reached; starts regardless"
            )
        clean = [int(c) for c in by_ci if ci[c, t] <= limit]
        return clean, f"threshold: forecast at or under {limit:.6g} g/kWh"

    chosen, notes = replay_rule(arrays, CapacityLedger(arrays), rule, "threshold")
    return result_of(
        instance,
        "threshold",
        chosen,
        seconds=time.perf_counter() - began,
        notes=notes,
        stats={"threshold_g_per_kwh": limit},
    )
