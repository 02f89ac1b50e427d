"""The hub controller: one reconcile is a numbered pipeline of timed phases.

:meth:`HubController.reconcile` is level-triggered and keeps no state that matters between
calls: where a workload went is written on the hub object (``placed-cluster``, before the
spoke copy is created, so a restart finds it), and a spoke copy carries the hub object's UID
as a label (``hub-uid``), so a restarted hub adopts the copy it finds instead of creating a
second one. :meth:`run` calls it every ``resync_s`` through the clock seam.

The pipeline of one pass (Kueue's ``schedule()`` shape), :data:`PHASES` in order; each phase
is timed into ``carbonshift_hub_phase_duration_seconds{phase}`` as it ends:

1. **inventory** (:class:`.inventory.InventoryPhase`): read every ``CarbonCluster``, connect
   to each spoke through its kubeconfig Secret, read its nodes' capacity; a spoke that does
   not answer is Unreachable and gets no new work. Find the Kueue AdmissionChecks this hub
   answers and mark them Active;
2. **collect**: the opted-in hub objects of every kind, each read through its adapter
   (:mod:`carbonshift.k8s.kinds`, :func:`.workloads.read_workload`);
3. **mirror** (:class:`.mirroring.MirrorPhase`): for placed hub Jobs, create the spoke copy
   if missing, mirror its status back, and on completion write the hub Job's final status
   and delete the copy; finish a Kueue release cut short; plan again the hub Jobs of a spoke
   that stayed away too long;
4. **plan**: once per slot (and when new work arrives or a spoke's health changes), one
   planning call over every held workload of every kind on every healthy spoke
   (:func:`.plan.plan_hub`); interruptible running work is planned again too. The call,
   and the forecasts it reads from the carbon sources, runs in a worker thread, so the
   event loop keeps serving /metrics, the leader Lease and the watches while it plans;
5. **act** (:class:`.acting.ActPhase`): write the plan on each held object; release what
   starts now, hold the rest, suspend interruptible work the plan moves to later, each kind
   its own way;
6. **cleanup**: delete spoke copies whose hub object is gone or finished;
7. **status**: write each ``CarbonCluster``'s status (capacity, health, forecast age).

Phases 2, 4 and 6 each read the hub objects afresh, so each acts on what the one before
wrote; they read them from watch-fed caches (:mod:`carbonshift.k8s.informer`: the hub's Jobs,
Workloads and AppWrappers, and each spoke's copies by their ``hub-uid`` label), listed once
and then kept by watches, with each write's answer kept at once: a pass lists no hub object
and reads no copy one by one. A write that would change nothing is not sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta

from carbonshift.carbon.series import CarbonSeries
from carbonshift.errors import CarbonshiftError, InputError
from carbonshift.k8s.clock import Clock
from carbonshift.k8s.informer import Informer
from carbonshift.k8s.intent import NotHeld
from carbonshift.k8s.metrics import record_left_out
from carbonshift.k8s.multicluster.acting import ActPhase, held_change
from carbonshift.k8s.multicluster.api import HubApi, connect_kubeconfig_text
from carbonshift.k8s.multicluster.config import HubConfig
from carbonshift.k8s.multicluster.inventory import InventoryPhase, Spoke, others_requests
from carbonshift.k8s.multicluster.metrics import HubMetrics
from carbonshift.k8s.multicluster.mirroring import copier
from carbonshift.k8s.multicluster.plan import (
    Decision,
    HubRound,
    Pending,
    Placed,
    SpokeView,
    plan_hub,
)
from carbonshift.k8s.multicluster.record import (
    LOG,
    MAX_EVENTS,
    Connector,
    HubCounters,
    HubEvent,
    Obj,
)
from carbonshift.k8s.multicluster.workloads import HubWorkload, pod_demand, spoke_job_names
from carbonshift.k8s.nodes import fits_a_node
from carbonshift.k8s.planner import CarbonSource, slot_floor

__all__ = [
    "MAX_EVENTS",
    "PHASES",
    "Connector",
    "HubController",
    "HubEvent",
    "held_change",
]

#: seconds of the clock :meth:`HubController.run` waits after a pass that left plan writes
#: to the next (``hold_writes_per_pass``), instead of ``resync_s``
DEFERRED_RERUN_S = 1.0
PHASES = ("inventory", "collect", "mirror", "plan", "act", "cleanup", "status")
"""The phases of one pass, in order (the ``phase`` label of the phase-duration histogram)."""

_FitKey = tuple[str | None, tuple[tuple[str, float], ...] | None]
"""What decides the spokes a pending workload fits: the kind it is copied as (None: not a
copy) and its pod's size (None: unknown)."""


