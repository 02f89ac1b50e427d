"""One planning call across every healthy spoke: where and when, chosen jointly.

:func:`plan_hub` builds the instance exactly as the simulator builds a round
(``carbonshift.sim.engine._plan_round``) and as the one-cluster controller builds its
snapshot (``carbonshift.k8s.planner.build_snapshot``), with one cluster per healthy spoke:
slot 0 is the current slot, pending work has release 0, ``runtime_slots = ceil(runtime /
slot)``, ``deadline_slot = floor((deadline - slot 0) / slot)``, the horizon is at least
``horizon_slots`` and fits the longest pending work, work already placed holds capacity in
its spoke until its expected end (``held_units``), and ``waited_slots`` counts whole slots
since creation. Interruptible running work is planned again with what is left of it plus
its restart overhead, allowed only on the spoke where it runs (as in the simulator): a start
at slot 0 keeps it running, a later start suspends it until then.

It answers a :class:`Decision` per workload: start now (and where) or hold until when, and
why. Work the policy leaves unplaced is held until its latest on-time start, then released
to the spoke with the most room ("fail open").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from carbonshift.domain import Cluster, ClusterName, Instance, Job, JobId, TimeGrid
from carbonshift.k8s.multicluster.config import HubConfig
from carbonshift.k8s.planner import CarbonSource, Forecast, data_note, horizon_slots, slot_floor
from carbonshift.planning.registry import run_policy
from carbonshift.planning.types import PlanContext, PolicyResult

__all__ = ["Decision", "HubRound", "Pending", "Placed", "SpokeView", "plan_hub"]

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Pending:
    """Work to plan: held, or running and interruptible (``running_on`` set)."""

    key: str
    demand: Mapping[str, float]
    runtime: timedelta
    deadline: datetime
    created: datetime
    running_on: str | None = None
    allowed: frozenset[str] | None = None
    """Spokes with a node big enough for one of its pods (None: every healthy spoke)."""

    @property
    def latest_start(self) -> datetime:
        return self.deadline - self.runtime


@dataclass(frozen=True, slots=True)
class Placed:
    """Work that holds capacity in ``cluster`` until ``ends``."""

    cluster: str
    demand: Mapping[str, float]
    ends: datetime


@dataclass(frozen=True, slots=True)
class SpokeView:
    """A healthy spoke as the planner sees it."""

    name: str
    zone: str
    capacity: Mapping[str, float]
    watts_per_unit: Mapping[str, float]
    pue: float
    embodied_g_per_unit_hour: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class Decision:
    """What the plan says for one workload."""

    key: str
    cluster: str | None
    start: datetime
    start_now: bool
    reason: str


@dataclass(frozen=True, slots=True)
class HubRound:
    """One planning call: its instance, the policy's result, the forecasts and decisions."""

    slot0: datetime
    instance: Instance | None
    result: PolicyResult | None
    forecasts: Mapping[str, Forecast]
    decisions: Mapping[str, Decision]


def _runtime_slots(runtime: timedelta, slot_s: float) -> int:
    return max(1, math.ceil(runtime.total_seconds() / slot_s - _EPS))


def _free_now(
    spokes: Sequence[SpokeView], placed: Sequence[Placed], now: datetime
) -> dict[str, dict[str, float]]:
    free = {s.name: dict(s.capacity) for s in spokes}
    for work in placed:
        if work.cluster in free and work.ends > now:
            for r, amount in work.demand.items():
                free[work.cluster][r] = free[work.cluster].get(r, 0.0) - amount
    return free


