"""``controller --check`` prints the carbon source chain and what it would answer now."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest

from carbonshift.cli.app import main


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


def test_embedded_planning_now_is_degraded_and_replays_the_same_weekday(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    carbon = check(tmp_path, capsys, "{carbon_source: embedded}")
    assert carbon["chain"] == ["embedded"]
    assert carbon["status"] == "degraded"
    assert carbon["answered_by"] == "embedded"
    replayed = carbon["replayed_from"]
    assert isinstance(replayed, list)
    source = datetime.strptime(replayed[0], "%Y-%m-%dT%H:%MZ").replace(tzinfo=UTC)
    slot0 = datetime.strptime(str(carbon["slot0"]), "%Y-%m-%dT%H:%MZ").replace(tzinfo=UTC)
    assert (source.weekday(), source.hour) == (slot0.weekday(), slot0.hour)
    assert source.year == 2023
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
