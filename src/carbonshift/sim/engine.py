"""The discrete-time online simulator (docs/formats.md (scenario) time rules).

Jobs arrive over time. Every ``replan_every_slots`` slots the policy receives a snapshot: the
pending jobs as a planning :class:`~carbonshift.domain.Instance` whose slot 0 is now (release
0, runtime and deadline in slots from now), the capacity held by running and committed work
as :class:`~carbonshift.planning.types.PlanContext` ``held_units``, and the carbon forecast
issued at this moment. Assignments that start before the next round are committed at their
slot boundary; the rest wait and are planned again. Execution lasts the job's exact length;
emissions integrate the ACTUAL signal at its native resolution over ``[start_h, end_h)``.

The engine knows nothing of files or policy names: :mod:`carbonshift.sim.run` wires a
scenario to it. The same policy functions run here and in the controller.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt

from carbonshift.carbon.series import CarbonSeries
from carbonshift.carbon.signal import integral_g_h_per_kwh, integrals_g_h_per_kwh
from carbonshift.domain import Cluster, ClusterName, Instance, JobId, operational_g, run_grams
from carbonshift.domain import slots as slot_rules
from carbonshift.errors import InputError
from carbonshift.planning.hold import HoldRule, plan_moves
from carbonshift.planning.snapshot import HeldWork, PendingWork, build_snapshot
from carbonshift.planning.types import PlanContext, PolicyResult
from carbonshift.workloads.model import Workload

__all__ = [
    "DemandFn",
    "ForecastFn",
    "JobRecord",
    "PlanFn",
    "ReplanCounts",
    "RunResult",
    "SimCluster",
    "SimConfig",
    "SlotRecord",
    "run_simulation",
]

_LOG = logging.getLogger("carbonshift.sim")
_EPS = 1e-9

FloatArray = npt.NDArray[np.float64]

#: A policy bound to its parameters: snapshot instance and context in, result out.
PlanFn = Callable[[Instance, PlanContext], PolicyResult]
#: Forecast for one cluster: (cluster index, issue time, horizon slots) -> g/kWh per slot.
ForecastFn = Callable[[int, datetime, int], FloatArray]
#: Future demand for CJPS: (hours since start, horizon slots) -> units of the first resource
#: arriving in each slot (docs/formats.md ``future_demand``).
DemandFn = Callable[[float, int], FloatArray]
#: Progress callback: (hours simulated, hours expected).
ProgressFn = Callable[[float, float], None]


@dataclass(frozen=True, slots=True)
class SimCluster:
    """A simulated cluster: static capacity, power model, and its ACTUAL carbon series."""

    name: str
    capacity: Mapping[str, float]
    watts_per_unit: Mapping[str, float]
    actual: CarbonSeries
    pue: float = 1.0
    embodied_g_per_unit_hour: Mapping[str, float] = field(default_factory=dict)
    idle_watts: float = 0.0
    zone: str | None = None


@dataclass(frozen=True, slots=True)
class SimConfig:
    """Time settings of one run (docs/formats.md (scenario) ``[simulation]``)."""

    start: datetime
    hours: float
    max_drain_hours: float = 168.0
    slot_minutes: int = 60
    horizon_slots: int = 24
    replan_every_slots: int = 1
    interruptible: bool = False
    interrupt_overhead_minutes: float = 0.0
    hold: HoldRule | None = None
    """Hold only when it pays (scenario ``[hold]``); None: the policy's online hold rule
    (:func:`carbonshift.planning.registry.online_hold`, which
    :func:`carbonshift.sim.experiment.simulate_policy` fills in; :func:`run_simulation`
    alone: no rule)."""

    def __post_init__(self) -> None:
        if self.hours <= 0:
            raise InputError(f"hours is {self.hours}; the arrival span must be > 0 hours")
        if self.max_drain_hours < 0:
            raise InputError(f"max_drain_hours is {self.max_drain_hours}; it must be >= 0 hours")
        if self.interrupt_overhead_minutes < 0:
            raise InputError(
                f"interrupt_overhead_minutes is {self.interrupt_overhead_minutes}; it must be "
                ">= 0 minutes"
            )
        if self.slot_minutes < 1 or self.horizon_slots < 1 or self.replan_every_slots < 1:
            raise InputError(
                "slot_minutes, horizon_slots and replan_every_slots must be whole numbers >= 1; "
                f"got {self.slot_minutes}, {self.horizon_slots}, {self.replan_every_slots}"
            )

    @property
    def slot_h(self) -> float:
        """Slot length in hours."""
        return self.slot_minutes / 60.0


@dataclass(slots=True)
class JobRecord:
    """One row of ``jobs.csv`` (hours since the simulation start)."""

    job: str
    state: str
    submit_h: float
    deadline_h: float
    runtime_h: float
    demand: Mapping[str, float]
    cluster: str | None = None
    start_h: float | None = None
    end_h: float | None = None
    carbon_g: float = 0.0
    critical: bool = False

    @property
    def met_deadline(self) -> bool:
        """Completed by its deadline (``end_h <= deadline_h``)."""
        return (
            self.state == "completed"
            and self.end_h is not None
            and (self.end_h <= self.deadline_h + _EPS)
        )


@dataclass(frozen=True, slots=True)
class SlotRecord:
    """One slot of one cluster: units allocated per resource, intensity and emissions."""

    slot: int
    start_h: float
    cluster: str
    allocated: Mapping[str, float]
    ci_g_per_kwh: float
    forecast_ci_g_per_kwh: float
    carbon_g: float


@dataclass(frozen=True, slots=True)
class ReplanCounts:
    """How often re-plans moved a planned start (flapping), over one run.

    A move is a round whose plan (after the hold rules) gives a pending job another
    (cluster, start) than the round before; a return is a move back to a (cluster, start
    hour) the job had been planned at before. ``gains_g``: what each move saves by its
    round's forecast (negative: the move costs that job grams, e.g. to make room)."""

    jobs_moved: int = 0
    moves: int = 0
    jobs_returned: int = 0
    returns: int = 0
    gains_g: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class RunResult:
    """Everything one simulated run produced."""

    jobs: tuple[JobRecord, ...]
    slots: tuple[SlotRecord, ...]
    planner_seconds: tuple[float, ...]
    end_h: float
    idle_carbon_g: float
    rounds: int
    replans: ReplanCounts = field(default_factory=ReplanCounts)


