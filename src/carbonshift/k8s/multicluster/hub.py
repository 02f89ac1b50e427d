"""The hub controller: one reconcile = inventory, collect, mirror, plan, act, clean up.

:meth:`HubController.reconcile` is level-triggered and keeps no state that matters between
calls: where a workload went is written on the hub object (``carbonshift.io/placed-cluster``,
before the spoke copy is created, so a restart finds it), and a spoke copy carries the hub
object's UID as a label (``carbonshift.io/hub-uid``), so a restarted hub adopts the copy it
finds instead of creating a second one. :meth:`run` calls it every ``resync_s`` through the
clock seam.

Pipeline of one reconcile (Kueue's ``schedule()`` shape):

1. **inventory**: read every ``CarbonCluster``, connect to each spoke through its kubeconfig
   Secret, read its nodes' capacity; a spoke that does not answer is Unreachable and gets no
   new work; status (capacity, health, forecast age) is written back;
2. **collect** opted-in hub objects of the three kinds (:mod:`.workloads`);
3. **mirror**: for placed hub Jobs, create the spoke copy if missing, mirror its status back,
   and on completion write the hub Job's final status and delete the copy;
4. **plan**: once per slot (and when new work arrives or a spoke's health changes), one
   planning call over every held workload of every kind on every healthy spoke
   (:func:`.plan.plan_hub`); interruptible running work is planned again too;
5. **act**: write the plan on each held object (planned cluster, start, reason); release what
   starts now (Job: copy to the spoke; Kueue: check Ready + nominatedClusterNames;
   AppWrapper: gate removed + targetCluster); hold the rest (Kueue: check Retry with
   ``requeueAfterSeconds`` up to the planned start); suspend interruptible work the plan
   moves to later;
6. **clean up** spoke copies whose hub object is gone or finished.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from carbonshift.carbon.series import CarbonSeries
from carbonshift.errors import CarbonshiftError, InputError
from carbonshift.k8s.client import ConflictError, ForbiddenError, NotFoundError
from carbonshift.k8s.clock import Clock
from carbonshift.k8s.intent import NotHeld
from carbonshift.k8s.keys import ANNOTATION_PREFIX, HUB_LABEL, MANAGED_LABEL, RUNTIME
from carbonshift.k8s.multicluster.api import HubApi, connect_kubeconfig_text
from carbonshift.k8s.multicluster.config import HubConfig
from carbonshift.k8s.multicluster.inventory import (
    CARBONCLUSTERS,
    Spoke,
    check_spoke_kubeconfig,
    kubeconfig_from_secret,
    others_requests,
    parse_kubeconfig,
    parse_spoke,
)
from carbonshift.k8s.multicluster.plan import (
    Decision,
    HubRound,
    Pending,
    Placed,
    SpokeView,
    plan_hub,
)
from carbonshift.k8s.multicluster.workloads import (
    APPWRAPPERS,
    DONE_SECONDS,
    HOLD_GATE,
    HUB_UID_LABEL,
    JOBS,
    LOST_FROM,
    PLACED_CLUSTER,
    PLANNED_CLUSTER,
    PLANNED_START,
    QUEUE_LABEL,
    REASON,
    RELEASED_AT,
    REMAINING,
    SPOKE_STATUS,
    STATE_LABEL,
    WORKLOADS,
    HubWorkload,
    Kind,
    condition_true,
    pod_demand,
    read_workload,
    spoke_job_names,
    state_label,
)
from carbonshift.k8s.nodes import fits_a_node, usable_allocatables
from carbonshift.k8s.owned import owned_fields
from carbonshift.k8s.planner import (
    CarbonSource,
    carbon_source_for,
    data_used,
    reason_shape,
    slot_floor,
)
from carbonshift.units import parse_utc

__all__ = ["MAX_EVENTS", "Connector", "HubController", "HubEvent", "held_change"]

_LOG = logging.getLogger("carbonshift.k8s.hub")
MAX_EVENTS = 10_000
"""Events the controller keeps in memory (the observer turns them into Events as they come)."""
Obj = dict[str, Any]
Connector = Callable[[str, Clock], Awaitable[HubApi]]
_TEMPLATE_LABELS = (
    "batch.kubernetes.io/controller-uid",
    "batch.kubernetes.io/job-name",
    "controller-uid",
    "job-name",
)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _path(kind: Kind, namespace: str, name: str = "") -> str:
    base = {"Job": JOBS, "Workload": WORKLOADS, "AppWrapper": APPWRAPPERS}[kind]
    group, plural = base.rsplit("/", 1)
    tail = f"/{name}" if name else ""
    return f"{group}/namespaces/{namespace}/{plural}{tail}"


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
class _Counters:
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


class HubController:
    """Places opted-in hub workloads in spokes (see the module doc)."""

    def __init__(
        self,
        config: HubConfig,
        hub: HubApi,
        clock: Clock,
        *,
        connector: Connector = connect_kubeconfig_text,
        series: Mapping[str, CarbonSeries] | None = None,
    ) -> None:
        self.config = config
        self.hub = hub
        self.clock = clock
        self._connector = connector
        self._series = dict(series or {})
        self._cconfig = config.controller_config()
        self.spokes: dict[str, Spoke] = {}
        self.sources: dict[str, CarbonSource] = {}
        self.last_round: HubRound | None = None
        #: (slot start, releases planned in it): the release rate limit's count
        self._slot_releases: tuple[datetime | None, int] = (None, 0)
        self.last_plan_s: float | None = None
        """Wall seconds the last planning call took (for the observer's histogram)."""
        self._planned_slot: datetime | None = None
        self._planned_keys: frozenset[str] = frozenset()
        self._planned_spokes: frozenset[str] = frozenset()
        self.events: list[HubEvent] = []
        """What the hub did, oldest first; the oldest half goes past :data:`MAX_EVENTS`."""
        self.events_dropped = 0
        """How many events were dropped from the front of :attr:`events` so far."""
        self.counters = _Counters()
        self._inventory: dict[str, Obj] = {}

    # -- helpers ----------------------------------------------------------------------------

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
        _LOG.info("%s %s %s %s", key, what, cluster, detail)

    async def close(self) -> None:
        for spoke in self.spokes.values():
            if spoke.api is not None:
                await spoke.api.close()
                spoke.api = None

    # -- 1. inventory -----------------------------------------------------------------------

    def _source(self, name: str, zone: str) -> CarbonSource:
        source = self.sources.get(name)
        if source is None:
            config = self.config.controller_config(zone)
            series = self._series.get(zone)  # planning.carbon_source, unless tests give data
            source = carbon_source_for(config) if series is None else CarbonSource(config, series)
            self.sources[name] = source
        return source

    async def _refresh_spokes(self, now: datetime) -> None:
        objects = await self.hub.list_items(CARBONCLUSTERS)
        self._inventory = {}
        seen: set[str] = set()
        for obj in objects:
            name = str(obj["metadata"]["name"])
            seen.add(name)
            spoke = self.spokes.get(name)
            try:
                spec = parse_spoke(obj)
            except InputError as exc:  # no work goes to a spoke we cannot describe
                if spoke is not None:
                    self.spokes.pop(name)
                    if spoke.api is not None:
                        await spoke.api.close()
                await self._write_status(obj, health="Misconfigured", message=str(exc), now=now)
                continue
            if spoke is None or spoke.spec != spec:
                if spoke is not None and spoke.api is not None:
                    await spoke.api.close()
                spoke = Spoke(spec=spec, last_contact=_status_time(obj, "lastContactTime"))
                if (obj.get("status") or {}).get("health") == "Unreachable":  # a restart
                    spoke.down_since = _status_time(obj, "downSince")
                self.spokes[name] = spoke
            await self._contact(spoke, now)
            try:
                self._source(name, spec.zone)
            except InputError as exc:  # e.g. a zone without carbon data: no work goes there
                spoke.healthy, spoke.health, spoke.message = False, "Misconfigured", str(exc)
            self._inventory[name] = obj
        for gone in set(self.spokes) - seen:
            old = self.spokes.pop(gone)
            if old.api is not None:
                await old.api.close()

    async def _spoke_secret(self, name: str) -> Any:
        """The kubeconfig Secret ``name``; the hub may read only the Secrets its Role names
        (``resourceNames``), so a refusal here is the hub's RBAC, not the spoke's."""
        path = f"/api/v1/namespaces/{self.config.namespace}/secrets/{name}"
        try:
            return await self.hub.get(path)
        except ForbiddenError as exc:
            raise InputError(
                f"the hub may not read Secret {self.config.namespace}/{name}: add {name!r} to "
                "resourceNames of Role carbonshift-hub-secrets (deploy/hub/rbac.yaml; Helm: "
                f"hub.spokeSecrets) ({str(exc)[:200]})"
            ) from exc

    async def _contact(self, spoke: Spoke, now: datetime) -> None:
        spec = spoke.spec
        try:
            secret = await self._spoke_secret(spec.secret_name)
            text = kubeconfig_from_secret(secret, spec.secret_key)
            if spoke.api is None or text != spoke.kubeconfig:
                if spoke.api is not None:
                    await spoke.api.close()
                    spoke.api = None
                try:  # before any client exists: no plugin runs, no hub file is read
                    check_spoke_kubeconfig(
                        parse_kubeconfig(text), allow_insecure_tls=spec.allow_insecure_tls
                    )
                except InputError as exc:
                    if spoke.message != str(exc):
                        self._event(now, spec.name, "kubeconfig-refused", spec.name, str(exc))
                    spoke.kubeconfig = ""
                    raise
                spoke.api = await self._connector(text, self.clock)
                spoke.kubeconfig = text
            nodes = await spoke.api.list_items("/api/v1/nodes")
            spoke.nodes = usable_allocatables(nodes, self.config.resources)
            spoke.capacity = {
                r: sum(node[r] for node in spoke.nodes) for r in self.config.resources
            }
            spoke.pods = await spoke.api.list_items(  # only what can still use room
                "/api/v1/pods",
                fieldSelector="spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed",
            )
        except NotFoundError as exc:
            spoke.healthy, spoke.health, spoke.message = False, "Misconfigured", str(exc)
            return
        except ForbiddenError as exc:
            # The spoke answers, but its RBAC refuses us: a misconfiguration, never an outage.
            # It gets no new work; what is placed there stays (not recalled: down_since off).
            message = (
                f"the hub's identity in spoke {spec.name} cannot {exc.denied()}; grant it in "
                f"spoke-rbac.yaml ({str(exc)[:300]})"
            )
            if spoke.health != "Forbidden":
                self._event(now, spec.name, "forbidden", spec.name, message)
            spoke.failures, spoke.down_since = 0, None
            spoke.healthy, spoke.health, spoke.message = False, "Forbidden", message
            return
        except InputError as exc:
            spoke.healthy, spoke.health, spoke.message = False, "Misconfigured", str(exc)
            return
        except CarbonshiftError as exc:
            spoke.failures += 1
            if spoke.failures >= self.config.spoke_timeout_failures:
                if spoke.healthy:
                    self._event(now, spec.name, "unreachable", spec.name, str(exc)[:200])
                if spoke.down_since is None:
                    spoke.down_since = now
                spoke.healthy, spoke.health = False, "Unreachable"
                spoke.message = f"no answer: {str(exc)[:200]}"
            return
        if not spoke.healthy:
            self._event(now, spec.name, "healthy", spec.name)
        spoke.failures = 0
        spoke.down_since = None
        spoke.healthy, spoke.health, spoke.message = True, "Healthy", "answering"
        spoke.last_contact = now

    async def _write_spoke_status(self, obj: Obj, spoke: Spoke, now: datetime) -> None:
        age = None
        if spoke.forecast_issued_at is not None:
            age = int((now - spoke.forecast_issued_at).total_seconds())
        await self._write_status(
            obj,
            health=spoke.health,
            message=spoke.message,
            now=now,
            capacity=spoke.capacity,
            others=spoke.others,
            last_contact=spoke.last_contact,
            down_since=spoke.down_since,
            forecast_age_s=age,
        )

    async def _write_status(
        self,
        obj: Obj,
        *,
        health: str,
        message: str,
        now: datetime,
        capacity: Mapping[str, float] | None = None,
        others: Mapping[str, float] | None = None,
        last_contact: datetime | None = None,
        down_since: datetime | None = None,
        forecast_age_s: int | None = None,
    ) -> None:
        """Write a CarbonCluster's status when it changed (a conflict waits for next pass)."""
        status: Obj = {"health": health, "message": message, "capacity": dict(capacity or {})}
        if others is not None:
            status["othersRequests"] = dict(others)
        if last_contact is not None:
            status["lastContactTime"] = _stamp(last_contact)
        if down_since is not None:
            status["downSince"] = _stamp(down_since)
        if forecast_age_s is not None:
            status["forecastAgeSeconds"] = forecast_age_s
        status["conditions"] = [
            {
                "type": "Ready",
                "status": "True" if health == "Healthy" else "False",
                "reason": health,
                "message": message,
                "lastTransitionTime": _stamp(last_contact or now),
            }
        ]
        old = dict(obj.get("status") or {})
        old_ready = [c for c in old.get("conditions") or [] if c.get("type") == "Ready"]
        if old_ready and old_ready[0].get("status") == status["conditions"][0]["status"]:
            status["conditions"][0]["lastTransitionTime"] = old_ready[0].get("lastTransitionTime")
        merged = {**old, **status}
        if down_since is None:
            merged.pop("downSince", None)
        if merged == old:
            return
        body = copy.deepcopy(obj)
        body["status"] = merged
        try:
            await self.hub.replace(f"{CARBONCLUSTERS}/{obj['metadata']['name']}/status", body)
        except ConflictError:
            self.counters.conflicts += 1

    # -- 2. collect -------------------------------------------------------------------------

    async def _collect(self, now: datetime) -> list[HubWorkload]:
        jobs = await self.hub.list_items(JOBS)
        by_uid = {str(j["metadata"].get("uid")): j for j in jobs}
        found: list[HubWorkload] = []
        candidates: list[tuple[Kind, Obj]] = [
            ("Job", j)
            for j in jobs
            if (j["metadata"].get("labels") or {}).get(HUB_LABEL) == "true"  # the hub's Jobs only
            and QUEUE_LABEL not in (j["metadata"].get("labels") or {})
            and HUB_UID_LABEL not in (j["metadata"].get("labels") or {})
        ]
        extra: tuple[tuple[Kind, str], ...] = (("Workload", WORKLOADS), ("AppWrapper", APPWRAPPERS))
        for kind, path in extra:
            try:
                items = await self.hub.list_items(path)
            except NotFoundError:  # the kind is not installed on this hub
                continue
            candidates += [(kind, o) for o in items if self._ours(kind, o)]
        for kind, obj in candidates:
            try:
                seen = read_workload(kind, obj, self._cconfig, now, by_uid)
            except Exception:  # one malformed object must not stop every pass
                self.counters.errors += 1
                _LOG.exception("reading %s %s failed; left alone", kind, _name_of(obj))
                continue
            if isinstance(seen, NotHeld):
                if seen.unusable:
                    self.counters.errors += 1
                continue
            found.append(seen)
        return found

    def _ours(self, kind: Kind, obj: Obj) -> bool:
        annotations = obj["metadata"].get("annotations") or {}
        if PLACED_CLUSTER in annotations or DONE_SECONDS in annotations:
            return True
        if kind == "AppWrapper":
            return HOLD_GATE in _gates(obj)
        return self._our_check(obj) is not None

    def _our_check(self, workload: Obj) -> Obj | None:
        for check in (workload.get("status") or {}).get("admissionChecks") or []:
            if check.get("name") in self._check_names:
                return dict(check)
        return None

    _check_names: frozenset[str] = frozenset()

    async def _refresh_checks(self, now: datetime) -> None:
        """Find our AdmissionChecks and mark them Active (Kueue deactivates queues otherwise)."""
        try:
            checks = await self.hub.list_items("/apis/kueue.x-k8s.io/v1beta2/admissionchecks")
        except NotFoundError:
            return
        names = set()
        for check in checks:
            if (check.get("spec") or {}).get(
                "controllerName"
            ) != self.config.admission_check_controller:
                continue
            names.add(str(check["metadata"]["name"]))
            if condition_true(check, "Active"):
                continue
            body = copy.deepcopy(check)
            body.setdefault("status", {})["conditions"] = [
                c
                for c in (check.get("status") or {}).get("conditions") or []
                if c.get("type") != "Active"
            ] + [
                {
                    "type": "Active",
                    "status": "True",
                    "reason": "Active",
                    "message": "carbonshift hub controller is answering this check",
                    "lastTransitionTime": _stamp(now),
                    "observedGeneration": check["metadata"].get("generation", 1),
                }
            ]
            try:
                await self.hub.replace(
                    f"/apis/kueue.x-k8s.io/v1beta2/admissionchecks/{check['metadata']['name']}/status",
                    body,
                )
            except ConflictError:
                self.counters.conflicts += 1
        self._check_names = frozenset(names)

    # -- 3. mirror hub Jobs -----------------------------------------------------------------

    def _spoke_job(self, w: HubWorkload, cluster: str) -> Obj:
        job = w.obj
        meta, spec = job["metadata"], job.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        tmeta = template.setdefault("metadata", {})
        labels = {k: v for k, v in (tmeta.get("labels") or {}).items() if k not in _TEMPLATE_LABELS}
        tmeta["labels"] = labels
        tmeta.setdefault("annotations", {})[RUNTIME] = f"{int(w.remaining.total_seconds())}s"
        body_labels = {
            k: v
            for k, v in (meta.get("labels") or {}).items()
            if k not in (MANAGED_LABEL, HUB_LABEL)
        }
        body_labels[HUB_UID_LABEL] = w.uid
        body_labels[MANAGED_LABEL] = "false"  # a spoke's own carbonshift must not hold it again
        annotations = {
            k: v
            for k, v in (meta.get("annotations") or {}).items()
            if k.startswith(ANNOTATION_PREFIX)
        }
        annotations[PLACED_CLUSTER] = cluster
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "labels": body_labels,
                "annotations": annotations,
            },
            "spec": {
                **{k: spec[k] for k in ("parallelism", "completions", "backoffLimit") if k in spec},
                "suspend": False,
                "template": template,
            },
        }

    async def _ensure_copy(self, w: HubWorkload, spoke: Spoke, now: datetime) -> Obj | None:
        """The spoke copy of hub Job ``w``, created when missing; None when it cannot be."""
        assert spoke.api is not None
        meta = w.obj["metadata"]
        path = _path("Job", meta["namespace"], meta["name"])
        try:
            found = await spoke.api.get(path)
        except NotFoundError:
            found = None
        if found is not None:
            if (found["metadata"].get("labels") or {}).get(HUB_UID_LABEL) == w.uid:
                return found
            # a copy of an older hub object of the same name: remove it, create next time
            await spoke.api.delete(path)
            self._event(now, w.key, "removed-stale-copy", spoke.spec.name, uid=w.uid)
            return None
        # 409: it exists; 403: the identity may not create namespaces (spoke-rbac.yaml makes
        # that optional), so the operator creates them: try the Job either way
        with contextlib.suppress(ConflictError, ForbiddenError):
            await spoke.api.create(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": meta["namespace"]}},
            )
        try:
            created = await spoke.api.create(
                _path("Job", meta["namespace"]), self._spoke_job(w, spoke.spec.name)
            )
        except ConflictError:  # created meanwhile (another hub replica): adopt next time
            self.counters.adopted += 1
            return None
        except (ForbiddenError, NotFoundError) as exc:
            # a misconfigured spoke, not an outage: say what to grant, keep the work placed
            self.counters.errors += 1
            fix = (
                f"create namespace {meta['namespace']!r} there and bind ClusterRole "
                "carbonshift-spoke-jobs in it with a RoleBinding (deploy/hub/spoke-rbac.yaml)"
            )
            self._event(now, w.key, "copy-refused", spoke.spec.name, f"{exc}; {fix}", uid=w.uid)
            _LOG.warning(
                "spoke %s refused the copy of %s (%s): %s", spoke.spec.name, w.key, exc, fix
            )
            return None
        self.counters.spoke_creates += 1
        self._event(now, w.key, "created-in-spoke", spoke.spec.name, uid=w.uid)
        return created

    async def _mirror_jobs(self, now: datetime, workloads: list[HubWorkload]) -> None:
        for w in workloads:
            if w.kind != "Job" or w.state != "placed" or w.placed is None:
                continue
            spoke = self.spokes.get(w.placed)
            if spoke is None or not spoke.healthy or spoke.api is None:
                continue
            try:
                copy_ = await self._ensure_copy(w, spoke, now)
                if copy_ is None:
                    continue
                await self._mirror_one(w, spoke, copy_, now)
            except ConflictError:
                self.counters.conflicts += 1
            except CarbonshiftError as exc:
                self.counters.errors += 1
                _LOG.warning("mirroring %s from %s failed: %s", w.key, w.placed, exc)

    async def _mirror_one(self, w: HubWorkload, spoke: Spoke, remote: Obj, now: datetime) -> None:
        assert spoke.api is not None
        status = remote.get("status") or {}
        finished = condition_true(remote, "Complete") or condition_true(remote, "Failed")
        meta = w.obj["metadata"]
        if finished:
            fresh = await self.hub.get(_path("Job", meta["namespace"], meta["name"]))
            body = copy.deepcopy(fresh)
            hub_status = dict(fresh.get("status") or {})
            kept = [c for c in hub_status.get("conditions") or [] if c.get("type") == "Suspended"]
            hub_status.update(
                {
                    k: status[k]
                    for k in ("startTime", "completionTime", "succeeded", "failed")
                    if k in status
                }
            )
            hub_status["active"] = 0
            hub_status["conditions"] = kept + [
                c for c in status.get("conditions") or [] if c.get("type") != "Suspended"
            ]
            body["status"] = hub_status
            await self.hub.replace(_path("Job", meta["namespace"], meta["name"]) + "/status", body)
            self.counters.mirrored += 1
            outcome = "Complete" if condition_true(remote, "Complete") else "Failed"
            self._event(now, w.key, f"finished-{outcome.lower()}", spoke.spec.name, uid=w.uid)
            if await spoke.api.delete(_path("Job", meta["namespace"], meta["name"])):
                self.counters.cleaned += 1
            return
        summary = json.dumps(
            {
                "cluster": spoke.spec.name,
                "active": status.get("active", 0),
                "succeeded": status.get("succeeded", 0),
                "failed": status.get("failed", 0),
                "startTime": status.get("startTime"),
            },
            sort_keys=True,
        )
        if w.annotations.get(SPOKE_STATUS) != summary:
            await self._annotate(w, {SPOKE_STATUS: summary})

    async def _redrive_workloads(self, now: datetime, workloads: list[HubWorkload]) -> None:
        """Finish a Kueue release that a failure or restart cut between its writes."""
        for w in workloads:
            if w.kind != "Workload" or w.state != "placed" or w.placed is None:
                continue
            status = w.obj.get("status") or {}
            if condition_true(w.obj, "Admitted") or status.get("admission") is None:
                continue
            check = self._our_check(w.obj) or {}
            if check.get("state") == "Ready" and (
                status.get("clusterName") or status.get("nominatedClusterNames")
            ):
                continue
            reason = w.annotations.get(REASON, "released")
            try:
                await self._nominate(w, w.placed, reason, now)
            except CarbonshiftError as exc:
                self.counters.errors += 1
                _LOG.warning("re-driving %s failed: %s", w.key, exc)

    async def _nominate(self, w: HubWorkload, cluster: str, reason: str, now: datetime) -> None:
        """Our check Ready with podSetUpdates, then MultiKueue's nominatedClusterNames."""
        meta = w.obj["metadata"]
        annotations = {PLANNED_CLUSTER: cluster, RELEASED_AT: _stamp(now)}
        if w.done_s > 0:  # a resumed piece: podSetUpdates may only add keys, so a new one
            annotations[REMAINING] = f"{int(w.remaining.total_seconds())}s"
        await self._set_check(
            w,
            "Ready",
            reason,
            pod_set_updates=[
                {"name": ps.get("name", "main"), "annotations": annotations}
                for ps in (w.obj.get("spec") or {}).get("podSets") or [{"name": "main"}]
            ],
        )
        status = w.obj.get("status") or {}
        if status.get("clusterName"):
            return
        # Kueue requires external dispatchers to write nominatedClusterNames as
        # kueue-admission (kubernetes-sigs/kueue PR #5782), the manager Kueue's own
        # server-side applies of status.admission and the conditions use; an apply that
        # named only our field would delete those (the workload loses its quota
        # reservation). So, as Kueue's dispatcher (multikueue ``dispatcher.nominate`` ->
        # ``workload.PatchAdmissionStatus``, which applies the whole admission status):
        # read what the manager owns, set our field, apply it all, guarded by the
        # resourceVersion read (a 409 is retried next pass).
        path = _path("Workload", meta["namespace"], meta["name"])
        live = await self.hub.get(path)
        if (live.get("status") or {}).get("clusterName"):
            return  # dispatched meanwhile
        owned = owned_fields(live, self.config.field_manager, subresource="status")
        body_status = dict(owned.get("status") or {})
        body_status["nominatedClusterNames"] = [cluster]
        await self.hub.apply(
            path + "/status",
            {
                "apiVersion": live.get("apiVersion", "kueue.x-k8s.io/v1beta2"),
                "kind": "Workload",
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "resourceVersion": live["metadata"]["resourceVersion"],
                },
                "status": body_status,
            },
            self.config.field_manager,
        )

    # -- 4. plan ----------------------------------------------------------------------------

    def _pending(self, now: datetime, workloads: list[HubWorkload]) -> list[Pending]:
        """Work to plan, running work first, then in arrival order (as the simulator)."""
        pending: list[Pending] = []
        ordered = sorted(
            workloads, key=lambda w: (w.state != "placed", w.intent.created, w.intent.name, w.key)
        )
        healthy = self._healthy()
        for w in ordered:
            if w.state in ("held", "suspended"):
                pending.append(
                    Pending(
                        w.key,
                        dict(w.intent.demand),
                        w.remaining,
                        w.intent.deadline,
                        w.intent.created,
                        allowed=self._fitting(w, healthy),
                    )
                )
            elif (
                w.state == "placed"
                and w.interruptible
                and w.released_at is not None
                and w.placed in self._healthy()
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
        return pending

    def _fitting(self, w: HubWorkload, healthy: Mapping[str, Spoke]) -> frozenset[str] | None:
        """The healthy spokes with a node big enough for one pod of ``w`` (None: all)."""
        try:
            pod = pod_demand(w, self.config.resources)
        except InputError:
            return None  # read_intent accepted it; the spoke's scheduler will say
        fits = frozenset(n for n, s in healthy.items() if not s.nodes or fits_a_node(pod, s.nodes))
        return None if len(fits) == len(healthy) else fits

    def _healthy(self) -> dict[str, Spoke]:
        return {n: s for n, s in self.spokes.items() if s.healthy}

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

    def _plan(self, now: datetime, workloads: list[HubWorkload]) -> HubRound | None:
        pending = self._pending(now, workloads)
        keys = frozenset(p.key for p in pending)
        healthy = self._healthy()
        slot0 = slot_floor(now, self.config.planning.slot_minutes)
        due = (
            self._planned_slot != slot0
            or frozenset(healthy) != self._planned_spokes
            or (self.config.planning.plan_on_arrival and not keys <= self._planned_keys)
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
                s.spec.watts_per_unit,
                s.spec.pue,
                s.spec.embodied_g_per_unit_hour,
            )
            for name, s in sorted(healthy.items())
        ]
        moving = {p.key for p in pending if p.running_on is not None}
        if self._slot_releases[0] != slot0:
            self._slot_releases = (slot0, 0)
        last = self.last_round
        began = time.perf_counter()
        round_ = plan_hub(
            self.config,
            now,
            pending,
            views,
            self._placed(now, workloads, moving),
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
        for name, forecast in round_.forecasts.items():
            self.spokes[name].forecast_issued_at = forecast.issued_at
        self.counters.plans += 1
        self.last_round = round_
        self._planned_slot, self._planned_keys = slot0, keys
        self._planned_spokes = frozenset(healthy)
        return round_

    # -- 5. act -----------------------------------------------------------------------------

    async def _annotate(self, w: HubWorkload, annotations: Mapping[str, str | None]) -> Obj:
        meta = w.obj["metadata"]
        body = {
            "metadata": {
                "resourceVersion": meta["resourceVersion"],
                "annotations": dict(annotations),
                **state_label(annotations),
            }
        }
        return await self.hub.patch(_path(w.kind, meta["namespace"], meta["name"]), body)

    async def _act(self, now: datetime, workloads: list[HubWorkload], round_: HubRound) -> None:
        for w in workloads:
            decision = round_.decisions.get(w.key)
            if decision is None:
                continue
            try:
                if w.state == "placed":
                    if not decision.start_now:
                        await self._suspend(w, decision, now)
                    continue
                if decision.start_now and decision.cluster is not None:
                    await self._release(w, decision, now)
                else:
                    await self._hold(w, decision, now)
            except ConflictError:
                self.counters.conflicts += 1  # re-read and decided again next reconcile
            except CarbonshiftError as exc:
                self.counters.errors += 1
                _LOG.warning("acting on %s failed: %s", w.key, exc)

    async def _hold(self, w: HubWorkload, d: Decision, now: datetime) -> None:
        want = {
            PLANNED_CLUSTER: d.cluster or "",
            PLANNED_START: _stamp(d.start),
            REASON: d.reason,
        }
        labels = w.obj["metadata"].get("labels") or {}
        write, tell = held_change(w.annotations, labels.get(STATE_LABEL) == "held", want)
        if write:
            w = _with_obj(w, await self._annotate(w, want))
        if tell:
            self._event(now, w.key, "planned", d.cluster or "", d.reason, w.uid)
        if w.kind == "Job" and not (w.obj.get("spec") or {}).get("suspend"):
            meta = w.obj["metadata"]
            await self.hub.patch(
                _path("Job", meta["namespace"], meta["name"]),
                {
                    "metadata": {"resourceVersion": meta["resourceVersion"]},
                    "spec": {"suspend": True},
                },
            )
        if w.kind == "Workload":
            wait_s = max(
                1, min(self.config.max_requeue_s, math.ceil((d.start - now).total_seconds()))
            )
            await self._set_check(w, "Retry", d.reason, requeue_after_s=wait_s)

    async def _release(self, w: HubWorkload, d: Decision, now: datetime) -> None:
        cluster = d.cluster
        assert cluster is not None
        if w.kind == "Workload" and (w.obj.get("status") or {}).get("admission") is None:
            # evicted by an earlier Retry and not yet requeued: Kueue brings it back, then we
            # release it; until then, say so.
            await self._hold(w, d, now)
            return
        plan = {
            PLANNED_CLUSTER: cluster,
            PLANNED_START: _stamp(d.start),
            REASON: d.reason,
            PLACED_CLUSTER: cluster,
            RELEASED_AT: _stamp(now),
        }
        meta = w.obj["metadata"]
        if w.kind == "AppWrapper":
            gates = [g for g in _gates(w.obj) if g != HOLD_GATE]
            body = {
                "metadata": {
                    "resourceVersion": meta["resourceVersion"],
                    "annotations": plan,
                    **state_label(plan),
                },
                "spec": {
                    "dispatchingGates": gates,
                    "schedulingSpec": {
                        "clusterScheduling": {"policyResult": {"targetCluster": {"name": cluster}}}
                    },
                    **_with_remaining(w),
                },
            }
            await self.hub.patch(_path("AppWrapper", meta["namespace"], meta["name"]), body)
        else:
            updated = await self._annotate(w, plan)  # write-ahead: a restart finds it here
            w = _with_obj(w, updated)
        self.counters.releases += 1
        self._event(now, w.key, "released", cluster, d.reason, w.uid)
        if w.kind == "Workload":  # if this fails, _redrive_workloads finishes it
            await self._nominate(w, cluster, d.reason, now)
        if w.kind == "Job":  # the copy; if this fails, mirroring creates it next time
            spoke = self.spokes.get(cluster)
            if spoke is not None and spoke.healthy and spoke.api is not None:
                await self._ensure_copy(_with_state(w, "placed", cluster, now), spoke, now)

    async def _suspend(self, w: HubWorkload, d: Decision, now: datetime) -> None:
        """Stop interruptible running work the plan moves to later; count what it did.

        Job: the spoke copy is deleted. Kueue Workload: our check goes to ``Retry`` with
        ``requeueAfterSeconds`` up to the new start, which makes Kueue evict it (MultiKueue
        removes the worker's copy) and requeue it then. AppWrapper: our dispatching gate goes
        back on and the target cluster is cleared, so MCAD takes the wrapped resources back.
        The hub object is written first (``done-seconds``, the new plan), so a restart cut
        between the two writes finishes the hold from the annotations.
        """
        if w.placed is None or w.released_at is None:
            return
        spoke = self.spokes.get(w.placed)
        spoke_api = spoke.api if spoke is not None else None
        if w.kind == "Job" and spoke_api is None:
            return  # cannot stop the copy now; planned again next pass
        ran_s = max(0.0, (now - w.released_at).total_seconds())
        # the restart overhead of a resumed piece is not useful work
        useful_s = max(0.0, ran_s - (w.overhead.total_seconds() if w.done_s > 0 else 0.0))
        reason = f"suspended: {d.reason}"
        plan: dict[str, str | None] = {
            PLACED_CLUSTER: None,
            RELEASED_AT: None,
            SPOKE_STATUS: None,
            DONE_SECONDS: str(int(w.done_s + useful_s)),
            PLANNED_CLUSTER: d.cluster or "",
            PLANNED_START: _stamp(d.start),
            REASON: reason,
        }
        meta = w.obj["metadata"]
        if w.kind == "AppWrapper":
            await self._regate(w, plan)
        else:
            updated = await self._annotate(w, plan)
            if w.kind == "Job":
                assert spoke_api is not None
                await spoke_api.delete(_path("Job", meta["namespace"], meta["name"]))
            else:
                wait_s = max(
                    1, min(self.config.max_requeue_s, math.ceil((d.start - now).total_seconds()))
                )
                await self._set_check(
                    _with_obj(w, updated), "Retry", reason, requeue_after_s=wait_s
                )
        self.counters.suspended += 1
        self._event(now, w.key, "suspended", w.placed, d.reason, w.uid)

    async def _regate(self, w: HubWorkload, annotations: Mapping[str, str | None]) -> None:
        """Put our dispatching gate back on an AppWrapper and clear its target, in one patch."""
        meta = w.obj["metadata"]
        gates = [g for g in _gates(w.obj) if g != HOLD_GATE] + [HOLD_GATE]
        body = {
            "metadata": {
                "resourceVersion": meta["resourceVersion"],
                "annotations": dict(annotations),
                **state_label(annotations),
            },
            "spec": {
                "dispatchingGates": gates,
                "schedulingSpec": {"clusterScheduling": {"policyResult": None}},
            },
        }
        await self.hub.patch(_path("AppWrapper", meta["namespace"], meta["name"]), body)

    # -- a spoke that stays away ------------------------------------------------------------

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
        return f"spoke {name} has not answered since {_stamp(since)}"

    async def _recall_lost(self, now: datetime, workloads: list[HubWorkload]) -> None:
        """Plan again the hub Jobs placed in a spoke that stayed away too long.

        Only Jobs, whose copy the hub owns: MultiKueue does this for Kueue workloads itself
        (``workerLostTimeout``), and MCAD re-dispatches an AppWrapper only after it has taken
        the wrapped resources back from the old cluster, which it cannot do while that
        cluster is away. Whatever ran in the lost spoke is not counted (its progress is
        unknown); the copy there is deleted when the spoke answers again. Work that was in
        fact still running through the partition therefore runs twice: at least once, as
        MultiKueue.
        """
        if self.config.spoke_lost_timeout_s <= 0:
            return
        for w in workloads:
            if w.state != "placed" or w.placed is None or w.kind != "Job":
                continue
            why = self._lost(w.placed, now)
            if why is None:
                continue
            lost = ",".join(filter(None, [w.annotations.get(LOST_FROM), w.placed]))
            plan: dict[str, str | None] = {
                PLACED_CLUSTER: None,
                RELEASED_AT: None,
                SPOKE_STATUS: None,
                LOST_FROM: lost,
                REASON: f"{why}: planned again",
            }
            try:
                await self._annotate(w, plan)
            except ConflictError:
                self.counters.conflicts += 1
                continue
            except CarbonshiftError as exc:
                self.counters.errors += 1
                _LOG.warning("recalling %s from %s failed: %s", w.key, w.placed, exc)
                continue
            self.counters.recalled += 1
            self._event(now, w.key, "recalled", w.placed, plan[REASON] or "", w.uid)

    async def _set_check(
        self,
        w: HubWorkload,
        state: str,
        message: str,
        *,
        requeue_after_s: int | None = None,
        pod_set_updates: list[Obj] | None = None,
    ) -> None:
        """Write our entry of ``status.admissionChecks`` only (a conflict re-reads next time)."""
        meta = w.obj["metadata"]
        path = _path("Workload", meta["namespace"], meta["name"])
        fresh = await self.hub.get(path)
        status = dict(fresh.get("status") or {})
        if status.get("admission") is None:
            return  # Kueue only evaluates checks of workloads with quota reserved
        checks = [dict(c) for c in status.get("admissionChecks") or []]
        changed = False
        for check in checks:
            if check.get("name") not in self._check_names:
                continue
            want: Obj = {"state": state, "message": message[:1000]}
            if requeue_after_s is not None:
                want["requeueAfterSeconds"] = requeue_after_s
            if pod_set_updates is not None:
                want["podSetUpdates"] = pod_set_updates
            if any(check.get(k) != v for k, v in want.items()):
                if check.get("state") != state:
                    check["lastTransitionTime"] = _stamp(self.clock.now())
                check.update(want)
                if requeue_after_s is None:
                    check.pop("requeueAfterSeconds", None)
                changed = True
        if not changed:
            return
        body = copy.deepcopy(fresh)
        body["status"] = {**status, "admissionChecks": checks}
        await self.hub.replace(path + "/status", body)

    # -- 6. clean up ------------------------------------------------------------------------

    async def _collect_garbage(self, now: datetime, workloads: list[HubWorkload]) -> None:
        live = {w.uid: w.placed for w in workloads if w.kind == "Job" and w.state == "placed"}
        for name, spoke in self._healthy().items():
            if spoke.api is None:
                continue
            try:
                copies = await spoke.api.list_items(JOBS, labelSelector=HUB_UID_LABEL)
                for job in copies:
                    uid = (job["metadata"].get("labels") or {}).get(HUB_UID_LABEL)
                    if live.get(str(uid)) == name:
                        continue
                    meta = job["metadata"]
                    if await spoke.api.delete(_path("Job", meta["namespace"], meta["name"])):
                        self.counters.cleaned += 1
                        self._event(
                            now,
                            f"Job/{meta['namespace']}/{meta['name']}",
                            "cleaned",
                            name,
                            uid=str(uid or ""),
                        )
            except CarbonshiftError as exc:
                self.counters.errors += 1
                _LOG.warning("cleaning spoke %s failed: %s", name, exc)

    # -- the pipeline -----------------------------------------------------------------------

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
        await self._refresh_spokes(now)
        await self._refresh_checks(now)
        workloads = await self._collect(now)
        await self._mirror_jobs(now, workloads)
        await self._redrive_workloads(now, workloads)
        await self._recall_lost(now, workloads)
        workloads = await self._collect(now)
        round_ = self._plan(now, workloads)
        if round_ is None and self.last_round is not None:
            round_ = self._due_from_last(now)
        if round_ is not None:
            await self._act(now, workloads, round_)
        workloads = await self._collect(now)
        await self._collect_garbage(now, workloads)
        for name, obj in self._inventory.items():
            await self._write_spoke_status(obj, self.spokes[name], now)
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

    async def run(self, resync_s: float = 30.0) -> None:
        """Reconcile forever, every ``resync_s`` of the clock (errors are logged, not fatal)."""
        while True:
            try:
                await self.reconcile()
            except CarbonshiftError as exc:
                self.counters.errors += 1
                _LOG.warning("reconcile failed: %s", exc)
            except Exception:  # a bug must not stop the hub: log it, count it, go on
                self.counters.errors += 1
                _LOG.exception("reconcile failed")
            await self.clock.sleep_until(self.clock.now() + timedelta(seconds=resync_s))


def held_change(
    current: Mapping[str, str], labelled_held: bool, want: Mapping[str, str]
) -> tuple[bool, bool]:
    """(write the annotations, tell with a CarbonPlanned Event) for a held hub workload.

    As in the one-cluster controller: the planned cluster and start are written and told
    whenever they change; the reason is written when its wording changes (not its numbers,
    which follow the forecast every pass) and told when the data the plan used turn replayed,
    stale or fall-back, or back (issue 15).
    """
    reason_now, reason_wanted = current.get(REASON, ""), want[REASON]
    moved = not labelled_held or any(
        current.get(key) != want[key] for key in (PLANNED_CLUSTER, PLANNED_START)
    )
    reworded = reason_shape(reason_now) != reason_shape(reason_wanted)
    data_changed = data_used(reason_now) != data_used(reason_wanted)
    return moved or reworded or data_changed, moved or data_changed


def _name_of(obj: Obj) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return "?"
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _with_obj(w: HubWorkload, obj: Obj) -> HubWorkload:
    return HubWorkload(
        w.kind,
        obj,
        w.intent,
        w.state,
        w.placed,
        w.released_at,
        w.interruptible,
        w.overhead,
        w.done_s,
    )


def _with_state(w: HubWorkload, state: str, cluster: str, now: datetime) -> HubWorkload:
    return HubWorkload(
        w.kind, w.obj, w.intent, "placed", cluster, now, w.interruptible, w.overhead, w.done_s
    )


def _status_time(obj: Obj, name: str) -> datetime | None:
    """A time field of a CarbonCluster's status (None when absent or unreadable)."""
    raw = (obj.get("status") or {}).get(name)
    if not raw:
        return None
    try:
        return parse_utc(str(raw), what=name)
    except InputError:
        return None


def _with_remaining(w: HubWorkload) -> Obj:
    """The AppWrapper's wrapped Job templates with :data:`REMAINING` set (resumed work only).

    Answers the ``spec`` fields to merge: ``resources`` (multi-cluster MCAD) or
    ``components`` (the later AppWrapper controller); nothing for a first run.
    """
    if w.done_s <= 0:
        return {}
    spec = copy.deepcopy(w.obj.get("spec") or {})
    left = f"{int(w.remaining.total_seconds())}s"
    out: Obj = {}
    items = (spec.get("resources") or {}).get("GenericItems")
    if items:
        for item in items:
            _set_pod_annotation(item.get("generictemplate"), left)
        out["resources"] = spec["resources"]
    if spec.get("components"):
        for item in spec["components"]:
            _set_pod_annotation(item.get("template"), left)
        out["components"] = spec["components"]
    return out


def _set_pod_annotation(job: Any, left: str) -> None:
    if isinstance(job, dict) and job.get("kind") == "Job":
        template = job.setdefault("spec", {}).setdefault("template", {})
        template.setdefault("metadata", {}).setdefault("annotations", {})[REMAINING] = left


def _gates(aw: Obj) -> list[str]:
    """An AppWrapper's ``spec.dispatchingGates``: MCAD's ``[]DispatchingGate`` of strings."""
    return [str(g) for g in (aw.get("spec") or {}).get("dispatchingGates") or []]
