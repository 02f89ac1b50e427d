"""Shifting potential per zone (``carbon.potential`` and ``carbonshift data potential``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from carbonshift.carbon.embedded import load_series
from carbonshift.carbon.potential import shifting_potential
from carbonshift.cli.app import main
from carbonshift.errors import InputError

CASES = [
    pytest.param(
        {"A": [100.0, 100.0, 10.0, 10.0]},
        1,
        1,
        # arrivals 0..2 with one hour of slack: t0 waits for nothing better (0 %),
        # t1 waits for the 10 at t2 (90 %), t2 is already at 10 (0 %)
        {"A": (3, 0.3, 0.0, 0.3)},
        id="waiting-one-hour-catches-the-clean-hour-for-one-arrival",
    ),
    pytest.param(
        {"A": [200.0] * 6, "B": [50.0] * 6},
        2,
        2,
        {"A": (3, 0.0, 0.75, 0.75), "B": (3, 0.0, 0.0, 0.0)},
        id="flat-zones-gain-only-by-moving-to-the-cleaner-one",
    ),
    pytest.param(
        {"A": [100.0, 0.0, 0.0, 100.0]},
        0,
        1,
        # zero-carbon starts have no relative saving and are left out of the mean
        {"A": (2, 0.0, 0.0, 0.0)},
        id="zero-intensity-arrivals-are-not-counted",
    ),
    pytest.param(
        {"A": [300.0, 100.0, 100.0, 300.0, 300.0], "B": [150.0] * 5},
        2,
        2,
        # A: means of 2 h runs 200,100,200,300; arrivals 0,1: best within slack 100 -> 50 %, 0 %
        # both: min(100, 150) = 100 -> same; B: temporal 0, spatial via A: t0 200>150: 0;
        # t1: A at once 100 -> 1/3; spatio-temporal: 100 -> 1/3 each
        {"A": (2, 0.25, 0.125, 0.25), "B": (2, 0.0, 1 / 6, 1 / 3)},
        id="waiting-and-moving-combine",
    ),
]


@pytest.mark.parametrize(("hourly", "slack_h", "runtime_h", "want"), CASES)
def test_potential_matches_hand_computed_savings(
    hourly: dict[str, list[float]],
    slack_h: int,
    runtime_h: int,
    want: dict[str, tuple[int, float, float, float]],
) -> None:
    results = {
        p.zone: p for p in shifting_potential(hourly, slack_hours=slack_h, runtime_hours=runtime_h)
    }
    for zone, (want_arrivals, want_temporal, want_spatial, want_both) in want.items():
        got = results[zone]
        assert got.arrivals == want_arrivals
        assert got.temporal_mean == pytest.approx(want_temporal)
        assert got.spatial_mean == pytest.approx(want_spatial)
        assert got.spatiotemporal_mean == pytest.approx(want_both)


@pytest.mark.parametrize(
    ("hourly", "slack_h", "runtime_h", "want_message"),
    [
        pytest.param({}, 1, 1, "no zones given", id="no-zones"),
        pytest.param({"A": [1.0] * 5}, 1, 0, "runtime 0 h is outside", id="zero-runtime"),
        pytest.param({"A": [1.0] * 5}, -1, 1, "slack -1 h is outside", id="negative-slack"),
        pytest.param({"A": [1.0] * 5}, 4, 4, "too few for a 4 h job", id="data-too-short"),
        pytest.param({"A": [1.0] * 5, "B": [1.0] * 4}, 0, 1, "different numbers", id="ragged"),
        pytest.param({"A": [1.0, float("nan")]}, 0, 1, "missing, negative", id="nan-value"),
    ],
)
def test_potential_refuses_bad_input_with_the_fix(
    hourly: dict[str, list[float]], slack_h: int, runtime_h: int, want_message: str
) -> None:
    with pytest.raises(InputError, match=want_message):
        shifting_potential(hourly, slack_hours=slack_h, runtime_hours=runtime_h)


def test_potential_grows_with_slack_and_spatial_never_loses_to_staying() -> None:
    series = {z: load_series(z).values_g_per_kwh[: 24 * 60] for z in ("DE", "GB", "CA-ON")}
    few = {p.zone: p for p in shifting_potential(series, slack_hours=2, runtime_hours=3)}
    many = {p.zone: p for p in shifting_potential(series, slack_hours=24, runtime_hours=3)}
    for zone in series:
        assert many[zone].temporal_mean >= few[zone].temporal_mean
        assert few[zone].spatial_mean >= 0
        assert few[zone].spatiotemporal_mean >= max(few[zone].temporal_mean - 1e-12, 0)
    assert np.isclose(max(p.spatial_mean for p in few.values()), few["DE"].spatial_mean)


def test_cli_potential_json_and_plot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plot = tmp_path / "potential.png"
    code = main(
        [
            "data", "potential", "--zones", "DE,GB", "--slack-hours", "12", "--runtime-hours",
            "2", "--start", "2023-06-01T00:00Z", "--end", "2023-07-01T00:00Z", "--format",
            "json", "--plot", str(plot),
        ]
    )  # fmt: skip
    out, _ = capsys.readouterr()
    assert code == 0
    rows = json.loads(out)
    assert [r["zone"] for r in rows] == ["DE", "GB"]
    want_arrivals = 30 * 24 - 12 - 2 + 1
    assert all(r["arrivals"] == want_arrivals for r in rows)
    for row in rows:
        assert 0 <= row["temporal_saving_pct_mean"] <= row["spatiotemporal_saving_pct_mean"]
        assert row["temporal_saving_pct_p10"] <= row["temporal_saving_pct_p90"]
    assert plot.stat().st_size > 10_000


def test_cli_potential_names_an_unknown_zone(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["data", "potential", "--zones", "DE,Atlantis"])
    _, err = capsys.readouterr()
    assert code != 0
    assert "'Atlantis' is not in the embedded carbon data" in err