@dataclass(slots=True)
class _Live:
    """A job the engine has seen: pending, committed (start in the future), running or done."""

    index: int
    record: JobRecord
    runtime_slots: int
    remaining_h: float
    pieces: list[JobRecord] = field(default_factory=list)
    planned: tuple[str, float] | None = None  # (cluster, start_h) of the last round's plan
    plans_seen: set[tuple[str, float]] = field(default_factory=set)  # every (cluster, start_h)
    moves: int = 0
    returns: int = 0

    def rows(self) -> list[JobRecord]:
        """Suspended pieces first, then the current record."""
        return [*self.pieces, self.record]


def run_simulation(
    config: SimConfig,
    clusters: Sequence[SimCluster],
    workload: Workload,
    plan: PlanFn,
    forecast: ForecastFn,
    *,
    progress: ProgressFn | None = None,
    future_demand: DemandFn | None = None,
) -> RunResult:
    """Simulate ``workload`` on ``clusters`` under the policy ``plan``; see the module doc.

    ``future_demand``, when given, fills the snapshot's ``future_demand`` of the first
    resource each round (a forecast of what will arrive; CJPS reserves room for it).
    """
    if not clusters:
        raise InputError("a simulation needs at least one cluster")
    resources = workload.resources
    slot_h = config.slot_h
    period = config.replan_every_slots
    domain_clusters = [_domain_cluster(c) for c in clusters]
    caps = np.array(
        [[c.capacity.get(r, 0.0) for r in resources] for c in clusters], dtype=np.float64
    )
    records, live = _arrivals(workload, caps, config.slot_minutes)
    order = np.argsort(workload.submit_h, kind="stable")
    next_arrival = 0
    pending: list[_Live] = []
    active: list[_Live] = []  # committed or running: holds capacity until end_h
    planner_seconds: list[float] = []
    gains_g: list[float] = []  # what each re-plan move saves by its round's forecast
    usage: dict[int, FloatArray] = {}  # slot -> (clusters, resources) units allocated
    forecasts: dict[int, FloatArray] = {}  # slot -> per-cluster forecast at plan time
    stop_h = config.hours + config.max_drain_hours
    now_slot = 0
    rounds = 0
    while True:
        now_h = now_slot * slot_h
        while next_arrival < len(order) and workload.submit_h[order[next_arrival]] <= now_h + _EPS:
            item = live[int(order[next_arrival])]
            next_arrival += 1
            if item is not None:
                pending.append(item)
        active = [a for a in active if (a.record.end_h or 0.0) > now_h + _EPS]
        arrivals_done = next_arrival >= len(order) and now_h >= config.hours - _EPS
        if arrivals_done and not pending and not active:
            break
        if now_h >= stop_h - _EPS:
            break
        if progress is not None:
            progress(now_h, config.hours)
        if pending or (config.interruptible and any(_is_movable(config, a, now_h) for a in active)):
            rounds += 1
            pending = _plan_round(
                config,
                clusters,
                domain_clusters,
                resources,
                caps,
                now_slot,
                pending,
                active,
                plan,
                forecast,
                planner_seconds,
                forecasts,
                future_demand,
                gains_g,
            )
        now_slot += period
    capped = bool(pending or active)
    finished = [r.end_h for r in records if r.end_h is not None]
    end_h = stop_h if capped else max([now_slot * slot_h if not finished else 0.0, *finished])
    for item in active:
        rec = item.record
        assert rec.start_h is not None
        assert rec.end_h is not None
        if rec.start_h >= end_h - _EPS:
            rec.state, rec.cluster, rec.start_h, rec.end_h = "waiting", None, None, None
        elif rec.end_h > end_h + _EPS:
            rec.state, rec.end_h = "running", end_h
    for item in pending:
        item.record.state = "waiting"
    records = [row for i, rec in enumerate(records) for row in _rows_of(rec, live[i])]
    by_name = {c.name: i for i, c in enumerate(clusters)}
    for rec in records:
        if rec.cluster is not None and rec.start_h is not None and rec.end_h is not None:
            rec.carbon_g = _job_carbon_g(config, clusters[by_name[rec.cluster]], rec)
            _add_usage(usage, len(clusters), by_name[rec.cluster], rec, resources, slot_h)
    slot_rows, idle_g = _slot_records(config, clusters, resources, usage, forecasts, end_h)
    return RunResult(
        jobs=tuple(records),
        slots=slot_rows,
        planner_seconds=tuple(planner_seconds),
        end_h=end_h,
        idle_carbon_g=idle_g,
        rounds=rounds,
        replans=ReplanCounts(
            jobs_moved=sum(1 for item in live if item is not None and item.moves),
            moves=sum(item.moves for item in live if item is not None),
            jobs_returned=sum(1 for item in live if item is not None and item.returns),
            returns=sum(item.returns for item in live if item is not None),
            gains_g=tuple(gains_g),
        ),
    )


