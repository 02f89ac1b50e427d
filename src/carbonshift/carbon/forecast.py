"""Forecasters of carbon intensity: one interface, an explicit registry of named factories.

A forecaster answers "what will the intensity of this zone be over the next ``horizon_slots``
slots, as seen at ``issued_at``?" from a :class:`~carbonshift.carbon.series.CarbonSeries`.
The names are those of docs/formats.md (scenario):

========================  ==============================================================
``oracle``                the actual values (perfect foresight)
``noisy-oracle``          the actual values plus seeded noise of a given mean absolute error
``persistence``           the last value before the issue time, held flat
``seasonal-day``          the same time of day on the most recent day before the issue time
``seasonal-week``         the same time of week in the most recent week before the issue time
``wma``                   the CO2 scheduler's weighted moving average of the previous year
``ewma-profile``          an exponentially weighted average of past days at the same time of day
========================  ==============================================================

**No look-ahead, by construction.** Every forecaster except the two oracles is a weighted sum
of past values: it only names *which* indices of the series it wants and with which weights
(:meth:`_HistoryForecaster._sources`), never seeing the values. The shared base then drops
every index at or after the issue time (and outside the data), renormalises the remaining
weights and gathers the values. A bug in a forecaster can make it worse, never clairvoyant.
``tests/carbon/test_forecast_leak.py`` checks this with a hypothesis property.

**Batch API.** :meth:`Forecaster.forecast_many` takes many issue times at once and returns a
2-D array (issue x slot); evaluating a year of hourly issues is a few vectorised gathers.

Forecasts are computed on the series' native step and averaged (or repeated) to
``slot_minutes``; issue times must lie on the series' step grid.
"""

from __future__ import annotations

import difflib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import ClassVar, Literal, Protocol

import numpy as np
import numpy.typing as npt

from carbonshift.carbon.series import CarbonSeries
from carbonshift.errors import DataRangeError, InputError
from carbonshift.units import format_utc, to_utc

