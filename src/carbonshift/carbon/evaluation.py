"""How good is a forecaster? Forecasts issued at a regular cadence, scored against the actuals.

For every issue time ``t`` in ``[start, end)`` (every ``issue_every_minutes``, default hourly)
each method forecasts the ``horizon_slots`` slots after ``t``; the oracle's answer for the same
slots is the truth. Issue times whose horizon runs past the end of the data, or that some
method cannot serve (too little history), are left out for *all* methods, so every method is
scored on the same forecasts; :attr:`ForecastScore.issues` counts those kept.

Metrics, over every (issue, slot) pair:

- ``mae_g_per_kwh``: mean of ``|forecast - actual|``;
- ``bias_g_per_kwh``: mean of ``forecast - actual`` (positive: the forecast runs high);
- ``mape_pct``: mean of ``|forecast - actual| / actual`` x 100 over slots whose actual is not
  0 (``zero_actuals`` counts the slots skipped);
- ``window_hit_rate``: the share of issues where the forecast's lowest-carbon window of
  ``window_slots`` consecutive slots inside the horizon starts within one slot of the actual
  lowest-carbon window's start (ties: the earliest window).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt

from carbonshift.carbon.forecast import Forecaster, Oracle, make_forecaster
from carbonshift.carbon.series import CarbonSeries
from carbonshift.errors import InputError
from carbonshift.units import format_utc, to_utc

__all__ = [
    "ForecastScore",
    "ProgressFn",
    "evaluate",
    "issue_times",
    "lowest_window_starts",
    "score_forecasts",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: progress(done, total): called as methods and chunks of issue times are done.
ProgressFn = Callable[[int, int], None]

_CHUNK_ISSUES = 24 * 31  # about a month of hourly issues per batch


@dataclass(frozen=True, slots=True)
class ForecastScore:
    """The error of one method's forecasts for one zone and horizon."""

    zone: str
    method: str
    horizon_slots: int
    slot_minutes: int
    window_slots: int
    issues: int
    first_issue: datetime | None
    last_issue: datetime | None
    mae_g_per_kwh: float
    bias_g_per_kwh: float
    mape_pct: float | None
    zero_actuals: int
    window_hit_rate: float | None
    mae_by_lead_g_per_kwh: tuple[float, ...]

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (times as ISO 8601 UTC, undefined ratios as ``None``)."""
        return {
            "zone": self.zone,
            "method": self.method,
            "horizon_slots": self.horizon_slots,
            "slot_minutes": self.slot_minutes,
            "window_slots": self.window_slots,
            "issues": self.issues,
            "first_issue": None if self.first_issue is None else format_utc(self.first_issue),
            "last_issue": None if self.last_issue is None else format_utc(self.last_issue),
            "mae_g_per_kwh": self.mae_g_per_kwh,
            "bias_g_per_kwh": self.bias_g_per_kwh,
            "mape_pct": self.mape_pct,
            "zero_actuals": self.zero_actuals,
            "window_hit_rate": self.window_hit_rate,
            "mae_by_lead_g_per_kwh": list(self.mae_by_lead_g_per_kwh),
        }


def issue_times(start: datetime, end: datetime, every_minutes: int = 60) -> list[datetime]:
    """Issue times ``start, start + every, ...`` before ``end`` (UTC)."""
    if every_minutes < 1:
        raise InputError(f"issue_every_minutes is {every_minutes}; give a whole number >= 1")
    start, end = to_utc(start), to_utc(end)
    if end <= start:
        raise InputError(
            f"evaluation period {format_utc(start)} to {format_utc(end)} is empty; "
            "the end must come after the start"
        )
    count = -(-int((end - start).total_seconds()) // (every_minutes * 60))
    step = timedelta(minutes=every_minutes)
    return [start + i * step for i in range(count)]


def lowest_window_starts(values: FloatArray, window_slots: int) -> IntArray:
    """Per row, the start of the ``window_slots``-slot window with the least mean (earliest on
    ties). ``values`` has shape (rows, slots)."""
    slots = values.shape[1]
    if not 1 <= window_slots <= slots:
        raise InputError(
            f"window of {window_slots} slots does not fit a horizon of {slots} slots; "
            "make the window shorter or the horizon longer"
        )
    sums = np.cumsum(np.pad(values, ((0, 0), (1, 0))), axis=1)
    window_sums = sums[:, window_slots:] - sums[:, :-window_slots]
    return np.asarray(np.argmin(window_sums, axis=1), dtype=np.int64)


def score_forecasts(
    forecast: FloatArray,
    actual: FloatArray,
    *,
    zone: str = "",
    method: str = "",
    slot_minutes: int = 60,
    window_slots: int = 6,
    issued_at: Sequence[datetime] = (),
) -> ForecastScore:
    """Score forecasts against actuals, both of shape (issues, slots), in g/kWh."""
    if forecast.shape != actual.shape or forecast.ndim != 2:
        raise InputError(
            f"forecast shape {forecast.shape} and actual shape {actual.shape} differ; "
            "give two (issues, slots) arrays of the same shape"
        )
    issues, slots = actual.shape
    error = forecast - actual
    nonzero = actual != 0
    zero_actuals = int(actual.size - np.count_nonzero(nonzero))
    if issues == 0:
        return ForecastScore(
            zone, method, slots, slot_minutes, window_slots, 0, None, None,
            float("nan"), float("nan"), None, 0, None, (),
        )  # fmt: skip
    mape = (
        float(np.mean(np.abs(error[nonzero]) / np.abs(actual[nonzero])) * 100.0)
        if zero_actuals < actual.size
        else None
    )
    hit_rate: float | None = None
    if window_slots <= slots:
        starts_f = lowest_window_starts(forecast, window_slots)
        starts_a = lowest_window_starts(actual, window_slots)
        hit_rate = float(np.mean(np.abs(starts_f - starts_a) <= 1))
    return ForecastScore(
        zone=zone,
        method=method,
        horizon_slots=slots,
        slot_minutes=slot_minutes,
        window_slots=window_slots,
        issues=issues,
        first_issue=issued_at[0] if issued_at else None,
        last_issue=issued_at[-1] if issued_at else None,
        mae_g_per_kwh=float(np.mean(np.abs(error))),
        bias_g_per_kwh=float(np.mean(error)),
        mape_pct=mape,
        zero_actuals=zero_actuals,
        window_hit_rate=hit_rate,
        mae_by_lead_g_per_kwh=tuple(float(v) for v in np.mean(np.abs(error), axis=0)),
    )


def evaluate(
    series: CarbonSeries,
    methods: Sequence[str] | Mapping[str, Forecaster],
    start: datetime,
    end: datetime,
    *,
    horizon_slots: int = 24,
    slot_minutes: int = 60,
    window_slots: int = 6,
    issue_every_minutes: int = 60,
    progress: ProgressFn | None = None,
) -> list[ForecastScore]:
    """Score each method on forecasts issued every ``issue_every_minutes`` in ``[start, end)``.

    ``methods`` are registry names (default parameters) or a mapping label -> forecaster.
    Raises :class:`~carbonshift.errors.InputError` when no issue time can be served by every
    method (for example ``wma`` in the first year of the data).
    """
    if not 1 <= window_slots <= horizon_slots:
        raise InputError(
            f"window of {window_slots} slots does not fit a horizon of {horizon_slots} slots; "
            "make the window shorter or the horizon longer"
        )
    chosen: dict[str, Forecaster] = (
        dict(methods)
        if isinstance(methods, Mapping)
        else {name: make_forecaster(name) for name in methods}
    )
    if not chosen:
        raise InputError("no forecast methods given; name at least one, like wma,persistence")
    times = issue_times(start, end, issue_every_minutes)
    chunks = [times[i : i + _CHUNK_ISSUES] for i in range(0, len(times), _CHUNK_ISSUES)]
    total = len(chunks) * (len(chosen) + 1)
    done = 0
    oracle = Oracle()
    actual_parts: list[FloatArray] = []
    forecast_parts: dict[str, list[FloatArray]] = {label: [] for label in chosen}
    for chunk in chunks:
        actual_parts.append(
            oracle.forecast_many(series, chunk, horizon_slots, slot_minutes, on_missing="nan")
        )
        done += 1
        if progress is not None:
            progress(done, total)
        for label, forecaster in chosen.items():
            forecast_parts[label].append(
                forecaster.forecast_many(
                    series, chunk, horizon_slots, slot_minutes, on_missing="nan"
                )
            )
            done += 1
            if progress is not None:
                progress(done, total)
    actual = np.concatenate(actual_parts)
    forecasts = {label: np.concatenate(parts) for label, parts in forecast_parts.items()}
    keep = ~np.isnan(actual).any(axis=1)
    for forecast in forecasts.values():
        keep &= ~np.isnan(forecast).any(axis=1)
    if not keep.any():
        raise InputError(
            f"no issue time in {format_utc(start)} to {format_utc(end)} can be served by "
            f"every method ({', '.join(chosen)}) with a {horizon_slots}-slot horizon on the "
            f"{series.zone} data ({format_utc(series.start)} to {format_utc(series.end)}); "
            "pick a later period (wma needs the previous year) or drop that method"
        )
    kept_times = [times[int(i)] for i in np.flatnonzero(keep)]
    return [
        score_forecasts(
            forecast[keep],
            actual[keep],
            zone=series.zone,
            method=label,
            slot_minutes=slot_minutes,
            window_slots=window_slots,
            issued_at=kept_times,
        )
        for label, forecast in forecasts.items()
    ]