def _rows_of(record: JobRecord, item: _Live | None) -> list[JobRecord]:
    return [record] if item is None else item.rows()


def _domain_cluster(cluster: SimCluster) -> Cluster:
    return Cluster(
        name=ClusterName(cluster.name),
        capacity=dict(cluster.capacity),
        watts_per_unit=dict(cluster.watts_per_unit),
        pue=cluster.pue,
        embodied_g_per_unit_hour=dict(cluster.embodied_g_per_unit_hour),
        zone=cluster.zone,
    )


def _arrivals(
    workload: Workload, caps: FloatArray, slot_minutes: int
) -> tuple[list[JobRecord], list[_Live | None]]:
    """A record per arrived job; jobs no cluster can ever hold are rejected up front."""
    records: list[JobRecord] = []
    live: list[_Live | None] = []
    demand = np.stack([workload.demand[r] for r in workload.resources], axis=1)
    fits_somewhere = np.any(np.all(demand[:, None, :] <= caps[None, :, :] + _EPS, axis=2), axis=1)
    for i, job_id in enumerate(workload.ids):
        deadline = float(workload.deadline_h[i])
        rec = JobRecord(
            job=job_id,
            state="waiting",
            submit_h=float(workload.submit_h[i]),
            deadline_h=deadline if math.isfinite(deadline) else math.inf,
            runtime_h=float(workload.runtime_h[i]),
            demand={r: float(workload.demand[r][i]) for r in workload.resources},
            critical=bool(workload.critical[i]),
        )
        records.append(rec)
        if not fits_somewhere[i]:
            rec.state = "rejected"
            _LOG.info("job %s rejected: its demand fits no cluster", job_id)
            live.append(None)
            continue
        runtime_slots = slot_rules.runtime_slots(rec.runtime_h, slot_minutes)
        live.append(_Live(i, rec, runtime_slots, rec.runtime_h))
    return records, live


