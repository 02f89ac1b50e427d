"""One planning call across every healthy spoke: where and when, chosen jointly.

:func:`plan_hub` maps the hub's objects onto the planning seam that the simulator and the
one-cluster controller use too (:func:`carbonshift.planning.snapshot.build_snapshot`), with
one cluster per healthy spoke:
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

The plan-size limits of ``planning`` hold too (docs/reliability.md, "Limits of a solve"):
past ``max_plan_cells`` the most urgent work that fits is planned (running interruptible
work first, then the earliest latest start) and the rest is left unplaced for a later pass;
with more spokes than ``max_horizon_cells`` admits for the horizon, nothing is planned. Work
left out is held, fails open like unplaced work, and running work keeps running.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from carbonshift.domain import Cluster, ClusterName, Instance, JobId
from carbonshift.domain import slots as slot_rules
from carbonshift.k8s.multicluster.config import HubConfig
from carbonshift.k8s.planner import (
    LEFT_OUT_WAITS,
    CarbonSource,
    Forecast,
    data_note,
    horizon_slots,
    left_out_reason,
    slot_floor,
    within_limit,
)
from carbonshift.planning import snapshot as seam
from carbonshift.planning.limits import PlanSize
from carbonshift.planning.registry import round_params, run_policy
from carbonshift.planning.types import PolicyResult

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
    #: pending work left out of the planning call by the plan-size limits (0: none)
    left_out: int = 0
    #: why, once for the pass ("" when nothing was left out)
    limit_note: str = ""


def _hours(moment: datetime, slot0: datetime) -> float:
    """``moment`` in hours from ``slot0``: the seam's time axis for one hub round."""
    return (moment - slot0).total_seconds() / 3600.0


def _runtime_slots(runtime: timedelta, slot_minutes: int) -> int:
    return slot_rules.runtime_slots(runtime.total_seconds() / 3600.0, slot_minutes)


def _cluster(spoke: SpokeView, resources: Sequence[str]) -> Cluster:
    return Cluster(
        name=ClusterName(spoke.name),
        capacity={r: float(spoke.capacity.get(r, 0.0)) for r in resources},
        watts_per_unit={r: float(spoke.watts_per_unit.get(r, 0.0)) for r in resources},
        pue=spoke.pue,
        embodied_g_per_unit_hour=dict(spoke.embodied_g_per_unit_hour),
        zone=spoke.zone,
    )


