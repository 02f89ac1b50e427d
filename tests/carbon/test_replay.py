"""Replay keeps the season: t - y x 364 days past the data, whole weeks for short data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carbonshift.carbon.embedded import load_series
from carbonshift.carbon.replay import (
    REPLAY_YEAR,
    WEEK,
    extend_by_replay,
    replay_period,
    replay_source,
    replayed_span,
)
from carbonshift.carbon.series import CarbonSeries, CiKind
from carbonshift.carbon.signal import EmbeddedSignal, integral_g_h_per_kwh, resample
from carbonshift.errors import DataRangeError

HOUR = timedelta(hours=1)
EMBEDDED_END = datetime(2024, 1, 1, tzinfo=UTC)  # the embedded data end (exclusive)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def hour_index_series(start: datetime, days: int) -> CarbonSeries:
    """An hourly series whose value is its own hour index (so a value names its source)."""
    return CarbonSeries(
        zone="XX",
        kind=CiKind.DIRECT,
        start=start,
        step_minutes=60,
        values_g_per_kwh=np.arange(days * 24, dtype=np.float64),
        source="test",
    )


SEASONAL = [
    pytest.param(utc(2026, 6, 15, 12), utc(2023, 6, 19, 12), id="june-2026-replays-june-2023"),
    pytest.param(utc(2026, 11, 23, 12), utc(2023, 11, 27, 12), id="november-2026-not-christmas"),
    pytest.param(utc(2024, 1, 1, 0), utc(2023, 1, 2, 0), id="exactly-at-the-end-goes-back-a-year"),
    pytest.param(utc(2023, 12, 31, 23), utc(2023, 12, 31, 23), id="last-hour-inside-is-itself"),
    pytest.param(utc(2024, 12, 29, 23), utc(2023, 12, 31, 23), id="last-hour-one-year-back"),
    pytest.param(utc(2024, 12, 30, 0), utc(2023, 1, 2, 0), id="one-year-back-is-the-end-so-two"),
    pytest.param(utc(2024, 12, 31, 23), utc(2023, 1, 3, 23), id="new-years-eve-2024"),
    pytest.param(utc(2025, 1, 1, 0), utc(2023, 1, 4, 0), id="new-year-2025"),
    pytest.param(utc(2024, 2, 29, 12), utc(2023, 3, 2, 12), id="leap-day-2024"),
    pytest.param(utc(2028, 2, 29, 12), utc(2023, 3, 7, 12), id="leap-day-2028"),
    pytest.param(utc(2024, 3, 1, 0), utc(2023, 3, 3, 0), id="after-a-leap-day"),
]


@pytest.mark.parametrize(("moment", "want_source"), SEASONAL)
def test_embedded_replay_keeps_weekday_hour_and_season(
    moment: datetime, want_source: datetime
) -> None:
    series = load_series("DE")
    assert series.end == EMBEDDED_END
    got = replay_source(series, moment)
    assert got == want_source
    assert (got.weekday(), got.hour) == (moment.weekday(), moment.hour)


@pytest.mark.parametrize(("moment", "want_source"), SEASONAL)
def test_embedded_signal_answers_the_source_values(moment: datetime, want_source: datetime) -> None:
    window = EmbeddedSignal(allow_replay=True).window("DE", moment, moment + HOUR)
    want = EmbeddedSignal().window("DE", want_source, want_source + HOUR)
    assert window.values_g_per_kwh.tolist() == want.values_g_per_kwh.tolist()
    if moment >= EMBEDDED_END:
        assert window.replayed_from == (want_source, want_source + HOUR)
    else:
        assert window.replayed_from is None


def test_a_june_plan_window_runs_on_june_data() -> None:
    start = utc(2026, 6, 15, 12)
    window = EmbeddedSignal(allow_replay=True).window("GB", start, start + 24 * HOUR)
    assert window.replayed_from is not None
    first, last = window.replayed_from
    assert (first.year, first.month) == (2023, 6)
    assert (last.year, last.month) == (2023, 6)


@pytest.mark.parametrize(
    ("days", "want_period"),
    [
        pytest.param(364, REPLAY_YEAR, id="exactly-364-days-replays-years"),
        pytest.param(3 * 365, REPLAY_YEAR, id="three-years"),
        pytest.param(363, WEEK, id="one-day-short-replays-weeks"),
        pytest.param(30, WEEK, id="a-month"),
        pytest.param(7, WEEK, id="exactly-a-week"),
    ],
)
def test_the_period_depends_on_the_length_of_the_data(days: int, want_period: timedelta) -> None:
    assert replay_period(hour_index_series(utc(2023, 1, 2), days)) == want_period


def test_data_shorter_than_a_week_cannot_replay() -> None:
    with pytest.raises(DataRangeError, match="at least 7 days"):
        replay_period(hour_index_series(utc(2023, 1, 2), 6))


@pytest.mark.parametrize(
    ("days", "hours_past", "want_source_h"),
    [
        pytest.param(30, 0, 30 * 24 - 7 * 24, id="short-data-at-the-end-one-week-back"),
        pytest.param(30, 7 * 24 + 5, 30 * 24 - 7 * 24 + 5, id="short-data-two-weeks-back"),
        pytest.param(364, 0, 0, id="364-days-at-the-end-back-to-the-start"),
        pytest.param(364, 364 * 24 - 1, 364 * 24 - 1, id="364-days-last-hour-of-the-first-year"),
        pytest.param(364, 364 * 24, 0, id="364-days-two-years-back"),
    ],
)
def test_replayed_values_come_from_the_source_hour(
    days: int, hours_past: int, want_source_h: int
) -> None:
    series = hour_index_series(utc(2023, 1, 2), days)
    moment = series.end + hours_past * HOUR
    assert replay_source(series, moment) == series.start + want_source_h * HOUR
    window = resample(series, moment, moment + HOUR, allow_replay=True)
    assert window.values_g_per_kwh.tolist() == [float(want_source_h)]


@settings(max_examples=60, deadline=None)
@given(hours_past=st.integers(0, 6 * 366 * 24))
def test_replay_lands_inside_the_last_year_near_the_same_day_of_year(hours_past: int) -> None:
    series = load_series("CA-ON")
    moment = series.end + hours_past * HOUR
    source = replay_source(series, moment)
    assert series.end - REPLAY_YEAR <= source < series.end
    assert (source.weekday(), source.hour) == (moment.weekday(), moment.hour)
    years_back = (moment - source) // REPLAY_YEAR
    shift = (moment.timetuple().tm_yday - source.timetuple().tm_yday) % 365
    drift_days = min(shift, 365 - shift)
    assert drift_days <= years_back + years_back // 4 + 1  # a day a year, and leap days


@pytest.mark.parametrize(
    ("begin", "until"),
    [
        pytest.param(utc(2024, 12, 20), utc(2025, 1, 10), id="across-the-replay-year-boundary"),
        pytest.param(utc(2026, 6, 1), utc(2026, 7, 1), id="june-2026"),
    ],
)
def test_extending_a_series_agrees_with_replaying_it(begin: datetime, until: datetime) -> None:
    series = load_series("DE")
    extended = extend_by_replay(series, until)
    assert extended.end >= until
    replayed = resample(series, begin, until, allow_replay=True)
    from_extension = resample(extended, begin, until)
    np.testing.assert_allclose(from_extension.values_g_per_kwh, replayed.values_g_per_kwh)
    want_g_h = float(np.sum(replayed.values_g_per_kwh))
    got_g_h = integral_g_h_per_kwh(series, begin, until, allow_replay=True)
    assert got_g_h == pytest.approx(want_g_h, rel=1e-9)
    assert "replayed past 2024-01-01" in extended.source


def test_a_span_wider_than_a_year_names_the_whole_last_year() -> None:
    series = load_series("DE")
    got = replayed_span(series, utc(2024, 6, 1), utc(2025, 7, 1))
    assert got == (EMBEDDED_END - REPLAY_YEAR, EMBEDDED_END)
    assert replayed_span(series, utc(2023, 6, 1), utc(2023, 7, 1)) is None