def plan_hub(
    config: HubConfig,
    now: datetime,
    pending: Sequence[Pending],
    spokes: Sequence[SpokeView],
    placed: Sequence[Placed],
    sources: Mapping[str, CarbonSource],
) -> HubRound:
    """One planning call over ``pending`` on the healthy ``spokes`` (see the module doc)."""
    slot_minutes = config.planning.slot_minutes
    slot_s = slot_minutes * 60.0
    slot0 = slot_floor(now, slot_minutes)
    if not spokes or not pending:
        idle = {
            p.key: Decision(
                p.key, None, max(now, p.latest_start), False, "no healthy spoke to run it"
            )
            for p in pending
        }
        return HubRound(slot0, None, None, {}, idle)
    resources = config.resources
    no_node = {p.key for p in pending if p.allowed is not None and not p.allowed}
    decisions: dict[str, Decision] = {
        key: Decision(
            key,
            None,
            slot0 + timedelta(seconds=slot_s),
            False,
            "no healthy spoke has a node with room for one of its pods; held",
        )
        for key in no_node
    }
    pending = [p for p in pending if p.key not in no_node]
    if not pending:
        return HubRound(slot0, None, None, {}, decisions)
    longest = max(_runtime_slots(p.runtime, slot_s) for p in pending)
    horizon = horizon_slots(config.planning, longest)
    forecasts = {s.name: sources[s.name].forecast(slot0, horizon) for s in spokes}
    clusters = tuple(
        Cluster(
            name=ClusterName(s.name),
            capacity={r: float(s.capacity.get(r, 0.0)) for r in resources},
            watts_per_unit={r: float(s.watts_per_unit.get(r, 0.0)) for r in resources},
            pue=s.pue,
            embodied_g_per_unit_hour=dict(s.embodied_g_per_unit_hour),
            zone=s.zone,
        )
        for s in spokes
    )
    index = {s.name: i for i, s in enumerate(spokes)}
    held = np.zeros((len(spokes), len(resources), horizon))
    for work in placed:
        if work.cluster not in index:
            continue
        last = min(horizon, math.ceil((work.ends - slot0).total_seconds() / slot_s - _EPS))
        for k, r in enumerate(resources):
            held[index[work.cluster], k, : max(0, last)] += work.demand.get(r, 0.0)
    jobs = tuple(
        Job(
            id=JobId(p.key),
            demand={r: float(p.demand.get(r, 0.0)) for r in resources},
            runtime_slots=_runtime_slots(p.runtime, slot_s),
            release_slot=0,
            deadline_slot=math.floor((p.deadline - slot0).total_seconds() / slot_s + _EPS),
            allowed_clusters=(
                frozenset({ClusterName(p.running_on)})
                if p.running_on is not None
                else None
                if p.allowed is None
                else frozenset(ClusterName(c) for c in p.allowed)
            ),
        )
        for p in pending
    )
    instance = Instance(
        grid=TimeGrid(slot_minutes=slot_minutes, horizon_slots=horizon),
        resources=resources,
        clusters=clusters,
        carbon_g_per_kwh={ClusterName(n): f.values_g_per_kwh for n, f in forecasts.items()},
        jobs=jobs,
    )
    waited = {
        p.key: max(0, math.floor((slot0 - p.created).total_seconds() / slot_s + _EPS))
        for p in pending
        if p.running_on is None
    }
    result = run_policy(
        config.planning.policy,
        instance,
        dict(config.planning.params),
        PlanContext(held_units=held, waited_slots=waited),
    )
    chosen = {a.job: a for a in result.plan.assignments}
    free = _free_now(spokes, placed, now)
    policy = config.planning.policy
    for p in pending:
        assignment = chosen.get(JobId(p.key))
        if assignment is None:
            note = result.notes.get(JobId(p.key), "no room in the plan")
            late = now >= p.latest_start
            where = p.running_on or (_roomiest(free, p.demand, p.allowed) if late else None)
            decisions[p.key] = Decision(
                p.key,
                where,
                max(now, p.latest_start),
                late and where is not None,
                f"policy {policy} left it unplaced ({note}); released at its latest start "
                "at the latest",
            )
            continue
        start = slot0 + timedelta(seconds=assignment.start_slot * slot_s)
        cluster = str(assignment.cluster)
        values = forecasts[cluster].values_g_per_kwh
        if assignment.start_slot == 0:
            reason = f"policy {policy} starts it now in {cluster} ({values[0]:.0f} g/kWh)"
        elif start > p.latest_start:
            start = max(now, p.latest_start)
            reason = f"policy {policy} planned it after its latest start; released then"
        else:
            reason = (
                f"waiting for cleaner power: {cluster} at {start:%Y-%m-%dT%H:%MZ} "
                f"({values[assignment.start_slot]:.0f} g/kWh; policy {policy})"
            )
        start_now = assignment.start_slot == 0 or now >= p.latest_start
        reason += data_note(forecasts[cluster])
        decisions[p.key] = Decision(p.key, cluster, start, start_now, reason)
        if start_now:
            for r, amount in p.demand.items():
                free[cluster][r] = free[cluster].get(r, 0.0) - amount
    return HubRound(slot0, instance, result, forecasts, decisions)


def _roomiest(
    free: Mapping[str, Mapping[str, float]],
    demand: Mapping[str, float],
    allowed: frozenset[str] | None = None,
) -> str | None:
    """The spoke (of ``allowed``) where ``demand`` fits now with the most room left (None:
    none fits)."""
    best: tuple[float, str] | None = None
    for name, room in free.items():
        if allowed is not None and name not in allowed:
            continue
        left = [room.get(r, 0.0) - a for r, a in demand.items()]
        if all(x >= -_EPS for x in left):
            score = min(left) if left else 0.0
            if best is None or score > best[0]:
                best = (score, name)
    return best[1] if best else None