def _pending_work(
    p: Pending,
    slot0: datetime,
    resources: Sequence[str],
    previous: tuple[str, datetime] | None = None,
) -> seam.PendingWork:
    """The seam's view of a workload: interruptible running work stays on its spoke and does
    not count as waiting."""
    return seam.PendingWork(
        id=p.key,
        demand={r: float(p.demand.get(r, 0.0)) for r in resources},
        runtime_h=p.runtime.total_seconds() / 3600.0,
        deadline_h=_hours(p.deadline, slot0),
        submit_h=None if p.running_on is not None else _hours(p.created, slot0),
        allowed_clusters=(frozenset({p.running_on}) if p.running_on is not None else p.allowed),
        running=p.running_on is not None,
        planned_cluster=None if previous is None else previous[0],
        planned_start_h=None if previous is None else _hours(previous[1], slot0),
    )


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
    *,
    previous: Mapping[str, tuple[str, datetime]] | None = None,
    released_this_slot: int = 0,
) -> HubRound:
    """One planning call over ``pending`` on the healthy ``spokes`` (see the module doc).

    The policy's plan then passes the hold rule of ``planning`` (hold only when it pays;
    docs/multicluster.md): ``previous`` maps a workload key to the spoke and start an earlier
    round planned (hysteresis); ``released_this_slot`` counts releases already made in this
    slot (the rate limit)."""
    previous = previous or {}
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
    longest = max(_runtime_slots(p.runtime, slot_minutes) for p in pending)
    horizon = horizon_slots(config.planning, longest)
    limits = config.planning.plan_limits()
    size = PlanSize(len(pending), len(pending), len(spokes), horizon, len(resources))
    if not limits.horizon_fits(size):
        why = (
            f"{size.clusters} healthy spokes x {size.slots} slots x {size.resources} resources "
            f"= {size.horizon_cells:,} cluster x slot x resource cells exceed the plan-size "
            f"limit of {limits.max_horizon_cells or 0:,} (planning.max_horizon_cells); planned "
            "nothing this pass"
        )
        free = _free_now(spokes, placed, now)
        for p in pending:
            decisions[p.key] = _left_out(p, now, f"{why}; {LEFT_OUT_WAITS}", free)
        return HubRound(slot0, None, None, {}, decisions, len(pending), why)
    forecasts = {s.name: sources[s.name].forecast(slot0, horizon) for s in spokes}

    def snapshot_of(work: Sequence[Pending]) -> seam.Snapshot:
        return seam.build_snapshot(
            now_h=0.0,
            slot_minutes=slot_minutes,
            resources=resources,
            clusters=[_cluster(s, resources) for s in spokes],
            forecast_g_per_kwh={n: f.values_g_per_kwh for n, f in forecasts.items()},
            pending=[_pending_work(p, slot0, resources, previous.get(p.key)) for p in work],
            running=[
                seam.HeldWork(
                    id=f"placed/{i}",
                    cluster=work.cluster,
                    demand=work.demand,
                    end_h=_hours(work.ends, slot0),
                )
                for i, work in enumerate(placed)
            ],
        )

    snapshot = snapshot_of(pending)
    keep = within_limit(
        limits,
        config.planning.policy,
        snapshot.instance,
        [(p.running_on is None, p.latest_start, p.deadline, p.key) for p in pending],
    )
    left_note = ""
    if keep is not None:
        left_note = left_out_reason(len(pending), len(keep), limits.max_cells)
        snapshot = snapshot_of([pending[i] for i in keep])
    instance = snapshot.instance
    planned_keys = {str(job.id) for job in instance.jobs} if left_note else set()
    policy_params = round_params(config.planning.policy, config.planning.params)
    result = run_policy(config.planning.policy, instance, policy_params, snapshot.context())
    held = snapshot.hold(result.plan, config.planning.hold_rule(), released_this_slot)
    policy_starts = {a.job: a.start_slot for a in result.plan.assignments}
    chosen = {a.job: a for a in held.plan.assignments}
    free = _free_now(spokes, placed, now)
    policy = config.planning.policy
    for p in pending:
        assignment = chosen.get(JobId(p.key))
        if left_note and p.key not in planned_keys:
            decisions[p.key] = _left_out(p, now, left_note, free)
            continue
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
        rule_note = held.reasons.get(JobId(p.key))
        if assignment.start_slot == 0 and rule_note is not None:
            reason = (
                f"{rule_note} in {cluster} (policy {policy} planned slot "
                f"{policy_starts.get(JobId(p.key))})"
            )
        elif assignment.start_slot == 0:
            reason = f"policy {policy} starts it now in {cluster} ({values[0]:.0f} g/kWh)"
        elif start > p.latest_start:
            start = max(now, p.latest_start)
            reason = f"policy {policy} planned it after its latest start; released then"
        else:
            reason = (
                f"waiting for cleaner power: {cluster} at {start:%Y-%m-%dT%H:%MZ} "
                f"({values[assignment.start_slot]:.0f} g/kWh; policy {policy})"
            )
            if rule_note is not None:
                reason += f"; {rule_note}"
        start_now = assignment.start_slot == 0 or now >= p.latest_start
        reason += data_note(forecasts[cluster])
        decisions[p.key] = Decision(p.key, cluster, start, start_now, reason)
        if start_now:
            for r, amount in p.demand.items():
                free[cluster][r] = free[cluster].get(r, 0.0) - amount
    return HubRound(
        slot0,
        instance,
        result,
        forecasts,
        decisions,
        len(pending) - len(instance.jobs),
        left_note,
    )


def _left_out(p: Pending, now: datetime, why: str, free: dict[str, dict[str, float]]) -> Decision:
    """A workload the plan-size limits left out of the planning call: running work keeps
    running where it runs; held work waits, and from its latest start on is released to the
    spoke with the most room now, as work the policy leaves unplaced ("fail open")."""
    if p.running_on is not None:
        return Decision(
            p.key,
            p.running_on,
            now,
            True,
            "left out of this pass by the plan-size limits "
            f"(planning.max_plan_cells, max_horizon_cells); keeps running in {p.running_on}",
        )
    late = now >= p.latest_start
    where = _roomiest(free, p.demand, p.allowed) if late else None
    if where is not None:
        for r, amount in p.demand.items():
            free[where][r] = free[where].get(r, 0.0) - amount
    return Decision(p.key, where, max(now, p.latest_start), where is not None, why)


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
