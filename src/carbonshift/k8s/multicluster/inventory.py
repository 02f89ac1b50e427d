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
cores, memory GiB, gpu devices).
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from carbonshift.errors import InputError
from carbonshift.k8s.intent import requested
from carbonshift.k8s.keys import API_VERSION
from carbonshift.k8s.multicluster.api import HubApi

__all__ = [
    "CARBONCLUSTERS",
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
