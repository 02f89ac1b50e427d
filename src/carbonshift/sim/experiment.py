"""One experiment: a policy and its carbon-agnostic baseline on the same input and seed.

An :class:`Experiment` is the programmatic form of a scenario (the TOML loader and the
paper reproductions both build one). :func:`run_experiment` simulates the policy and the
baseline, writes ``summary.json``, ``jobs.csv``, ``slots.csv`` (and the baseline's
``baseline_jobs.csv``), plots and ``report.html`` into the output folder, and returns the
summary.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from carbonshift.carbon.forecast import make_forecaster
from carbonshift.carbon.replay import extend_by_replay
from carbonshift.carbon.signal import resample
from carbonshift.domain import Instance
from carbonshift.errors import DataRangeError
from carbonshift.planning.hold import HoldRule
from carbonshift.planning.limits import PlanLimits
from carbonshift.planning.registry import (
    online_hold,
    parse_params,
    policy_spec,
    round_params,
    run_policy,
)
from carbonshift.planning.types import PlanContext, PolicyResult
from carbonshift.sim.engine import (
    DemandFn,
    ForecastFn,
    PlanFn,
    ProgressFn,
    RunResult,
    SimCluster,
    SimConfig,
    run_simulation,
)
from carbonshift.sim.outputs import summarize, write_jobs_csv, write_slots_csv, write_summary
from carbonshift.sim.report import FigureStyle, write_html_report, write_plots
from carbonshift.workloads.demand import forecast_demand
from carbonshift.workloads.model import Workload

__all__ = [
    "Experiment",
    "ExperimentRuns",
    "execute",
    "online_settings",
    "prepare",
    "run_experiment",
    "simulate_policy",
    "write_outputs",
]

_LOG = logging.getLogger("carbonshift.sim")
#: how a simulation gets under a plan-size limit
SIM_FIX = (
    "plan fewer jobs at once (a shorter horizon_slots, fewer or shorter jobs), use a "
    "cheaper policy, or raise the limit (--max-plan-cells N / --max-horizon-cells N; 0: no "
    "limit)"
)


@dataclass(frozen=True, slots=True)
class Experiment:
    """Everything a run needs, already loaded: time, clusters, workload, policy, forecast."""

    config: SimConfig
    clusters: tuple[SimCluster, ...]
    workload: Workload
    policy: str
    baseline: str = "asap"
    policy_params: Mapping[str, Any] = field(default_factory=dict)
    baseline_params: Mapping[str, Any] = field(default_factory=dict)
    forecast: str = "oracle"
    forecast_params: Mapping[str, Any] = field(default_factory=dict)
    allow_replay: bool = False
    #: the rounds' future demand: a method of workloads.DEMAND_FORECASTS, "none", or None
    #: for the policy's own online default (:func:`online_settings`)
    demand_forecast: str | None = None
    seed: int = 1
    title: str = "carbonshift simulation"
    #: the solve-size limits every round is checked against (None: none; the CLI sets
    #: its ``--max-plan-cells`` / ``--max-horizon-cells``)
    plan_limits: PlanLimits | None = None


def _needed_span(exp: Experiment) -> tuple[datetime, datetime]:
    config = exp.config
    longest_h = float(np.max(exp.workload.runtime_h)) if len(exp.workload.ids) else 0.0
    lookahead_h = max(config.horizon_slots * config.slot_h, longest_h) + config.slot_h
    end = config.start + timedelta(hours=config.hours + config.max_drain_hours + lookahead_h)
    return config.start, end


def _prepare_clusters(exp: Experiment) -> tuple[SimCluster, ...]:
    start, end = _needed_span(exp)
    out = []
    for cluster in exp.clusters:
        series = cluster.actual
        if start < series.start:
            raise DataRangeError(
                f"simulation start {start:%Y-%m-%dT%H:%MZ} is before the carbon data of cluster "
                f"{cluster.name!r} (zone {series.zone}), which covers "
                f"{series.start:%Y-%m-%d} to {series.end:%Y-%m-%d}; pick a later start"
            )
        if end > series.end:
            if not exp.allow_replay:
                raise DataRangeError(
                    f"the run needs carbon data until {end:%Y-%m-%dT%H:%MZ} (start + hours + "
                    f"max_drain_hours + look-ahead) but cluster {cluster.name!r} (zone "
                    f"{series.zone}) has data from {series.start:%Y-%m-%d} to "
                    f"{series.end:%Y-%m-%d %H:%M}; move the start earlier, shorten the run, "
                    "or set allow_replay = true"
                )
            series = extend_by_replay(series, end)
        out.append(replace(cluster, actual=series))
    return tuple(out)


def _forecast_fn(exp: Experiment, clusters: Sequence[SimCluster]) -> ForecastFn:
    """Forecasts at slot resolution for any issue time.

    Forecasters work on the series' native grid: an issue time between two native steps is
    issued at the step before it (so no data at or after the true issue time is read), at
    native resolution, and the values are then averaged into slots aligned to the true issue
    time.
    """
    forecaster = make_forecaster(exp.forecast, {**exp.forecast_params})
    slot_minutes = exp.config.slot_minutes

    def forecast(ci: int, issued_at: datetime, horizon: int) -> Any:
        series = clusters[ci].actual
        step = timedelta(minutes=series.step_minutes)
        offset = (issued_at - series.start) % step
        if offset == timedelta(0) and slot_minutes % series.step_minutes == 0:
            return forecaster.forecast(series, issued_at, horizon, slot_minutes)
        floored = issued_at - offset
        end = issued_at + timedelta(minutes=slot_minutes * horizon)
        steps = math.ceil((end - floored) / step)
        native = forecaster.forecast(series, floored, steps, series.step_minutes)
        # the forecast's own values: the actual series' estimated flags (another length) do
        # not describe them (CarbonSeries now refuses the mismatch)
        piece = replace(
            series,
            start=floored,
            values_g_per_kwh=np.asarray(native, dtype=float),
            estimated=None,
        )
        window = resample(piece, issued_at, end, slot_minutes=slot_minutes)
        return window.values_g_per_kwh

    return forecast


def _plan_fn(name: str, params: Mapping[str, Any], limits: PlanLimits | None = None) -> PlanFn:
    parse_params(name, params)  # fail before the run, not in its first round

    def plan(instance: Instance, context: PlanContext) -> PolicyResult:
        if limits is not None:
            limits.check(
                instance,
                name,
                what=f"a planning round of {len(instance.jobs)} jobs (policy {name})",
                fix=SIM_FIX,
            )
        return run_policy(name, instance, params, context)

    return plan


def prepare(exp: Experiment) -> tuple[tuple[SimCluster, ...], ForecastFn]:
    """Check the data span (replaying when allowed) and build the forecast function."""
    clusters = _prepare_clusters(exp)
    return clusters, _forecast_fn(exp, clusters)


def online_settings(
    demand_forecast: str | None, name: str, params: Mapping[str, Any], *, warn: bool = True
) -> tuple[str | None, dict[str, Any]]:
    """The demand forecast the rounds of policy ``name`` carry, and its parameters.

    ``demand_forecast`` is the scenario's: a method, ``"none"`` (no forecast), or None (not
    said). A policy with online defaults (:class:`~carbonshift.planning.registry.
    OnlineDefaults`; ``carbonshift``: the learned ``moving-average`` demand,
    ``reserve_future_demand = 1.0`` and ``reserve_shapes = "sample"``) gets its forecast
    when the scenario names none, and the parameters that go with that forecast under
    ``params`` whenever the rounds carry it; its ``round_params`` (``carbonshift``:
    ``cluster_band_columns = 0``) under ``params`` whatever the forecast; naming another
    forecast (not ``"none"``) logs a warning that those defaults, the reserve among them,
    are off unless ``params`` sets them. Any other policy: the scenario's settings as they
    are. ``warn=False``: the same answer without the warning (for a caller that only records
    what a run already warned about).
    """
    defaults = policy_spec(name).online
    method = demand_forecast
    if defaults is None:
        return method, dict(params)
    if method is None:
        method = defaults.demand_forecast
    if method == defaults.demand_forecast:
        return method, round_params(name, {**defaults.params, **params})
    dropped = {k: v for k, v in defaults.params.items() if k not in params}
    if warn and method != "none" and dropped:
        _LOG.warning(
            "demand_forecast %r: policy %s's online defaults %s go with the %r forecast "
            "only, so its rounds run with the policy's own values for them (its reserve: "
            "none unless reserve_future_demand is set); set them in [policy_params] to keep "
            "them",
            method,
            name,
            ", ".join(f"{k} = {v!r}" for k, v in dropped.items()),
            defaults.demand_forecast,
        )
    return method, round_params(name, params)


def simulate_policy(
    exp: Experiment,
    prepared: tuple[tuple[SimCluster, ...], ForecastFn],
    name: str,
    params: Mapping[str, Any],
    progress: ProgressFn | None = None,
) -> RunResult:
    """Simulate one policy on the experiment's prepared input (with its online defaults:
    :func:`online_settings`, and :func:`~carbonshift.planning.registry.online_hold` when the
    experiment's hold rule is None)."""
    clusters, forecast = prepared
    method, settings = online_settings(exp.demand_forecast, name, params)
    config = (
        exp.config if exp.config.hold is not None else replace(exp.config, hold=online_hold(name))
    )
    return run_simulation(
        config,
        clusters,
        exp.workload,
        _plan_fn(name, settings, exp.plan_limits),
        forecast,
        progress=progress,
        future_demand=_demand_fn(exp, method),
    )


