"""``series_from_points``: a start time a provider sends twice keeps one point, by a rule
(docs/providers.md, "A start sent twice")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest

from carbonshift.carbon.providers._resample import Point, series_from_points
from carbonshift.carbon.series import CiKind

T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
HALF = timedelta(minutes=30)


def _measured(moment: datetime, value: float) -> Point:
    return (moment, 30, value, False)


def _forecast(moment: datetime, value: float) -> Point:
    return (moment, 30, value, True)


@pytest.mark.parametrize(
    ("points", "want_values", "want_estimated"),
    [
        pytest.param(
            [_measured(T0, 100.0), _measured(T0 + HALF, 110.0), _forecast(T0 + HALF, 999.0)],
            [100.0, 110.0],
            [False, False],
            id="the-seam-of-history-then-forecast-keeps-the-measured-point",
        ),
        pytest.param(
            [_forecast(T0 + HALF, 999.0), _measured(T0, 100.0), _measured(T0 + HALF, 110.0)],
            [100.0, 110.0],
            [False, False],
            id="a-forecast-fetched-first-gives-way-to-the-measured-point",
        ),
        pytest.param(
            [_measured(T0, 100.0), _measured(T0 + HALF, 110.0), _measured(T0 + HALF, 111.0)],
            [100.0, 111.0],
            [False, False],
            id="two-measured-points-keep-the-later-answer-the-boundary-of-two-ranges",
        ),
        pytest.param(
            [_forecast(T0, 200.0), _forecast(T0, 210.0), _forecast(T0 + HALF, 220.0)],
            [210.0, 220.0],
            [True, True],
            id="two-forecasts-keep-the-later-answer",
        ),
        pytest.param(
            [_measured(T0, 100.0), _forecast(T0.astimezone(timezone(timedelta(hours=1))), 5.0)],
            [100.0],
            [False],
            id="the-same-instant-in-another-tzinfo-is-the-same-start",
        ),
    ],
)
def test_a_start_sent_twice_keeps_one_point_by_the_rule(
    points: list[Point], want_values: list[float], want_estimated: list[bool]
) -> None:
    series = series_from_points(points, zone="GB", kind=CiKind.DIRECT, source="gb")
    assert series.start == T0
    assert series.step_minutes == 30
    np.testing.assert_array_equal(series.values_g_per_kwh, want_values)
    assert series.estimated is not None
    assert series.estimated.tolist() == want_estimated
