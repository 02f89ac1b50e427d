"""Reproductions report each metric's seed mean with its spread, like a sweep."""

from __future__ import annotations

import pytest

from carbonshift.sim.reproduce import _with_spread


@pytest.mark.parametrize(
    ("values", "want"),
    [
        pytest.param(
            [1.0, 2.0, 3.0, 4.0],
            # mean 2.5, sample std 1.291, t(0.975, 3) = 3.182: half-width 2.054
            {"m": 2.5, "m_mean": 2.5, "m_std": 1.291, "m_ci95_lo": 0.446, "m_ci95_hi": 4.554},
            id="four-seeds",
        ),
        pytest.param(
            [7.0, None, float("nan")],
            {"m": 7.0, "m_mean": 7.0, "m_std": None, "m_ci95_lo": None, "m_ci95_hi": None},
            id="one-usable-seed-has-no-interval",
        ),
    ],
)
def test_with_spread_gives_mean_std_and_student_t_interval(
    values: list[float | None], want: dict[str, float | None]
) -> None:
    got = _with_spread("m", values)
    assert set(got) == set(want)
    for key, value in want.items():
        if value is None:
            assert got[key] is None
        else:
            assert got[key] == pytest.approx(value, abs=1e-3)
