"""Carbon signals over native series: time-weighted slot averages, replay and integrals.

A :class:`~carbonshift.carbon.series.CarbonSeries` is a step function. Every answer here is
computed from its cumulative integral, vectorised with numpy (no Python loop per slot):

- :meth:`SeriesSignal.window` / :meth:`EmbeddedSignal.window`: the intensity of a zone over
  ``[start, end)`` in slots of ``slot_minutes`` (5 min .. 24 h) aligned to ``start``; each
  slot's value is the time-weighted mean of the step function over the slot; a partial last
  slot is averaged over the time it covers.
- :func:`integral_g_h_per_kwh` / :func:`integrals_g_h_per_kwh`: the integral of the intensity
  over ``[t0, t1)`` in g*h/kWh. Times ``power_kw`` it gives grams.

**Range.** Times before the start of the data raise
:class:`~carbonshift.errors.DataRangeError`. Times past its end raise it too, naming the valid
range, unless the signal (or the call) allows **replay** (docs/formats.md (scenario),
:mod:`carbonshift.carbon.replay`): a time t past the data takes the value at
``t - y x 364 days`` for the smallest y >= 1 that lands inside the data (same weekday and UTC
hour, the season kept within days); data shorter than 364 days replay whole weeks,
``t - k x 7 days``. A replayed window says so in :attr:`SignalWindow.replayed_from` (the
source dates it used).

Replay is **off by default** in the library (``allow_replay=False``): a caller asks for it.
The simulator passes its scenario's ``allow_replay``; the CLI ``data show`` and the advice API
turn it on (users ask about "now", after the embedded data end in 2023) and show the marker.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt

from carbonshift.carbon.embedded import load_series
from carbonshift.carbon.replay import (
    period_steps,
    replay_indexes,
    replay_period,
    replay_source,
    replayed_span,
)
from carbonshift.carbon.series import CarbonSeries, CiKind, SignalWindow
from carbonshift.errors import DataRangeError, InputError
from carbonshift.units import format_utc, to_utc

__all__ = [
    "MAX_SLOT_MINUTES",
    "MIN_SLOT_MINUTES",
    "EmbeddedSignal",
    "SeriesSignal",
    "integral_g_h_per_kwh",
    "integrals_g_h_per_kwh",
    "replay_source",
    "resample",
]

FloatArray = npt.NDArray[np.float64]

MIN_SLOT_MINUTES = 5
MAX_SLOT_MINUTES = 24 * 60


def _range_text(series: CarbonSeries) -> str:
    return f"{format_utc(series.start)} to {format_utc(series.end)} (end exclusive)"


def _check_range(series: CarbonSeries, first: datetime, last: datetime, allow_replay: bool) -> None:
    """Refuse ``[first, last)`` when it starts before the data, or ends after it without replay."""
    if first < series.start:
        raise DataRangeError(
            f"zone {series.zone} ({series.kind.value}) has carbon data from {_range_text(series)}; "
            f"{format_utc(first)} is before it; ask for times inside that range"
        )
    if last <= series.end:
        return
    if not allow_replay:
        raise DataRangeError(
            f"zone {series.zone} ({series.kind.value}) has carbon data from {_range_text(series)}; "
            f"{format_utc(last)} is past its end; ask for times inside that range, or allow "
            "replay (allow_replay=True; scenario allow_replay = true; CLI --replay), which "
            "repeats the data at t - y x 364 days (t - k x 7 days for data under 364 days)"
        )
    replay_period(series)  # raises when the series is too short to replay


def _cumulative(
    values: FloatArray, n_native: int, steps_per_period: int, base: int, positions: FloatArray
) -> FloatArray:
    """Integral (in value x steps) of the step function from ``base + floor(min(positions))``
    to each ``base + position``; positions are in native steps, ``base`` a whole step index,
    ``base + position >= 0`` (keeping positions small keeps the sums exact to ~1e-15). Steps
    past ``n_native`` take replayed values (the caller checked that replay is allowed).
    """
    first = math.floor(float(positions.min()))
    if base + first >= n_native and base + float(positions.max()) <= n_native:
        first = n_native - 1 - base  # every position sits exactly at the end of the data
    lo = base + first
    hi = max(base + math.ceil(float(positions.max())), lo + 1)
    positions = positions - first
    index = replay_indexes(np.arange(lo, hi, dtype=np.int64), n_native, steps_per_period)
    local = values[index]
    cumulative = np.concatenate(([0.0], np.cumsum(local)))
    offset = positions
    whole = np.minimum(np.floor(offset).astype(np.int64), len(local) - 1)
    result: FloatArray = cumulative[whole] + (offset - whole) * local[whole]
    return result


def _split(series: CarbonSeries, moment: datetime) -> tuple[int, float]:
    """``moment`` as a whole step index of ``series`` and the seconds past that step."""
    step = timedelta(minutes=series.step_minutes)
    whole, rest = divmod(moment - series.start, step)
    return int(whole), rest.total_seconds()


def _check_slot_minutes(slot_minutes: int) -> None:
    if (
        isinstance(slot_minutes, bool)
        or int(slot_minutes) != slot_minutes
        or not MIN_SLOT_MINUTES <= slot_minutes <= MAX_SLOT_MINUTES
    ):
        raise InputError(
            f"slot_minutes {slot_minutes!r} is outside {MIN_SLOT_MINUTES}..{MAX_SLOT_MINUTES}; "
            "give a whole number of minutes from 5 minutes to 24 hours, like 60"
        )


def resample(
    series: CarbonSeries,
    start: datetime,
    end: datetime,
    *,
    slot_minutes: int = 60,
    allow_replay: bool = False,
) -> SignalWindow:
    """Time-weighted means of ``series`` over ``[start, end)`` in slots aligned to ``start``.

    The last slot may be partial: it is averaged over the time it covers. Raises
    :class:`~carbonshift.errors.DataRangeError` outside the data (see the module docstring).
    """
    _check_slot_minutes(slot_minutes)
    start, end = to_utc(start), to_utc(end)
    if end <= start:
        raise InputError(
            f"end {format_utc(end)} is not after start {format_utc(start)}; "
            "give an end later than the start"
        )
    _check_range(series, start, end, allow_replay)
    slot_s = slot_minutes * 60.0
    span_s = (end - start).total_seconds()
    n_slots = math.ceil(span_s / slot_s)
    base, rest_s = _split(series, start)
    bounds_s = np.minimum(np.arange(n_slots + 1, dtype=np.float64) * slot_s, span_s) + rest_s
    positions = bounds_s / (series.step_minutes * 60.0)
    steps_per_period = period_steps(series)
    n_native = len(series)
    widths = np.diff(positions)
    means: FloatArray = (
        np.diff(_cumulative(series.values_g_per_kwh, n_native, steps_per_period, base, positions))
        / widths
    )
    estimated_share = 0.0
    if series.estimated is not None and series.estimated.any():
        flags = series.estimated.astype(np.float64)
        covered = _cumulative(flags, n_native, steps_per_period, base, positions[[0, -1]])
        estimated_share = float((covered[1] - covered[0]) / (positions[-1] - positions[0]))
    return SignalWindow(
        zone=series.zone,
        kind=series.kind,
        start=start,
        end=end,
        slot_minutes=slot_minutes,
        values_g_per_kwh=means,
        source=series.source,
        replayed_from=replayed_span(series, start, end),
        estimated_share=estimated_share,
    )


def integrals_g_h_per_kwh(
    series: CarbonSeries,
    origin: datetime,
    t0_h: npt.ArrayLike,
    t1_h: npt.ArrayLike,
    *,
    allow_replay: bool = False,
) -> FloatArray:
    """Integral of the intensity over ``[origin + t0_h, origin + t1_h)`` for each pair, g*h/kWh.

    ``t0_h`` and ``t1_h`` are hours since ``origin`` (arrays of equal shape, ``t1_h >= t0_h``).
    Multiply by a power in kW to get grams. Vectorised: one gather and one cumulative sum over
    the span the intervals cover, whatever their number.
    """
    start_h = np.asarray(t0_h, dtype=np.float64)
    end_h = np.asarray(t1_h, dtype=np.float64)
    if start_h.shape != end_h.shape:
        raise InputError(
            f"t0_h has shape {start_h.shape} and t1_h {end_h.shape}; give one end per start"
        )
    if start_h.size == 0:
        return np.zeros(start_h.shape, dtype=np.float64)
    if not (np.all(np.isfinite(start_h)) and np.all(np.isfinite(end_h))):
        raise InputError("t0_h and t1_h must be finite numbers of hours since origin")
    if np.any(end_h < start_h):
        bad = int(np.argmax(end_h < start_h))
        raise InputError(
            f"interval {bad} ends at {float(end_h.flat[bad])} h before it starts at "
            f"{float(start_h.flat[bad])} h; give t1_h >= t0_h"
        )
    origin = to_utc(origin)
    first = origin + timedelta(hours=float(start_h.min()))
    last = origin + timedelta(hours=float(end_h.max()))
    _check_range(series, first, last, allow_replay)
    base, rest_s = _split(series, first)
    shift_h = (first - origin).total_seconds() / 3600.0  # hours from origin to `first`
    step_h = series.step_minutes / 60.0
    hours = np.concatenate((start_h.ravel(), end_h.ravel())) - shift_h
    positions = np.maximum((hours * 3600.0 + rest_s) / (series.step_minutes * 60.0), 0.0)
    cumulative = _cumulative(
        series.values_g_per_kwh, len(series), period_steps(series), base, positions
    )
    count = start_h.size
    result: FloatArray = ((cumulative[count:] - cumulative[:count]) * step_h).reshape(start_h.shape)
    return result


def integral_g_h_per_kwh(
    series: CarbonSeries, t0: datetime, t1: datetime, *, allow_replay: bool = False
) -> float:
    """Integral of the intensity over ``[t0, t1)`` in g*h/kWh (times ``power_kw`` = grams)."""
    t0, t1 = to_utc(t0), to_utc(t1)
    hours = (t1 - t0).total_seconds() / 3600.0
    return float(integrals_g_h_per_kwh(series, t0, [0.0], [hours], allow_replay=allow_replay)[0])


class SeriesSignal:
    """A :class:`~carbonshift.carbon.series.Signal` over given series (e.g. read from CSV).

    Each series answers for its ``(zone, kind)``; zone names match exactly, then ignoring
    case. ``allow_replay`` (default False) answers times past the data by replay.
    """

    def __init__(self, series: Iterable[CarbonSeries], *, allow_replay: bool = False) -> None:
        self._series: dict[tuple[str, CiKind], CarbonSeries] = {}
        for one in series:
            self._series[(one.zone, one.kind)] = one
        if not self._series:
            raise InputError("SeriesSignal needs at least one CarbonSeries")
        self.allow_replay = allow_replay

    def zones(self) -> list[str]:
        """The zones this signal knows, sorted."""
        return sorted({zone for zone, _ in self._series})

    def series(self, zone: str, kind: CiKind | str = CiKind.DIRECT) -> CarbonSeries:
        """The native series of ``zone`` and ``kind``."""
        try:
            ci_kind = CiKind(kind)
        except ValueError:
            ci_kind = None
        found = self._series.get((zone, ci_kind)) if ci_kind is not None else None
        if found is None and ci_kind is not None:
            for (name, series_kind), one in self._series.items():
                if name.upper() == zone.upper() and series_kind is ci_kind:
                    return one
        if found is None:
            have = ", ".join(f"{z} ({k.value})" for z, k in sorted(self._series))
            raise InputError(
                f"no carbon series for zone {zone!r} kind {str(kind)!r}; this signal has {have}"
            )
        return found

    def window(
        self,
        zone: str,
        start: datetime,
        end: datetime,
        *,
        slot_minutes: int = 60,
        kind: CiKind = CiKind.DIRECT,
    ) -> SignalWindow:
        """Intensity of ``zone`` over ``[start, end)`` in ``slot_minutes`` slots."""
        return resample(
            self.series(zone, kind),
            start,
            end,
            slot_minutes=slot_minutes,
            allow_replay=self.allow_replay,
        )


class EmbeddedSignal:
    """A :class:`~carbonshift.carbon.series.Signal` over the embedded Electricity Maps data.

    Zones by id or alias (``DE`` or ``DE-LU``), kinds ``direct`` and ``lca``, 2021-2023
    hourly. ``allow_replay`` (default False) answers times past 2023 by replay.
    """

    def __init__(self, *, allow_replay: bool = False) -> None:
        self.allow_replay = allow_replay

    def series(self, zone: str, kind: CiKind | str = CiKind.DIRECT) -> CarbonSeries:
        """The native hourly series of ``zone`` and ``kind``."""
        return load_series(zone, kind)

    def window(
        self,
        zone: str,
        start: datetime,
        end: datetime,
        *,
        slot_minutes: int = 60,
        kind: CiKind = CiKind.DIRECT,
    ) -> SignalWindow:
        """Intensity of ``zone`` over ``[start, end)`` in ``slot_minutes`` slots."""
        return resample(
            load_series(zone, kind),
            start,
            end,
            slot_minutes=slot_minutes,
            allow_replay=self.allow_replay,
        )