def _plan_round(
    config: SimConfig,
    clusters: Sequence[SimCluster],
    domain_clusters: Sequence[Cluster],
    resources: tuple[str, ...],
    caps: FloatArray,
    now_slot: int,
    pending: list[_Live],
    active: list[_Live],
    plan: PlanFn,
    forecast: ForecastFn,
    planner_seconds: list[float],
    forecasts: dict[int, FloatArray],
    future_demand: DemandFn | None = None,
    gains_g: list[float] | None = None,
) -> list[_Live]:
    """One planning round: snapshot, plan, commit what starts before the next round;
    ``gains_g`` gets what each move of a planned start is worth (:class:`ReplanCounts`)."""
    slot_h = config.slot_h
    now_h = now_slot * slot_h
    movable = [a for a in active if _is_movable(config, a, now_h)]
    for item in movable:  # re-planned with what is left of their work
        assert item.record.end_h is not None
        item.runtime_slots = slot_rules.runtime_slots(
            item.record.end_h - now_h, config.slot_minutes
        )
    planned = movable + pending  # running work first: FIFO policies keep it running
    horizon = slot_rules.horizon_slots(config.horizon_slots, max(p.runtime_slots for p in planned))
    index = {c.name: i for i, c in enumerate(clusters)}
    issued_at = config.start + timedelta(hours=now_h)
    carbon: dict[str, FloatArray] = {}
    for ci, cluster in enumerate(clusters):
        values = np.maximum(np.asarray(forecast(ci, issued_at, horizon), dtype=np.float64), 0.0)
        carbon[cluster.name] = values
        for s in range(min(config.replan_every_slots, horizon)):
            forecasts.setdefault(now_slot + s, np.full(len(clusters), np.nan))[ci] = values[s]
    snapshot = build_snapshot(
        now_h=now_h,
        slot_minutes=config.slot_minutes,
        resources=resources,
        clusters=domain_clusters,
        forecast_g_per_kwh=carbon,
        pending=[_pending_work(p, now_h, moving=p in movable) for p in planned],
        running=[_held_work(a) for a in active if a not in movable],
        future_demand=None if future_demand is None else future_demand(now_h, horizon),
    )
    instance, context = snapshot.instance, snapshot.context()
    assert context.held_units is not None
    held = context.held_units.copy()  # what the commits below add to
    started = time.perf_counter()
    result = plan(instance, context)
    held_plan = snapshot.hold(
        result.plan, config.hold or HoldRule(), reserved_units=result.reserved_units
    )
    if held_plan.reasons:
        result = replace(result, plan=held_plan.plan, notes={**result.notes, **held_plan.reasons})
    planner_seconds.append(time.perf_counter() - started)
    moves = plan_moves(instance, context, result.plan, snapshot.previous)
    if gains_g is not None:
        gains_g.extend(m.gain_g for m in moves)
    moved = {str(m.job) for m in moves}
    starts = {a.job: a for a in result.plan.assignments}
    for item in movable:
        keep = starts.get(JobId(item.record.job))
        if keep is not None and keep.start_slot == 0 and keep.cluster == item.record.cluster:
            _hold(held, index, item.record, resources, now_h, config.slot_minutes)  # runs on
            continue
        _suspend(config, item, now_h, active, pending)
    by_id = {p.record.job: p for p in pending}
    committed: set[str] = set()
    for assignment in sorted(result.plan.assignments, key=lambda a: a.start_slot):
        if assignment.start_slot >= config.replan_every_slots or assignment.start_slot < 0:
            continue
        chosen = by_id.get(assignment.job)
        if chosen is None or assignment.cluster not in index:
            continue
        item = chosen
        ci = index[assignment.cluster]
        start_h = now_h + assignment.start_slot * slot_h
        if not _fits(held, caps, ci, item, resources, assignment.start_slot, slot_h):
            _LOG.warning(
                "policy %s over-allocated cluster %s at %.2f h; job %s waits for the next round",
                result.plan.policy,
                assignment.cluster,
                start_h,
                item.record.job,
            )
            continue
        rec = item.record
        rec.state, rec.cluster = "completed", assignment.cluster
        rec.start_h, rec.end_h = start_h, start_h + item.remaining_h
        _hold(held, index, rec, resources, now_h, config.slot_minutes)
        committed.add(rec.job)
        active.append(item)
    for p in pending:  # what the hold rule's hysteresis compares the next round with
        later = starts.get(JobId(p.record.job))
        this_plan = (
            None if later is None else (str(later.cluster), now_h + later.start_slot * slot_h)
        )
        if this_plan is not None and p.record.job in moved:
            p.moves += 1
            p.returns += this_plan in p.plans_seen
        if this_plan is not None:
            p.plans_seen.add(this_plan)
        p.planned = this_plan
    return [p for p in pending if p.record.job not in committed]


