"""The spoke inventory: ``CarbonCluster`` objects on the hub, and a live view of each spoke.

A ``CarbonCluster`` (``carbonshift.io/v1alpha1``, cluster-scoped) names one spoke::

    spec:
      zone: DE                                 # grid zone of the embedded carbon data
      kubeconfigSecretRef: {name: spoke-de, key: kubeconfig}   # in the hub's namespace
      wattsPerUnit: {cpu: 10}                  # W per unit in use
      pue: 1.2
      embodiedGPerUnitHour: {cpu: 2.0}
      allowInsecureSkipTLSVerify: false        # true: accept insecure-skip-tls-verify
    status:
      health: Healthy | Unreachable | Misconfigured
      capacity: {cpu: 24}                      # Ready, schedulable nodes' allocatable
      lastContactTime, forecastAgeSeconds, message, conditions[Ready]

:func:`parse_spoke` reads the spec; :func:`check_spoke_kubeconfig` refuses a spoke
kubeconfig that could make the hub run a command or read its own files; :class:`Spoke` is
the controller's connection and what it last learnt. Capacity is in planning units (cpu
cores, memory GiB, gpu devices). :class:`InventoryPhase` is the hub's first phase: it
refreshes the spokes, finds the Kueue AdmissionChecks it answers, and collects the hub
objects of every kind it places.
"""

from __future__ import annotations

import base64
import binascii
import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

from carbonshift.errors import CarbonshiftError, InputError
from carbonshift.k8s.client import ConflictError, ForbiddenError, NotFoundError
from carbonshift.k8s.informer import Informer
from carbonshift.k8s.intent import NotHeld, only_written, requested
from carbonshift.k8s.keys import (
    API_VERSION,
    CRITICAL,
    DEADLINE,
    HOLD_GATE,
    HUB_LABEL,
    REASON,
    RUNTIME,
    STATE,
    STATE_LABEL,
    State,
)
from carbonshift.k8s.kinds import HUB_JOB, HUB_KINDS, condition_true
from carbonshift.k8s.kinds.appwrapper import APPWRAPPER
from carbonshift.k8s.kinds.kueue import GROUP_VERSION as KUEUE_GROUP_VERSION
from carbonshift.k8s.multicluster.api import HubApi
from carbonshift.k8s.multicluster.record import LOG, HubState, stamp
from carbonshift.k8s.multicluster.workloads import (
    HubWorkload,
    Kind,
    after_own_write,
    read_workload,
)
from carbonshift.k8s.nodes import usable_allocatables
from carbonshift.k8s.planner import CarbonSource, carbon_source_for
from carbonshift.units import parse_utc

__all__ = [
    "CARBONCLUSTERS",
    "InventoryPhase",
    "Spoke",
    "SpokeSpec",
    "check_spoke_kubeconfig",
    "others_requests",
    "parse_kubeconfig",
    "parse_spoke",
    "pod_requests",
]

Obj = dict[str, Any]
CARBONCLUSTERS = f"/apis/{API_VERSION}/carbonclusters"
_UNIT = {"memory": Decimal(2) ** 30}
_CHECKS = f"/apis/{KUEUE_GROUP_VERSION}/admissionchecks"


@dataclass(frozen=True, slots=True)
class SpokeSpec:
    """What a ``CarbonCluster`` says about one spoke."""

    name: str
    zone: str
    secret_name: str
    secret_key: str
    watts_per_unit: Mapping[str, float]
    pue: float
    embodied_g_per_unit_hour: Mapping[str, float]
    allow_insecure_tls: bool = False


def _floats(raw: Any, what: str) -> dict[str, float]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InputError(f"{what} is {raw!r}; write a mapping like {{cpu: 10}}")
    out: dict[str, float] = {}
    for key, value in raw.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = -1.0
        if not 0 <= number < math.inf:
            raise InputError(f"{what}.{key} is {value!r}; write a number >= 0")
        out[str(key)] = number
    return out


