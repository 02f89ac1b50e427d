"""What every phase of the hub shares: its state, the record of what it did, and the writes
all phases make (an annotation patch on a hub object).

The hub's pass is split by phase (docs/design/0007-kind-adapters.md): :mod:`.inventory`
(spokes and hub objects), :mod:`.mirroring` (spoke copies of hub Jobs), :mod:`.acting` (hold,
release, suspend), and :mod:`.hub`, which plans and runs the numbered pipeline. Each phase is
a mixin over :class:`HubState`; :class:`~carbonshift.k8s.multicluster.hub.HubController`
puts them together.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from carbonshift.k8s.client import NotFoundError
from carbonshift.k8s.clock import Clock
from carbonshift.k8s.config import ControllerConfig
from carbonshift.k8s.informer import Informer, namespaced_key
from carbonshift.k8s.intent import NotHeld
from carbonshift.k8s.kinds import HubKind
from carbonshift.k8s.multicluster.api import HubApi
from carbonshift.k8s.multicluster.config import HubConfig
from carbonshift.k8s.multicluster.metrics import HubMetrics
from carbonshift.k8s.multicluster.workloads import STANDING_KEYS, HubWorkload, state_label
from carbonshift.k8s.planner import CarbonSource

if TYPE_CHECKING:
    from carbonshift.carbon.series import CarbonSeries
    from carbonshift.k8s.multicluster.inventory import Spoke
    from carbonshift.k8s.multicluster.plan import HubRound

__all__ = ["MAX_EVENTS", "Connector", "HubCounters", "HubEvent", "HubState", "stamp"]

LOG = logging.getLogger("carbonshift.k8s.hub")
MAX_EVENTS = 10_000
"""Events the controller keeps in memory (the observer turns them into Events as they come)."""
Obj = dict[str, Any]
Connector = Callable[[str, Clock], Awaitable[HubApi]]


def stamp(moment: datetime) -> str:
    """RFC 3339, whole seconds, UTC (as the hub writes every time).

    A UTC moment's text is remembered (:data:`_STAMPS`): a pass stamps the same few planned
    starts and its "now" thousands of times (20,000 ``strftime`` calls at a start over
    10,000 hub Jobs, bench/hub.md "Per-request CPU at the start")."""
    if moment.tzinfo is not UTC:
        return moment.strftime(_STAMP)
    found = _STAMPS.get(moment)
    if found is None:
        if len(_STAMPS) >= _STAMPS_KEPT:
            _STAMPS.clear()
        found = _STAMPS[moment] = moment.strftime(_STAMP)
    return found


_STAMP = "%Y-%m-%dT%H:%M:%SZ"
_STAMPS: dict[datetime, str] = {}
"""Texts of UTC moments :func:`stamp` wrote (a moment in another zone is written afresh)."""
_STAMPS_KEPT = 4096


@dataclass(frozen=True, slots=True)
class HubEvent:
    """Something the hub did, for logs, metrics and tests."""

    at: datetime
    key: str
    """``Kind/namespace/name`` of the hub object (the spoke's name for spoke events)."""
    what: str
    cluster: str = ""
    detail: str = ""
    uid: str = ""
    """The hub object's UID (empty for spoke events), so an Event can name it."""


@dataclass(slots=True)
class HubCounters:
    """What the hub did since it started (the observer exports the increments)."""

    plans: int = 0
    releases: int = 0
    spoke_creates: int = 0
    adopted: int = 0
    mirrored: int = 0
    cleaned: int = 0
    suspended: int = 0
    recalled: int = 0
    conflicts: int = 0
    errors: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)


_METRICS: dict[str, Callable[[HubMetrics, dict[str, str]], Any]] = {
    "plans": lambda m, _: m.plans,
    "releases": lambda m, labels: m.releases.labels(**labels),
    "spoke_creates": lambda m, _: m.spoke_copies.labels(action="created"),
    "adopted": lambda m, _: m.spoke_copies.labels(action="adopted"),
    "cleaned": lambda m, _: m.spoke_copies.labels(action="cleaned"),
    "mirrored": lambda m, _: m.mirrored,
    "suspended": lambda m, labels: m.suspensions.labels(**labels),
    "recalled": lambda m, labels: m.recalls.labels(**labels),
    "conflicts": lambda m, _: m.conflicts,
    "errors": lambda m, _: m.errors,
}
"""The Prometheus metric of each :class:`HubCounters` field."""