class HubController(InventoryPhase, ActPhase):
    """Places opted-in hub workloads in spokes (see the module doc)."""

    def __init__(
        self,
        config: HubConfig,
        hub: HubApi,
        clock: Clock,
        *,
        connector: Connector | None = None,
        series: Mapping[str, CarbonSeries] | None = None,
        metrics: HubMetrics | None = None,
        after_list: Callable[[], None] | None = None,
    ) -> None:
        self.config = config
        self.hub = hub
        self.clock = clock
        self.after_list = after_list
        self.metrics = metrics or HubMetrics()
        """Where the controller records what it times (the observer may hand its own)."""
        limit = config.client_connection
        #: each spoke's client: its own bucket of the hub's client_connection size
        self._connector = connector or functools.partial(
            connect_kubeconfig_text, qps=limit.qps, burst=limit.burst
        )
        self._series = dict(series or {})
        self._cconfig = config.controller_config()
        self.spokes: dict[str, Spoke] = {}
        self.sources: dict[str, CarbonSource] = {}
        self.last_round: HubRound | None = None
        #: (slot start, releases planned in it): the release rate limit's count
        self._slot_releases: tuple[datetime | None, int] = (None, 0)
        self.last_plan_s: float | None = None
        """Wall seconds the last planning call took."""
        self.last_phase_s: dict[str, float] = {}
        """Wall seconds each phase of the last pass took, by :data:`PHASES` name."""
        self._planned_slot: datetime | None = None
        self._planned_keys: frozenset[str] = frozenset()
        self._planned_spokes: frozenset[str] = frozenset()
        #: the earliest start of work the last plan left unplaced (fail open then)
        self._unplaced_due: datetime | None = None
        self.events: list[HubEvent] = []
        """What the hub did, oldest first; the oldest half goes past :data:`MAX_EVENTS`."""
        self.events_dropped = 0
        """How many events were dropped from the front of :attr:`events` so far."""
        self.counters = HubCounters()
        self._inventory: dict[str, Obj] = {}
        self._caches: dict[str, Informer] = {}
        self._absent: set[str] = set()
        self._reads: dict[tuple[str, str], tuple[tuple[str, ...], HubWorkload | NotHeld]] = {}
        self._written: dict[
            tuple[str, str], tuple[str, Mapping[str, str | None], Mapping[str, str]]
        ] = {}
        self._demands: dict[tuple[str, str], dict[str, float] | None] = {}
        """One pod's demand of each held object version at the last plan."""
        self._demands_now: dict[tuple[str, str], dict[str, float] | None] = {}

    async def close(self) -> None:
        """Stop the watches and close the spoke clients (the hub's client is the caller's)."""
        for informer in self._caches.values():
            await informer.stop()
        self._caches = {}
        for spoke in self.spokes.values():
            await spoke.disconnect()

    # -- 4. plan ----------------------------------------------------------------------------

    def _pending(self, now: datetime, workloads: list[HubWorkload]) -> list[Pending]:
        """Work to plan, running work first, then in arrival order (as the simulator)."""
        pending: list[Pending] = []
        self._demands_now = {}
        ordered = sorted(
            workloads, key=lambda w: (w.state != "placed", w.intent.created, w.intent.name, w.key)
        )
        healthy = self._healthy()
        fitting: dict[_FitKey, frozenset[str] | None] = {}
        for w in ordered:
            if w.state in ("held", "suspended"):
                pending.append(
                    Pending(
                        w.key,
                        dict(w.intent.demand),
                        w.remaining,
                        w.intent.deadline,
                        w.intent.created,
                        allowed=self._fitting(w, healthy, fitting),
                    )
                )
            elif (
                w.state == "placed"
                and w.interruptible
                and w.released_at is not None
                and w.placed in healthy
            ):
                end = w.expected_end
                assert end is not None
                if end - now <= timedelta(seconds=self.config.planning.slot_minutes * 60):
                    continue  # finishes within the slot: not worth a restart
                pending.append(
                    Pending(
                        w.key,
                        dict(w.intent.demand),
                        end - now,
                        w.intent.deadline,
                        w.intent.created,
                        running_on=w.placed,
                    )
                )
        self._demands = self._demands_now
        return pending

    def _fitting(
        self,
        w: HubWorkload,
        healthy: Mapping[str, Spoke],
        known: dict[_FitKey, frozenset[str] | None],
    ) -> frozenset[str] | None:
        """The healthy spokes with a node big enough for one pod of ``w`` that serve its kind
        if it is placed as a copy (None: all); ``known`` keeps the answer for each (copied
        kind, pod size) seen in this pass (the nodes do not change within it), so the
        spokes' nodes are searched once per size, not per pod."""
        version = (w.uid, str(w.obj["metadata"].get("resourceVersion")))
        if version in self._demands:  # the same version asks the same (parsed once)
            pod = self._demands[version]
        else:
            try:
                pod = pod_demand(w, self.config.resources)
            except InputError:
                pod = None  # read_intent accepted it; the spoke's scheduler will say
        self._demands_now[version] = pod
        # a copy goes only to spokes that serve its kind (an AppWrapper: those running MCAD)
        kind = w.kind if copier(w) is not None else None
        key = (kind, None if pod is None else tuple(sorted(pod.items())))
        if key not in known:
            fits = frozenset(
                n
                for n, s in healthy.items()
                if (kind is None or kind not in s.absent_kinds)
                and (pod is None or not s.nodes or fits_a_node(pod, s.nodes))
            )
            known[key] = None if len(fits) == len(healthy) else fits
        return known[key]

    def _placed(
        self, now: datetime, workloads: list[HubWorkload], moving: set[str]
    ) -> list[Placed]:
        out: list[Placed] = []
        slot = timedelta(minutes=self.config.planning.slot_minutes)
        for w in workloads:
            if w.state != "placed" or w.placed is None or w.key in moving:
                continue
            end = w.expected_end or now + slot
            out.append(Placed(w.placed, dict(w.intent.demand), max(end, now + slot)))
        return out

    async def _plan(self, now: datetime, workloads: list[HubWorkload]) -> HubRound | None:
        """The planning call when one is due (None: not due). :func:`.plan.plan_hub` (and the
        forecasts it reads) runs in a worker thread, on values made here: the loop keeps
        serving /metrics, the Lease and the watches meanwhile; the answer is kept here."""
        pending = self._pending(now, workloads)
        keys = frozenset(p.key for p in pending)
        healthy = self._healthy()
        slot0 = slot_floor(now, self.config.planning.slot_minutes)
        due = (
            self._planned_slot != slot0
            or frozenset(healthy) != self._planned_spokes
            or (self.config.planning.plan_on_arrival and not keys <= self._planned_keys)
            # work left unplaced (by the policy or the plan-size limits) is released at its
            # latest start by a planning call, not a slot later
            or (self._unplaced_due is not None and now >= self._unplaced_due)
        )
        if not due and self.last_round is not None:
            return None
        ours: dict[str, set[tuple[str, str]]] = {name: set() for name in healthy}
        for w in workloads:
            if w.placed in ours:
                ours[w.placed] |= spoke_job_names(w)
        for name, s in healthy.items():
            s.others = others_requests(s.pods, ours[name], self.config.resources)
        views = [
            SpokeView(
                name,
                s.spec.zone,
                {r: max(0.0, c - s.others.get(r, 0.0)) for r, c in s.capacity.items()},
                dict(s.spec.watts_per_unit),
                s.spec.pue,
                dict(s.spec.embodied_g_per_unit_hour),
            )
            for name, s in sorted(healthy.items())
        ]
        moving = {p.key for p in pending if p.running_on is not None}
        if self._slot_releases[0] != slot0:
            self._slot_releases = (slot0, 0)
        last = self.last_round
        began = time.perf_counter()
        round_ = await asyncio.to_thread(
            plan_hub,
            self.config,
            now,
            tuple(pending),
            tuple(views),
            tuple(self._placed(now, workloads, moving)),
            {name: self.sources[name] for name in healthy},
            previous=(
                {}
                if last is None
                else {
                    k: (d.cluster, d.start)
                    for k, d in last.decisions.items()
                    if d.cluster is not None and not d.start_now
                }
            ),
            released_this_slot=self._slot_releases[1],
        )
        self._slot_releases = (
            slot0,
            self._slot_releases[1]
            + sum(d.start_now for k, d in round_.decisions.items() if k not in moving),
        )
        self.last_plan_s = time.perf_counter() - began
        self.metrics.plan_duration.observe(self.last_plan_s)
        for name, forecast in round_.forecasts.items():
            self.spokes[name].forecast_issued_at = forecast.issued_at
        self.tally("plans")
        self.last_round = round_
        self._planned_slot, self._planned_keys = slot0, keys
        self._planned_spokes = frozenset(healthy)
        self._unplaced_due = min(
            (d.start for d in round_.decisions.values() if d.cluster is None and not d.start_now),
            default=None,
        )
        record_left_out(
            self.metrics.plan_left_out,
            self.metrics.plan_truncated,
            LOG,
            round_.left_out,
            len(pending),
            round_.limit_note,
        )
        return round_

    def _due_from_last(self, now: datetime) -> HubRound:
        """The last plan, with starts that have come marked as due (between planning calls)."""
        assert self.last_round is not None
        decisions = {
            k: Decision(
                d.key,
                d.cluster,
                d.start,
                d.start_now or (d.cluster is not None and now >= d.start),
                d.reason,
            )
            for k, d in self.last_round.decisions.items()
        }
        return HubRound(
            self.last_round.slot0,
            self.last_round.instance,
            self.last_round.result,
            self.last_round.forecasts,
            decisions,
        )

    # -- the pipeline -----------------------------------------------------------------------

    @contextlib.contextmanager
    def _phase(self, name: str) -> Iterator[None]:
        """Time phase ``name`` of this pass into :attr:`last_phase_s` and the histogram."""
        began = time.perf_counter()
        try:
            yield
        finally:
            took_s = time.perf_counter() - began
            self.last_phase_s[name] = took_s
            self.metrics.phase_duration.labels(phase=name).observe(took_s)

    async def reconcile(self, *, max_passes: int = 3) -> HubRound | None:
        """The pipeline (module doc), again at once while a pass met conflicts or errors.

        Answers the planning round of the last pass, if one ran.
        """
        round_ = None
        for _ in range(max_passes):
            before = (self.counters.conflicts, self.counters.errors)
            round_ = await self._reconcile_once()
            if (self.counters.conflicts, self.counters.errors) == before:
                break
        return round_

    async def _reconcile_once(self) -> HubRound | None:
        now = self.clock.now()
        self.last_phase_s = {}
        self.last_holds_deferred = 0
        self._absent = set()
        with self._phase("inventory"):  # 1
            await self._refresh_spokes(now)
            await self._refresh_checks(now)
        with self._phase("collect"):  # 2
            workloads = await self._collect(now)
        with self._phase("mirror"):  # 3
            await self._mirror_jobs(now, workloads)
            await self._redrive_workloads(now, workloads)
            await self._recall_lost(now, workloads)
        with self._phase("plan"):  # 4
            workloads = await self._collect(now)
            round_ = await self._plan(now, workloads)
            if round_ is None and self.last_round is not None:
                round_ = self._due_from_last(now)
        with self._phase("act"):  # 5
            if round_ is not None:
                await self._act(now, workloads, round_)
        with self._phase("cleanup"):  # 6
            workloads = await self._collect(now)
            await self._collect_garbage(now, workloads)
        with self._phase("status"):  # 7
            for name, obj in self._inventory.items():
                await self._write_spoke_status(obj, self.spokes[name], now)
        return round_

    async def run(self, resync_s: float = 30.0) -> None:
        """Reconcile forever, every ``resync_s`` of the clock (errors are logged, not fatal);
        :data:`DEFERRED_RERUN_S` after a pass that left plan writes to the next
        (``hold_writes_per_pass``)."""
        while True:
            try:
                await self.reconcile()
            except CarbonshiftError as exc:
                self.tally("errors")
                LOG.warning("reconcile failed: %s", exc)
            except Exception:  # a bug must not stop the hub: log it, count it, go on
                self.tally("errors")
                LOG.exception("reconcile failed")
            wait_s = min(resync_s, DEFERRED_RERUN_S) if self.last_holds_deferred else resync_s
            await self.clock.sleep_until(self.clock.now() + timedelta(seconds=wait_s))
