"""`carbonshift advise` offline: the advice agrees with a brute-force search of the data."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from carbonshift.carbon.embedded import load_series
from carbonshift.carbon.signal import integral_g_h_per_kwh
from carbonshift.cli.app import main
from tests.builders import pin_cli_clock


def test_offline_advice_is_the_cheapest_start(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "advise",
            "--duration", "3h",
            "--zones", "DE,GB",
            "--earliest", "2023-11-14T08:00Z",
            "--within", "24h",
            "--demand", "gpu=2@300",
            "--offline",
            "--format", "json",
        ]
    )  # fmt: skip
    assert code == 0
    advice = json.loads(capsys.readouterr().out)
    start = datetime(2023, 11, 14, 8, tzinfo=UTC)
    want = min(
        (0.6 * integral_g_h_per_kwh(load_series(z), t, t + timedelta(hours=3)), z, t)
        for z in ("DE", "GB")
        for t in (start + timedelta(hours=h) for h in range(22))
    )
    assert advice["best"]["zone"] == want[1]
    assert advice["best"]["start"] == want[2].strftime("%Y-%m-%dT%H:%M:%SZ")
    assert advice["best"]["emissions_g"] == pytest.approx(want[0], rel=1e-9)
    assert advice["saving_g"] == pytest.approx(
        advice["now"]["emissions_g"] - advice["best"]["emissions_g"]
    )


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param(["--demand", "gpu=two"], "RESOURCE=UNITS[@WATTS_PER_UNIT]", id="bad-demand"),
        pytest.param(["--kind", "index"], "no unit", id="index-kind"),
        pytest.param(["--zones", "XX-NOWHERE"], "XX-NOWHERE", id="unknown-zone"),
    ],
)
def test_bad_input(args: list[str], want: str, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["advise", "--duration", "1h", "--zones", "DE", "--offline"]
    assert main(base + args) == 2
    err = capsys.readouterr().err
    assert want in err
    assert err.count("\n") == 1


def test_forecast_show_embedded_marks_replay(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["forecast", "show", "--zone", "GB", "--source", "embedded", "--format", "json"]
    assert main([*args, "--start", "2024-01-08T00:00Z", "--hours", "2"]) == 0
    shown = json.loads(capsys.readouterr().out)
    series = load_series("GB")
    want = [
        integral_g_h_per_kwh(series, t, t + timedelta(hours=1))
        for t in (datetime(2023, 1, 9, h, tzinfo=UTC) for h in (0, 1))  # 364 days back
    ]
    assert [v["value"] for v in shown["values"]] == pytest.approx(want)
    assert shown["replayed_from"] is not None
    assert shown["unit"] == "gCO2eq/kWh"


def test_forecast_show_unknown_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["forecast", "show", "--zone", "GB", "--source", "nope"]) == 2
    assert "is not known" in capsys.readouterr().err


# --- the CLI's one clock: "now" is what tests.builders.pin_cli_clock says ------------------

PINNED = datetime(2026, 11, 25, 14, 20, 37, tzinfo=UTC)


def _json_of(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    at: datetime,
    args: list[str],
) -> dict[str, object]:
    pin_cli_clock(monkeypatch, at)
    assert main(args) == 0
    shown = json.loads(capsys.readouterr().out)
    assert isinstance(shown, dict)
    return shown


def test_advise_starts_at_the_cli_clock_by_default(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["advise", "--duration", "3h", "--zones", "DE,GB", "--offline", "--format", "json"]
    by_clock = _json_of(capsys, monkeypatch, PINNED, args)
    # the same ask with --earliest at the pinned minute, the clock elsewhere: the same advice
    elsewhere = PINNED + timedelta(days=3, hours=5)
    explicit = _json_of(capsys, monkeypatch, elsewhere, [*args, "--earliest", "2026-11-25T14:20Z"])
    assert by_clock == explicit
    assert by_clock["now"]["start"].startswith("2026-11-25T14:")  # type: ignore[index]


def test_forecast_show_starts_at_the_cli_clocks_hour_by_default(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["forecast", "show", "--zone", "GB", "--source", "embedded", "--format", "json"]
    by_clock = _json_of(capsys, monkeypatch, PINNED, [*args, "--hours", "3"])
    elsewhere = PINNED - timedelta(days=40, hours=7)
    explicit = _json_of(
        capsys, monkeypatch, elsewhere, [*args, "--hours", "3", "--start", "2026-11-25T14:00Z"]
    )
    assert by_clock["values"] == explicit["values"]
    assert by_clock["replayed_from"] == explicit["replayed_from"] is not None
