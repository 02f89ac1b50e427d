"""Forecasters: hand-computed cases on tiny synthetic series, the WMA rules, bad input."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from carbonshift.carbon.forecast import (
    FORECASTERS,
    EwmaProfile,
    Forecaster,
    NoisyOracle,
    Oracle,
    Persistence,
    SeasonalDay,
    SeasonalWeek,
    WeightedMovingAverage,
    make_forecaster,
)
from carbonshift.carbon.series import CarbonSeries, CiKind
from carbonshift.errors import DataRangeError, InputError

T0 = datetime(2021, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


def series(values: Sequence[float], start: datetime = T0, step_minutes: int = 60) -> CarbonSeries:
    return CarbonSeries(
        zone="XX",
        kind=CiKind.DIRECT,
        start=start,
        step_minutes=step_minutes,
        values_g_per_kwh=np.asarray(values, dtype=np.float64),
    )


def test_registry_has_the_contract_names() -> None:
    want_names = {
        "oracle",
        "persistence",
        "seasonal-day",
        "seasonal-week",
        "wma",
        "ewma-profile",
        "noisy-oracle",
    }
    assert set(FORECASTERS) == want_names
    for name in want_names:
        assert make_forecaster(name).name == name


RAMP_72 = list(range(72))  # value = hours since T0


@pytest.mark.parametrize(
    ("forecaster", "values", "issue_h", "horizon", "want"),
    [
        pytest.param(Oracle(), RAMP_72, 5, 3, [5, 6, 7], id="oracle-reads-the-actuals"),
        pytest.param(Persistence(), RAMP_72, 30, 3, [29, 29, 29], id="persistence-holds-last"),
        pytest.param(SeasonalDay(), RAMP_72, 30, 3, [6, 7, 8], id="seasonal-day-yesterday"),
        pytest.param(
            SeasonalDay(), RAMP_72, 30, 26, [*range(6, 30), 6, 7],
            id="seasonal-day-beyond-24h-repeats-the-last-day",
        ),
        pytest.param(
            SeasonalWeek(), list(range(24 * 8)), 24 * 7 + 2, 2, [2, 3],
            id="seasonal-week-last-week",
        ),
        pytest.param(
            EwmaProfile(alpha=0.5, days=2), [10.0] * 24 + [20.0] * 24, 48, 1,
            [(0.5 * 20 + 0.25 * 10) / 0.75], id="ewma-two-days-weights-half-quarter",
        ),
        pytest.param(
            EwmaProfile(alpha=0.5, days=5), [10.0] * 24 + [20.0] * 24, 48, 1,
            [(0.5 * 20 + 0.25 * 10) / 0.75], id="ewma-missing-days-renormalised",
        ),
        pytest.param(
            EwmaProfile(alpha=1.0, days=3), RAMP_72, 30, 3, [6, 7, 8],
            id="ewma-alpha-one-is-seasonal-day",
        ),
    ],
)  # fmt: skip
def test_hand_computed_forecasts(
    forecaster: Forecaster, values: list[float], issue_h: int, horizon: int, want: list[float]
) -> None:
    got = forecaster.forecast(series(values), T0 + issue_h * HOUR, horizon)
    np.testing.assert_allclose(got, want)


def _daily(start: datetime, days: int, value_of_day: object) -> CarbonSeries:
    """Hourly series whose value is f(day index) + hour / 100."""
    f = np.vectorize(value_of_day)
    day = np.repeat(np.arange(days), 24)
    hour = np.tile(np.arange(24), days)
    return series(f(day) + hour / 100.0, start=start)


@pytest.mark.parametrize(
    ("start", "days", "target", "want"),
    [
        pytest.param(
            T0, 380, datetime(2022, 1, 5, 7, tzinfo=UTC),
            (1 * 2**2 + 2 * 3**2 + 4 * 4**2 + 2 * 5**2 + 1 * 6**2) / 10 + 0.07,
            id="middle-of-year-weights-1-2-4-2-1",
        ),
        pytest.param(
            T0, 380, datetime(2022, 1, 1, 3, tzinfo=UTC),
            (4 * 0**2 + 2 * 1**2 + 1 * 2**2) / 7 + 0.03,
            id="data-start-edge-renormalised-4-2-1-over-7",
        ),
        pytest.param(
            T0, 380, datetime(2022, 1, 2, 0, tzinfo=UTC),
            (2 * 0**2 + 4 * 1**2 + 2 * 2**2 + 1 * 3**2) / 9,
            id="one-day-missing-renormalised-over-9",
        ),
        pytest.param(
            datetime(2023, 2, 20, tzinfo=UTC), 380, datetime(2024, 2, 29, 5, tzinfo=UTC),
            (1 * 6**2 + 2 * 7**2 + 4 * 8**2 + 2 * 9**2 + 1 * 10**2) / 10 + 0.05,
            id="feb-29-maps-to-feb-28",
        ),
        pytest.param(
            datetime(2023, 2, 20, tzinfo=UTC), 380, datetime(2024, 2, 28, 5, tzinfo=UTC),
            (1 * 6**2 + 2 * 7**2 + 4 * 8**2 + 2 * 9**2 + 1 * 10**2) / 10 + 0.05,
            id="feb-28-same-as-feb-29",
        ),
        pytest.param(
            datetime(2023, 2, 20, tzinfo=UTC), 380, datetime(2024, 3, 1, 5, tzinfo=UTC),
            (1 * 7**2 + 2 * 8**2 + 4 * 9**2 + 2 * 10**2 + 1 * 11**2) / 10 + 0.05,
            id="mar-1-maps-to-mar-1",
        ),
    ],
)  # fmt: skip
def test_wma(start: datetime, days: int, target: datetime, want: float) -> None:
    got = WeightedMovingAverage().forecast(_daily(start, days, lambda d: d * d), target, 1)
    np.testing.assert_allclose(got, [want])


def test_wma_without_day_d_has_no_forecast() -> None:
    # 2021-12-31 maps to 2020-12-31: only 2021-01-01 (d+1) and 01-02 (d+2) exist
    data = _daily(T0, 380, lambda d: float(d))
    with pytest.raises(DataRangeError, match="previous year"):
        WeightedMovingAverage().forecast(data, datetime(2021, 12, 31, tzinfo=UTC), 1)


def test_slots_longer_than_the_step_are_averaged() -> None:
    got = Oracle().forecast(series(RAMP_72), T0 + 4 * HOUR, 3, slot_minutes=120)
    np.testing.assert_allclose(got, [4.5, 6.5, 8.5])


def test_slots_shorter_than_the_step_repeat_it() -> None:
    got = Persistence().forecast(series([1.0, 2.0, 3.0]), T0 + 2 * HOUR, 3, slot_minutes=30)
    np.testing.assert_allclose(got, [2.0, 2.0, 2.0])
    got = Oracle().forecast(series([1.0, 2.0, 3.0]), T0 + 1 * HOUR, 3, slot_minutes=30)
    np.testing.assert_allclose(got, [2.0, 2.0, 3.0])


def test_batch_equals_single_forecasts() -> None:
    data = series(np.random.default_rng(3).uniform(50, 500, 24 * 380))
    issues = [T0 + h * HOUR for h in range(24 * 366, 24 * 370, 5)]
    for name in FORECASTERS:
        forecaster = make_forecaster(name)
        batch = forecaster.forecast_many(data, issues, 24)
        for row, issued in zip(batch, issues, strict=True):
            np.testing.assert_array_equal(row, forecaster.forecast(data, issued, 24))


@pytest.mark.parametrize(
    ("values", "want_mae"),
    [
        pytest.param([300.0] * 24 * 200, 20.0, id="far-from-zero"),
        pytest.param([5.0] * 24 * 200, 20.0, id="near-zero-reflected-not-clipped"),
    ],
)
def test_noisy_oracle_matches_its_mae(values: list[float], want_mae: float) -> None:
    data = series(values)
    issues = [T0 + h * HOUR for h in range(0, 24 * 190, 7)]
    forecaster = NoisyOracle(mae_g_per_kwh=want_mae, seed=7)
    got = forecaster.forecast_many(data, issues, 24)
    assert got.min() >= 0.0
    assert np.mean(np.abs(got - np.asarray(values[0]))) == pytest.approx(want_mae, rel=0.03)


def test_noisy_oracle_is_seeded() -> None:
    data = series([100.0] * 48)
    a = NoisyOracle(seed=1).forecast(data, T0, 24)
    assert np.array_equal(a, NoisyOracle(seed=1).forecast(data, T0, 24))
    assert not np.array_equal(a, NoisyOracle(seed=2).forecast(data, T0, 24))
    assert np.array_equal(
        NoisyOracle(mae_g_per_kwh=0.0).forecast(data, T0, 24), data.values_g_per_kwh[:24]
    )


@pytest.mark.parametrize(
    ("name", "params", "want_message"),
    [
        pytest.param("wmaa", {}, "did you mean 'wma'", id="unknown-name-suggests"),
        pytest.param("kalman", {}, "choose one of oracle", id="unknown-name-lists"),
        pytest.param("ewma-profile", {"alpah": 0.5}, "did you mean 'alpha'", id="param-typo"),
        pytest.param("persistence", {"alpha": 0.5}, "parameters: none", id="param-none"),
        pytest.param("ewma-profile", {"alpha": 0.0}, r"in \(0, 1\]", id="alpha-zero"),
        pytest.param("ewma-profile", {"days": 0}, "days", id="days-zero"),
        pytest.param("noisy-oracle", {"mae_g_per_kwh": -1.0}, "g/kWh", id="negative-mae"),
        pytest.param("noisy-oracle", {"seed": -3}, "seed", id="negative-seed"),
    ],
)
def test_bad_names_and_params(name: str, params: dict[str, object], want_message: str) -> None:
    with pytest.raises(InputError, match=want_message):
        make_forecaster(name, params)


@pytest.mark.parametrize(
    ("forecaster", "issued_at", "horizon", "slot_minutes", "want_error", "want_message"),
    [
        pytest.param(Persistence(), T0 + timedelta(minutes=30), 2, 60, InputError,
                     "not on the 60-minute grid", id="issue-off-grid"),
        pytest.param(Persistence(), T0 + 5 * HOUR, 0, 60, InputError,
                     "horizon_slots is 0", id="zero-horizon"),
        pytest.param(Persistence(), T0 + 5 * HOUR, 2, 45, InputError,
                     "multiple or a divisor", id="slot-does-not-fit-step"),
        pytest.param(Persistence(), T0, 2, 60, DataRangeError,
                     "persistence.*2021-01-01T00:00:00Z", id="no-history"),
        pytest.param(Oracle(), T0 + 70 * HOUR, 4, 60, DataRangeError,
                     "past the end of the data", id="oracle-past-the-end"),
    ],
)  # fmt: skip
def test_bad_forecast_requests(
    forecaster: Persistence | Oracle,
    issued_at: datetime,
    horizon: int,
    slot_minutes: int,
    want_error: type[Exception],
    want_message: str,
) -> None:
    with pytest.raises(want_error, match=want_message):
        forecaster.forecast(series(RAMP_72), issued_at, horizon, slot_minutes)


def test_missing_rows_can_be_nan() -> None:
    got = Persistence().forecast_many(series(RAMP_72), [T0, T0 + HOUR], 2, on_missing="nan")
    assert np.isnan(got[0]).all()
    np.testing.assert_allclose(got[1], [0.0, 0.0])
