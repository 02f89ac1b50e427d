"""What a simulation writes: ``summary.json``, ``jobs.csv`` and ``slots.csv`` (docs/formats.md).

``summary.json`` holds at least the contract keys; numbers are written at full precision and
an undefined ratio is ``null``. ``jobs.csv`` has one row per arrived job of the policy run
(one per piece for suspended and resumed work) with the contract columns and one
``demand_<resource>`` column per resource. ``slots.csv`` has one row per slot and cluster.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from carbonshift.sim.engine import JobRecord, RunResult

__all__ = [
    "JOB_COLUMNS",
    "SUMMARY_KEYS",
    "job_columns",
    "job_rows",
    "run_metrics",
    "slot_columns",
    "slot_rows",
    "summarize",
    "write_jobs_csv",
    "write_slots_csv",
    "write_summary",
]

#: The summary.json keys docs/formats.md (scenario) requires, in its order.
SUMMARY_KEYS = (
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
)

JOB_COLUMNS = (
    "job",
    "state",
    "cluster",
    "submit_h",
    "start_h",
    "end_h",
    "deadline_h",
    "runtime_h",
    "carbon_g",
)


def run_metrics(run: RunResult) -> dict[str, Any]:
    """The contract metrics of one run (carbon in kg, shares in %, ratios, planner time)."""
    jobs = run.jobs
    arrived = {r.job for r in jobs}
    rejected = {r.job for r in jobs if r.state == "rejected"}
    completed = [r for r in jobs if r.state == "completed"]
    met = {r.job for r in completed if r.met_deadline}
    considered = len(arrived) - len(rejected)
    ratios = [
        (r.end_h - r.submit_h) / (r.deadline_h - r.submit_h)
        for r in completed
        if r.end_h is not None and math.isfinite(r.deadline_h) and r.deadline_h > r.submit_h
    ]
    carbon_g = math.fsum(r.carbon_g for r in jobs)
    gains = [g for g in run.replans.gains_g if math.isfinite(g)]
    return {
        "carbon_kg": carbon_g / 1000.0,
        "idle_carbon_kg": run.idle_carbon_g / 1000.0,
        "jobs_total": len(arrived),
        "jobs_completed": len({r.job for r in completed}),
        "jobs_rejected": len(rejected),
        "jobs_unfinished": len(arrived) - len(rejected) - len({r.job for r in completed}),
        "deadline_met_pct": 100.0 * len(met) / considered if considered else None,
        "mean_completion_ratio": math.fsum(ratios) / len(ratios) if ratios else None,
        "mean_wait_h": _mean([r.start_h - r.submit_h for r in jobs if r.start_h is not None]),
        "planner_seconds_total": math.fsum(run.planner_seconds),
        "planner_seconds_max": max(run.planner_seconds, default=0.0),
        "rounds": run.rounds,
        "end_h": run.end_h,
        # flapping: re-plans that moved a planned start, and moves back to an earlier plan
        "jobs_replanned": run.replans.jobs_moved,
        "replan_moves": run.replans.moves,
        "jobs_returned_to_earlier_plan": run.replans.jobs_returned,
        "replan_returns": run.replans.returns,
        "replan_gain_median_g": statistics.median(gains) if gains else None,
    }


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def summarize(
    *,
    policy: str,
    baseline: str,
    run: RunResult,
    baseline_run: RunResult,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``summary.json``: the policy run's metrics, the baseline's, and the carbon saving."""
    mine = run_metrics(run)
    base = run_metrics(baseline_run)
    saving = (
        100.0 * (base["carbon_kg"] - mine["carbon_kg"]) / base["carbon_kg"]
        if base["carbon_kg"] > 0
        else None
    )
    summary: dict[str, Any] = {
        "policy": policy,
        "baseline": baseline,
        "carbon_kg": mine["carbon_kg"],
        "baseline_carbon_kg": base["carbon_kg"],
        "carbon_saving_pct": saving,
        **{k: v for k, v in mine.items() if k != "carbon_kg"},
        "baseline_metrics": base,
    }
    if extra:
        summary.update(extra)
    return summary


def write_summary(summary: Mapping[str, Any], path: Path) -> None:
    """Write ``summary.json`` (full precision; NaN never appears: undefined is null)."""
    path.write_text(json.dumps(summary, indent=1, allow_nan=False) + "\n", encoding="utf-8")


def _cell(value: object) -> str:
    """A CSV cell: empty for None, ``repr`` of floats (full precision), true/false."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "inf" if math.isinf(value) else repr(value)
    return str(value)


def job_columns(resources: Sequence[str]) -> list[str]:
    """The ``jobs.csv`` header: the contract columns, ``critical``, ``demand_<resource>``."""
    return [*JOB_COLUMNS, "critical", *(f"demand_{r}" for r in resources)]


def job_rows(jobs: Sequence[JobRecord], resources: Sequence[str]) -> list[list[Any]]:
    """The ``jobs.csv`` rows as typed values (None where the file has an empty cell)."""
    return [
        [
            r.job,
            r.state,
            r.cluster or None,
            r.submit_h,
            r.start_h,
            r.end_h,
            r.deadline_h,
            r.runtime_h,
            r.carbon_g,
            r.critical,
            *(r.demand.get(k, 0.0) for k in resources),
        ]
        for r in jobs
    ]


def write_jobs_csv(jobs: Sequence[JobRecord], resources: Sequence[str], path: Path) -> None:
    """Write ``jobs.csv``: the contract columns, ``critical`` and ``demand_<resource>``."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(job_columns(resources))
        for row in job_rows(jobs, resources):
            writer.writerow([_cell(v) for v in row])


def slot_columns(resources: Sequence[str]) -> list[str]:
    """The ``slots.csv`` header."""
    return [
        "slot",
        "start_h",
        "cluster",
        *(f"allocated_{r}" for r in resources),
        "ci_g_per_kwh",
        "forecast_ci_g_per_kwh",
        "carbon_g",
    ]


def slot_rows(run: RunResult, resources: Sequence[str]) -> list[list[Any]]:
    """The ``slots.csv`` rows as typed values (no forecast: None)."""
    return [
        [
            s.slot,
            s.start_h,
            s.cluster,
            *(s.allocated.get(r, 0.0) for r in resources),
            s.ci_g_per_kwh,
            None if math.isnan(s.forecast_ci_g_per_kwh) else s.forecast_ci_g_per_kwh,
            s.carbon_g,
        ]
        for s in run.slots
    ]


def write_slots_csv(run: RunResult, resources: Sequence[str], path: Path) -> None:
    """Write ``slots.csv``: allocation, actual and forecast intensity and grams per slot."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(slot_columns(resources))
        for row in slot_rows(run, resources):
            writer.writerow([_cell(v) for v in row])
