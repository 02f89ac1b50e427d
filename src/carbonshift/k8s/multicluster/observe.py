"""What a running hub shows: core/v1 Events, Prometheus metrics, and leader election.

:class:`HubObserver` runs after each :meth:`HubController.reconcile` (``observe()``, or
``reconcile()`` which times the pass too). The controller counts what it does into the
Prometheus metrics where it does it (``HubController.tally``, shared registry); the observer
reads only the controller's public state -- ``events`` (append-only; the observer remembers
how many it handled), ``spokes`` and ``last_round`` -- plus one list per kind of hub object
for the held / placed gauges, so those gauges say what the objects say, after a restart too.

**Events** (kubectl describe shows them under the hub object):

=====================  ====================  ========  ==================================
HubEvent ``what``      reason                type      involvedObject
=====================  ====================  ========  ==================================
planned                CarbonPlanned         Normal    the hub Job / Workload / AppWrapper
released               CarbonReleased        Normal    "
suspended              CarbonSuspended       Normal    "
created-in-spoke       CreatedInSpoke        Normal    the hub Job
removed-stale-copy     SpokeCopyRemoved      Warning   the hub Job
finished-complete      FinishedComplete      Normal    the hub Job
finished-failed        FinishedFailed        Warning   the hub Job
cleaned                Cleaned               Normal    the hub Job (UID from the copy's label)
recalled               RecalledFromLostSpoke Warning   the hub Job
unreachable            SpokeUnreachable      Warning   the CarbonCluster
healthy                SpokeHealthy          Normal    the CarbonCluster
kubeconfig-refused     KubeconfigRefused     Warning   the CarbonCluster
(anything else)        its CamelCase         Normal    as the key says
=====================  ====================  ========  ==================================

Events about a ``CarbonCluster`` (cluster-scoped) are written in the ``default`` namespace
with an empty ``involvedObject.namespace``, as client-go's EventRecorder does for Nodes
(``makeEvent``: an object without a namespace gets ``metav1.NamespaceDefault``);
``kubectl describe carboncluster`` finds them there. Repeats of one (object, reason, type,
message) are aggregated as client-go's EventCorrelator does: the first is created, later
ones raise ``count`` and ``lastTimestamp`` on it (a merge patch). An Event write that fails
is logged and counted (``carbonshift_hub_observer_errors_total{stage="event"}``), never
raised. Events, new or repeats, have a budget (``events.qps`` / ``.burst``, the controller's
section and token bucket): one past it is dropped and counted
(``carbonshift_hub_events_dropped_total{reason}``); the hub objects' annotations and the
CarbonClusters' conditions say what it would have said.

:class:`HubRunner` is the run loop of ``carbonshift hub``: reconcile every ``resync_s`` of the
clock while this replica holds the Lease (:class:`~carbonshift.k8s.leader.LeaderElector`),
observe after each pass; a follower waits for the lease, and a leader that loses it stops
within one renew period (a pass in progress finishes: every write of the hub is
level-triggered and guarded by resourceVersion, so a pass cut short or overlapping another
replica's is safe).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import Gauge

from carbonshift.errors import CarbonshiftError
from carbonshift.k8s.client import NotFoundError
from carbonshift.k8s.flowcontrol import bucket_or_none
from carbonshift.k8s.keys import API_VERSION, HUB_COMPONENT, HUB_LABEL
from carbonshift.k8s.kinds import HUB_KINDS
from carbonshift.k8s.leader import LeaderElector
from carbonshift.k8s.multicluster.hub import DEFERRED_RERUN_S, HubController, HubEvent
from carbonshift.k8s.multicluster.inventory import CARBONCLUSTERS
from carbonshift.k8s.multicluster.metrics import HubMetrics
from carbonshift.k8s.multicluster.plan import HubRound
from carbonshift.k8s.multicluster.workloads import (
    APPWRAPPERS,
    HUB_UID_LABEL,
    JOBS,
    PLACED_CLUSTER,
    PLANNED_CLUSTER,
    WORKLOADS,
    Kind,
    is_finished,
)
from carbonshift.units import format_utc

__all__ = ["API_VERSIONS", "REASONS", "HubMetrics", "HubObserver", "HubRunner", "event_reason"]

_LOG = logging.getLogger("carbonshift.k8s.hub")
Obj = dict[str, Any]

#: apiVersion of each hub kind, for ``involvedObject``.
API_VERSIONS: dict[str, str] = {
    **{adapter.kind: adapter.api_version for adapter in HUB_KINDS},
    "CarbonCluster": API_VERSION,
}

#: HubEvent ``what`` -> (Event reason, Event type).
REASONS: dict[str, tuple[str, str]] = {
    "planned": ("CarbonPlanned", "Normal"),
    "released": ("CarbonReleased", "Normal"),
    "suspended": ("CarbonSuspended", "Normal"),
    "created-in-spoke": ("CreatedInSpoke", "Normal"),
    "removed-stale-copy": ("SpokeCopyRemoved", "Warning"),
    "finished-complete": ("FinishedComplete", "Normal"),
    "finished-failed": ("FinishedFailed", "Warning"),
    "cleaned": ("Cleaned", "Normal"),
    "recalled": ("RecalledFromLostSpoke", "Warning"),
    "unreachable": ("SpokeUnreachable", "Warning"),
    "forbidden": ("SpokeForbidden", "Warning"),
    "healthy": ("SpokeHealthy", "Normal"),
    "kubeconfig-refused": ("KubeconfigRefused", "Warning"),
}

_SPOKE_EVENTS_NAMESPACE = "default"
_COMPONENT = "carbonshift-hub"
_MESSAGE_CHARS = 1000
_AGGREGATE_CACHE = 4096  # client-go's EventCorrelator keeps as many
_KINDS = tuple(adapter.kind for adapter in HUB_KINDS)


def event_reason(what: str) -> tuple[str, str]:
    """The Event reason and type for a HubEvent's ``what`` (CamelCase when not in REASONS)."""
    if what in REASONS:
        return REASONS[what]
    return "".join(part.capitalize() for part in what.replace("_", "-").split("-")), "Normal"


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%MZ")