__all__ = [
    "FORECASTERS",
    "EwmaProfile",
    "Forecaster",
    "NoisyOracle",
    "Oracle",
    "Persistence",
    "SeasonalDay",
    "SeasonalWeek",
    "WeightedMovingAverage",
    "forecaster_names",
    "make_forecaster",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
OnMissing = Literal["raise", "nan"]

_MINUTES_PER_DAY = 1440


class Forecaster(Protocol):
    """Predicts a zone's intensity over the slots after an issue time."""

    @property
    def name(self) -> str:
        """The registry name (docs/formats.md (scenario))."""
        ...

    def forecast(
        self,
        series: CarbonSeries,
        issued_at: datetime,
        horizon_slots: int,
        slot_minutes: int = 60,
    ) -> FloatArray:
        """``horizon_slots`` values in g/kWh for the slots starting at ``issued_at``."""
        ...

    def forecast_many(
        self,
        series: CarbonSeries,
        issued_at: Sequence[datetime],
        horizon_slots: int,
        slot_minutes: int = 60,
        *,
        on_missing: OnMissing = "raise",
    ) -> FloatArray:
        """One row of ``horizon_slots`` values (g/kWh) per issue time: shape (issues, slots).

        A row the forecaster cannot fill (not enough history, or data to hand for an oracle)
        raises :class:`~carbonshift.errors.DataRangeError`, or is NaN with ``on_missing="nan"``.
        """
        ...


# --------------------------------------------------------------------------------------------
# Shared machinery: issue times to indices, native horizon, resampling to slots.


@dataclass(frozen=True, slots=True)
class _Grid:
    """The native time grid of a series, as numpy datetimes (minutes, naive UTC)."""

    start: np.datetime64
    step_minutes: int
    length: int

    @classmethod
    def of(cls, series: CarbonSeries) -> _Grid:
        start = to_utc(series.start).replace(tzinfo=None)
        return cls(np.datetime64(start, "m"), series.step_minutes, len(series))

    @property
    def steps_per_day(self) -> int:
        if _MINUTES_PER_DAY % self.step_minutes:
            raise InputError(
                f"series step {self.step_minutes} min does not divide a day (1440 min); "
                "this forecaster needs a step such as 5, 15, 30 or 60 min"
            )
        return _MINUTES_PER_DAY // self.step_minutes

    def times(self, index: IntArray) -> npt.NDArray[np.datetime64]:
        return self.start + index * np.timedelta64(self.step_minutes, "m")

    def index_of(self, times: npt.NDArray[np.datetime64]) -> IntArray:
        minutes = (times - self.start) // np.timedelta64(1, "m")
        return np.asarray(minutes // self.step_minutes, dtype=np.int64)


def _issue_indices(series: CarbonSeries, issued_at: Sequence[datetime]) -> IntArray:
    step_s = series.step_minutes * 60
    start = to_utc(series.start)
    out = np.empty(len(issued_at), dtype=np.int64)
    for i, moment in enumerate(issued_at):
        offset_s = (to_utc(moment) - start).total_seconds()
        steps, rest = divmod(offset_s, step_s)
        if rest:
            raise InputError(
                f"issue time {format_utc(moment)} is not on the {series.step_minutes}-minute "
                f"grid of the {series.zone} series starting {format_utc(start)}; "
                "round it to a whole step"
            )
        out[i] = int(steps)
    return out


def _native_steps(series: CarbonSeries, horizon_slots: int, slot_minutes: int) -> int:
    if horizon_slots < 1:
        raise InputError(f"horizon_slots is {horizon_slots}; it must be a whole number >= 1")
    step = series.step_minutes
    if slot_minutes < 1 or (slot_minutes % step and step % slot_minutes):
        raise InputError(
            f"slot_minutes {slot_minutes} min does not fit the {step}-minute step of the "
            f"{series.zone} series; use a multiple or a divisor of {step} min"
        )
    if slot_minutes >= step:
        return horizon_slots * (slot_minutes // step)
    per_step = step // slot_minutes
    return -(-horizon_slots // per_step)


def _to_slots(
    native: FloatArray, step_minutes: int, horizon_slots: int, slot_minutes: int
) -> FloatArray:
    """Average (or repeat) native-step values into slots of ``slot_minutes``."""
    if slot_minutes >= step_minutes:
        per_slot = slot_minutes // step_minutes
        shaped = native.reshape(native.shape[0], horizon_slots, per_slot)
        return np.asarray(shaped.mean(axis=2), dtype=np.float64)
    per_step = step_minutes // slot_minutes
    return np.repeat(native, per_step, axis=1)[:, :horizon_slots]


def _check_missing(
    name: str, out: FloatArray, issue_idx: IntArray, series: CarbonSeries, why: str
) -> None:
    bad = np.flatnonzero(np.isnan(out).any(axis=1))
    if bad.size:
        first = series.start + timedelta(minutes=int(issue_idx[bad[0]]) * series.step_minutes)
        raise DataRangeError(
            f"forecaster {name!r} cannot forecast from issue time {format_utc(first)} "
            f"({bad.size} of {len(issue_idx)} issue times): {why}; the {series.zone} data "
            f"cover {format_utc(series.start)} to {format_utc(series.end)}"
        )


class _BaseForecaster(ABC):
    """Validation, batching and resampling shared by every forecaster."""

    __slots__ = ()
    name: ClassVar[str]
    _missing_why: ClassVar[str] = "not enough data"

    def forecast(
        self,
        series: CarbonSeries,
        issued_at: datetime,
        horizon_slots: int,
        slot_minutes: int = 60,
    ) -> FloatArray:
        """``horizon_slots`` values in g/kWh for the slots starting at ``issued_at``."""
        rows = self.forecast_many(series, [issued_at], horizon_slots, slot_minutes)
        row: FloatArray = rows[0]
        return row

    def forecast_many(
        self,
        series: CarbonSeries,
        issued_at: Sequence[datetime],
        horizon_slots: int,
        slot_minutes: int = 60,
        *,
        on_missing: OnMissing = "raise",
    ) -> FloatArray:
        """One row of ``horizon_slots`` values (g/kWh) per issue time: shape (issues, slots)."""
        steps = _native_steps(series, horizon_slots, slot_minutes)
        issue_idx = _issue_indices(series, issued_at)
        if len(series) == 0:
            raise InputError(f"the {series.zone} series is empty; give at least one value")
        native = self._native(series, issue_idx, steps)
        out = _to_slots(native, series.step_minutes, horizon_slots, slot_minutes)
        out = self._finish(out, issue_idx)
        if on_missing == "raise":
            _check_missing(self.name, out, issue_idx, series, self._missing_why)
        return out

    @abstractmethod
    def _native(self, series: CarbonSeries, issue_idx: IntArray, steps: int) -> FloatArray:
        """Forecast at the native step: shape (issues, steps), NaN where impossible."""

    def _finish(self, slots: FloatArray, issue_idx: IntArray) -> FloatArray:
        """A last touch on the slot values (the noisy oracle adds its noise here)."""
        return slots


class _HistoryForecaster(_BaseForecaster):
    """A forecast that is a weighted sum of values strictly before the issue time.

    Subclasses only name source indices and weights; this base drops every source at or after
    the issue index (or outside the data), renormalises what remains and gathers the values.
    A target slot with no source left is NaN (reported as missing).
    """

    __slots__ = ()
    _missing_why = "it needs data before the issue time that the series does not have"
    #: position along the last axis of :meth:`_sources` that must be usable, else no forecast
    _anchor: ClassVar[int | None] = None

    @abstractmethod
    def _sources(self, grid: _Grid, issue_idx: IntArray, steps: int) -> tuple[IntArray, FloatArray]:
        """Source indices and weights, shape (issues, steps, k) each, for targets
        ``issue_idx + j`` (j in 0..steps-1)."""

    def _native(self, series: CarbonSeries, issue_idx: IntArray, steps: int) -> FloatArray:
        grid = _Grid.of(series)
        source, weight = self._sources(grid, issue_idx, steps)
        values = series.values_g_per_kwh
        usable = (source >= 0) & (source < issue_idx[:, None, None]) & (source < len(values))
        weight = np.where(usable, weight, 0.0)
        total = weight.sum(axis=2)
        if self._anchor is not None:
            total = np.where(usable[..., self._anchor], total, 0.0)
        gathered = np.where(usable, values[np.where(usable, source, 0)], 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = (weight * gathered).sum(axis=2) / total
        return np.asarray(np.where(total > 0, out, np.nan), dtype=np.float64)


def _targets(issue_idx: IntArray, steps: int) -> IntArray:
    return np.asarray(issue_idx[:, None] + np.arange(steps, dtype=np.int64)[None, :])


def _latest_period_before(
    issue_idx: IntArray, steps: int, period_steps: int, count: int
) -> IntArray:
    """For each target, the ``count`` most recent indices at the same phase of ``period_steps``
    that lie before the issue index: shape (issues, steps, count), most recent first."""
    lead = np.arange(steps, dtype=np.int64)[None, :]  # target - issue
    first_k = lead // period_steps + 1  # smallest k with target - k*period < issue
    target = issue_idx[:, None] + lead
    ks = first_k[..., None] + np.arange(count, dtype=np.int64)
    return np.asarray(target[..., None] - ks * period_steps)


# --------------------------------------------------------------------------------------------
# The forecasters.


@dataclass(frozen=True, slots=True)
class Oracle(_BaseForecaster):
    """The actual values: a perfect forecast (reads the data at and after the issue time)."""

    name: ClassVar[str] = "oracle"
    _missing_why: ClassVar[str] = "the actual values past the end of the data are unknown"

    def _native(self, series: CarbonSeries, issue_idx: IntArray, steps: int) -> FloatArray:
        target = _targets(issue_idx, steps)
        values = series.values_g_per_kwh
        inside = (target >= 0) & (target < len(values))
        return np.where(inside, values[np.clip(target, 0, len(values) - 1)], np.nan)


@dataclass(frozen=True, slots=True)
class NoisyOracle(_BaseForecaster):
    """The actual values plus seeded noise whose mean absolute error is ``mae_g_per_kwh``.

    Noise ``e`` is normal with standard deviation ``mae_g_per_kwh * sqrt(pi / 2)``, so that
    ``E|e| = mae_g_per_kwh``; it is drawn per slot (after resampling), independently for each
    issue time from a generator seeded by ``(seed, issue index)``, so a forecast does not depend
    on the batch it was computed in. Values never go below 0, without changing the error: where
    ``actual + e < 0`` the noise is reflected to ``actual + |e|`` (same absolute error, so the
    MAE target holds exactly in expectation; the bias turns slightly positive on slots near 0).
    """

    name: ClassVar[str] = "noisy-oracle"
    _missing_why: ClassVar[str] = "the actual values past the end of the data are unknown"

    mae_g_per_kwh: float = 24.0
    seed: int = 1

    def __post_init__(self) -> None:
        if not (isinstance(self.mae_g_per_kwh, int | float) and self.mae_g_per_kwh >= 0):
            raise InputError(
                f"noisy-oracle mae_g_per_kwh is {self.mae_g_per_kwh!r} g/kWh; "
                "give a number >= 0 (the GB national forecast's is about 24)"
            )
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise InputError(f"noisy-oracle seed is {self.seed!r}; give a whole number >= 0")

    def _native(self, series: CarbonSeries, issue_idx: IntArray, steps: int) -> FloatArray:
        return Oracle()._native(series, issue_idx, steps)

    def _finish(self, slots: FloatArray, issue_idx: IntArray) -> FloatArray:
        sigma = float(self.mae_g_per_kwh) * np.sqrt(np.pi / 2.0)
        noise = np.empty_like(slots)
        for row, index in enumerate(issue_idx):
            rng = np.random.default_rng([self.seed, int(index) + 2**40])
            noise[row] = rng.normal(0.0, sigma, size=slots.shape[1])
        noisy = slots + noise
        reflected = np.where(noisy < 0.0, slots + np.abs(noise), noisy)
        return np.asarray(np.maximum(reflected, 0.0), dtype=np.float64)


@dataclass(frozen=True, slots=True)
class Persistence(_HistoryForecaster):
    """The last value before the issue time, held for the whole horizon (naive forecast)."""

    name: ClassVar[str] = "persistence"

    def _sources(self, grid: _Grid, issue_idx: IntArray, steps: int) -> tuple[IntArray, FloatArray]:
        source = np.broadcast_to((issue_idx - 1)[:, None, None], (len(issue_idx), steps, 1))
        return np.asarray(source), np.ones(source.shape)


@dataclass(frozen=True, slots=True)
class SeasonalDay(_HistoryForecaster):
    """Seasonal naive, daily: the same time of day on the most recent day before the issue
    time (for a lead under 24 h: yesterday; 24-48 h ahead: two days back, and so on)."""

    name: ClassVar[str] = "seasonal-day"

    def _sources(self, grid: _Grid, issue_idx: IntArray, steps: int) -> tuple[IntArray, FloatArray]:
        source = _latest_period_before(issue_idx, steps, grid.steps_per_day, 1)
        return source, np.ones(source.shape)


@dataclass(frozen=True, slots=True)
class SeasonalWeek(_HistoryForecaster):
    """Seasonal naive, weekly: the same weekday and time in the most recent week before the
    issue time."""

    name: ClassVar[str] = "seasonal-week"

    def _sources(self, grid: _Grid, issue_idx: IntArray, steps: int) -> tuple[IntArray, FloatArray]:
        source = _latest_period_before(issue_idx, steps, 7 * grid.steps_per_day, 1)
        return source, np.ones(source.shape)


_WMA_WEIGHTS = np.array([1.0, 2.0, 4.0, 2.0, 1.0]) / 10.0
_WMA_DAY_OFFSETS = np.array([-2, -1, 0, 1, 2], dtype=np.int64)


@dataclass(frozen=True, slots=True)
class WeightedMovingAverage(_HistoryForecaster):
    """The CO2 scheduler's forecast (Piontek, Univ. Stuttgart; ALGORITHMS.md "The CO2
    scheduler"): for time of day h on calendar day d of year Y, the weighted average of time h
    on days d-2, d-1, d, d+1, d+2 of year Y-1 with weights 1, 2, 4, 2, 1 (sum 10).

    Day d of year Y-1 is the same month and day; 29 February maps to 28 February. Days that
    the data do not hold (or that are not before the issue time) are dropped and the remaining
    weights renormalised (at 2022-01-01 with data from 2021-01-01: days 1-3 January 2021,
    weights 4, 2, 1 over 7). Day d itself must be there: without it there is no forecast
    (otherwise 2021-12-31 would be "forecast" from 2021-01-01 alone, weight 1 of 10).
    The paper reports a MAPE of 32.7 % on DE 2021 from 2020.
    """

    name: ClassVar[str] = "wma"
    _missing_why: ClassVar[str] = "it needs the same dates of the previous year"
    _anchor: ClassVar[int | None] = 2  # day d itself must be in the data

    def _sources(self, grid: _Grid, issue_idx: IntArray, steps: int) -> tuple[IntArray, FloatArray]:
        target = _targets(issue_idx, steps)
        times = grid.times(target)
        day = times.astype("datetime64[D]")
        time_of_day = times - day
        month = day.astype("datetime64[M]")
        day_of_month = (day - month.astype("datetime64[D]")).astype(np.int64)
        is_feb_29 = (month.astype(np.int64) % 12 == 1) & (day_of_month == 28)
        day_of_month = np.where(is_feb_29, 27, day_of_month)
        previous = (month - np.timedelta64(12, "M")).astype("datetime64[D]") + day_of_month
        centre = grid.index_of(previous + time_of_day)
        source = centre[..., None] + _WMA_DAY_OFFSETS * grid.steps_per_day
        return np.asarray(source), np.broadcast_to(_WMA_WEIGHTS, source.shape).copy()


@dataclass(frozen=True, slots=True)
class EwmaProfile(_HistoryForecaster):
    """An exponentially weighted daily profile: for each target, the same time of day on the
    ``days`` most recent days before the issue time, weighted ``alpha * (1 - alpha)**k``
    (k = 0 for the most recent day), renormalised over the days kept.

    ``alpha`` (0 < alpha <= 1, default 0.3) is how much the most recent day counts: 1 gives
    ``seasonal-day``; smaller values smooth over more days. ``days`` (default 14) truncates
    the tail, whose weight ``(1 - alpha)**days`` is under 1 % at the defaults.
    """

    name: ClassVar[str] = "ewma-profile"

    alpha: float = 0.3
    days: int = 14

    def __post_init__(self) -> None:
        if not (isinstance(self.alpha, int | float) and 0.0 < self.alpha <= 1.0):
            raise InputError(
                f"ewma-profile alpha is {self.alpha!r}; give a number in (0, 1], like 0.3"
            )
        if not isinstance(self.days, int) or isinstance(self.days, bool) or self.days < 1:
            raise InputError(
                f"ewma-profile days is {self.days!r} days; give a whole number >= 1, like 14"
            )

    def _sources(self, grid: _Grid, issue_idx: IntArray, steps: int) -> tuple[IntArray, FloatArray]:
        source = _latest_period_before(issue_idx, steps, grid.steps_per_day, self.days)
        decay = float(self.alpha) * (1.0 - float(self.alpha)) ** np.arange(self.days)
        return source, np.broadcast_to(decay, source.shape).copy()


# --------------------------------------------------------------------------------------------
# The registry.

#: name -> factory(**params); the names of docs/formats.md (scenario).
FORECASTERS: dict[str, Callable[..., Forecaster]] = {
    "oracle": Oracle,
    "noisy-oracle": NoisyOracle,
    "persistence": Persistence,
    "seasonal-day": SeasonalDay,
    "seasonal-week": SeasonalWeek,
    "wma": WeightedMovingAverage,
    "ewma-profile": EwmaProfile,
}


def forecaster_names() -> list[str]:
    """The registered forecaster names, in registry order."""
    return list(FORECASTERS)


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.5)
    return f"did you mean {close[0]!r}? " if close else ""


def make_forecaster(name: str, params: Mapping[str, object] | None = None) -> Forecaster:
    """Build the forecaster registered as ``name`` with ``params``.

    >>> make_forecaster("ewma-profile", {"alpha": 0.5}).name
    'ewma-profile'
    """
    factory = FORECASTERS.get(name)
    if factory is None:
        raise InputError(
            f"forecaster {name!r} is unknown; {_did_you_mean(name, list(FORECASTERS))}"
            f"choose one of {', '.join(FORECASTERS)}"
        )
    params = dict(params or {})
    accepted = [f.name for f in fields(factory)] if isinstance(factory, type) else []
    for key in params:
        if key not in accepted:
            allowed = ", ".join(accepted) if accepted else "none"
            raise InputError(
                f"forecaster {name!r} has no parameter {key!r}; "
                f"{_did_you_mean(key, accepted)}its parameters: {allowed}"
            )
    return factory(**params)