def _pending_work(item: _Live, now_h: float, *, moving: bool) -> PendingWork:
    """The seam's view of a pending (or running, interruptible) job."""
    rec = item.record
    assert not moving or rec.end_h is not None
    return PendingWork(
        id=rec.job,
        demand=dict(rec.demand),
        runtime_h=(rec.end_h or 0.0) - now_h if moving else item.remaining_h,
        deadline_h=rec.deadline_h,
        submit_h=rec.submit_h,
        critical=rec.critical,
        running=moving,
        planned_cluster=None if moving or item.planned is None else item.planned[0],
        planned_start_h=None if moving or item.planned is None else item.planned[1],
        # a running job either runs on where it is or is suspended (moves come later)
        allowed_clusters=(frozenset({rec.cluster}) if moving and rec.cluster is not None else None),
    )


def _held_work(item: _Live) -> HeldWork:
    """The seam's view of committed or running work: it holds capacity until it ends."""
    rec = item.record
    assert rec.cluster is not None
    return HeldWork(rec.job, rec.cluster, rec.demand, end_h=rec.end_h, start_h=rec.start_h)


def _is_movable(config: SimConfig, item: _Live, now_h: float) -> bool:
    """Interruptible mode: a running, not critical job may be suspended or moved."""
    rec = item.record
    return (
        config.interruptible
        and not rec.critical
        and rec.start_h is not None
        and rec.end_h is not None
        and rec.start_h < now_h - _EPS
        and rec.end_h > now_h + _EPS
    )


def _suspend(
    config: SimConfig, item: _Live, now_h: float, active: list[_Live], pending: list[_Live]
) -> None:
    """End the running piece at ``now_h``; the rest (plus the restart overhead) waits."""
    rec = item.record
    assert rec.end_h is not None
    left_h = rec.end_h - now_h
    rec.state, rec.end_h = "suspended", now_h
    item.pieces.append(rec)
    item.record = replace(rec, state="waiting", cluster=None, start_h=None, end_h=None)
    item.remaining_h = left_h + config.interrupt_overhead_minutes / 60.0
    item.runtime_slots = slot_rules.runtime_slots(item.remaining_h, config.slot_minutes)
    active.remove(item)
    pending.append(item)


def _occupied_slots(rec: JobRecord, now_h: float, slot_minutes: int, horizon: int) -> range:
    assert rec.start_h is not None
    assert rec.end_h is not None
    first = slot_rules.start_slot_of(rec.start_h, slot_minutes, now_h)
    last = slot_rules.end_slot(rec.end_h, slot_minutes, now_h)  # exclusive
    return range(first, min(max(last, first), horizon))