def _demand_fn(exp: Experiment, method: str | None) -> DemandFn | None:
    """The workload's own demand forecast by ``method``, or None.

    It reads only the jobs that arrived before each round, and knows the run's declared
    arrival span (``hours``): nothing is forecast to arrive after it (workloads/demand.py).
    """
    if method is None or method == "none":
        return None
    workload = exp.workload
    resource = workload.resources[0]
    slot_minutes = exp.config.slot_minutes

    def demand(now_h: float, horizon: int) -> Any:
        return forecast_demand(
            workload,
            resource=resource,
            now_h=now_h,
            slot_minutes=slot_minutes,
            horizon_slots=horizon,
            method=method,
            arrivals_end_h=exp.config.hours,
        )

    forecast_demand(  # validate the method name before the run
        workload,
        resource=resource,
        now_h=0.0,
        slot_minutes=slot_minutes,
        horizon_slots=1,
        method=method,
    )
    return demand


@dataclass(frozen=True, slots=True)
class ExperimentRuns:
    """What :func:`execute` returns: the summary and both runs (policy and baseline)."""

    summary: dict[str, Any]
    run: RunResult
    baseline_run: RunResult


def run_experiment(
    exp: Experiment,
    out_dir: Path | None = None,
    *,
    progress: Callable[[str], ProgressFn] | None = None,
    report: bool = True,
    style: FigureStyle | None = None,
) -> dict[str, Any]:
    """Run policy and baseline; write outputs into ``out_dir`` when given; return the summary."""
    runs = execute(exp, progress=progress)
    if out_dir is not None:
        write_outputs(
            exp, runs.run, runs.baseline_run, runs.summary, out_dir, report=report, style=style
        )
    return runs.summary


