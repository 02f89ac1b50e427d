"""`make demo`: the zone table, the forecast comparison and the PNG it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from carbonshift import demo


def test_demo_writes_plot_and_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--out", str(tmp_path), "--zone", "GB"]) == 0
    out = capsys.readouterr().out
    for zone in ("CA-ON", "DE", "IN-WE", "US-TEX-ERCO"):
        assert zone in out
    assert "GB 2023: forecasts issued every hour" in out
    png = tmp_path / "forecast_comparison.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    scores = json.loads((tmp_path / "forecast_eval.json").read_text())
    by_method = {s["method"]: s for s in scores}
    assert set(by_method) == {
        "oracle", "noisy-oracle", "persistence", "seasonal-day", "seasonal-week", "wma",
        "ewma-profile",
    }  # fmt: skip
    assert by_method["oracle"]["mae_g_per_kwh"] == 0.0
    assert by_method["noisy-oracle"]["mae_g_per_kwh"] == pytest.approx(24.0, rel=0.05)


def test_demo_unknown_zone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--out", str(tmp_path), "--zone", "Atlantis"]) == 2
    assert "Atlantis" in capsys.readouterr().out
    assert not (tmp_path / "forecast_comparison.png").exists()
