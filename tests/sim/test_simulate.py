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
from carbonshift.sim.experiment import run_experiment
from carbonshift.sim.report import FigureStyle
from carbonshift.sim.run import build_experiment, simulate_file
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


def test_report_opens_with_the_headline_and_keeps_figures_in_three_formats(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    summary = simulate_file(write_scenario(tmp_path), out)
    page = (out / "report.html").read_text()
    assert "data:image/png;base64," in page
    want_headline = f"{summary['carbon_saving_pct']:.1f} % less carbon</strong> than asap"
    assert want_headline in page
    assert page.index(want_headline) < page.index("side by side") < page.index("[simulation]")
    assert "mean wait before start" in page
    assert f"seed = {summary['seed']}" in page
    assert page.count("<figcaption><strong>Figure") == 4
    stems = {"cumulative_emissions", "completion_ratio", "carbon_intensity", "allocation"}
    want_files = {f"{stem}.{ext}" for stem in stems for ext in ("png", "svg", "pdf")}
    assert {p.name for p in (out / "plots").iterdir()} == want_files
    assert (out / "plots" / "allocation.pdf").read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize(
    ("forecast", "want_forecast_in_legend"),
    [
        pytest.param("oracle", False, id="oracle-forecast-is-the-actual-so-not-drawn-again"),
        pytest.param("persistence", True, id="a-real-forecast-is-drawn-dashed"),
    ],
)
def test_intensity_figure_lists_only_lines_it_draws(
    tmp_path: Path, forecast: str, want_forecast_in_legend: bool
) -> None:
    path = write_scenario(tmp_path)
    text = path.read_text()
    path.write_text(text.replace("seed = 3\n", f'seed = 3\nforecast = "{forecast}"\n', 1))
    simulate_file(path, tmp_path / "out")
    svg = (tmp_path / "out" / "plots" / "carbon_intensity.svg").read_text()
    assert ("north forecast" in svg) is want_forecast_in_legend
    assert "gCO2e/kWh, direct" in svg


def test_paper_style_draws_narrow_high_resolution_figures(tmp_path: Path) -> None:
    from PIL import Image

    exp = build_experiment(load_scenario(write_scenario(tmp_path)))
    run_experiment(exp, tmp_path / "paper", style=FigureStyle("paper"))
    run_experiment(exp, tmp_path / "screen", style=FigureStyle("default", dpi=100))
    paper = Image.open(tmp_path / "paper" / "plots" / "completion_ratio.png")
    screen = Image.open(tmp_path / "screen" / "plots" / "completion_ratio.png")
    # 3.5 in at 300 dpi against 8 in at 100 dpi
    assert paper.size[0] == pytest.approx(3.5 * 300, abs=2)
    assert screen.size[0] == pytest.approx(8 * 100, abs=2)


@pytest.mark.parametrize(
    ("style", "want_message"),
    [
        pytest.param({"name": "glossy"}, "neither a built-in style", id="unknown-style"),
        pytest.param({"width_in": 0.1}, "outside 1..40 inches", id="tiny-width"),
        pytest.param({"dpi": 10_000}, "outside 50..1200", id="absurd-dpi"),
    ],
)
def test_figure_style_refuses_bad_settings(style: dict[str, object], want_message: str) -> None:
    with pytest.raises(InputError, match=want_message):
        FigureStyle(**style)  # type: ignore[arg-type]


def test_examples_run(tmp_path: Path) -> None:
    summary = simulate_file(REPO / "examples/own-data/scenario.toml", tmp_path, report=False)
    assert summary["jobs_total"] == 60
    assert summary["jobs_completed"] == 60