def _hold(
    held: FloatArray,
    index: Mapping[str, int],
    rec: JobRecord,
    resources: tuple[str, ...],
    now_h: float,
    slot_minutes: int,
) -> None:
    assert rec.cluster is not None
    slots = _occupied_slots(rec, now_h, slot_minutes, held.shape[2])
    if len(slots) == 0:
        return
    for ri, resource in enumerate(resources):
        held[index[rec.cluster], ri, slots.start : slots.stop] += rec.demand.get(resource, 0.0)


def _fits(
    held: FloatArray,
    caps: FloatArray,
    ci: int,
    item: _Live,
    resources: tuple[str, ...],
    start_slot: int,
    slot_h: float,
) -> bool:
    stop = min(start_slot + item.runtime_slots, held.shape[2])
    demand = np.array([item.record.demand.get(r, 0.0) for r in resources])
    window = held[ci, :, start_slot:stop] + demand[:, None]
    return bool(np.all(window <= caps[ci][:, None] + 1e-6))


def _job_carbon_g(config: SimConfig, cluster: SimCluster, rec: JobRecord) -> float:
    """docs/formats.md ``carbon_g`` of one row: operational over the actual signal + embodied."""
    assert rec.start_h is not None
    assert rec.end_h is not None
    start = config.start + timedelta(hours=rec.start_h)
    end = config.start + timedelta(hours=rec.end_h)
    ci_integral = integral_g_h_per_kwh(cluster.actual, start, end)
    return run_grams(rec.demand, cluster, ci_integral, rec.end_h - rec.start_h)


def _add_usage(
    usage: dict[int, FloatArray],
    n_clusters: int,
    ci: int,
    rec: JobRecord,
    resources: tuple[str, ...],
    slot_h: float,
) -> None:
    assert rec.start_h is not None
    assert rec.end_h is not None
    first = math.floor(rec.start_h / slot_h + _EPS)
    last = math.ceil(rec.end_h / slot_h - _EPS)
    for slot in range(first, max(last, first + 1)):
        lo = max(rec.start_h, slot * slot_h)
        hi = min(rec.end_h, (slot + 1) * slot_h)
        share = max(0.0, hi - lo) / slot_h
        if share <= 0:
            continue
        row = usage.get(slot)
        if row is None:
            row = usage[slot] = np.zeros((n_clusters, len(resources)))
        for ri, resource in enumerate(resources):
            row[ci, ri] += rec.demand.get(resource, 0.0) * share


def _slot_records(
    config: SimConfig,
    clusters: Sequence[SimCluster],
    resources: tuple[str, ...],
    usage: Mapping[int, FloatArray],
    forecasts: Mapping[int, FloatArray],
    end_h: float,
) -> tuple[tuple[SlotRecord, ...], float]:
    """Per-slot rows (time-averaged units in use, actual and forecast intensity, grams)."""
    slot_h = config.slot_h
    n_slots = max(1, math.ceil(end_h / slot_h - _EPS))
    starts_h = np.arange(n_slots) * slot_h
    integrals = [
        integrals_g_h_per_kwh(c.actual, config.start, starts_h, starts_h + slot_h) for c in clusters
    ]
    rows: list[SlotRecord] = []
    idle_g = 0.0
    for slot in range(n_slots):
        for ci, cluster in enumerate(clusters):
            integral = float(integrals[ci][slot])
            used = usage.get(slot)
            allocated = {
                r: float(used[ci, ri]) if used is not None else 0.0
                for ri, r in enumerate(resources)
            }
            grams = run_grams(allocated, cluster, integral, slot_h)
            idle_g += operational_g({}, cluster, integral, power_w=cluster.idle_watts)
            fc = forecasts.get(slot)
            rows.append(
                SlotRecord(
                    slot=slot,
                    start_h=slot * slot_h,
                    cluster=cluster.name,
                    allocated=allocated,
                    ci_g_per_kwh=integral / slot_h,
                    forecast_ci_g_per_kwh=float(fc[ci]) if fc is not None else math.nan,
                    carbon_g=grams,
                )
            )
    return tuple(rows), idle_g