def execute(
    exp: Experiment, *, progress: Callable[[str], ProgressFn] | None = None
) -> ExperimentRuns:
    """Simulate the policy and the baseline on the same prepared input; summarize both."""
    prepared = prepare(exp)
    clusters = prepared[0]
    runs: dict[str, RunResult] = {}
    for label, name, params in (
        ("policy", exp.policy, exp.policy_params),
        ("baseline", exp.baseline, exp.baseline_params),
    ):
        callback = progress(f"{label} {name}") if progress is not None else None
        # the hold rule is the policy's; the carbon-agnostic baseline starts what fits now
        run_exp = (
            exp if label == "policy" else replace(exp, config=replace(exp.config, hold=HoldRule()))
        )
        runs[label] = simulate_policy(run_exp, prepared, name, params, callback)
    # what the policy's rounds ran with, its online defaults included (simulate_policy has
    # already warned about dropped defaults: once per run, not twice)
    demand_forecast, policy_params = online_settings(
        exp.demand_forecast, exp.policy, exp.policy_params, warn=False
    )
    extra = {
        "forecast": exp.forecast,
        "demand_forecast": demand_forecast,
        "seed": exp.seed,
        "policy_params": policy_params,
        "hold": asdict(exp.config.hold or online_hold(exp.policy)),
        "baseline_params": dict(exp.baseline_params),
        "start": exp.config.start.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "hours": exp.config.hours,
        "slot_minutes": exp.config.slot_minutes,
        "clusters": [c.name for c in clusters],
        "replayed": any(
            c.actual.end != o.actual.end for c, o in zip(clusters, exp.clusters, strict=False)
        ),
    }
    summary = summarize(
        policy=exp.policy,
        baseline=exp.baseline,
        run=runs["policy"],
        baseline_run=runs["baseline"],
        extra=extra,
    )
    return ExperimentRuns(summary, runs["policy"], runs["baseline"])


def write_outputs(
    exp: Experiment,
    run: RunResult,
    baseline_run: RunResult,
    summary: Mapping[str, Any],
    out_dir: Path,
    *,
    report: bool = True,
    style: FigureStyle | None = None,
) -> None:
    """Write summary.json, jobs.csv, baseline_jobs.csv, slots.csv, plots and report.html."""
    out_dir.mkdir(parents=True, exist_ok=True)
    resources = exp.workload.resources
    write_summary(summary, out_dir / "summary.json")
    write_jobs_csv(run.jobs, resources, out_dir / "jobs.csv")
    write_jobs_csv(baseline_run.jobs, resources, out_dir / "baseline_jobs.csv")
    write_slots_csv(run, resources, out_dir / "slots.csv")
    if report:
        plots = write_plots(
            run,
            baseline_run,
            out_dir / "plots",
            policy=exp.policy,
            baseline=exp.baseline,
            clusters=exp.clusters,
            style=style,
        )
        write_html_report(summary, plots, out_dir / "report.html", title=exp.title)
