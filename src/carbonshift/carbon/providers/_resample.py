"""Native points -> regular series -> slot windows (time-weighted means of a step function)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import numpy as np

from carbonshift.carbon.series import CarbonSeries, CiKind, FloatArray
from carbonshift.errors import DataRangeError
from carbonshift.units import format_utc

__all__ = ["Point", "resample", "series_from_points"]

#: (start of the point, minutes it holds, value, estimated?)
Point = tuple[datetime, int, float, bool]


def _one_per_start(points: Sequence[Point]) -> list[Point]:
    """``points`` with one point per start time, in time order.

    Providers do send a start twice, so this is a rule, not an error: the seam of two
    requests (a history up to now and a forecast from now: WattTime, the GB API, the Carbon
    Aware SDK), the boundary half hour two 14-day GB ranges both hold, an SDK answer whose
    bounds fall on a point's (carbon-aware-sdk issue 155). A measured point is kept over an
    estimate (a forecast) of the same start; between two of the same kind the later one in
    ``points`` (the later answer: providers append what they fetched in order) is kept.
    """
    chosen: dict[datetime, Point] = {}
    for point in points:
        held = chosen.get(point[0])
        if held is None or held[3] or not point[3]:
            chosen[point[0]] = point
    return sorted(chosen.values(), key=lambda p: p[0])


def series_from_points(
    points: Sequence[Point], *, zone: str, kind: CiKind, source: str
) -> CarbonSeries:
    """A regular series on the finest step among ``points``; gaps hold NaN; a start given
    twice keeps one point (:func:`_one_per_start`: measured over estimated, else the later)."""
    if not points:
        raise DataRangeError(f"{source} returned no data points for zone {zone!r}")
    ordered = _one_per_start(points)
    step = min(p[1] for p in ordered)
    if step <= 0:
        raise DataRangeError(f"{source} returned a data point of {step} minutes for {zone!r}")
    start = ordered[0][0]
    last_end = max(p[0] + timedelta(minutes=p[1]) for p in ordered)
    n = int(np.ceil((last_end - start).total_seconds() / 60.0 / step))
    values = np.full(n, np.nan)
    estimated = np.zeros(n, dtype=np.bool_)
    for moment, minutes, value, is_estimate in ordered:
        first = int((moment - start).total_seconds() // 60) // step
        count = max(1, minutes // step)
        values[first : first + count] = value
        estimated[first : first + count] = is_estimate
    return CarbonSeries(
        zone=zone,
        kind=kind,
        start=start,
        step_minutes=step,
        values_g_per_kwh=values,
        estimated=estimated,
        source=source,
        allow_gaps=True,
    )


def resample(
    series: CarbonSeries, start: datetime, end: datetime, slot_minutes: int
) -> tuple[FloatArray, float]:
    """Mean of ``series`` over each slot of ``[start, end)`` and the share of estimated values."""
    if start < series.start or end > series.end:
        raise DataRangeError(
            f"{series.source or 'source'} covers {series.zone!r} from {format_utc(series.start)} "
            f"to {format_utc(series.end)}, not {format_utc(start)} to {format_utc(end)}; ask "
            "inside that range"
        )
    step_min = float(series.step_minutes)
    n_steps = len(series)
    edges_min = np.arange(n_steps + 1, dtype=np.float64) * step_min
    values = series.values_g_per_kwh
    cumulative = np.concatenate([[0.0], np.cumsum(np.nan_to_num(values) * step_min)])
    gaps = np.concatenate([[0.0], np.cumsum(np.isnan(values) * step_min)])
    flags = series.estimated if series.estimated is not None else np.zeros(n_steps, np.bool_)
    est = np.concatenate([[0.0], np.cumsum(flags * step_min)])
    offset_min = (start - series.start).total_seconds() / 60.0
    total_min = (end - start).total_seconds() / 60.0
    n_slots = int(np.ceil(total_min / slot_minutes))
    lo = offset_min + np.arange(n_slots) * slot_minutes
    hi = np.minimum(lo + slot_minutes, offset_min + total_min)
    width = hi - lo
    gap_min = np.interp(hi, edges_min, gaps) - np.interp(lo, edges_min, gaps)
    if np.any(gap_min > 1e-9):
        bad = int(np.argmax(gap_min > 1e-9))
        raise DataRangeError(
            f"{series.source or 'source'} has a gap in {series.zone!r} data in the slot starting "
            f"{format_utc(start + timedelta(minutes=bad * slot_minutes))}; ask another range or "
            "source"
        )
    means = (np.interp(hi, edges_min, cumulative) - np.interp(lo, edges_min, cumulative)) / width
    est_min = float(np.interp(hi[-1], edges_min, est) - np.interp(lo[0], edges_min, est))
    return means.astype(np.float64), est_min / total_min if total_min > 0 else 0.0
