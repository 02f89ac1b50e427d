"""From a scenario file to results: build the :class:`Experiment` and run it.

``carbonshift simulate SCENARIO.toml --out DIR`` calls :func:`simulate_file`. Clusters take
their ACTUAL carbon from the embedded data (``zone``) or a CSV (``carbon_csv``, Electricity
Maps export or ``timestamp,value``), of the scenario's ``ci_kind``. A job that no cluster can
hold is rejected and recorded; with ``strict`` the scenario is refused instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from carbonshift.carbon.embedded import load_series
from carbonshift.carbon.quality import suspect_in_span, suspect_points
from carbonshift.carbon.readers import read_carbon_csv
from carbonshift.carbon.series import CarbonSeries
from carbonshift.errors import InputError
from carbonshift.planning.registry import parse_params
from carbonshift.sim.engine import ProgressFn, SimCluster, SimConfig
from carbonshift.sim.experiment import Experiment, run_experiment
from carbonshift.sim.scenario import ClusterSpec, Scenario, load_scenario
from carbonshift.workloads.model import Workload

__all__ = ["build_experiment", "simulate_file", "with_policy"]

_LOG = logging.getLogger(__name__)


def _actual(spec: ClusterSpec) -> CarbonSeries:
    if spec.carbon_csv is not None:
        return read_carbon_csv(spec.carbon_csv, spec.ci_kind, zone=spec.zone or spec.name)
    assert spec.zone is not None  # the scenario model demands zone or carbon_csv
    return load_series(spec.zone, spec.ci_kind)


def _check_strict(workload: Workload, clusters: tuple[SimCluster, ...]) -> None:
    """``--strict``: refuse a scenario whose workload has a job no cluster can hold."""
    caps = np.array([[c.capacity.get(r, 0.0) for r in workload.resources] for c in clusters])
    demand = np.stack([workload.demand[r] for r in workload.resources], axis=1)
    fits = np.any(np.all(demand[:, None, :] <= caps[None, :, :] + 1e-9, axis=2), axis=1)
    if not np.all(fits):
        first = int(np.flatnonzero(~fits)[0])
        asked = {r: float(workload.demand[r][first]) for r in workload.resources}
        raise InputError(
            f"job {workload.ids[first]!r} asks for {asked}, more than any cluster holds "
            f"({int(np.sum(~fits))} such jobs); raise a capacity or drop --strict to record "
            "them as rejected"
        )


def _log_suspect(spec: ClusterSpec, series: CarbonSeries, start: datetime, end: datetime) -> None:
    """Say which implausible points (carbon/quality.py) the run will be charged on."""
    found = suspect_in_span(series, suspect_points(series.values_g_per_kwh), start, end)
    if found:
        listed = ", ".join(f"{t:%Y-%m-%dT%H:%MZ} at {v:.1f} g/kWh" for t, v in found[:3])
        _LOG.warning(
            "cluster %s: %d implausible carbon point(s) in the simulated period (%s%s); the "
            "accounting keeps the actual signal as it is (carbonshift data show --outliers)",
            spec.name,
            len(found),
            listed,
            " ..." if len(found) > 3 else "",
        )


def build_experiment(scenario: Scenario, *, strict: bool = False) -> Experiment:
    """The experiment a scenario describes (carbon series and workload loaded)."""
    sim = scenario.simulation
    run_end = sim.start + timedelta(hours=sim.hours + sim.max_drain_hours)
    actual = {spec.name: _actual(spec) for spec in scenario.clusters}
    for spec in scenario.clusters:
        _log_suspect(spec, actual[spec.name], sim.start, run_end)
    clusters = tuple(
        SimCluster(
            name=spec.name,
            zone=spec.zone,
            capacity=dict(spec.capacity),
            watts_per_unit=dict(spec.watts_per_unit),
            pue=spec.pue,
            embodied_g_per_unit_hour=dict(spec.embodied_g_per_unit_hour),
            idle_watts=spec.idle_watts,
            actual=actual[spec.name],
        )
        for spec in scenario.clusters
    )
    workload = scenario.load_workload()
    if strict:
        _check_strict(workload, clusters)
    return Experiment(
        config=SimConfig(
            start=sim.start,
            hours=sim.hours,
            max_drain_hours=sim.max_drain_hours,
            slot_minutes=sim.slot_minutes,
            horizon_slots=sim.horizon_slots,
            replan_every_slots=sim.replan_every_slots,
            interruptible=sim.interruptible,
            interrupt_overhead_minutes=sim.interrupt_overhead_minutes,
            hold=scenario.hold.rule(sim.policy),
        ),
        clusters=clusters,
        workload=workload,
        policy=sim.policy,
        baseline=sim.baseline,
        policy_params=dict(scenario.policy_params),
        baseline_params=dict(scenario.baseline_params),
        forecast=sim.forecast,
        forecast_params=dict(scenario.forecast_params),
        allow_replay=sim.allow_replay,
        demand_forecast=sim.demand_forecast,
        seed=sim.seed,
        title=sim.title or f"{sim.policy} against {sim.baseline}: {scenario.source}",
    )


def with_policy(
    experiment: Experiment, policy: str | None, params: Mapping[str, Any] | None
) -> Experiment:
    """``experiment`` with another policy and/or parameters (checked before any run).

    A new ``policy`` starts from its defaults plus ``params``; ``params`` alone are laid
    over the scenario's ``[policy_params]``.
    """
    if policy is None and params is None:
        return experiment
    name = policy if policy is not None else experiment.policy
    chosen = {**(experiment.policy_params if policy is None else {}), **(params or {})}
    parse_params(name, chosen)
    title = experiment.title
    if title.startswith(f"{experiment.policy} against "):  # the derived title names it
        title = name + title[len(experiment.policy) :]
    return replace(experiment, policy=name, policy_params=chosen, title=title)


def simulate_file(
    path: Path,
    out_dir: Path,
    *,
    strict: bool = False,
    report: bool = True,
    progress: Callable[[str], ProgressFn] | None = None,
    policy: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Load, check and run the scenario at ``path``; write its outputs into ``out_dir``.

    ``policy`` / ``params`` replace the scenario's (see :func:`with_policy`).
    """
    scenario = load_scenario(path)
    experiment = with_policy(build_experiment(scenario, strict=strict), policy, params)
    summary = run_experiment(experiment, out_dir, progress=progress, report=report)
    summary["scenario"] = str(path)
    return summary
