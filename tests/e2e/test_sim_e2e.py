"""End-to-end: `carbonshift simulate` and the quick reproductions, as a user runs them."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.e2e.test_cli_e2e import run_cli
from tests.e2e.test_readme_commands import tour_command

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]


def test_simulate_example(tmp_path: Path) -> None:
    done = run_cli("simulate", str(REPO / "examples/caspian.toml"), "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["jobs_total"] == 200
    assert summary["jobs_completed"] == 200
    assert (tmp_path / "report.html").stat().st_size > 10_000


def test_simulate_bad_scenario_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[simulation]\nstart = "2023-01-01T00:00:00Z"\nhours = 1\npolicy = "asap"\n')
    done = run_cli("simulate", str(bad), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr.startswith("error: ")
    assert "Traceback" not in done.stderr


def test_reproduce_caspian_quick(tmp_path: Path) -> None:
    """The README tour's command as written (its ``--out`` moved here), with JSON output."""
    argv = shlex.split(tour_command("carbonshift reproduce caspian"))[1:]
    argv[argv.index("--out") + 1] = str(tmp_path)
    done = run_cli(*argv, "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    assert [(r["policy"], r["omega1"]) for r in rows] == [
        *(("caspian", w) for w in (0.25, 0.5, 1.0, 2.0)),
        ("carbonshift", None),  # the default policy beside the paper's sweep
    ]
    assert all(r["saving_pct"] is not None for r in rows)
    assert (tmp_path / "caspian/omega1-0.5/report.html").exists()


def test_reproduce_cjps_quick(tmp_path: Path, shared_data: Path) -> None:
    done = run_cli(
        "reproduce",
        "cjps",
        "--quick",
        "--out",
        str(tmp_path),
        "--format",
        "json",
        "--traces",
        str(shared_data / "traces"),
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    assert [r["load_pct"] for r in rows] == [25.0, 40.0]
    assert all(0 < r["cfp_ratio"] < 2 for r in rows)
    assert all(0 < r["carbonshift_cfp_ratio"] < 2 for r in rows)


def test_reproduce_fluidos_quick(tmp_path: Path) -> None:
    done = run_cli("reproduce", "fluidos", "--quick", "--out", str(tmp_path), "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    assert len(rows) == 3
    assert all(r["carbon_kg"] > 0 and r["asap_carbon_kg"] > 0 for r in rows)
    assert all(r["carbonshift_saving_pct"] is not None for r in rows)
    assert (tmp_path / "fluidos/heat_map.png").exists()


def test_reproduce_co2_quick(tmp_path: Path, shared_data: Path) -> None:
    done = run_cli(
        "reproduce",
        "co2",
        "--quick",
        "--out",
        str(tmp_path),
        "--format",
        "json",
        "--traces",
        str(shared_data / "traces"),
        timeout_s=900.0,  # three policies x four scenarios of up to 9,000 jobs: ~3 min here
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    assert [r["scenario"] for r in rows] == [f"scenario-{k}" for k in (1, 2, 3, 4)]
    # the not-critical jobs start within the 24 h bound (a few may then wait for room)
    assert all(r["flexible_started_within_24h_pct"] >= 95.0 for r in rows)
    # the default policy runs beside the thesis's window on the same input
    assert all(r["carbonshift_saving_jobs_pct_mean"] is not None for r in rows)
    assert all(r["carbonshift_flexible_started_within_24h_pct_mean"] >= 95.0 for r in rows)