class HubState:
    """The state every phase reads and writes; :class:`HubController` sets it up."""

    config: HubConfig
    hub: HubApi
    clock: Clock
    metrics: HubMetrics
    spokes: dict[str, Spoke]
    sources: dict[str, CarbonSource]
    last_round: HubRound | None
    events: list[HubEvent]
    events_dropped: int
    counters: HubCounters
    _connector: Connector
    _series: dict[str, CarbonSeries]
    _cconfig: ControllerConfig
    _inventory: dict[str, Obj]
    _caches: dict[str, Informer]
    """The hub's watch-fed caches of its objects, by collection path."""
    _absent: set[str]
    """Collections the hub found not installed this pass."""
    _reads: dict[tuple[str, str], tuple[tuple[str, ...], HubWorkload | NotHeld]]
    """What :meth:`InventoryPhase._collect` read of each object it saw last, by (kind, uid):
    the version read (the object's resourceVersion, its owners', and the time if it has no
    creation time) and the read."""
    _written: dict[tuple[str, str], tuple[str, Mapping[str, str | None], Mapping[str, str]]]
    """The hub's own annotation writes since the last collect, by (kind, uid): the version
    written to, the annotations and labels written (the next collect carries the read of
    that version across the write: :meth:`InventoryPhase._collect`)."""
    _check_names: frozenset[str] = frozenset()
    """Names of the Kueue AdmissionChecks this hub answers (found each pass)."""
    after_list: Callable[[], None] | None = None
    """Called once the first list of each kind of hub object is stored (``carbonshift
    hub``'s :func:`carbonshift.k8s.heap.settle`; None: nothing)."""

    def _event(
        self,
        now: datetime,
        key: str,
        what: str,
        cluster: str = "",
        detail: str = "",
        uid: str = "",
    ) -> None:
        self.events.append(HubEvent(now, key, what, cluster, detail, uid))
        if len(self.events) > MAX_EVENTS:  # a long-running hub keeps a bounded history
            drop = len(self.events) - MAX_EVENTS // 2
            del self.events[:drop]
            self.events_dropped += drop
        LOG.info("%s %s %s %s", key, what, cluster, detail)

    def tally(self, name: str, **labels: str) -> None:
        """Count one ``name`` (a :class:`HubCounters` field) where it happens: in
        :attr:`counters` and in its Prometheus metric (``labels``: the metric's labels)."""
        setattr(self.counters, name, getattr(self.counters, name) + 1)
        metric = _METRICS.get(name)
        if metric is not None:
            metric(self.metrics, labels).inc()

    def _healthy(self) -> dict[str, Spoke]:
        return {n: s for n, s in self.spokes.items() if s.healthy}

    async def _cached(self, adapter: HubKind) -> list[Obj] | None:
        """The hub objects of ``adapter``'s kind as the hub's watch on them keeps them (the
        first call lists them and starts the watch; a failed watch relists on its own); None
        while the kind is not installed on the hub (asked again next pass, once)."""
        path = adapter.path()
        if path in self._absent:
            return None
        informer = self._caches.get(path)
        first = informer is None or not informer.listed
        if informer is None:
            informer = Informer(self.hub, path, kind=adapter.kind, api_version=adapter.api_version)
            self._caches[path] = informer
        if not informer.running or informer.failing:
            try:
                await informer.relist()
            except NotFoundError:
                self._absent.add(path)
                return None
            if first and self.after_list is not None:
                self.after_list()
            informer.start(self.clock.backoff)
        return list(informer.items.values())

    def _kept(self, adapter: HubKind, answer: Obj) -> Obj:
        """Keep a write's answer for hub object of ``adapter``'s kind in its cache (unless the
        watch brought a newer version); answers ``answer``."""
        informer = self._caches.get(adapter.path())
        if informer is not None:
            informer.keep(namespaced_key(answer), answer)
        return answer

    async def _annotate(self, w: HubWorkload, annotations: Mapping[str, str | None]) -> Obj:
        """Merge ``annotations`` (None deletes) and the state label into hub object ``w``;
        no request when the object already says all that."""
        meta = w.obj["metadata"]
        current = meta.get("annotations") or {}
        labels = state_label(annotations).get("labels", {})
        if all(current.get(k) == v for k, v in annotations.items()) and all(
            (meta.get("labels") or {}).get(k) == v for k, v in labels.items()
        ):
            return w.obj
        body = {
            "metadata": {
                "resourceVersion": meta["resourceVersion"],
                "annotations": dict(annotations),
                **state_label(annotations),
            }
        }
        answer = await self.hub.patch(w.adapter.path(meta["namespace"], meta["name"]), body)
        self._kept(w.adapter, answer)
        if annotations.keys() <= STANDING_KEYS:  # the next collect may carry its read
            written = (str(meta["resourceVersion"]), annotations, labels)
            self._written[(w.kind, w.uid)] = written
        return answer

    def _lost(self, name: str, now: datetime) -> str | None:
        """Why work placed in spoke ``name`` counts as lost now (None: it is not)."""
        spoke = self.spokes.get(name)
        if spoke is None:
            return f"spoke {name} is no longer in the inventory"
        since = spoke.down_since
        if spoke.healthy or spoke.health != "Unreachable" or since is None:
            return None
        if (now - since).total_seconds() < self.config.spoke_lost_timeout_s:
            return None
        return f"spoke {name} has not answered since {stamp(since)}"
