"""Replay: which time of the data answers for a time past its end (docs/formats.md (scenario)).

A time ``t`` at or past the end of a series takes the value at ``t - y x 364 days`` for the
smallest ``y >= 1`` that lands inside the data. 364 days are 52 weeks: the source has the
same weekday and UTC hour, and the season is kept within days (each year back drifts one day,
two across a 29 February). A series shorter than 364 days cannot go back a year, so it
replays whole weeks instead: ``t - k x 7 days`` for the smallest such ``k``. A series shorter
than a week, or on a step that does not divide a week, cannot be replayed. Times before the
start of the data are never replayed (they raise in the callers).

This is the one implementation: the signals (:mod:`carbonshift.carbon.signal`), the
simulator's ``allow_replay``, the controller, the hub and the API all go through it.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt

from carbonshift.carbon.series import CarbonSeries
from carbonshift.errors import DataRangeError
from carbonshift.units import format_utc, to_utc

__all__ = [
    "REPLAY_YEAR",
    "WEEK",
    "extend_by_replay",
    "period_steps",
    "replay_indexes",
    "replay_period",
    "replay_source",
    "replayed_span",
]

IntArray = npt.NDArray[np.int64]

WEEK = timedelta(days=7)
REPLAY_YEAR = timedelta(days=364)  #: 52 weeks: same weekday and hour, season within days
_WEEK_MINUTES = 7 * 24 * 60


def replay_period(series: CarbonSeries) -> timedelta:
    """How far back a replayed time goes per step: 364 days, or 7 days for shorter data.

    Raises :class:`~carbonshift.errors.DataRangeError` when the series cannot be replayed.
    """
    span = series.end - series.start
    if _WEEK_MINUTES % series.step_minutes or span < WEEK:
        raise DataRangeError(
            f"zone {series.zone}: replay needs at least 7 days of data on a step that divides a "
            f"week; this series has {len(series)} steps of {series.step_minutes} minutes "
            f"({format_utc(series.start)} to {format_utc(series.end)}, end exclusive)"
        )
    return REPLAY_YEAR if span >= REPLAY_YEAR else WEEK


def period_steps(series: CarbonSeries) -> int:
    """The replay period in native steps (1 for a series that cannot be replayed)."""
    try:
        period = replay_period(series)
    except DataRangeError:
        return 1
    return int(period / timedelta(minutes=series.step_minutes))


def replay_indexes(index: IntArray, n_native: int, steps: int) -> IntArray:
    """Native step indexes with those at or past ``n_native`` replayed ``steps`` at a time.

    Index ``i >= n_native`` maps to ``i - y x steps`` for the smallest ``y >= 1`` below
    ``n_native``; the caller checked that replay is allowed (``steps`` from
    :func:`period_steps`).
    """
    out = index.copy()
    past = out >= n_native
    if past.any():
        back = (out[past] - n_native) // steps + 1
        out[past] -= back * steps
    return out


def replay_source(series: CarbonSeries, moment: datetime) -> datetime:
    """The time whose value ``moment`` takes: itself inside the data, else its replay source.

    Past the end: ``moment - y x 364 days`` for the smallest ``y >= 1`` that lands inside the
    data (``moment - k x 7 days`` for data shorter than 364 days). Raises
    :class:`~carbonshift.errors.DataRangeError` when the series cannot be replayed.
    """
    moment = to_utc(moment)
    if moment < series.end:
        return moment
    period = replay_period(series)
    back = (moment - series.end) // period + 1
    return moment - back * period


def replayed_span(
    series: CarbonSeries, first: datetime, last: datetime
) -> tuple[datetime, datetime] | None:
    """The source dates ``[from, to)`` that the replayed times of ``[first, last)`` came from.

    None when nothing in the range is past the data. A range whose sources wrap around (from
    the end of the data back to one period before it) answers that whole last period.
    """
    if last <= series.end:
        return None
    period = replay_period(series)
    begin = max(first, series.end)
    whole = (series.end - period, series.end)
    if last - begin >= period:
        return whole
    source_begin = replay_source(series, begin)
    source_end = source_begin + (last - begin)
    if source_end > series.end:
        return whole
    return (source_begin, source_end)


def extend_by_replay(series: CarbonSeries, until: datetime) -> CarbonSeries:
    """``series`` extended to ``until`` with replayed values (see the module docstring).

    The replayed steps (and their ``estimated`` flags) are copies of their sources; the
    source name says from which date on the values are replayed.
    """
    if until <= series.end:
        return series
    steps = int(replay_period(series) / timedelta(minutes=series.step_minutes))
    n = len(series)
    extra = math.ceil((until - series.end) / timedelta(minutes=series.step_minutes))
    source = replay_indexes(np.arange(n, n + extra, dtype=np.int64), n, steps)
    values = np.concatenate([series.values_g_per_kwh, series.values_g_per_kwh[source]])
    estimated = (
        None
        if series.estimated is None
        else np.concatenate([series.estimated, series.estimated[source]])
    )
    return replace(
        series,
        values_g_per_kwh=values,
        estimated=estimated,
        source=f"{series.source} (replayed past {series.end:%Y-%m-%d})",
    )
