"""Sweeps: policies x parameter grids x seeds x scenarios, run in parallel processes.

A sweep file (TOML) names one or more scenario files and what to vary::

    scenarios = ["caspian.toml"]          # paths relative to the sweep file
    seeds = [1, 2, 3]                      # each overrides [simulation] seed
    workers = 2                            # processes (default: the machine's cores)

    [[policies]]
    name = "caspian"
    params = { omega1 = [0.0, 0.5, 1.0, 2.0], omega2 = 1.0 }   # lists are a grid
    # "hold.min_saving_g" = [0, 1, 5]: keys named hold.* sweep the scenario's [hold] rule

    [[policies]]
    name = "fluidos"

Every run keeps its scenario's baseline (same input, same seed). Results: ``sweep.csv`` (one
row per run), ``sweep_summary.csv`` (per scenario, policy and parameters, over the seeds:
for each metric ``<metric>_mean``, ``<metric>_std`` (sample standard deviation),
``<metric>_ci95_lo`` and ``<metric>_ci95_hi`` (the 95 % confidence interval of the mean,
Student t with seeds - 1 degrees of freedom), and ``<metric>``, the mean again for older
readers) and ``sweep.png`` (saving and deadlines met against the first swept parameter, per
policy, with the intervals as error bars).
"""

from __future__ import annotations

import csv
import difflib
import itertools
import math
import os
import statistics
import threading
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from carbonshift._extras import pyplot
from carbonshift.errors import InputError
from carbonshift.files import read_input_text
from carbonshift.planning.limits import PlanLimits
from carbonshift.planning.registry import parse_params
from carbonshift.sim.experiment import run_experiment
from carbonshift.sim.run import build_experiment
from carbonshift.sim.scenario import HoldSpec, load_scenario

__all__ = [
    "RunSpec",
    "SeedStats",
    "SweepSpec",
    "load_sweep",
    "run_sweep",
    "seed_stats",
]

_METRICS = (
    "carbon_kg",
    "baseline_carbon_kg",
    "carbon_saving_pct",
    "deadline_met_pct",
    "mean_completion_ratio",
    "planner_seconds_total",
)
_KEYS = {"scenarios", "seeds", "workers", "policies"}
_POLICY_KEYS = {"name", "params"}


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One run of a sweep: scenario file, policy, its parameters and the seed."""

    scenario: Path
    policy: str
    params: Mapping[str, Any]
    seed: int

    def label(self) -> str:
        """``policy k=v ...`` for tables and plots."""
        args = " ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.policy} {args}".strip()


@dataclass(frozen=True, slots=True)
class SweepSpec:
    """A parsed sweep file: the runs to make and how many processes to use."""

    runs: tuple[RunSpec, ...]
    workers: int
    swept: tuple[str, ...]


def _unknown(keys: set[str], known: set[str], where: str) -> None:
    for key in sorted(keys - known):
        close = difflib.get_close_matches(key, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise InputError(f"{where}: unknown key {key!r}; {hint}known keys: {sorted(known)}")


def load_sweep(
    path: Path,
    *,
    policies: Sequence[str] | None = None,
    grid: Mapping[str, Sequence[Any]] | None = None,
) -> SweepSpec:
    """Read a sweep file; every scenario is loaded and every parameter set checked up front.

    ``policies`` (names or ``module:function``) replace the file's ``[[policies]]``, each
    with its default parameters. ``grid`` (``carbonshift sweep --param``) sets these
    parameters' values on every policy, over what the file says.
    """
    try:
        data = tomllib.loads(read_input_text(path, "sweep"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc}); fix the syntax there") from exc
    _unknown(set(data), _KEYS, str(path))
    scenarios = data.get("scenarios")
    if not isinstance(scenarios, list) or not scenarios:
        raise InputError(f"{path}: scenarios must be a list of scenario files, like ['a.toml']")
    base = path.resolve().parent
    files = [base / str(s) for s in scenarios]
    for file in files:
        load_scenario(file)  # fail before any run starts
    seeds = data.get("seeds", [1])
    if not isinstance(seeds, list) or not all(isinstance(s, int) for s in seeds) or not seeds:
        raise InputError(f"{path}: seeds must be a list of whole numbers, like [1, 2, 3]")
    workers = data.get("workers", os.cpu_count() or 1)
    if not isinstance(workers, int) or workers < 1:
        raise InputError(f"{path}: workers is {workers!r}; give a whole number >= 1")
    if policies:
        data = {**data, "policies": [{"name": name} for name in policies]}
    tables = data.get("policies")
    if not isinstance(tables, list) or not tables:
        raise InputError(f"{path}: add at least one [[policies]] table with a name")
    runs: list[RunSpec] = []
    swept: list[str] = []
    for index, table in enumerate(tables):
        where = f"{path}: [[policies]] #{index + 1}"
        if not isinstance(table, dict) or "name" not in table:
            raise InputError(f"{where} needs a name, like name = 'caspian'")
        _unknown(set(table), _POLICY_KEYS, where)
        table_grid = {**dict(table.get("params", {})), **dict(grid or {})}
        names = list(table_grid)
        values = [v if isinstance(v, list) else [v] for v in table_grid.values()]
        swept.extend(n for n, v in zip(names, values, strict=True) if len(v) > 1 and n not in swept)
        for combo in itertools.product(*values):
            params = dict(zip(names, combo, strict=True))
            policy_params, hold = _split_hold(params)
            parse_params(str(table["name"]), policy_params)
            _hold_spec({}, hold, where)
            runs.extend(
                RunSpec(file, str(table["name"]), params, seed) for file in files for seed in seeds
            )
    return SweepSpec(tuple(runs), workers, tuple(swept))


_HOLD = "hold."


def _split_hold(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The policy's parameters, and the ``hold.*`` keys (the scenario's ``[hold]``)."""
    policy = {k: v for k, v in params.items() if not k.startswith(_HOLD)}
    hold = {k[len(_HOLD) :]: v for k, v in params.items() if k.startswith(_HOLD)}
    return policy, hold


