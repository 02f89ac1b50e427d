"""Synthetic workload families of the seed papers, seeded with a numpy ``Generator``.

- :func:`caspian`: Bahreini, Tantawi, Tardieu, "Caspian" (seeds/000, section IV-A): a
  Poisson process of 200 jobs over 24 h, demand and run time independent U{1..5} (GPUs,
  hours), deadline ``d = submit + beta x runtime`` with ``beta ~ U(2, 4)``.
- :func:`cjps`: Bahreini, Tantawi, Youssef, CJPS dispatcher (seeds/001, section IV, small
  instances): demand and run time U{1..10} (cores, slots), deadline uniform in
  ``[runtime, horizon]`` slots.
- :func:`co2_scheduler`: Piontek, "CO2 aware job scheduling for data centers" (seeds/002,
  section 7.1, Algorithms 7.1 and 7.2): an hourly arrival / run time / size pattern analysed
  from a trace (:func:`analyse_pattern`) drives a regular job stream sized for a utilisation
  goal; a share of the jobs is marked not critical.

:data:`GENERATORS` maps each family's name to a :class:`GeneratorSpec` (its function, the
paper and every parameter with unit and default); :func:`generate` builds a workload by name
and refuses unknown names and parameters with a "did you mean" hint.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from carbonshift.errors import InputError
from carbonshift.workloads._parse import did_you_mean
from carbonshift.workloads.model import FloatArray, Workload
from carbonshift.workloads.readers import read_workload

__all__ = [
    "GENERATORS",
    "GeneratorSpec",
    "HourlyPattern",
    "analyse_pattern",
    "caspian",
    "cjps",
    "co2_scheduler",
    "generate",
]


def _need(condition: bool, message: str) -> None:
    if not condition:
        raise InputError(message)


def _int_range(name: str, lo: int, hi: int, unit: str) -> None:
    _need(
        1 <= lo <= hi,
        f"{name} range {lo}..{hi} {unit} is empty or below 1; give 1 <= min <= max",
    )


def caspian(
    *,
    n_jobs: int = 200,
    hours: float = 24.0,
    demand_min: int = 1,
    demand_max: int = 5,
    runtime_min_h: int = 1,
    runtime_max_h: int = 5,
    beta_min: float = 2.0,
    beta_max: float = 4.0,
    resource: str = "gpu",
    seed: int = 1,
) -> Workload:
    """Caspian's family (seeds/000, section IV-A, "Experimental setup").

    Exactly ``n_jobs`` arrivals of a Poisson process over ``[0, hours)``: given their count,
    the arrival times of a Poisson process are independent and uniform, so they are drawn
    uniform and sorted. Demand (units of ``resource``) and run time (whole hours) are
    independent integer uniforms on ``[min, max]``; ``deadline_h = submit_h + beta x
    runtime_h`` with ``beta`` continuous uniform on ``(beta_min, beta_max)``. No job is
    critical. (ALGORITHMS.md's static variant, release = floor(arrival), deadline = release +
    ceil(beta l), is what :func:`~carbonshift.workloads.to_planning_jobs` gives for
    arrivals on slot boundaries.)
    """
    _need(n_jobs >= 0, f"n_jobs is {n_jobs}; it must be a whole number >= 0")
    _need(hours > 0 and math.isfinite(hours), f"hours is {hours!r}; it must be a number > 0")
    _int_range("demand", demand_min, demand_max, "units")
    _int_range("runtime", runtime_min_h, runtime_max_h, "h")
    _need(
        0 < beta_min <= beta_max,
        f"beta range ({beta_min}, {beta_max}) is invalid; give 0 < beta_min <= beta_max",
    )
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0.0, hours, n_jobs))
    demand = rng.integers(demand_min, demand_max + 1, n_jobs).astype(np.float64)
    runtime = rng.integers(runtime_min_h, runtime_max_h + 1, n_jobs).astype(np.float64)
    beta = rng.uniform(beta_min, beta_max, n_jobs)
    return Workload.from_columns(
        ids=[f"caspian-{i}" for i in range(n_jobs)],
        submit_h=submit,
        runtime_h=runtime,
        demand={resource: demand},
        deadline_h=submit + beta * runtime,
        source=f"caspian(n_jobs={n_jobs}, hours={hours}, seed={seed})",
    )


def cjps(
    *,
    n_jobs: int = 10,
    horizon_slots: int = 50,
    slot_minutes: int = 30,
    demand_min: int = 1,
    demand_max: int = 10,
    runtime_min_slots: int = 1,
    runtime_max_slots: int = 10,
    arrival_slots: int = 0,
    resource: str = "cpu",
    seed: int = 1,
) -> Workload:
    """CJPS's random jobs (seeds/001, section IV, the small instances compared with CPLEX).

    Demand (units of ``resource``) and run time (slots of ``slot_minutes``) are independent
    integer uniforms on ``[min, max]`` (the paper: U[1 10]). Jobs arrive at slot 0 (the
    paper's static instances) or, with ``arrival_slots > 0``, at a slot boundary drawn
    uniformly from ``0 .. arrival_slots - 1``. The deadline, in whole slots, is uniform on
    ``[submit + runtime, max(submit + runtime, horizon_slots)]``: with all arrivals at 0, on
    ``[runtime, horizon]``. Times are returned in hours (slot index x slot length).
    """
    _need(n_jobs >= 0, f"n_jobs is {n_jobs}; it must be a whole number >= 0")
    _need(horizon_slots >= 1, f"horizon_slots is {horizon_slots}; it must be >= 1")
    _need(slot_minutes >= 1, f"slot_minutes is {slot_minutes}; it must be >= 1 minute")
    _need(arrival_slots >= 0, f"arrival_slots is {arrival_slots}; it must be >= 0")
    _int_range("demand", demand_min, demand_max, "units")
    _int_range("runtime", runtime_min_slots, runtime_max_slots, "slots")
    rng = np.random.default_rng(seed)
    slot_h = slot_minutes / 60.0
    demand = rng.integers(demand_min, demand_max + 1, n_jobs).astype(np.float64)
    runtime = rng.integers(runtime_min_slots, runtime_max_slots + 1, n_jobs)
    submit = (
        np.zeros(n_jobs, dtype=np.int64)
        if arrival_slots == 0
        else rng.integers(0, arrival_slots, n_jobs)
    )
    earliest = submit + runtime
    latest = np.maximum(earliest, horizon_slots)
    deadline = rng.integers(earliest, latest + 1)
    return Workload.from_columns(
        ids=[f"cjps-{i}" for i in range(n_jobs)],
        submit_h=submit * slot_h,
        runtime_h=runtime * slot_h,
        demand={resource: demand},
        deadline_h=deadline * slot_h,
        source=f"cjps(n_jobs={n_jobs}, horizon_slots={horizon_slots}, seed={seed})",
    )


@dataclass(frozen=True, slots=True)
class HourlyPattern:
    """Per hour of day (0-23): arrivals, mean run time and mean size, each normalised to mean 1.

    The output of Algorithm 7.1 of seeds/002: ``density[h]`` is the share of arrivals in hour
    ``h`` times 24; ``duration[h]`` and ``size[h]`` are the hour's mean run time and mean
    demand divided by their mean over the 24 hours. An hour without arrivals has density 0
    and takes the overall mean run time and size (factor near 1; it generates no jobs).
    """

    density: tuple[float, ...]
    duration: tuple[float, ...]
    size: tuple[float, ...]
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("density", "duration", "size"):
            values = getattr(self, name)
            _need(
                len(values) == 24 and all(math.isfinite(v) and v >= 0 for v in values),
                f"pattern {name} has {len(values)} values; it needs 24 finite values >= 0",
            )
        _need(sum(self.density) > 0, "pattern density is all 0; at least one hour needs jobs")

    @classmethod
    def flat(cls) -> HourlyPattern:
        """The same arrivals, run time and size in every hour."""
        ones = (1.0,) * 24
        return cls(ones, ones, ones, "flat")


def _hour_of_day(workload: Workload, tz: str) -> np.ndarray[Any, np.dtype[np.int64]]:
    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InputError(
            f"time zone {tz!r} is not known; give an IANA name like 'UTC' or 'Europe/Berlin'"
        ) from exc
    offset_h = 0.0
    if workload.start is not None:
        local: datetime = workload.start.astimezone(zone)
        offset_h = local.hour + local.minute / 60.0 + local.second / 3600.0
    return np.floor(workload.submit_h + offset_h).astype(np.int64) % 24


def analyse_pattern(
    workload: Workload, *, resource: str | None = None, tz: str = "UTC"
) -> HourlyPattern:
    """Algorithm 7.1 of seeds/002 (workload analysis), on any :class:`Workload`.

    Jobs are binned by the hour of day of their submission: the clock time of the workload's
    ``start`` in ``tz`` plus ``submit_h`` (the offset of ``start`` is applied to the whole
    trace, daylight-saving changes are ignored; a workload without ``start`` begins at
    midnight). ``resource`` (default: the first) is the size measured.
    """
    _need(len(workload) > 0, f"workload {workload.source!r} has no jobs to analyse")
    name = resource if resource is not None else workload.resources[0]
    if name not in workload.demand:
        raise InputError(
            f"resource {name!r} is not in the workload; {did_you_mean(name, workload.resources)}"
        )
    hour = _hour_of_day(workload, tz)
    count = np.bincount(hour, minlength=24).astype(np.float64)
    run_sum = np.bincount(hour, weights=workload.runtime_h, minlength=24)
    size_sum = np.bincount(hour, weights=workload.demand[name], minlength=24)
    present = count > 0
    mean_run = np.full(24, float(workload.runtime_h.mean()))
    mean_size = np.full(24, float(workload.demand[name].mean()))
    mean_run[present] = run_sum[present] / count[present]
    mean_size[present] = size_sum[present] / count[present]

    def normalised(values: FloatArray) -> tuple[float, ...]:
        return tuple(float(v) for v in values / values.sum() * 24.0)

    return HourlyPattern(
        density=normalised(count),
        duration=normalised(mean_run),
        size=normalised(mean_size),
        source=workload.source,
    )


def co2_scheduler(
    *,
    pattern: HourlyPattern | None = None,
    trace: str | None = None,
    trace_tz: str = "UTC",
    total_cores: float = 4.0,
    system_cores: float = 0.25,
    average_pod_count: float = 30.0,
    average_runtime_h: float = 11.0 / 60.0,
    utilization_goal: float = 0.5,
    not_critical_share: float = 0.2,
    hours: int = 24,
    start_hour: int = 0,
    arrivals: str = "regular",
    max_wait_h: float = 24.0,
    resource: str = "cpu",
    seed: int = 1,
) -> Workload:
    """Algorithm 7.2 of seeds/002 (workload generation) on an hourly pattern.

    The pattern is ``pattern``, else the one :func:`analyse_pattern` finds in ``trace`` (a
    CSV, SWF or GWF file, hours of day in ``trace_tz``), else flat. With ``cores_available =
    total_cores - system_cores``, the average job lasts ``average_runtime_h``, arrives every
    ``average_runtime_h / average_pod_count`` hours (so that ``average_pod_count`` jobs run
    at once) and holds ``(utilization_goal - system_cores / total_cores) x cores_available /
    average_pod_count`` cores. In hour ``h`` of day a job's size and run time are the average
    times ``size[h]`` and ``duration[h]``, and the gap between arrivals is the average gap
    divided by ``density[h]``: with ``arrivals="regular"`` (the thesis) jobs come at fixed
    gaps from the start of each hour, with ``"poisson"`` at exponential gaps of that mean.
    Sizes are rounded to millicores and run times to whole seconds (the thesis passed integer
    values to Kubernetes). The first of the ``hours`` generated hours is ``start_hour`` of day.
    As in the thesis, the jobs keep ``(utilization_goal - system share) x cores_available``
    cores busy on average, so with ``system_cores > 0`` the whole cluster's utilisation
    ``(busy + system_cores) / total_cores`` lands a little below the goal (the thesis: "the
    specified utilization goal will not be met exactly").

    ``not_critical_share`` of the jobs (rounded, chosen at random) are not critical: their
    deadline is ``submit + max_wait_h + runtime`` (the CO2 scheduler releases a job after
    24 h of waiting); critical jobs get ``submit + runtime`` (no slack).
    """
    _need(total_cores > 0, f"total_cores is {total_cores}; it must be > 0 cores")
    _need(
        0 <= system_cores < total_cores,
        f"system_cores is {system_cores}; it must be >= 0 and below total_cores {total_cores}",
    )
    _need(average_pod_count > 0, f"average_pod_count is {average_pod_count}; it must be > 0")
    _need(average_runtime_h > 0, f"average_runtime_h is {average_runtime_h} h; it must be > 0")
    _need(
        system_cores / total_cores < utilization_goal <= 1,
        f"utilization_goal is {utilization_goal}; it must lie in "
        f"({system_cores / total_cores:.3f}, 1] (above the system cores' share)",
    )
    _need(
        0 <= not_critical_share <= 1,
        f"not_critical_share is {not_critical_share}; it must be a fraction in [0, 1]",
    )
    _need(hours >= 1, f"hours is {hours}; it must be a whole number of hours >= 1")
    _need(0 <= start_hour <= 23, f"start_hour is {start_hour}; it must be an hour 0..23")
    _need(max_wait_h >= 0, f"max_wait_h is {max_wait_h} h; it must be >= 0")
    if arrivals not in ("regular", "poisson"):
        raise InputError(
            f"arrivals {arrivals!r} is not known; {did_you_mean(arrivals, ['regular', 'poisson'])}"
        )
    if pattern is None:
        pattern = (
            analyse_pattern(read_workload(trace), tz=trace_tz)
            if trace is not None
            else HourlyPattern.flat()
        )
    rng = np.random.default_rng(seed)
    avg_utilization = utilization_goal - system_cores / total_cores
    cores_available = total_cores - system_cores
    avg_interval_h = average_runtime_h / average_pod_count
    avg_cores = avg_utilization * cores_available / average_pod_count
    submit: list[float] = []
    size: list[float] = []
    runtime: list[float] = []
    for k in range(hours):
        hod = (start_hour + k) % 24
        density = pattern.density[hod]
        if density <= 0:
            continue
        gap = avg_interval_h / density
        if arrivals == "regular":  # fixed gaps from the start of the hour (by index: no drift)
            times = [k + i * gap for i in range(math.ceil(1.0 / gap - 1e-9))]
        else:
            times = []
            t = k + float(rng.exponential(gap))
            while t < k + 1:
                times.append(t)
                t += float(rng.exponential(gap))
        job_size = max(0.001, round(avg_cores * pattern.size[hod], 3))
        job_runtime_h = max(1.0, round(average_runtime_h * pattern.duration[hod] * 3600)) / 3600
        submit.extend(times)
        size.extend([job_size] * len(times))
        runtime.extend([job_runtime_h] * len(times))
    n = len(submit)
    critical = np.ones(n, dtype=bool)
    n_flexible = round(not_critical_share * n)
    critical[rng.choice(n, size=n_flexible, replace=False)] = False
    submit_arr = np.asarray(submit)
    runtime_arr = np.asarray(runtime)
    deadline = submit_arr + runtime_arr + np.where(critical, 0.0, max_wait_h)
    return Workload.from_columns(
        ids=[f"co2-{i}" for i in range(n)],
        submit_h=submit_arr,
        runtime_h=runtime_arr,
        demand={resource: size},
        deadline_h=deadline,
        critical=critical,
        source=f"co2_scheduler(pattern={pattern.source!r}, hours={hours}, seed={seed})",
    )


@dataclass(frozen=True, slots=True)
class GeneratorSpec:
    """A named family: its function, the paper it follows, and its parameters' meaning."""

    name: str
    build: Callable[..., Workload]
    paper: str
    params: Mapping[str, str]

    def defaults(self) -> dict[str, object]:
        """Each parameter's default value."""
        signature = inspect.signature(self.build)
        return {name: p.default for name, p in signature.parameters.items()}


GENERATORS: dict[str, GeneratorSpec] = {
    "caspian": GeneratorSpec(
        "caspian",
        caspian,
        "Bahreini, Tantawi, Tardieu: Caspian (seeds/000, section IV-A)",
        {
            "n_jobs": "number of jobs (default 200)",
            "hours": "arrival span in hours (default 24)",
            "demand_min": "smallest demand, units (default 1)",
            "demand_max": "largest demand, units (default 5)",
            "runtime_min_h": "shortest run time, whole hours (default 1)",
            "runtime_max_h": "longest run time, whole hours (default 5)",
            "beta_min": "smallest slowdown factor beta (default 2)",
            "beta_max": "largest slowdown factor beta (default 4)",
            "resource": "resource the demand is of (default 'gpu')",
            "seed": "random seed (default 1)",
        },
    ),
    "cjps": GeneratorSpec(
        "cjps",
        cjps,
        "Bahreini, Tantawi, Youssef: CJPS dispatcher (seeds/001, section IV)",
        {
            "n_jobs": "number of jobs (default 10)",
            "horizon_slots": "latest deadline, slots (default 50)",
            "slot_minutes": "slot length, minutes (default 30)",
            "demand_min": "smallest demand, units (default 1)",
            "demand_max": "largest demand, units (default 10)",
            "runtime_min_slots": "shortest run time, slots (default 1)",
            "runtime_max_slots": "longest run time, slots (default 10)",
            "arrival_slots": "arrivals spread over this many slots; 0 = all at 0 (default 0)",
            "resource": "resource the demand is of (default 'cpu')",
            "seed": "random seed (default 1)",
        },
    ),
    "co2": GeneratorSpec(
        "co2",
        co2_scheduler,
        "Piontek: CO2 aware job scheduling (seeds/002, section 7.1, Algorithms 7.1-7.2)",
        {
            "pattern": "an HourlyPattern (Python only; default: from trace, else flat)",
            "trace": "CSV/SWF/GWF file whose hourly pattern is rebuilt (default none)",
            "trace_tz": "time zone of the trace's hours of day (default 'UTC')",
            "total_cores": "cluster cores (default 4)",
            "system_cores": "cores reserved by the system (default 0.25)",
            "average_pod_count": "jobs running at once on average (default 30)",
            "average_runtime_h": "mean run time, hours (default 11/60)",
            "utilization_goal": "target mean utilisation, fraction (default 0.5)",
            "not_critical_share": "share of jobs that may wait, fraction (default 0.2)",
            "hours": "hours generated (default 24)",
            "start_hour": "hour of day of the first generated hour, 0-23 (default 0)",
            "arrivals": "'regular' (the thesis) or 'poisson' gaps (default 'regular')",
            "max_wait_h": "slack of a not-critical job, hours (default 24)",
            "resource": "resource the demand is of (default 'cpu')",
            "seed": "random seed (default 1)",
        },
    ),
}


def _coerce(family: str, name: str, value: object, default: object) -> object:
    where = f"generator {family!r} parameter {name!r}"
    if default is None or isinstance(value, HourlyPattern):
        return value
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        raise InputError(f"{where} is {value!r}; write true or false")
    if isinstance(default, int) and not isinstance(default, bool):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise InputError(f"{where} is {value!r}; it must be a whole number like {default}")
    if isinstance(default, float):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise InputError(f"{where} is {value!r}; it must be a number like {default}")
    if isinstance(default, str):
        if isinstance(value, str):
            return value
        raise InputError(f"{where} is {value!r}; it must be a string like {default!r}")
    return value


def generate(
    name: str, params: Mapping[str, object] | None = None, *, seed: int | None = None
) -> Workload:
    """Build the workload of family ``name`` with ``params`` (unknown names are refused).

    ``seed``, when given, overrides ``params["seed"]`` (a scenario's seed). A ``trace`` given
    as a :class:`~pathlib.Path` is accepted and passed on as a string.
    """
    spec = GENERATORS.get(name)
    if spec is None:
        raise InputError(f"generator {name!r} is not known; {did_you_mean(name, list(GENERATORS))}")
    defaults = spec.defaults()
    kwargs: dict[str, object] = {}
    for key, value in (params or {}).items():
        if key not in defaults:
            raise InputError(
                f"generator {name!r} has no parameter {key!r}; {did_you_mean(key, list(defaults))}"
            )
        if isinstance(value, Path):
            value = str(value)
        kwargs[key] = _coerce(name, key, value, defaults[key])
    if seed is not None:
        kwargs["seed"] = seed
    return spec.build(**kwargs)