def parse_spoke(obj: Obj) -> SpokeSpec:
    """The spec of a ``CarbonCluster``; a bad field raises InputError naming it."""
    name = str((obj.get("metadata") or {}).get("name", ""))
    spec = obj.get("spec") or {}
    zone = spec.get("zone")
    if not zone:
        raise InputError(f"CarbonCluster {name!r}: spec.zone is missing; write e.g. zone: DE")
    ref = spec.get("kubeconfigSecretRef") or {}
    if not ref.get("name"):
        raise InputError(
            f"CarbonCluster {name!r}: spec.kubeconfigSecretRef.name is missing; name the "
            "Secret holding the spoke's kubeconfig"
        )
    try:
        pue = float(spec.get("pue", 1.0))
    except (TypeError, ValueError):
        pue = 0.0
    if not 1.0 <= pue < math.inf:
        raise InputError(f"CarbonCluster {name!r}: spec.pue {spec.get('pue')!r} must be >= 1")
    insecure = spec.get("allowInsecureSkipTLSVerify", False)
    if not isinstance(insecure, bool):
        raise InputError(
            f"CarbonCluster {name!r}: spec.allowInsecureSkipTLSVerify {insecure!r} is not "
            "true or false"
        )
    return SpokeSpec(
        name=name,
        zone=str(zone),
        secret_name=str(ref["name"]),
        secret_key=str(ref.get("key", "kubeconfig")),
        watts_per_unit=_floats(spec.get("wattsPerUnit"), f"CarbonCluster {name!r} wattsPerUnit"),
        pue=pue,
        embodied_g_per_unit_hour=_floats(
            spec.get("embodiedGPerUnitHour"), f"CarbonCluster {name!r} embodiedGPerUnitHour"
        ),
        allow_insecure_tls=insecure,
    )


def pod_requests(pod: Obj, resources: tuple[str, ...]) -> dict[str, float]:
    """A pod's requests in planning units (containers add up; a larger init container counts;
    limits stand in for missing requests), as the one-cluster controller reads them."""
    return requested({**pod, "kind": "Pod"}, resources)


def others_requests(
    pods: list[Obj], ours: set[tuple[str, str]], resources: tuple[str, ...]
) -> dict[str, float]:
    """What bound, unfinished pods that the hub did not place request, in planning units.

    ``ours`` holds the (namespace, Job name) of the work the hub placed in this spoke; a pod
    owned by one of those Jobs is already counted by the plan. A pod whose requests cannot
    be read is skipped (the spoke's scheduler will tell).
    """
    used = dict.fromkeys(resources, 0.0)
    for pod in pods:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed") or not (pod.get("spec") or {}).get(
            "nodeName"
        ):
            continue
        owners = {
            (str(meta.get("namespace", "")), str(ref.get("name")))
            for ref in meta.get("ownerReferences") or []
            if ref.get("kind") == "Job"
        }
        if owners & ours:
            continue
        try:
            asked = pod_requests(pod, resources)
        except InputError:
            continue
        for r in resources:
            used[r] += asked[r]
    return used


def kubeconfig_from_secret(secret: Obj, key: str) -> str:
    """The kubeconfig text stored under ``key`` of a Secret (``data`` is base64)."""
    data = secret.get("data") or {}
    name = (secret.get("metadata") or {}).get("name")
    if key not in data:
        raise InputError(f"Secret {name!r} has no key {key!r}; store the kubeconfig under it")
    try:
        return base64.b64decode(data[key], validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, TypeError) as exc:
        raise InputError(
            f"Secret {name!r} key {key!r} is not base64 of UTF-8 text ({exc}); store the "
            "kubeconfig file itself"
        ) from None


#: What a spoke kubeconfig may not say: each makes the hub run a program or read (and send
#: the spoke) a file of its own. Inline credentials (``token``, ``*-data``) are fine.
_REFUSED_USER_FIELDS = {
    "exec": "runs a command in the hub",
    "auth-provider": "runs an auth plugin in the hub",
    "tokenFile": "reads a file of the hub",
    "token-file": "reads a file of the hub",
    "client-certificate": "reads a file of the hub (use client-certificate-data)",
    "client-key": "reads a file of the hub (use client-key-data)",
}
_REFUSED_CLUSTER_FIELDS = {
    "certificate-authority": "reads a file of the hub (use certificate-authority-data)",
}