@dataclass(slots=True)
class _Posted:
    """An Event already written, for aggregating repeats."""

    namespace: str
    name: str
    count: int


class HubObserver:
    """Turns a hub controller's new HubEvents into Events, and its state into metrics."""

    def __init__(
        self,
        controller: HubController,
        metrics: HubMetrics | None = None,
        *,
        identity: str = "",
        record_events: bool = True,
    ) -> None:
        self.controller = controller
        if metrics is not None:  # one registry: the controller records its phases in it
            controller.metrics = metrics
        self.metrics = controller.metrics
        self.identity = identity or _COMPONENT
        self.record_events = record_events
        self.handled = 0
        """How many of ``controller.events`` were turned into Events already."""
        self._posted: OrderedDict[tuple[str, ...], _Posted] = OrderedDict()
        budget = controller.config.events
        #: the Event budget (``events.qps`` / ``.burst``; None: every Event is written): an
        #: Event past it, new or a repeat, is dropped and counted (annotations and conditions
        #: say the same)
        self.event_budget = bucket_or_none(budget.qps, budget.burst)
        self._cluster_uids: dict[str, str] = {}
        self._labels: dict[str, set[tuple[str, ...]]] = {}

    # -- the entry points -------------------------------------------------------------------

    async def reconcile(self) -> HubRound | None:
        """One ``controller.reconcile()``, timed, then :meth:`observe` (even if it failed)."""
        began = time.perf_counter()
        try:
            return await self.controller.reconcile()
        finally:
            self.metrics.reconcile_duration.observe(time.perf_counter() - began)
            await self.observe()

    async def observe(self) -> None:
        """Events for the HubEvents not handled yet; metrics from the controller's state."""
        events, dropped = self.controller.events, self.controller.events_dropped
        new = events[max(0, self.handled - dropped) :]  # (dropped unseen: not recorded)
        self.handled = dropped + len(events)
        for event in new:
            if self.record_events:
                await self._record(event)
        self._spoke_gauges()
        await self._workload_gauges()

    # -- Events -----------------------------------------------------------------------------

    def _message(self, event: HubEvent) -> str:
        cluster = event.cluster or "no spoke"
        round_ = self.controller.last_round
        decision = round_.decisions.get(event.key) if round_ is not None else None
        start = _when(decision.start) if decision is not None else "unknown"
        detail = f": {event.detail}" if event.detail else ""
        match event.what:
            case "planned":
                text = f"held for spoke {cluster}, planned start {start}{detail}"
            case "released":
                text = f"released to spoke {cluster} at {_when(event.at)}{detail}"
            case "suspended":
                text = f"suspended in spoke {cluster}, planned restart {start}{detail}"
            case "created-in-spoke":
                text = f"copy created in spoke {cluster}"
            case "removed-stale-copy":
                text = f"removed a copy of an older object of the same name from spoke {cluster}"
            case "recalled":
                text = (
                    f"spoke {cluster} stayed unreachable past spoke_lost_timeout_s; "
                    f"planned again{detail}"
                )
            case "cleaned":
                text = f"spoke copy deleted from spoke {cluster}"
            case "unreachable":
                text = f"spoke {cluster} does not answer; no new work goes there{detail}"
            case "forbidden":
                text = f"spoke {cluster} refuses the hub (RBAC); no new work goes there{detail}"
            case "healthy":
                text = f"spoke {cluster} answers; it gets work again"
            case "kubeconfig-refused":
                text = f"spoke {cluster}: kubeconfig refused, no client built{detail}"
            case what if what.startswith("finished-"):
                outcome = what.removeprefix("finished-")
                text = f"finished ({outcome}) in spoke {cluster}; status mirrored, copy deleted"
            case _:
                text = f"{event.what} (spoke {cluster}){detail}"
        return text[:_MESSAGE_CHARS]

    async def _involved(self, event: HubEvent) -> tuple[str, Obj]:
        """The Event's namespace and involvedObject."""
        parts = event.key.split("/", 2)
        if len(parts) == 3:
            kind, namespace, name = parts
            ref: Obj = {
                "apiVersion": API_VERSIONS.get(kind, "v1"),
                "kind": kind,
                "namespace": namespace,
                "name": name,
            }
            if event.uid:
                ref["uid"] = event.uid
            return namespace, ref
        ref = {
            "apiVersion": API_VERSIONS["CarbonCluster"],
            "kind": "CarbonCluster",
            "name": event.key,
        }
        uid = await self._cluster_uid(event.key)
        if uid:
            ref["uid"] = uid
        return _SPOKE_EVENTS_NAMESPACE, ref

    async def _cluster_uid(self, name: str) -> str:
        """The CarbonCluster's UID, so that ``kubectl describe`` matches (cached; "" if gone)."""
        if name not in self._cluster_uids:
            try:
                obj = await self.controller.hub.get(f"{CARBONCLUSTERS}/{name}")
            except CarbonshiftError:
                return ""
            self._cluster_uids[name] = str(obj["metadata"].get("uid", ""))
        return self._cluster_uids[name]

    async def _record(self, event: HubEvent) -> None:
        reason, type_ = event_reason(event.what)
        if self.event_budget is not None and not self.event_budget.take():
            self.metrics.events_dropped.labels(reason=reason).inc()
            return
        message = self._message(event)
        namespace, ref = await self._involved(event)
        stamp = format_utc(event.at)
        key = (namespace, ref["kind"], ref["name"], ref.get("uid", ""), reason, type_, message)
        hub = self.controller.hub
        posted = self._posted.get(key)
        try:
            if posted is not None:
                self._posted.move_to_end(key)
                try:
                    await hub.patch(
                        f"/api/v1/namespaces/{posted.namespace}/events/{posted.name}",
                        {"count": posted.count + 1, "lastTimestamp": stamp},
                    )
                    posted.count += 1
                    return
                except NotFoundError:  # expired (the API server keeps Events an hour)
                    self._posted.pop(key)
            created = await hub.create(
                f"/api/v1/namespaces/{namespace}/events",
                {
                    "apiVersion": "v1",
                    "kind": "Event",
                    "metadata": {"generateName": f"{ref['name']}.", "namespace": namespace},
                    "involvedObject": ref,
                    "reason": reason,
                    "message": message,
                    "type": type_,
                    "source": {"component": _COMPONENT},
                    "reportingComponent": HUB_COMPONENT,
                    "reportingInstance": self.identity,
                    "firstTimestamp": stamp,
                    "lastTimestamp": stamp,
                    "count": 1,
                },
            )
        except CarbonshiftError as exc:
            self.metrics.observer_errors.labels(stage="event").inc()
            _LOG.info("event %s on %s not recorded: %s", reason, event.key, exc)
            return
        self._posted[key] = _Posted(namespace, str(created["metadata"]["name"]), 1)
        while len(self._posted) > _AGGREGATE_CACHE:
            self._posted.popitem(last=False)

    # -- metrics ----------------------------------------------------------------------------

    def _set(self, gauge: Gauge, name: str, values: dict[tuple[str, ...], float]) -> None:
        """Set a labelled gauge to exactly ``values``; label sets no longer there are removed."""
        for labels, value in values.items():
            gauge.labels(*labels).set(value)
        for gone in self._labels.get(name, set()) - set(values):
            gauge.remove(*gone)
        self._labels[name] = set(values)

    def _spoke_gauges(self) -> None:
        now = self.controller.clock.now()
        spokes = self.controller.spokes
        self._set(
            self.metrics.spoke_healthy,
            "healthy",
            {(name,): 1.0 if s.healthy else 0.0 for name, s in spokes.items()},
        )
        self._set(
            self.metrics.spoke_capacity,
            "capacity",
            {(name, r): v for name, s in spokes.items() for r, v in s.capacity.items()},
        )
        self._set(
            self.metrics.forecast_age,
            "forecast_age",
            {
                (name,): max(0.0, (now - s.forecast_issued_at).total_seconds())
                for name, s in spokes.items()
                if s.forecast_issued_at is not None
            },
        )
        round_ = self.controller.last_round
        fresh = [f.freshness for f in (round_.forecasts.values() if round_ else ())]
        fresh_by_zone = {f.zone: f for f in fresh if f is not None}
        self._set(
            self.metrics.data_age,
            "data_age",
            {(z, f.source): f.data_age_s for z, f in fresh_by_zone.items()},
        )
        self._set(
            self.metrics.replayed,
            "replayed",
            {(z,): 1.0 if f.replayed else 0.0 for z, f in fresh_by_zone.items()},
        )
        for gone in set(self._cluster_uids) - set(spokes):
            self._cluster_uids.pop(gone)  # a CarbonCluster of that name again is a new object

    async def _workload_gauges(self) -> None:
        """Held and placed hub objects, by their annotations (as ``kubectl get`` shows them)."""
        hub = self.controller.hub
        lists: dict[Kind, list[Obj]] = {}
        sources: tuple[tuple[Kind, str, dict[str, str]], ...] = (
            ("Job", JOBS, {"labelSelector": f"{HUB_LABEL}=true"}),
            ("Workload", WORKLOADS, {}),
            ("AppWrapper", APPWRAPPERS, {}),
        )
        for kind, path, query in sources:
            try:
                lists[kind] = await hub.list_items(path, **query)
            except NotFoundError:  # the kind is not installed on this hub
                lists[kind] = []
            except CarbonshiftError as exc:
                self.metrics.observer_errors.labels(stage="list").inc()
                _LOG.info("listing %s for metrics failed: %s", kind, exc)
                return  # keep the last values rather than publish a partial count
        held, placed = _tally(lists.items())
        self._set(self.metrics.held, "held", {(k,): float(held.get(k, 0)) for k in _KINDS})
        self._set(self.metrics.placed, "placed", {k: float(n) for k, n in placed.items()})


