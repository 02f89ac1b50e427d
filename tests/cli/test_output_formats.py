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


# every command that prints a table also prints CSV (machine names) and JSON: issue 17
PLAN = ["plan", "-i", "examples/instance.json", "--policy", "srr", "--out", "{tmp}/plan.json"]
ADVISE = [
    "advise", "--duration", "3h", "--zones", "DE,GB", "--earliest", "2023-11-14T08:00Z",
    "--offline",
]  # fmt: skip
SHOW = ["forecast", "show", "--zone", "DE", "--start", "2023-11-14T00:00Z", "--hours", "3"]
SIMULATE = ["simulate", "examples/caspian.toml", "--out", "{tmp}/sim", "--no-report"]
CSV_CASES = [
    pytest.param(SIMULATE, ["carbon_saving_pct", "deadline_met_pct", "scenario"], 1, id="simulate"),
    pytest.param(PLAN, ["policy", "carbon_g", "on_time", "feasible"], 1, id="plan-scores"),
    pytest.param(["plan", "--list-policies"], ["policy", "summary", "params"], 0, id="policies"),
    pytest.param(ADVISE, ["zone", "start", "end", "ci_g_per_kwh", "emissions_g"], 2, id="advise"),
    pytest.param(SHOW, ["start", "value"], 3, id="forecast-show"),
    pytest.param(["forecast", "methods"], ["name", "params", "summary"], 0, id="forecast-methods"),
    pytest.param(["data", "zones"], ["id", "estimated_share", "step_minutes"], 0, id="data-zones"),
]


@pytest.mark.parametrize(("args", "want_keys", "want_rows"), CSV_CASES)
def test_every_table_command_prints_csv_with_machine_names(
    args: list[str],
    want_keys: list[str],
    want_rows: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [a.format(tmp=tmp_path) for a in args]
    assert main([*argv, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows, "no rows"
    assert set(want_keys) <= set(rows[0])
    if want_rows:
        assert len(rows) == want_rows
    assert main([*argv, "--format", "json"]) == 0
    json.loads(capsys.readouterr().out)  # one JSON document on stdout, nothing else


def test_a_summary_table_has_human_titles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a.format(tmp=tmp_path) for a in PLAN]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "carbon, g CO2e" in out
    assert "jobs on time" in out
    assert "on_time" not in out


def test_plan_explain_refuses_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.format(tmp=tmp_path) for a in PLAN]
    assert main([*argv, "--explain", "--format", "csv"]) != 0
    assert "use json" in capsys.readouterr().err