def _hold_spec(base: Mapping[str, Any], hold: Mapping[str, Any], where: str) -> HoldSpec:
    try:
        return HoldSpec.model_validate({**base, **hold})
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise InputError(
            f"{where}: hold.{key}: {first['msg']}; the hold.* parameters are the scenario's "
            "[hold] keys (docs/formats.md)"
        ) from exc


def _run_one(
    spec: RunSpec, out_dir: Path | None, limits: PlanLimits | None = None
) -> dict[str, Any]:
    scenario = load_scenario(spec.scenario)
    simulation = scenario.simulation.model_copy(update={"seed": spec.seed})
    scenario = scenario.model_copy(update={"simulation": simulation})
    policy_params, hold = _split_hold(spec.params)
    if hold:
        rule = _hold_spec(scenario.hold.model_dump(), hold, str(spec.scenario))
        scenario = scenario.model_copy(update={"hold": rule})
    experiment = build_experiment(scenario)
    experiment = replace(
        experiment, policy=spec.policy, policy_params=policy_params, plan_limits=limits
    )
    summary = run_experiment(experiment, out_dir, report=False)
    return {
        "scenario": spec.scenario.name,
        "policy": spec.policy,
        "params": spec.label(),
        **{f"param_{k}": v for k, v in spec.params.items()},
        "seed": spec.seed,
        **{k: summary.get(k) for k in _METRICS},
    }


#: seconds between a sweep worker's looks at whether the sweep's process is still there
PARENT_CHECK_S = 1.0