def _tally(
    lists: Iterable[tuple[Kind, list[Obj]]],
) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """(held by kind, placed by (kind, cluster)) of the hub objects the hub has planned."""
    held: dict[str, int] = {}
    placed: dict[tuple[str, str], int] = {}
    for kind, objs in lists:
        for obj in objs:
            meta = obj.get("metadata") or {}
            if HUB_UID_LABEL in (meta.get("labels") or {}) or is_finished(kind, obj):
                continue
            notes = meta.get("annotations") or {}
            if notes.get(PLACED_CLUSTER):
                key = (kind, str(notes[PLACED_CLUSTER]))
                placed[key] = placed.get(key, 0) + 1
            elif PLANNED_CLUSTER in notes:
                held[kind] = held.get(kind, 0) + 1
    return held, placed


class HubRunner:
    """Reconcile every ``resync_s`` of the clock while leading (:data:`DEFERRED_RERUN_S`
    after a pass that left plan writes to the next: ``hold_writes_per_pass``), and observe
    after each pass."""

    def __init__(
        self,
        observer: HubObserver,
        *,
        resync_s: float = 30.0,
        elector: LeaderElector | None = None,
    ) -> None:
        self.observer = observer
        self.controller = observer.controller
        self.resync_s = resync_s
        self.elector = elector
        self.passes = 0
        """Reconciles this runner started."""

    def _leading(self) -> bool:
        return self.elector is None or self.elector.is_leader.is_set()

    async def run(self) -> None:
        """Until cancelled (run the elector's own ``run()`` beside it)."""
        clock, metrics = self.controller.clock, self.observer.metrics
        while True:
            if not self._leading():
                assert self.elector is not None
                metrics.leader.set(0)
                _LOG.info("%s waits for the hub lease", self.elector.identity)
                await self.elector.is_leader.wait()
            metrics.leader.set(1)
            self.passes += 1
            try:
                await self.observer.reconcile()
            except CarbonshiftError as exc:
                self.controller.tally("errors")
                _LOG.warning("hub reconcile failed: %s", exc)
            except Exception:  # a bug must not stop the hub: log it, count it, go on
                self.controller.tally("errors")
                _LOG.exception("hub reconcile failed")
            wait_s = self.resync_s
            if self.controller.last_holds_deferred:  # plans left to the next pass: soon
                wait_s = min(wait_s, DEFERRED_RERUN_S)
            until = clock.now() + timedelta(seconds=wait_s)
            step = timedelta(
                seconds=self.elector.section.renew_every_s if self.elector else self.resync_s
            )
            while clock.now() < until and self._leading():
                await clock.sleep_until(min(until, clock.now() + step))
