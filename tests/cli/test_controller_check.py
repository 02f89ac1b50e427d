"""``controller --check`` prints the carbon source chain and what it would answer now."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest

from carbonshift.cli.app import main
from tests.builders import pin_cli_clock


def check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], planning: str, zone: str = "DE"
) -> dict[str, object]:
    config = tmp_path / "config.yaml"
    config.write_text(f"cluster: {{zone: {zone}}}\nplanning: {planning}\n")
    assert main(["controller", "--config", str(config), "--check", "--format", "json"]) == 0
    carbon = json.loads(capsys.readouterr().out)["carbon"]
    assert isinstance(carbon, dict)
    return carbon


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("now", "want_replayed_from"),
    [
        pytest.param(
            datetime(2026, 11, 25, 14, 20, tzinfo=UTC),
            ["2023-11-29T14:00Z", "2023-11-30T14:00Z"],
            id="mid-week: the same weekday and hour 3 x 364 days back",
        ),
        pytest.param(
            datetime(2026, 12, 27, 22, 40, tzinfo=UTC),
            ["2023-01-02T00:00Z", "2024-01-01T00:00Z"],
            id="the day wraps past the data's end (2026-12-28 00:00): the whole last year",
        ),
        pytest.param(
            datetime(2028, 2, 29, 23, 30, tzinfo=UTC),
            ["2023-03-07T23:00Z", "2023-03-08T23:00Z"],
            id="a leap day: 5 x 364 days back, still the same weekday",
        ),
    ],
)
def test_embedded_planning_now_is_degraded_and_replays_the_same_weekday(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    now: datetime,
    want_replayed_from: list[str],
) -> None:
    # --check reads the wall clock: pin it, so that the replayed span does not depend on the
    # day the test runs (it wraps to the whole last year one day in 364)
    pin_cli_clock(monkeypatch, now)
    carbon = check(tmp_path, capsys, "{carbon_source: embedded}")
    assert carbon["chain"] == ["embedded"]
    assert carbon["status"] == "degraded"
    assert carbon["answered_by"] == "embedded"
    assert carbon["slot0"] == f"{now:%Y-%m-%dT%H}:00Z"
    assert carbon["replayed_from"] == want_replayed_from
    assert len(carbon["forecast_g_per_kwh"]) == 24  # type: ignore[arg-type]


def test_providers_offline_show_the_chain_with_only_the_embedded_floor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CARBONSHIFT_OFFLINE", "1")
    monkeypatch.setenv("CARBONSHIFT_CACHE_DIR", str(tmp_path / "cache"))
    carbon = check(tmp_path, capsys, "{carbon_source: providers}")
    assert carbon["carbon_source"] == "providers"
    assert carbon["chain"] == ["embedded"]
    assert carbon["status"] == "degraded"


def test_an_unreachable_live_source_is_named_in_the_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CARBONSHIFT_GB_URL", f"http://127.0.0.1:{unused_port()}")
    monkeypatch.setenv("CARBONSHIFT_HTTP_ATTEMPTS", "1")
    monkeypatch.setenv("CARBONSHIFT_CACHE_DIR", str(tmp_path / "cache"))
    carbon = check(tmp_path, capsys, "{carbon_source: providers}", zone="GB")
    assert carbon["chain"] == ["gb", "embedded"]
    assert carbon["status"] == "degraded"
    assert carbon["answered_by"] == "embedded"
    reasons = carbon["reasons"]
    assert isinstance(reasons, list)
    assert any(r.startswith("zone GB: fell back past gb:") for r in reasons), reasons