def _entries(parsed: Obj, section: str, field_name: str) -> list[tuple[str, Obj]]:
    entries = parsed.get(section) or []
    if not isinstance(entries, list):
        raise InputError(f"the spoke kubeconfig's {section} is not a list")
    out: list[tuple[str, Obj]] = []
    for entry in entries:
        body = entry.get(field_name) if isinstance(entry, dict) else None
        if not isinstance(body, dict):
            raise InputError(f"the spoke kubeconfig has a {section} entry without a {field_name}")
        out.append((str(entry.get("name", "")), body))
    return out


def parse_kubeconfig(text: str) -> Any:
    """The kubeconfig text of a Secret as data (YAML or JSON); InputError when neither."""
    import yaml  # type: ignore[import-untyped]  # kubernetes-asyncio depends on PyYAML

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"the spoke kubeconfig is not YAML or JSON: {exc}") from exc


def check_spoke_kubeconfig(parsed: Any, *, allow_insecure_tls: bool = False) -> None:
    """Refuse a spoke kubeconfig that could run commands or read files in the hub.

    A spoke kubeconfig comes from a Secret that a spoke administrator writes, and the hub
    builds a client from it: ``exec`` and ``auth-provider`` plugins would run in the hub,
    and ``tokenFile``, ``client-certificate``, ``client-key`` and ``certificate-authority``
    paths would read the hub's own files (its service-account token) and send them to the
    spoke. Only inline credentials are accepted. ``insecure-skip-tls-verify: true`` is
    refused unless the CarbonCluster sets ``allowInsecureSkipTLSVerify``. Raises
    :class:`~carbonshift.errors.InputError` naming the entry and the field, before any
    client exists.
    """
    if not isinstance(parsed, dict):
        raise InputError("the spoke kubeconfig is not a mapping; store a kubeconfig file")
    for name, user in _entries(parsed, "users", "user"):
        for key, why in _REFUSED_USER_FIELDS.items():
            if user.get(key) not in (None, "", {}):
                raise InputError(
                    f"the spoke kubeconfig's user {name!r} sets {key!r}, which {why}; the hub "
                    "accepts only inline credentials (token, client-certificate-data, "
                    "client-key-data)"
                )
    for name, cluster in _entries(parsed, "clusters", "cluster"):
        for key, why in _REFUSED_CLUSTER_FIELDS.items():
            if cluster.get(key) not in (None, ""):
                raise InputError(
                    f"the spoke kubeconfig's cluster {name!r} sets {key!r}, which {why}"
                )
        if cluster.get("insecure-skip-tls-verify") and not allow_insecure_tls:
            raise InputError(
                f"the spoke kubeconfig's cluster {name!r} sets insecure-skip-tls-verify; give "
                "certificate-authority-data, or set spec.allowInsecureSkipTLSVerify: true on "
                "the CarbonCluster to accept an unverified spoke"
            )


@dataclass(slots=True)
class Spoke:
    """One spoke as the hub sees it now."""

    spec: SpokeSpec
    api: HubApi | None = None
    kubeconfig: str = ""
    healthy: bool = False
    health: str = "Unknown"
    message: str = ""
    failures: int = 0
    capacity: dict[str, float] = field(default_factory=dict)
    """Allocatable of its Ready, schedulable nodes."""
    nodes: list[dict[str, float]] = field(default_factory=list)
    """Allocatable of each of those nodes (a pod must fit one)."""
    pods: list[Obj] = field(default_factory=list)
    """Its pods, as last listed (for what other work uses)."""
    others: dict[str, float] = field(default_factory=dict)
    """What pods the hub did not place request there (bound, unfinished), at the last plan."""
    last_contact: datetime | None = None
    forecast_issued_at: datetime | None = None
    down_since: datetime | None = None
    """When the spoke last turned Unreachable (None while it answers)."""
    kind_copies: dict[str, Informer] = field(default_factory=dict)
    """Its copies of hub objects (``hub-uid`` label) by kind, each kept by a watch on this
    connection."""
    absent_kinds: dict[str, datetime] = field(default_factory=dict)
    """Kinds of copies it does not serve, or the hub may not list, and since when (asked
    again after ``ABSENT_RETRY_S``, and on a new connection); no copy of them goes there."""
    namespaces: set[str] = field(default_factory=set)
    """Namespaces known to be there (created or found) on this connection."""

    @property
    def copies(self) -> Informer | None:
        """Its copies of hub Jobs."""
        return self.kind_copies.get("Job")

    async def disconnect(self) -> None:
        """Stop the watches on the copies and close the client (a new connection starts
        anew)."""
        for copies in self.kind_copies.values():
            await copies.stop()
        self.kind_copies = {}
        self.absent_kinds = {}
        self.namespaces = set()
        if self.api is not None:
            await self.api.close()
            self.api = None


