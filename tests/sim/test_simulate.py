"""Scenario files end to end: contract outputs, conservation, determinism, bad scenarios."""

from __future__ import annotations

import csv
import json
from datetime import timedelta
from pathlib import Path

import pytest

from carbonshift.carbon.embedded import load_series
from carbonshift.carbon.signal import integral_g_h_per_kwh
from carbonshift.errors import DataRangeError, InputError
from carbonshift.sim.run import simulate_file
from carbonshift.sim.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]

SCENARIO = """
[simulation]
start = "2023-03-01T00:00:00Z"
hours = {hours}
max_drain_hours = {drain}
slot_minutes = 60
horizon_slots = 12
policy = "{policy}"
seed = 3
allow_replay = {replay}

[[clusters]]
name = "north"
zone = "GB"
capacity = {{ gpu = 8 }}
watts_per_unit = {{ gpu = 300 }}
pue = 1.3
embodied_g_per_unit_hour = {{ gpu = 2.0 }}

[[clusters]]
name = "south"
zone = "ES-NOT-A-ZONE"
capacity = {{ gpu = 4 }}
watts_per_unit = {{ gpu = 300 }}

[workload]
trace_csv = "jobs.csv"
deadline_factor = 3.0
"""

TRACE = (
    "arrival_time,length,cpus\n0.2,1.5,2\n0.9,3.0,4\n1.0,0.5,1\n2.5,2.25,8\n3.0,1.0,30\n5.5,4.0,3\n"
)


def write_scenario(
    tmp_path: Path,
    *,
    policy: str = "fluidos",
    hours: float = 6,
    drain: float = 48,
    replay: bool = False,
    zone2: str = "DE",
) -> Path:
    text = SCENARIO.format(
        policy=policy, hours=hours, drain=drain, replay=str(replay).lower()
    ).replace("ES-NOT-A-ZONE", zone2)
    (tmp_path / "jobs.csv").write_text(TRACE)
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    return path


def read_jobs(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("policy", ["asap", "fluidos", "caspian", "window", "srr"])
def test_outputs_follow_the_contract(tmp_path: Path, policy: str) -> None:
    out = tmp_path / "out"
    summary = simulate_file(write_scenario(tmp_path, policy=policy), out, report=False)
    on_disk = json.loads((out / "summary.json").read_text())
    for key in (
        "policy",
        "baseline",
        "carbon_kg",
        "baseline_carbon_kg",
        "carbon_saving_pct",
        "jobs_total",
        "jobs_completed",
        "jobs_rejected",
        "deadline_met_pct",
        "mean_completion_ratio",
        "planner_seconds_total",
        "planner_seconds_max",
    ):
        assert key in on_disk, key
    rows = read_jobs(out / "jobs.csv")
    # Conservation: every arrived job has one row; the 30-GPU job fits no cluster.
    assert sorted(r["job"] for r in rows) == sorted({r["job"] for r in rows})
    assert summary["jobs_total"] == 6
    assert summary["jobs_rejected"] == 1
    assert {r["state"] for r in rows} <= {"completed", "running", "waiting", "rejected"}
    assert summary["jobs_completed"] == 5
    # The summary's emissions are the sum of the rows' grams.
    assert sum(float(r["carbon_g"]) for r in rows) / 1000 == pytest.approx(
        summary["carbon_kg"], rel=1e-9
    )
    want_saving = (
        100 * (summary["baseline_carbon_kg"] - summary["carbon_kg"]) / summary["baseline_carbon_kg"]
    )
    assert summary["carbon_saving_pct"] == pytest.approx(want_saving, rel=1e-9)
    # Starts are on slot boundaries, at or after arrival.
    for r in rows:
        if r["start_h"]:
            assert float(r["start_h"]).is_integer()
            assert float(r["start_h"]) >= float(r["submit_h"])
            assert float(r["end_h"]) - float(r["start_h"]) == pytest.approx(float(r["runtime_h"]))


def test_jobs_csv_recomputed_against_the_actual_signal(tmp_path: Path) -> None:
    out = tmp_path / "out"
    scenario = write_scenario(tmp_path)
    simulate_file(scenario, out, report=False)
    start = load_scenario(scenario).simulation.start
    power = {"north": (300 * 1.3, 2.0, load_series("GB")), "south": (300.0, 0.0, load_series("DE"))}
    for row in read_jobs(out / "jobs.csv"):
        if row["state"] != "completed":
            continue
        watts, embodied, series = power[row["cluster"]]
        t0 = start + timedelta(hours=float(row["start_h"]))
        t1 = start + timedelta(hours=float(row["end_h"]))
        gpus = float(row["demand_gpu"])
        hours = float(row["end_h"]) - float(row["start_h"])
        want_g = gpus * (watts / 1000 * integral_g_h_per_kwh(series, t0, t1) + embodied * hours)
        assert float(row["carbon_g"]) == pytest.approx(want_g, rel=1e-9)


def test_deterministic_for_a_seed(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, policy="srr")
    first = simulate_file(scenario, tmp_path / "a", report=False)
    second = simulate_file(scenario, tmp_path / "b", report=False)
    for key in ("carbon_kg", "baseline_carbon_kg", "deadline_met_pct"):
        assert first[key] == second[key]
    assert (tmp_path / "a/jobs.csv").read_text() == (tmp_path / "b/jobs.csv").read_text()


def test_strict_refuses_a_job_no_cluster_holds(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="more than any cluster holds"):
        simulate_file(write_scenario(tmp_path), tmp_path / "out", strict=True)


def test_dates_past_the_data_need_replay(tmp_path: Path) -> None:
    late = write_scenario(tmp_path, hours=6)
    late.write_text(late.read_text().replace("2023-03-01", "2023-12-30"))
    with pytest.raises(DataRangeError, match="allow_replay"):
        simulate_file(late, tmp_path / "out", report=False)
    late.write_text(late.read_text().replace("allow_replay = false", "allow_replay = true"))
    summary = simulate_file(late, tmp_path / "out", report=False)
    assert summary["replayed"] is True
    assert summary["jobs_completed"] == 5


@pytest.mark.parametrize(
    ("edit", "want"),
    [
        pytest.param(("policy = ", "polcy = "), "did you mean", id="unknown-key"),
        pytest.param(('"jobs.csv"', '"missing.csv"'), "missing.csv", id="missing-trace"),
        pytest.param(('zone = "DE"', 'zone = "XX-NOWHERE"'), "XX-NOWHERE", id="unknown-zone"),
    ],
)
def test_bad_scenarios(tmp_path: Path, edit: tuple[str, str], want: str) -> None:
    path = write_scenario(tmp_path)
    path.write_text(path.read_text().replace(*edit, 1))
    with pytest.raises(InputError, match=want):
        simulate_file(path, tmp_path / "out", report=False)


def test_report_is_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    simulate_file(write_scenario(tmp_path), out)
    page = (out / "report.html").read_text()
    assert "data:image/png;base64," in page
    assert "carbon_saving_pct" in page
    assert {p.name for p in (out / "plots").iterdir()} >= {
        "cumulative_emissions.png",
        "completion_ratio.png",
    }


def test_examples_run(tmp_path: Path) -> None:
    summary = simulate_file(REPO / "examples/own-data/scenario.toml", tmp_path, report=False)
    assert summary["jobs_total"] == 60
    assert summary["jobs_completed"] == 60
