"""Printed rows: tables with human titles, CSV and JSON with the machine names."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from carbonshift.cli._output import Column, OutputFormat, emit_rows, with_interval
from carbonshift.cli.app import main
from tests.sim.test_sweep import write_sweep

ROWS = [
    {
        "policy": "caspian",
        "carbon_saving_pct": 12.5,
        "carbon_saving_pct_mean": 12.5,
        "carbon_saving_pct_ci95_lo": 10.0,
        "carbon_saving_pct_ci95_hi": 15.0,
        "deadline_met_pct": None,
    }
]
COLUMNS = [
    Column("policy"),
    Column("carbon_saving_pct", right=True, show=with_interval("carbon_saving_pct")),
    Column("deadline_met_pct", right=True),
]


def test_table_has_human_titles_and_the_interval(capsys: pytest.CaptureFixture[str]) -> None:
    emit_rows(ROWS, COLUMNS, fmt=OutputFormat.TABLE, title="t")
    out = capsys.readouterr().out
    assert "carbon saved, %" in out
    assert "12.5 [10, 15]" in out
    assert "carbon_saving_pct" not in out


def test_csv_keeps_machine_names_and_full_precision(capsys: pytest.CaptureFixture[str]) -> None:
    emit_rows(ROWS, COLUMNS, fmt=OutputFormat.CSV, title="t")
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows == [{"policy": "caspian", "carbon_saving_pct": "12.5", "deadline_met_pct": ""}]


def test_json_is_strict_and_complete(capsys: pytest.CaptureFixture[str]) -> None:
    emit_rows(ROWS, COLUMNS, fmt=OutputFormat.JSON, title="t")
    assert json.loads(capsys.readouterr().out) == ROWS


def test_sweep_csv_has_the_interval_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = write_sweep(tmp_path)
    code = main(["sweep", str(sweep), "--out", str(tmp_path / "out"), "--format", "csv"])
    out = capsys.readouterr().out
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 3  # caspian x 2 omega1, asap; seeds averaged
    for metric in ("carbon_saving_pct", "deadline_met_pct"):
        for stat in ("mean", "std", "ci95_lo", "ci95_hi"):
            assert f"{metric}_{stat}" in rows[0]
    for row in rows:
        assert float(row["carbon_saving_pct_ci95_lo"]) <= float(row["carbon_saving_pct_mean"])
