"""Evaluation metrics on hand-made data, and evaluate() on synthetic series."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from carbonshift.carbon.evaluation import (
    evaluate,
    issue_times,
    lowest_window_starts,
    score_forecasts,
)
from carbonshift.carbon.series import CarbonSeries, CiKind
from carbonshift.errors import InputError

T0 = datetime(2021, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _series(values: np.ndarray) -> CarbonSeries:
    return CarbonSeries("XX", CiKind.DIRECT, T0, 60, np.asarray(values, dtype=np.float64))


def test_scores_hand_computed() -> None:
    forecast = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    actual = np.array([[0.0, 2.0, 4.0], [4.0, 4.0, 4.0]])
    # errors [[1, 0, -1], [0, 1, 2]]; MAPE skips the 0 actual: (0 + 1/4 + 0 + 1/4 + 2/4) / 5
    got = score_forecasts(forecast, actual, window_slots=1)
    assert got.mae_g_per_kwh == pytest.approx(5 / 6)
    assert got.bias_g_per_kwh == pytest.approx(3 / 6)
    assert got.mape_pct == pytest.approx(20.0)
    assert got.zero_actuals == 1
    assert got.mae_by_lead_g_per_kwh == pytest.approx((0.5, 0.5, 1.5))
    # lowest 1-slot windows: forecast [0, 0], actual [0, 0] (ties take the earliest)
    assert got.window_hit_rate == 1.0
    assert got.issues == 2


def test_mape_undefined_when_every_actual_is_zero() -> None:
    got = score_forecasts(np.ones((1, 3)), np.zeros((1, 3)), window_slots=1)
    assert got.mape_pct is None
    assert got.zero_actuals == 3


@pytest.mark.parametrize(
    ("values", "window", "want_start"),
    [
        pytest.param([5, 1, 1, 5, 0, 0], 2, 4, id="last-window"),
        pytest.param([5, 1, 1, 5, 0, 0], 3, 3, id="mean-not-minimum"),
        pytest.param([2, 2, 2], 2, 0, id="ties-take-earliest"),
        pytest.param([3, 1, 2], 3, 0, id="window-equals-horizon"),
    ],
)
def test_lowest_window_start(values: list[float], window: int, want_start: int) -> None:
    got = lowest_window_starts(np.array([values], dtype=np.float64), window)
    assert got.tolist() == [want_start]


def test_window_hit_within_one_slot() -> None:
    actual = np.array([[9.0, 9.0, 0.0, 9.0, 9.0]] * 3)
    forecast = np.array(
        [
            [9.0, 0.0, 9.0, 9.0, 9.0],  # starts 1 vs 2: hit
            [9.0, 9.0, 9.0, 0.0, 9.0],  # starts 3 vs 2: hit
            [0.0, 9.0, 9.0, 9.0, 9.0],  # starts 0 vs 2: miss
        ]
    )
    got = score_forecasts(forecast, actual, window_slots=1)
    assert got.window_hit_rate == pytest.approx(2 / 3)


def test_evaluate_periodic_series() -> None:
    day = np.array([100.0 + 50.0 * np.sin(2 * np.pi * h / 24) for h in range(24)])
    data = _series(np.tile(day, 30))
    start, end = T0 + 24 * 7 * HOUR, T0 + 24 * 20 * HOUR
    ticks: list[tuple[int, int]] = []
    scores = evaluate(
        data,
        ["seasonal-day", "seasonal-week", "persistence"],
        start,
        end,
        horizon_slots=24,
        progress=lambda done, total: ticks.append((done, total)),
    )
    by_method = {s.method: s for s in scores}
    assert by_method["seasonal-day"].mae_g_per_kwh == pytest.approx(0.0, abs=1e-9)
    assert by_method["seasonal-week"].mae_g_per_kwh == pytest.approx(0.0, abs=1e-9)
    assert by_method["seasonal-day"].window_hit_rate == 1.0
    assert by_method["persistence"].mae_g_per_kwh > 10.0
    assert {s.issues for s in scores} == {24 * 13}
    assert ticks[-1][0] == ticks[-1][1]


def test_evaluate_leaves_out_issues_past_the_data() -> None:
    data = _series(np.full(24 * 10, 100.0))
    scores = evaluate(data, ["persistence"], T0 + 24 * HOUR, T0 + 24 * 20 * HOUR, horizon_slots=6)
    # issue times 24 .. 234 have a full horizon inside the 240 hours
    assert scores[0].issues == 240 - 6 - 24 + 1
    assert scores[0].last_issue == T0 + (240 - 6) * HOUR


@pytest.mark.parametrize(
    ("methods", "kwargs", "want_message"),
    [
        pytest.param(["wma"], {}, "wma needs the previous year", id="wma-in-first-year"),
        pytest.param([], {}, "no forecast methods", id="no-methods"),
        pytest.param(["persistence"], {"window_slots": 30}, "does not fit", id="window-too-long"),
        pytest.param(["nope"], {}, "unknown", id="unknown-method"),
    ],
)
def test_evaluate_bad_input(methods: list[str], kwargs: dict[str, int], want_message: str) -> None:
    data = _series(np.full(24 * 10, 100.0))
    with pytest.raises(InputError, match=want_message):
        evaluate(data, methods, T0 + 24 * HOUR, T0 + 48 * HOUR, horizon_slots=24, **kwargs)


def test_issue_times_bad_input() -> None:
    with pytest.raises(InputError, match="is empty"):
        issue_times(T0, T0)
    assert issue_times(T0, T0 + 3 * HOUR, 90) == [T0, T0 + 1.5 * HOUR]
