"""The hub honours ``planning.carbon_source`` and ``hub --check`` says what it answers now."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from carbonshift.cli.app import main
from carbonshift.k8s.multicluster import HubConfig, HubController
from carbonshift.k8s.multicluster.config import PlanningSection
from carbonshift.k8s.planner import check_source


def hub_config(carbon_source: str) -> HubConfig:
    return HubConfig(planning=PlanningSection(policy="caspian", carbon_source=carbon_source))


def gb_csv(folder: Path, around: datetime) -> None:
    """Hourly GB values of 100 g/kWh from two days before ``around`` to two days after."""
    folder.mkdir()
    first = around.replace(minute=0, second=0, microsecond=0) - timedelta(days=2)
    lines = ["Datetime (UTC),Zone Id,Carbon Intensity gCO₂eq/kWh (direct)"]
    lines += [f"{first + timedelta(hours=h):%Y-%m-%d %H:%M:%S},GB,100" for h in range(96)]
    (folder / "GB.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("carbon_source", "want_chain", "want_answered_by", "want_status"),
    [
        pytest.param("providers", ["csv", "embedded"], "csv", "ok", id="providers-use-the-chain"),
        pytest.param("embedded", ["embedded"], "embedded", "degraded", id="embedded-replays"),
    ],
)
def test_the_hub_plans_on_its_configured_carbon_source(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    carbon_source: str,
    want_chain: list[str],
    want_answered_by: str,
    want_status: str,
) -> None:
    now = datetime.now(UTC)
    gb_csv(tmp_path / "csv", now)
    monkeypatch.setenv("CARBONSHIFT_OFFLINE", "1")
    monkeypatch.setenv("CARBONSHIFT_CSV_DIR", str(tmp_path / "csv"))
    monkeypatch.setenv("CARBONSHIFT_CACHE_DIR", str(tmp_path / "cache"))
    config = hub_config(carbon_source)
    controller = HubController(config, None, None)  # type: ignore[arg-type]
    source = controller._source("spoke-gb", "GB")
    got = check_source(config.controller_config("GB"), source, now)
    assert got["chain"] == want_chain
    assert got["answered_by"] == want_answered_by
    assert got["status"] == want_status
    if want_answered_by == "csv":
        assert got["forecast_g_per_kwh"] == [100.0] * 24


def test_hub_check_prints_the_chain_and_the_answer_per_zone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CARBONSHIFT_OFFLINE", "1")
    monkeypatch.setenv("CARBONSHIFT_CACHE_DIR", str(tmp_path / "cache"))
    config = tmp_path / "hub.yaml"
    config.write_text("planning: {policy: caspian, carbon_source: providers}\n")
    args = ["hub", "--config", str(config), "--check", "--zone", "DE", "--zone", "GB"]
    assert main([*args, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)["carbon"]
    assert sorted(report) == ["DE", "GB"]
    for zone, carbon in report.items():
        assert carbon["zone"] == zone
        assert carbon["chain"] == ["embedded"]
        assert carbon["status"] == "degraded"
        assert carbon["replayed_from"] is not None
