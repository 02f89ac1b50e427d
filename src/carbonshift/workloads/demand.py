"""Forecasts of the demand that will arrive, per slot, from the workload's own past.

CJPS reserves capacity for ``future_demand`` (docs/formats.md, planning instance: the
forecast total demand of a resource arriving in each slot) and the CO2 scheduler limits
releases by the predicted load. Here the forecast at planning time ``now_h`` (hours since
the workload's start; slot ``k`` of the forecast covers
``[now_h + k slot, now_h + (k+1) slot)``) uses only jobs submitted before ``now_h``. Methods:

- ``seasonal-day``: for each forecast slot, the mean of the demand that arrived in the slot
  at the same time of day on each of the last ``days`` days whose slot lies fully in the
  past and not before the workload's start; where no such day exists yet, the
  ``moving-average`` value.
- ``moving-average``: the mean demand per slot over the last ``window_slots`` complete slots
  (default one day; fewer at the start of the workload), the same for every forecast slot.
- ``moving-average-lower``: ``moving-average`` less ``lower_z`` (default 1) of its standard
  errors, never below 0: a forecast that says how sure it is. With arrivals a compound
  Poisson process (jobs at a rate, each of its own demand ``d``), the demand of one slot has
  variance rate x E[d^2], estimated without bias by the sum of ``d^2`` over the jobs of the
  window over its ``n`` slots, so the mean over ``n`` slots has the standard error
  ``sqrt(sum d^2) / n``: on Caspian's day (8.3 jobs of 3 GPUs on average an hour) 0.38 of
  the level after one hourly slot, 0.14 after eight, 0.08 after a day (docs/simulator.md,
  "How sure the demand forecast is"). Arrivals burstier than Poisson have a larger error
  than this; the rule then lowers too little, never too much.
- ``zero``: no future demand (what CJPS with future weight 0 assumes).
- ``oracle``: the demand that actually arrives (reads the future; an upper bound on what a
  forecast can give, for comparison only).

``arrivals_end_h``, when given, is the hour after which nothing arrives (a simulation's
arrival window, ``[simulation] hours``: part of the experiment's definition, not an
observation of its arrivals); the forecast is 0 from there on, and a slot that straddles it
keeps the share of its value before it. Without it a forecast keeps expecting the recent rate
after the last arrival, and work planned around that phantom demand gives up clean room for
nothing (bench/online.md).

:func:`demand_forecast_error` replays a method over a span of planning times and reports
MAE and MAPE against what actually arrived.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from carbonshift.errors import InputError
from carbonshift.workloads._parse import did_you_mean
from carbonshift.workloads.model import FloatArray, Workload

__all__ = [
    "DEMAND_FORECASTS",
    "DemandForecastError",
    "arrived_demand",
    "demand_forecast_error",
    "forecast_demand",
]

#: Names accepted by :func:`forecast_demand`.
DEMAND_FORECASTS = ("seasonal-day", "moving-average", "moving-average-lower", "zero", "oracle")


def _check(workload: Workload, resource: str, slot_minutes: int, horizon_slots: int) -> float:
    if resource not in workload.demand:
        raise InputError(
            f"resource {resource!r} is not in the workload; "
            f"{did_you_mean(resource, workload.resources)}"
        )
    if slot_minutes < 1:
        raise InputError(f"slot_minutes is {slot_minutes}; it must be >= 1 minute")
    if horizon_slots < 1:
        raise InputError(f"horizon_slots is {horizon_slots}; it must be >= 1 slot")
    return slot_minutes / 60.0


def arrived_demand(
    workload: Workload,
    *,
    resource: str,
    slot_minutes: int,
    origin_h: float,
    n_slots: int,
) -> FloatArray:
    """Total demand of ``resource`` submitted in each slot ``[origin_h + k slot, ...)``."""
    slot_h = _check(workload, resource, slot_minutes, n_slots)
    offset = (workload.submit_h - origin_h) / slot_h
    index = np.floor(offset).astype(np.int64)
    keep = (index >= 0) & (index < n_slots)
    totals = np.bincount(index[keep], weights=workload.demand[resource][keep], minlength=n_slots)
    return np.asarray(totals, dtype=np.float64)


def forecast_demand(
    workload: Workload,
    *,
    resource: str,
    now_h: float,
    slot_minutes: int,
    horizon_slots: int,
    method: str = "seasonal-day",
    days: int = 7,
    window_slots: int | None = None,
    arrivals_end_h: float | None = None,
    lower_z: float = 1.0,
) -> FloatArray:
    """Forecast demand of ``resource`` arriving in each of ``horizon_slots`` slots from ``now_h``.

    Only jobs submitted before ``now_h`` are read (except by ``oracle``). See the module
    docstring for the methods and ``arrivals_end_h``.
    """
    slot_h = _check(workload, resource, slot_minutes, horizon_slots)
    if arrivals_end_h is not None and not (math.isfinite(arrivals_end_h) and arrivals_end_h >= 0):
        raise InputError(
            f"arrivals_end_h is {arrivals_end_h!r} h; give the hour after which no job arrives "
            "(>= 0, on the clock of now_h) or None when arrivals never stop"
        )
    if not (math.isfinite(lower_z) and lower_z >= 0):
        raise InputError(
            f"lower_z is {lower_z!r} standard errors; give a number >= 0 (0: the plain "
            "moving average, 1: one standard error below it)"
        )
    forecast = _forecast(
        workload,
        resource,
        now_h,
        slot_minutes,
        slot_h,
        horizon_slots,
        method,
        days,
        window_slots,
        lower_z,
    )
    if arrivals_end_h is None:
        return forecast
    slot_start_h = now_h + slot_h * np.arange(horizon_slots)
    share_before_end = np.clip((arrivals_end_h - slot_start_h) / slot_h, 0.0, 1.0)
    return np.asarray(forecast * share_before_end, dtype=np.float64)


def _forecast(
    workload: Workload,
    resource: str,
    now_h: float,
    slot_minutes: int,
    slot_h: float,
    horizon_slots: int,
    method: str,
    days: int,
    window_slots: int | None,
    lower_z: float = 1.0,
) -> FloatArray:
    """:func:`forecast_demand` without the arrival window."""
    if method not in DEMAND_FORECASTS:
        raise InputError(
            f"demand forecast {method!r} is not known; {did_you_mean(method, DEMAND_FORECASTS)}"
        )
    if days < 1:
        raise InputError(f"days is {days}; it must be a whole number of days >= 1")
    if method == "zero":
        return np.zeros(horizon_slots)
    if method == "oracle":
        return arrived_demand(
            workload,
            resource=resource,
            slot_minutes=slot_minutes,
            origin_h=now_h,
            n_slots=horizon_slots,
        )
    per_day = 24 * 60 / slot_minutes
    window = window_slots if window_slots is not None else max(1, round(per_day))
    if window < 1:
        raise InputError(f"window_slots is {window}; it must be >= 1 slot")
    # complete past slots, counted back from now: history[j] covers
    # [now - (j+1) slot, now - j slot); only as far back as a method looks, never before 0
    averages = method in ("moving-average", "moving-average-lower")
    looks_back = window if averages else max(window, days * math.ceil(per_day))
    n_past = min(looks_back, max(0, math.floor(now_h / slot_h + 1e-9)))
    history: FloatArray = np.zeros(n_past)
    squares: FloatArray = np.zeros(n_past)  # sum of demand^2 of the jobs of each slot
    # the only jobs read from here on: submitted in [now - n_past slot, now)
    lo, hi = np.searchsorted(workload.submit_h, [now_h - n_past * slot_h, now_h], side="left")
    if n_past and hi > lo:
        submit = workload.submit_h[lo:hi]
        back = np.ceil((now_h - submit) / slot_h).astype(np.int64) - 1  # 0 = the last slot
        keep = (back >= 0) & (back < n_past)
        weights = workload.demand[resource][lo:hi][keep]
        history = np.asarray(
            np.bincount(back[keep], weights=weights, minlength=n_past), dtype=np.float64
        )
        squares = np.asarray(
            np.bincount(back[keep], weights=weights**2, minlength=n_past), dtype=np.float64
        )
    # history[j] = demand in the slot that ended j slots before now
    n_recent = min(window, n_past)
    recent = history[:n_recent]
    level = float(recent.mean()) if len(recent) else 0.0
    if method == "moving-average":
        return np.full(horizon_slots, level)
    if method == "moving-average-lower":
        # compound Poisson: Var(slot) = rate E[d^2], so SE(level) = sqrt(sum d^2) / n
        error = math.sqrt(float(squares[:n_recent].sum())) / n_recent if n_recent else 0.0
        return np.full(horizon_slots, max(0.0, level - lower_z * error))
    if not float(per_day).is_integer():
        raise InputError(
            f"slot_minutes {slot_minutes} does not divide a day; seasonal-day needs slots "
            "that tile 24 h (for example 15, 30 or 60 minutes)"
        )
    spd = int(per_day)
    forecast = np.full(horizon_slots, level)
    for k in range(horizon_slots):
        seen = []
        for d in range(1, days + 1):
            j = d * spd - k - 1  # same time of day, d days back, as a "slots before now" index
            if 0 <= j < n_past:
                seen.append(history[j])
        if seen:
            forecast[k] = float(np.mean(seen))
    return forecast


@dataclass(frozen=True, slots=True)
class DemandForecastError:
    """Error of a demand forecast over many planning times (units of the resource per slot).

    ``mape_pct`` averages over slots where actual demand was > 0 (``None`` if there were
    none); ``bias`` is mean(forecast - actual).
    """

    method: str
    mae: float
    mape_pct: float | None
    bias: float
    n_slots: int


def demand_forecast_error(
    workload: Workload,
    *,
    resource: str,
    slot_minutes: int,
    horizon_slots: int,
    start_h: float,
    end_h: float,
    method: str = "seasonal-day",
    every_slots: int = 1,
    days: int = 7,
    window_slots: int | None = None,
) -> DemandForecastError:
    """Replay ``method`` at planning times ``start_h, start_h + every_slots slot, ... < end_h``."""
    slot_h = _check(workload, resource, slot_minutes, horizon_slots)
    if every_slots < 1:
        raise InputError(f"every_slots is {every_slots}; it must be >= 1")
    predicted: list[FloatArray] = []
    actual: list[FloatArray] = []
    now = start_h
    while now < end_h:
        predicted.append(
            forecast_demand(
                workload,
                resource=resource,
                now_h=now,
                slot_minutes=slot_minutes,
                horizon_slots=horizon_slots,
                method=method,
                days=days,
                window_slots=window_slots,
            )
        )
        actual.append(
            arrived_demand(
                workload,
                resource=resource,
                slot_minutes=slot_minutes,
                origin_h=now,
                n_slots=horizon_slots,
            )
        )
        now += every_slots * slot_h
    if not predicted:
        raise InputError(f"no planning time in [{start_h}, {end_h}) h; give start_h < end_h")
    p = np.concatenate(predicted)
    a = np.concatenate(actual)
    positive = a > 0
    mape = (
        float(np.mean(np.abs(p[positive] - a[positive]) / a[positive]) * 100)
        if positive.any()
        else None
    )
    return DemandForecastError(
        method=method,
        mae=float(np.mean(np.abs(p - a))),
        mape_pct=mape,
        bias=float(np.mean(p - a)),
        n_slots=len(a),
    )