class InventoryPhase(HubState):
    """Phase 1 of the hub's pass: what there is. Spokes (connect through each kubeconfig
    Secret, read capacity and health, write each ``CarbonCluster``'s status), the Kueue
    AdmissionChecks the hub answers, and the hub objects of every kind it places."""

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
                    await spoke.disconnect()
                await self._write_status(obj, health="Misconfigured", message=str(exc), now=now)
                continue
            if spoke is None or spoke.spec != spec:
                if spoke is not None:
                    await spoke.disconnect()
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
            await self.spokes.pop(gone).disconnect()

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
                await spoke.disconnect()
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
            status["lastContactTime"] = stamp(last_contact)
        if down_since is not None:
            status["downSince"] = stamp(down_since)
        if forecast_age_s is not None:
            status["forecastAgeSeconds"] = forecast_age_s
        status["conditions"] = [
            {
                "type": "Ready",
                "status": "True" if health == "Healthy" else "False",
                "reason": health,
                "message": message,
                "lastTransitionTime": stamp(last_contact or now),
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
            self.tally("conflicts")

    async def _refresh_checks(self, now: datetime) -> None:
        """Find our AdmissionChecks and mark them Active (Kueue deactivates queues otherwise)."""
        try:
            checks = await self.hub.list_items(_CHECKS)
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
                    "lastTransitionTime": stamp(now),
                    "observedGeneration": check["metadata"].get("generation", 1),
                }
            ]
            try:
                await self.hub.replace(
                    f"{_CHECKS}/{check['metadata']['name']}/status",
                    body,
                )
            except ConflictError:
                self.tally("conflicts")
        self._check_names = frozenset(names)

    async def _collect(self, now: datetime) -> list[HubWorkload]:
        """The hub objects of every kind the hub places (each kind's adapter says which are
        its), read as :class:`HubWorkload`; one that cannot be read is left alone."""
        jobs = await self._cached(HUB_JOB) or []
        by_uid = {str(j["metadata"].get("uid")): j for j in jobs}
        found: list[HubWorkload] = []
        candidates: list[tuple[Kind, Obj]] = []
        for adapter in HUB_KINDS:
            items = jobs if adapter is HUB_JOB else await self._cached(adapter)
            if items is None:  # the kind is not installed on this hub
                continue
            kind = cast(Kind, adapter.kind)  # HUB_KINDS are the hub's kinds
            for o in items:
                if adapter.hub_owns(o, self._check_names):
                    candidates.append((kind, o))
                elif adapter is APPWRAPPER:
                    await self._note_ungated(o, now)
        reads: dict[tuple[str, str], tuple[tuple[str, ...], HubWorkload | NotHeld]] = {}
        for kind, obj in candidates:
            meta = obj["metadata"]
            owners = [
                (by_uid.get(str(ref.get("uid"))) or {"metadata": {}})["metadata"]
                for ref in meta.get("ownerReferences") or []
            ]
            # the same version of an object (and of the Jobs it names as owners) reads the
            # same: the pipeline collects three times a pass, and most objects do not change
            # between passes. The time matters only to an object without a creation time.
            timeless = all(m.get("creationTimestamp") for m in (meta, *owners))
            uid = str(meta.get("uid"))
            version = (
                str(meta.get("resourceVersion")),
                *(str(m.get("resourceVersion")) for m in owners),
                "" if timeless else now.isoformat(),
            )
            last = self._reads.get((kind, uid))
            seen = None
            if last is not None:
                seen = last[1] if last[0] == version else self._carried(kind, obj, version, last)
            try:
                if seen is None:
                    seen = read_workload(kind, obj, self._cconfig, now, by_uid)
                reads[(kind, uid)] = (version, seen)
            except Exception:  # one malformed object must not stop every pass
                self.tally("errors")
                LOG.exception("reading %s %s failed; left alone", kind, _name_of(obj))
                continue
            if isinstance(seen, NotHeld):
                if seen.unusable:
                    self.tally("errors")
                continue
            found.append(seen)
        self._reads = reads
        self._written.clear()  # each write's next version was met, or it moved on
        return found

    def _carried(
        self,
        kind: Kind,
        obj: Obj,
        version: tuple[str, ...],
        last: tuple[tuple[str, ...], HubWorkload | NotHeld],
    ) -> HubWorkload | None:
        """The read of ``obj`` carried from ``last`` (the read of the version before) when
        ``obj`` is the answer of the hub's own annotation write to that version and nothing
        else (:func:`~carbonshift.k8s.intent.only_written`): the intent is not parsed again
        (10,000 times after the act phase of a start); None: read it afresh."""
        read = last[1]
        if not isinstance(read, HubWorkload):
            return None
        written = self._written.get((kind, read.uid))
        if written is None or written[0] != last[0][0] or version[1:] != last[0][1:]:
            return None
        if not only_written(read.obj, obj, written[1], written[2]):
            return None
        carried = after_own_write(read, obj)
        return carried if isinstance(carried, HubWorkload) else None

    async def _note_ungated(self, aw: Obj, now: datetime) -> None:
        """An AppWrapper that asks for carbon-aware placement (a ``carbonshift.io/``
        intent annotation) with neither the hub label nor the hold gate is MCAD's to
        dispatch: say so on it, once. The usual cause on a real hub: its AppWrapper CRD has
        no ``spec.dispatchingGates`` (tardieu/mcad v1beta1 has none), so the server dropped
        the gate at creation; the hub label is the way there."""
        meta = aw.get("metadata") or {}
        notes = meta.get("annotations") or {}
        if not any(key in notes for key in INTENT_KEYS) or notes.get(STATE) == State.NOT_HELD:
            return
        reason = (
            f'neither label {HUB_LABEL}: "true" nor {HOLD_GATE} in spec.dispatchingGates, so '
            "MCAD dispatches this AppWrapper as it decides and the hub does not plan it. "
            f'Label it {HUB_LABEL}: "true" (on a hub that runs no MCAD for it) to have the '
            "hub hold it and place a copy in a spoke; the gate works only where the "
            "AppWrapper CRD has spec.dispatchingGates (tardieu/mcad v1beta1 has no "
            "spec.dispatchingGates, and the API server drops it)"
        )
        annotations = {STATE: str(State.NOT_HELD), REASON: reason}
        body = {
            "metadata": {
                "resourceVersion": meta.get("resourceVersion"),
                "annotations": annotations,
                "labels": {STATE_LABEL: str(State.NOT_HELD)},
            }
        }
        try:
            path = APPWRAPPER.path(meta.get("namespace"), meta.get("name"))
            self._kept(APPWRAPPER, await self.hub.patch(path, body))
        except CarbonshiftError as exc:  # a conflict or a refusal: try again next pass
            LOG.warning("noting ungated AppWrapper %s failed: %s", _name_of(aw), exc)
            return
        self._event(now, _name_of(aw), "not-held", detail=reason, uid=str(meta.get("uid", "")))


#: annotations that say a workload's owner wants carbon-aware placement
INTENT_KEYS = (DEADLINE, RUNTIME, CRITICAL)


def _name_of(obj: Obj) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return "?"
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _status_time(obj: Obj, name: str) -> datetime | None:
    """A time field of a CarbonCluster's status (None when absent or unreadable)."""
    raw = (obj.get("status") or {}).get(name)
    if not raw:
        return None
    try:
        return parse_utc(str(raw), what=name)
    except InputError:
        return None