def exit_with_parent(parent_pid: int) -> None:
    """A sweep worker's initializer: end the worker once the process that started it is gone.

    A sweep killed outright (SIGKILL, the OOM killer, a test's time limit) cannot shut its
    pool down, and its workers would finish their runs and then wait for work for good
    (seen: two workers of a killed ``carbonshift sweep`` still there 87 minutes later). A
    daemon thread looks every :data:`PARENT_CHECK_S` seconds and exits the worker at once
    when its parent is no longer ``parent_pid``."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_CHECK_S)
        os._exit(3)

    threading.Thread(target=watch, name="carbonshift-sweep-parent", daemon=True).start()


def run_sweep(
    spec: SweepSpec,
    out_dir: Path,
    *,
    step: Callable[[int, int, str], None] | None = None,
    keep_runs: bool = False,
    dask_address: str | None = None,
    limits: PlanLimits | None = None,
) -> list[dict[str, Any]]:
    """Run every run of ``spec`` in ``spec.workers`` processes (or on the Dask cluster at
    ``dask_address``, the ``dask`` extra); write the tables and plot. ``limits``: the
    solve-size limits of every round (:mod:`carbonshift.planning.limits`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    total = len(spec.runs)

    def run_dir(i: int) -> Path | None:
        return out_dir / "runs" / f"{i:04d}" if keep_runs else None

    if dask_address is not None:
        rows.extend(_run_on_dask(spec, dask_address, run_dir, step, limits))
    elif spec.workers == 1:
        for i, run in enumerate(spec.runs):
            if step:
                step(i, total, run.label())
            rows.append(_run_one(run, run_dir(i), limits))
    else:
        with ProcessPoolExecutor(
            max_workers=spec.workers, initializer=exit_with_parent, initargs=(os.getpid(),)
        ) as pool:
            futures = {
                pool.submit(_run_one, run, run_dir(i), limits): run
                for i, run in enumerate(spec.runs)
            }
            for done, future in enumerate(as_completed(futures)):
                if step:
                    step(done, total, futures[future].label())
                rows.append(future.result())
    if step:
        step(total, total, "done")
    order = {run.label() + str(run.seed) + run.scenario.name: i for i, run in enumerate(spec.runs)}
    rows.sort(key=lambda r: order.get(r["params"] + str(r["seed"]) + r["scenario"], 0))
    _write_csv(out_dir / "sweep.csv", rows)
    summary = summarize_sweep(rows)
    _write_csv(out_dir / "sweep_summary.csv", summary)
    plot_sweep(summary, spec.swept, out_dir / "sweep.png")
    return summary


def _run_on_dask(
    spec: SweepSpec,
    address: str,
    run_dir: Callable[[int], Path | None],
    step: Callable[[int, int, str], None] | None,
    limits: PlanLimits | None = None,
) -> list[dict[str, Any]]:
    """Submit every run to the Dask scheduler at ``address`` (``pip install carbonshift[dask]``).

    Workers need carbonshift installed and the scenario files at the same paths.
    """
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError as exc:
        raise InputError(
            "--dask needs the dask extra; install it with: pip install 'carbonshift[dask]'"
        ) from exc
    try:
        client = Client(address, timeout=10)  # type: ignore[no-untyped-call]
    except OSError as exc:
        raise InputError(
            f"cannot reach the Dask scheduler at {address!r} ({exc}); check the address, "
            "like tcp://127.0.0.1:8786"
        ) from exc
    rows: list[dict[str, Any]] = []
    try:
        futures = {
            client.submit(_run_one, run, run_dir(i), limits, pure=False): run
            for i, run in enumerate(spec.runs)
        }
        for done, future in enumerate(dask_completed(list(futures))):  # type: ignore[no-untyped-call]
            if step:
                step(done, len(spec.runs), futures[future].label())
            rows.append(future.result())
    finally:
        client.close()  # type: ignore[no-untyped-call]
    return rows


@dataclass(frozen=True, slots=True)
class SeedStats:
    """A metric over seeds: mean, sample standard deviation and the 95 % interval of the mean.

    ``std`` and the interval are None with fewer than two values (undefined, not zero).
    """

    n: int
    mean: float | None
    std: float | None
    ci95_lo: float | None
    ci95_hi: float | None


def seed_stats(values: Sequence[float]) -> SeedStats:
    """Mean, sample std (n - 1) and mean +/- t(0.975, n - 1) std / sqrt(n) of ``values``.

    >>> s = seed_stats([1.0, 2.0, 3.0, 4.0])
    >>> round(s.mean, 3), round(s.std, 3), round(s.ci95_lo, 3), round(s.ci95_hi, 3)
    (2.5, 1.291, 0.446, 4.554)
    """
    n = len(values)
    if n == 0:
        return SeedStats(0, None, None, None, None)
    mean = statistics.fmean(values)
    if n == 1:
        return SeedStats(1, mean, None, None, None)
    from scipy import stats as scipy_stats  # on use: keeps the CLI's start-up light

    std = statistics.stdev(values)
    half = float(scipy_stats.t.ppf(0.975, n - 1)) * std / math.sqrt(n)
    return SeedStats(n, mean, std, mean - half, mean + half)


def summarize_sweep(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per scenario, policy and parameter set: the number of seeds and, per metric, the
    seed mean, standard deviation and 95 % interval (see :func:`seed_stats`)."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["scenario"], row["params"]), []).append(row)
    out = []
    for (scenario, label), members in groups.items():
        first = members[0]
        entry: dict[str, Any] = {
            "scenario": scenario,
            "policy": first["policy"],
            "params": label,
            **{k: v for k, v in first.items() if k.startswith("param_")},
            "seeds": len(members),
        }
        for metric in _METRICS:
            values = [float(m[metric]) for m in members if m.get(metric) is not None]
            summary = seed_stats(values)
            entry[metric] = summary.mean
            entry[f"{metric}_mean"] = summary.mean
            entry[f"{metric}_std"] = summary.std
            entry[f"{metric}_ci95_lo"] = summary.ci95_lo
            entry[f"{metric}_ci95_hi"] = summary.ci95_hi
        out.append(entry)
    return out


def _write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if row.get(k) is None else row[k] for k in columns})


