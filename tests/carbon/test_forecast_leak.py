"""No look-ahead: a forecaster other than the two oracles never reads data at or after its
issue time. Mutating every value from the issue time on must leave the forecast unchanged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carbonshift.carbon.forecast import (
    FORECASTERS,
    FloatArray,
    IntArray,
    _Grid,
    _HistoryForecaster,
    make_forecaster,
)
from carbonshift.carbon.series import CarbonSeries, CiKind

T0 = datetime(2021, 1, 1, tzinfo=UTC)
HISTORY_ONLY = sorted(set(FORECASTERS) - {"oracle", "noisy-oracle"})
LENGTH_H = 24 * 400  # over a year, so that wma has something to read


def _series(values: np.ndarray) -> CarbonSeries:
    return CarbonSeries("XX", CiKind.DIRECT, T0, 60, np.asarray(values, dtype=np.float64))


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(HISTORY_ONLY),
    seed=st.integers(0, 2**32 - 1),
    issue_h=st.one_of(st.integers(1, 24 * 30), st.integers(24 * 366, LENGTH_H)),
    horizon=st.integers(1, 60),
    slot_minutes=st.sampled_from([30, 60, 120]),
)
def test_mutating_the_future_does_not_change_the_forecast(
    name: str, seed: int, issue_h: int, horizon: int, slot_minutes: int
) -> None:
    rng = np.random.default_rng(seed)
    values = rng.uniform(0.0, 800.0, LENGTH_H)
    mutated = values.copy()
    mutated[issue_h:] = rng.uniform(0.0, 800.0, LENGTH_H - issue_h) * 3.0 + 1.0
    issued = [T0 + timedelta(hours=issue_h)]
    forecaster = make_forecaster(name)
    before = forecaster.forecast_many(
        _series(values), issued, horizon, slot_minutes, on_missing="nan"
    )
    after = forecaster.forecast_many(
        _series(mutated), issued, horizon, slot_minutes, on_missing="nan"
    )
    np.testing.assert_array_equal(before, after)


class _Cheater(_HistoryForecaster):
    """A deliberately broken forecaster that asks for the target values themselves."""

    __slots__ = ()
    name: ClassVar[str] = "cheater"

    def _sources(self, grid: _Grid, issue_idx: IntArray, steps: int) -> tuple[IntArray, FloatArray]:
        target = issue_idx[:, None, None] + np.arange(steps)[None, :, None]
        return target, np.ones(target.shape)


def test_a_forecaster_asking_for_the_future_gets_nothing() -> None:
    data = _series(np.arange(48.0))
    got = _Cheater().forecast_many(data, [T0 + timedelta(hours=10)], 3, on_missing="nan")
    assert np.isnan(got).all()


@pytest.mark.parametrize("name", ["oracle", "noisy-oracle"])
def test_oracles_do_read_the_future(name: str) -> None:
    values = np.full(48, 100.0)
    mutated = values.copy()
    mutated[10:] = 400.0
    forecaster = make_forecaster(name)
    issued = T0 + timedelta(hours=10)
    assert forecaster.forecast(_series(values), issued, 3).mean() < 250.0
    assert forecaster.forecast(_series(mutated), issued, 3).mean() > 250.0
