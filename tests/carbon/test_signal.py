"""Signals: hand-computed resampling, conservation of the mean, replay, ranges, integrals."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carbonshift.carbon.series import CarbonSeries, CiKind
from carbonshift.carbon.signal import (
    EmbeddedSignal,
    SeriesSignal,
    integral_g_h_per_kwh,
    integrals_g_h_per_kwh,
    replay_source,
    resample,
)
from carbonshift.errors import DataRangeError, InputError

T0 = datetime(2023, 1, 2, tzinfo=UTC)  # a Monday


def hourly(values: Sequence[float], *, estimated: Sequence[bool] | None = None) -> CarbonSeries:
    """A test series: one value per hour from T0."""
    return CarbonSeries(
        zone="XX",
        kind=CiKind.DIRECT,
        start=T0,
        step_minutes=60,
        values_g_per_kwh=np.asarray(values, dtype=np.float64),
        estimated=None if estimated is None else np.asarray(estimated, dtype=bool),
        source="test",
    )


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


TEN_TO_FORTY = hourly([10, 20, 30, 40])

RESAMPLING = [
    pytest.param(0, 1, 5, [10.0] * 12, id="5-min-slots-repeat-the-hour"),
    pytest.param(0, 2, 30, [10.0, 10.0, 20.0, 20.0], id="30-min-slots"),
    pytest.param(0, 3, 90, [(10 + 20 * 0.5) / 1.5, (20 * 0.5 + 30) / 1.5], id="90-min-straddle"),
    pytest.param(0, 4, 120, [15.0, 35.0], id="120-min-pairwise-means"),
    pytest.param(0, 3, 120, [15.0, 30.0], id="partial-last-slot-averages-what-it-covers"),
    pytest.param(
        1 / 3,
        7 / 3,
        60,
        [(10 * 40 + 20 * 20) / 60, (20 * 40 + 30 * 20) / 60],
        id="misaligned-start-0020",
    ),
    pytest.param(
        1 / 3,
        11 / 6,
        60,
        [(10 * 40 + 20 * 20) / 60, 20.0],
        id="misaligned-start-and-partial-last-slot",
    ),
    pytest.param(0, 4, 24 * 60, [25.0], id="24-h-slot-longer-than-the-window"),
]


@pytest.mark.parametrize(("start_h", "end_h", "slot_minutes", "want_values"), RESAMPLING)
def test_resampling_by_hand(
    start_h: float, end_h: float, slot_minutes: int, want_values: list[float]
) -> None:
    window = resample(TEN_TO_FORTY, at(start_h), at(end_h), slot_minutes=slot_minutes)
    assert window.values_g_per_kwh.tolist() == pytest.approx(want_values, rel=1e-12)
    assert window.start == at(start_h)
    assert window.end == at(end_h)
    assert window.slot_starts()[1:] == [
        at(start_h) + i * timedelta(minutes=slot_minutes) for i in range(1, len(want_values))
    ]
    assert window.replayed_from is None


def test_24_h_slots_over_two_days() -> None:
    values = list(range(48))
    window = resample(hourly(values), at(0), at(48), slot_minutes=24 * 60)
    assert window.values_g_per_kwh.tolist() == pytest.approx([11.5, 35.5])


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.floats(0, 2000, allow_nan=False), min_size=1, max_size=60),
    slot_minutes=st.integers(5, 24 * 60),
    data=st.data(),
)
def test_resampling_conserves_the_time_weighted_mean(
    values: list[float], slot_minutes: int, data: st.DataObject
) -> None:
    total_minutes = 60 * len(values)
    start_min = data.draw(st.integers(0, total_minutes - 1), label="start_min")
    end_min = data.draw(st.integers(start_min + 1, total_minutes), label="end_min")
    window = resample(
        hourly(values), at(start_min / 60), at(end_min / 60), slot_minutes=slot_minutes
    )
    widths = np.diff(
        np.minimum(np.arange(len(window.values_g_per_kwh) + 1) * slot_minutes, end_min - start_min)
    )
    per_minute = np.repeat(np.asarray(values), 60)[start_min:end_min]
    want_mean = per_minute.mean()
    got_mean = float(np.sum(window.values_g_per_kwh * widths) / widths.sum())
    assert got_mean == pytest.approx(want_mean, rel=1e-9, abs=1e-9)
    assert len(window.values_g_per_kwh) == -(-(end_min - start_min) // slot_minutes)


TWO_WEEKS = hourly(np.arange(14 * 24, dtype=float))


@pytest.mark.parametrize(
    ("start_h", "end_h", "want_from_h", "want_to_h"),
    [
        pytest.param(14 * 24, 14 * 24 + 3, 7 * 24, 7 * 24 + 3, id="just-past-the-end"),
        pytest.param(14 * 24 - 1, 14 * 24 + 2, 7 * 24, 7 * 24 + 2, id="straddles-the-end"),
        pytest.param(30 * 24 + 5, 30 * 24 + 6, 9 * 24 + 5, 9 * 24 + 6, id="weeks-later"),
        pytest.param(14 * 24, 22 * 24, 7 * 24, 14 * 24, id="longer-than-a-week"),
    ],
)
def test_replay_marks_the_source_dates(
    start_h: int, end_h: int, want_from_h: int, want_to_h: int
) -> None:
    window = resample(TWO_WEEKS, at(start_h), at(end_h), slot_minutes=60, allow_replay=True)
    assert window.replayed_from == (at(want_from_h), at(want_to_h))


def test_replayed_values_are_those_of_t_minus_k_weeks() -> None:
    window = resample(TWO_WEEKS, at(30 * 24), at(30 * 24 + 4), slot_minutes=60, allow_replay=True)
    want_first_h = 30 * 24 - 3 * 7 * 24  # k = 3: the smallest that lands inside the data
    assert window.values_g_per_kwh.tolist() == [float(want_first_h + i) for i in range(4)]
    assert replay_source(TWO_WEEKS, at(30 * 24)) == at(want_first_h)
    assert replay_source(TWO_WEEKS, at(5)) == at(5)


@pytest.mark.parametrize(
    ("start_h", "end_h", "want_message"),
    [
        pytest.param(14 * 24, 14 * 24 + 1, r"is past its end; .* allow replay", id="past-the-end"),
        pytest.param(-1, 2, "is before it", id="before-the-start"),
    ],
)
def test_out_of_range_names_the_valid_range(start_h: int, end_h: int, want_message: str) -> None:
    with pytest.raises(DataRangeError, match=want_message) as caught:
        resample(TWO_WEEKS, at(start_h), at(end_h), slot_minutes=60)
    assert "2023-01-02T00:00:00Z to 2023-01-16T00:00:00Z" in str(caught.value)


def test_before_the_start_is_refused_even_with_replay() -> None:
    with pytest.raises(DataRangeError, match="is before it"):
        resample(TWO_WEEKS, at(-1), at(1), slot_minutes=60, allow_replay=True)


def test_replay_needs_a_week_of_data() -> None:
    with pytest.raises(DataRangeError, match="at least 7 days"):
        resample(TEN_TO_FORTY, at(4), at(5), slot_minutes=60, allow_replay=True)


@pytest.mark.parametrize(
    ("start_h", "end_h", "slot_minutes", "want_message"),
    [
        pytest.param(0, 1, 4, "outside 5..1440", id="slot-too-short"),
        pytest.param(0, 1, 1441, "outside 5..1440", id="slot-too-long"),
        pytest.param(2, 1, 60, "is not after start", id="end-before-start"),
        pytest.param(1, 1, 60, "is not after start", id="empty-window"),
    ],
)
def test_bad_windows(start_h: int, end_h: int, slot_minutes: int, want_message: str) -> None:
    with pytest.raises(InputError, match=want_message):
        resample(TEN_TO_FORTY, at(start_h), at(end_h), slot_minutes=slot_minutes)


def test_estimated_share_is_time_weighted() -> None:
    series = hourly([1, 1, 1, 1], estimated=[True, False, False, False])
    window = resample(series, at(0.5), at(2.5), slot_minutes=60)
    assert window.estimated_share == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("t0_h", "t1_h", "want_g_h_per_kwh"),
    [
        pytest.param(0.5, 2.0, 10 * 0.5 + 20, id="half-hour-then-whole-hour"),
        pytest.param(1.25, 1.5, 20 * 0.25, id="inside-one-step"),
        pytest.param(3.0, 3.0, 0.0, id="empty-interval"),
        pytest.param(0.0, 4.0, 100.0, id="whole-series"),
        pytest.param(4.0, 4.0, 0.0, id="empty-interval-at-the-end-of-the-data"),
        pytest.param(3.5, 4.0, 20.0, id="last-half-hour-of-the-data"),
    ],
)
def test_integral_by_hand(t0_h: float, t1_h: float, want_g_h_per_kwh: float) -> None:
    got = integral_g_h_per_kwh(TEN_TO_FORTY, at(t0_h), at(t1_h))
    assert got == pytest.approx(want_g_h_per_kwh, rel=1e-12, abs=1e-12)


def test_vectorised_integrals_equal_one_by_one() -> None:
    rng = np.random.default_rng(7)
    t0 = rng.uniform(0, 300, size=50)
    t1 = t0 + rng.uniform(0, 100, size=50)
    got = integrals_g_h_per_kwh(TWO_WEEKS, T0, t0, t1, allow_replay=True)
    want = [
        integral_g_h_per_kwh(TWO_WEEKS, at(a), at(b), allow_replay=True)
        for a, b in zip(t0, t1, strict=True)
    ]
    assert got.tolist() == pytest.approx(want, rel=1e-9)


def test_integrals_refuse_reversed_intervals() -> None:
    with pytest.raises(InputError, match="give t1_h >= t0_h"):
        integrals_g_h_per_kwh(TEN_TO_FORTY, T0, [2.0], [1.0])


def test_series_signal_picks_zone_and_kind() -> None:
    lca = CarbonSeries("XX", CiKind.LCA, T0, 60, np.array([5.0, 7.0]))
    signal = SeriesSignal([TEN_TO_FORTY, lca])
    assert signal.window("xx", at(0), at(2), kind=CiKind.LCA).values_g_per_kwh.tolist() == [5, 7]
    assert signal.window("XX", at(0), at(2)).values_g_per_kwh.tolist() == [10, 20]
    with pytest.raises(InputError, match=r"zone 'YY' .* this signal has XX \(direct\), XX \(lca\)"):
        signal.window("YY", at(0), at(1))


def test_series_signal_replays_only_when_allowed() -> None:
    with pytest.raises(DataRangeError):
        SeriesSignal([TWO_WEEKS]).window("XX", at(14 * 24), at(14 * 24 + 1))
    window = SeriesSignal([TWO_WEEKS], allow_replay=True).window("XX", at(14 * 24), at(15 * 24))
    assert window.replayed_from is not None


def test_embedded_signal_replays_2024_from_the_same_weekday_in_2023() -> None:
    start = datetime(2024, 11, 14, tzinfo=UTC)  # a Thursday
    window = EmbeddedSignal(allow_replay=True).window("DE-LU", start, start + timedelta(hours=6))
    want_from = datetime(2023, 11, 16, tzinfo=UTC)  # 364 days back: a Thursday in November
    assert window.replayed_from == (want_from, want_from + timedelta(hours=6))
    source = EmbeddedSignal().window("DE", want_from, want_from + timedelta(hours=6))
    assert window.values_g_per_kwh.tolist() == source.values_g_per_kwh.tolist()
    assert window.zone == "DE"


def test_embedded_signal_refuses_2024_without_replay() -> None:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    with pytest.raises(DataRangeError, match="2021-01-01T00:00:00Z to 2024-01-01T00:00:00Z"):
        EmbeddedSignal().window("DE", start, start + timedelta(hours=1))


@settings(max_examples=50, deadline=None)
@given(hours_past=st.integers(0, 5 * 365 * 24))
def test_short_data_replays_the_last_week_on_the_same_weekday_and_hour(hours_past: int) -> None:
    moment = TWO_WEEKS.end + timedelta(hours=hours_past)
    source = replay_source(TWO_WEEKS, moment)
    assert TWO_WEEKS.end - timedelta(days=7) <= source < TWO_WEEKS.end
    assert (source.weekday(), source.hour) == (moment.weekday(), moment.hour)
    window = resample(TWO_WEEKS, moment, moment + timedelta(hours=1), allow_replay=True)
    want_value = float((source - T0) // timedelta(hours=1))  # TWO_WEEKS holds its hour index
    assert window.values_g_per_kwh.tolist() == [want_value]