def _error(row: Mapping[str, Any], metric: str) -> tuple[float, float]:
    """(below, above) the mean: the 95 % interval's arms, 0 where it is undefined."""
    mean, lo, hi = (row.get(f"{metric}{k}") for k in ("_mean", "_ci95_lo", "_ci95_hi"))
    if mean is None or lo is None or hi is None:
        return 0.0, 0.0
    return float(mean) - float(lo), float(hi) - float(mean)


def plot_sweep(summary: Sequence[Mapping[str, Any]], swept: Sequence[str], path: Path) -> Path:
    """Saving and deadlines met per policy, against the first swept parameter (or per run),
    with the seeds' 95 % intervals as error bars (bands for unswept reference lines)."""
    plt = pyplot(needed_for="the sweep's figure")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    key = f"param_{swept[0]}" if swept else None
    metrics = ((left, "carbon_saving_pct"), (right, "deadline_met_pct"))
    for i, policy in enumerate(dict.fromkeys(r["policy"] for r in summary)):
        mine = [r for r in summary if r["policy"] == policy]
        color = f"C{i}"
        if key and all(key in r for r in mine):
            mine = sorted(mine, key=lambda r: float(r[key]))
            xs = [float(r[key]) for r in mine]
            for ax, metric in metrics:
                ys = [r[metric] if r[metric] is not None else math.nan for r in mine]
                arms = [_error(r, metric) for r in mine]
                yerr = [[a for a, _ in arms], [b for _, b in arms]]
                ax.errorbar(xs, ys, yerr=yerr, fmt="o-", color=color, capsize=3, label=policy)
            continue
        for row in mine:  # not swept: a reference line per parameter set, its interval a band
            for ax, metric in metrics:
                if row[metric] is not None:
                    ax.axhline(row[metric], color=color, ls="--", label=row["params"])
                    below, above = _error(row, metric)
                    if below or above:
                        low, high = row[metric] - below, row[metric] + above
                        ax.axhspan(low, high, color=color, alpha=0.15)
    for ax, title in ((left, "carbon saving vs baseline (%)"), (right, "deadlines met (%)")):
        ax.set_title(title + ", 95 % CI over seeds")
        ax.set_xlabel(swept[0] if swept else "run")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
