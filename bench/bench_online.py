"""Online against clairvoyant: how much of the offline saving the simulator keeps (issue 13).

Setup: the Caspian experiment (3 spokes CA-ON, JP-TK, DE of 32 GPUs at 200 / 100 / 200 W per
GPU; the ``caspian`` workload family, Poisson arrivals over 24 h from 2023-11-14, demand and
runtime U{1..5} (whole hours), deadline = submit + beta x runtime, beta ~ U(2, 4)); hourly
slots, a 24-slot look-ahead, re-planning every slot.

Per seed:

- **online**: the simulator with ``policy`` (default ``carbonshift``) and an ``oracle``
  forecast, and again with ``noisy-oracle`` at 25 and 75 g/kWh MAE; carbon charged against
  the actual signal (``summary.json`` ``carbon_kg``);
- **asap**: the simulator's carbon-agnostic run on the same input (the baseline of every
  saving below);
- the online run's re-plans (``online_replan_moves``: planned starts a re-plan moved;
  ``online_replan_returns``: moves back to a plan the job had left; and the jobs of each);
- the CPU seconds of the online run (``online_cpu_s``, ``time.process_time``) and per
  planning round (``online_cpu_s_per_round``, over its ``online_rounds``);
- **clairvoyant**: the static instance that knows everything in advance: every job released
  at the first slot boundary after its arrival (``ceil``), with its deadline slot
  (``floor``), over a horizon that holds every job, the actual hourly carbon as the
  planner's signal; solved by the same policy, and bounded below by the certified
  ``bound.lower_bound_g`` of the ``carbonshift`` policy's plan (the time-indexed LP or its
  Lagrangian dual: no plan that keeps every deadline emits less).

Figures: ``kept_pct = 100 x (asap - online) / (asap - clairvoyant)``, the share of the
clairvoyant saving the online run keeps; ``kept_of_bound_pct`` the same against the bound;
deadlines met online and in the clairvoyant plan. Runtimes are whole hours on hourly data
and hourly slots, so the instance's grams and the simulator's grams measure the same thing
(the static asap plan's grams are printed beside the simulated asap as a check).

The online runs plan as a scenario that says nothing more would: ``carbonshift`` with its
online defaults (the learned ``moving-average`` demand forecast and
``reserve_future_demand = 1.0`` with ``reserve_shapes = sample``;
sim.experiment.online_settings) unless ``--demand-forecast none`` (the default before
2026-11-27), ``--reserve`` or ``--param reserve_shapes=median`` says otherwise.

Run: ``.venv/bin/python bench/bench_online.py [--seeds 1,2,3] [--jobs 200] [--policy NAME]
[--reserve W] [--demand-forecast none|oracle|moving-average|moving-average-lower|seasonal-day]
[--param KEY=VALUE] [--hold KEY=VALUE] [--noise 25,75]`` (a table; ``--hold``: a field of
the online runs' hold rule, e.g. ``replan_min_improvement_g=5``), or
``.venv/bin/python -m bench online`` (JSON rows).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import fields, replace
from datetime import timedelta
from typing import Any

import numpy as np

from carbonshift.carbon.signal import resample
from carbonshift.domain import Cluster, ClusterName, Instance, TimeGrid, score_plan
from carbonshift.planning import run_policy
from carbonshift.planning.hold import HoldRule
from carbonshift.planning.registry import online_hold
from carbonshift.sim.experiment import Experiment, online_settings, prepare, simulate_policy
from carbonshift.sim.outputs import run_metrics
from carbonshift.sim.reproduce import CASPIAN_START, caspian_setting
from carbonshift.workloads.convert import to_planning_jobs

START = CASPIAN_START
SLOT_MINUTES = 60
NOISE_MAE_G_PER_KWH = (25.0, 75.0)


def experiment(
    seed: int, n_jobs: int, policy: str, demand_forecast: str | None = None
) -> Experiment:
    """Caspian's setting (sim.reproduce.caspian_setting), ``policy`` against asap; with
    ``demand_forecast``, each round's instance carries that forecast's future demand."""
    return replace(
        caspian_setting(seed, n_jobs=n_jobs, max_drain_hours=72),
        policy=policy,
        baseline="asap",
        baseline_params={},
        demand_forecast=demand_forecast,
        title="carbonshift simulation",
    )


def clairvoyant_instance(exp: Experiment) -> Instance:
    """Every job of the run, released at its arrival, with the actual carbon as signal."""
    work = exp.workload
    end_h = np.maximum(np.ceil(work.submit_h) + np.ceil(work.runtime_h), work.deadline_h)
    horizon = math.ceil(float(np.max(end_h))) + 1
    jobs = to_planning_jobs(work, slot_minutes=SLOT_MINUTES, horizon_slots=horizon)
    stop = START + timedelta(minutes=SLOT_MINUTES * horizon)
    carbon = {
        ClusterName(c.name): tuple(
            float(v)
            for v in resample(c.actual, START, stop, slot_minutes=SLOT_MINUTES).values_g_per_kwh
        )
        for c in exp.clusters
    }
    clusters = tuple(
        Cluster(
            name=ClusterName(c.name),
            zone=c.zone,
            capacity=dict(c.capacity),
            watts_per_unit=dict(c.watts_per_unit),
        )
        for c in exp.clusters
    )
    return Instance(
        grid=TimeGrid(slot_minutes=SLOT_MINUTES, horizon_slots=horizon),
        resources=("gpu",),
        clusters=clusters,
        carbon_g_per_kwh=carbon,
        jobs=tuple(jobs),
    )


def _grams(inst: Instance, plan: Any) -> float:
    scores = score_plan(inst, plan)
    return scores.operational_g + scores.embodied_g


def one_seed(
    seed: int,
    n_jobs: int,
    policy: str,
    params: dict[str, Any] | None = None,
    demand_forecast: str | None = None,
    noise_mae_g_per_kwh: Sequence[float] = NOISE_MAE_G_PER_KWH,
    hold: dict[str, Any] | None = None,
) -> dict[str, Any]:
    began = time.perf_counter()
    began_cpu = time.process_time()
    params = params or {}
    exp = experiment(seed, n_jobs, policy, demand_forecast)
    base_config = exp.config  # asap's: no hold rule
    if hold:  # the online runs' hold rule: the policy's online one with these fields changed
        rule = replace(online_hold(policy), **hold)
        exp = replace(exp, config=replace(exp.config, hold=rule))
    prepared = prepare(exp)
    asap = run_metrics(simulate_policy(replace(exp, config=base_config), prepared, "asap", {}))
    online_cpu = time.process_time()
    online_run = simulate_policy(exp, prepared, policy, params)
    online_cpu = time.process_time() - online_cpu
    online = run_metrics(online_run)
    inst = clairvoyant_instance(exp)
    static = run_policy(policy, inst)
    bound = run_policy("carbonshift", inst).bound if policy != "carbonshift" else static.bound
    static_scores = score_plan(inst, static.plan)
    online_demand, online_params = online_settings(exp.demand_forecast, policy, params)
    row: dict[str, Any] = {
        "seed": seed,
        "jobs": n_jobs,
        "demand_forecast": online_demand,
        "reserve": online_params.get("reserve_future_demand", 0.0),
        "asap_kg": asap["carbon_kg"],
        "static_asap_kg": _grams(inst, run_policy("asap", inst).plan) / 1000.0,
        "online_kg": online["carbon_kg"],
        "clairvoyant_kg": _grams(inst, static.plan) / 1000.0,
        "lower_bound_kg": (
            bound.lower_bound_g / 1000.0
            if bound is not None and bound.lower_bound_g is not None
            else math.nan
        ),
        "online_deadline_met_pct": online["deadline_met_pct"],
        "asap_deadline_met_pct": asap["deadline_met_pct"],
        "clairvoyant_deadline_met_pct": 100.0 * static_scores.on_time / max(1, len(inst.jobs)),
        "clairvoyant_solve_s": static.plan.solve_seconds,
        "online_cpu_s": online_cpu,
        "online_rounds": online_run.rounds,
        "online_cpu_s_per_round": online_cpu / max(1, online_run.rounds),
        # flapping: planned starts that re-plans moved, and moves back to an earlier plan
        "online_jobs_replanned": online["jobs_replanned"],
        "online_replan_moves": online["replan_moves"],
        "online_jobs_returned": online["jobs_returned_to_earlier_plan"],
        "online_replan_returns": online["replan_returns"],
    }
    row["kept_pct"] = _kept(row["asap_kg"], row["online_kg"], row["clairvoyant_kg"])
    row["kept_of_bound_pct"] = _kept(row["asap_kg"], row["online_kg"], row["lower_bound_kg"])
    for mae in noise_mae_g_per_kwh:
        noisy = replace(
            exp, forecast="noisy-oracle", forecast_params={"mae_g_per_kwh": mae, "seed": seed}
        )
        metrics = run_metrics(simulate_policy(noisy, prepare(noisy), policy, params))
        row[f"noisy{mae:g}_kg"] = metrics["carbon_kg"]
        row[f"noisy{mae:g}_kept_pct"] = _kept(
            row["asap_kg"], metrics["carbon_kg"], row["clairvoyant_kg"]
        )
        row[f"noisy{mae:g}_deadline_met_pct"] = metrics["deadline_met_pct"]
    row["wall_s"] = time.perf_counter() - began
    row["cpu_s"] = time.process_time() - began_cpu
    return row


def _kept(asap: float, online: float, best: float) -> float:
    saving = asap - best
    return 100.0 * (asap - online) / saving if saving > 0 else math.nan


def _spread(values: Sequence[float]) -> str:
    good = [v for v in values if math.isfinite(v)]
    if not good:
        return "-"
    mean = statistics.fmean(good)
    return f"{mean:.1f} ({min(good):.1f}-{max(good):.1f})"


def run(
    seeds: Sequence[int] = (1, 2, 3), n_jobs: int = 200, policy: str = "carbonshift"
) -> list[dict[str, Any]]:
    """One row per seed (``python -m bench online``)."""
    return [
        {"name": f"online {policy} seed={s}", "value": r["kept_pct"], "unit": "%", **r}
        for s in seeds
        for r in [one_seed(s, n_jobs, policy)]
    ]


def _param_value(value: str) -> int | float | str:
    """A ``--param`` value: an int, else a float, else the word itself (the policy's own
    parameter check says whether it is allowed)."""
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated seeds")
    parser.add_argument("--jobs", type=int, default=200, help="jobs per seed")
    parser.add_argument("--policy", default="carbonshift", help="policy online and offline")
    parser.add_argument(
        "--reserve",
        type=float,
        default=None,
        help="online carbonshift's reserve_future_demand (default: its online default)",
    )
    parser.add_argument(
        "--demand-forecast",
        default=None,
        help="the rounds' future_demand: none, seasonal-day, moving-average, "
        "moving-average-lower, zero or oracle (default: the policy's online default, "
        "moving-average for carbonshift; another one turns its reserve off unless --reserve "
        "and --param reserve_shapes=sample set it)",
    )
    parser.add_argument(
        "--noise",
        default=",".join(f"{m:g}" for m in NOISE_MAE_G_PER_KWH),
        help="noisy-oracle MAEs in g/kWh, comma-separated ('' for none)",
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="another parameter of the online policy (a number or a word), e.g. "
        "polish_steps=0 or reserve_shapes=median",
    )
    parser.add_argument(
        "--hold",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a field of the online runs' hold rule (planning.hold.HoldRule) over the "
        "policy's online one, e.g. replan_min_improvement_g=5",
    )
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    params: dict[str, Any] = {} if args.reserve is None else {"reserve_future_demand": args.reserve}
    noise = [float(m) for m in args.noise.split(",") if m.strip()]
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            parser.error(f"--param {item!r}: give KEY=VALUE, e.g. polish_steps=0")
        params[key] = _param_value(value)
    hold: dict[str, Any] = {}
    for item in args.hold:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            parser.error(f"--hold {item!r}: give KEY=VALUE, e.g. replan_min_improvement_g=5")
        if key not in {f.name for f in fields(HoldRule)}:
            parser.error(
                f"--hold {item!r}: {key!r} is not a field of the hold rule; known: "
                f"{', '.join(f.name for f in fields(HoldRule))}"
            )
        hold[key] = _param_value(value)
    rows = []
    for seed in seeds:
        row = one_seed(seed, args.jobs, args.policy, params, args.demand_forecast, noise, hold)
        rows.append(row)
        print(
            " ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
            ),
            flush=True,
        )
    keys = (
        "kept_pct",
        "kept_of_bound_pct",
        "online_deadline_met_pct",
        "clairvoyant_deadline_met_pct",
        "noisy25_kept_pct",
        "noisy25_deadline_met_pct",
        "noisy75_kept_pct",
        "noisy75_deadline_met_pct",
        "online_replan_moves",
        "online_replan_returns",
        "online_cpu_s",
        "online_cpu_s_per_round",
        "cpu_s",
    )
    print(f"\n{args.policy}, {args.jobs} jobs, seeds {args.seeds}: mean (min-max)")
    for key in keys:
        if key in rows[0]:
            print(f"| {key} | {_spread([r[key] for r in rows])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
