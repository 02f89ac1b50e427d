"""The resource types the fake server serves: built-in kinds and custom resources.

A :class:`ResourceType` names one REST resource (``pods``, ``jobs.batch``, ...) the way the
discovery documents do. The :class:`Registry` is the one place the server, the store and the
discovery handlers look kinds up; CustomResourceDefinitions add to it at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BUILTINS", "Registry", "ResourceType"]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One REST resource: group, version, kind, plural, scope and subresources."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    generational: bool = False
    categories: tuple[str, ...] = ()
    served_versions: tuple[str, ...] = field(default=())
    custom: bool = False

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str]:
        """Storage key: one storage per group and plural, whatever the served version."""
        return (self.group, self.plural)

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def versions(self) -> tuple[str, ...]:
        return self.served_versions or (self.version,)


def _rt(
    group: str,
    version: str,
    kind: str,
    plural: str,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    sub: tuple[str, ...] = (),
    generational: bool = False,
    categories: tuple[str, ...] = (),
) -> ResourceType:
    return ResourceType(
        group, version, kind, plural, namespaced, short, sub, generational, categories
    )


BUILTINS: tuple[ResourceType, ...] = (
    _rt("", "v1", "Namespace", "namespaces", False, ("ns",), ("status",)),
    _rt("", "v1", "Node", "nodes", False, ("no",), ("status",)),
    _rt("", "v1", "Pod", "pods", True, ("po",), ("status", "binding"), categories=("all",)),
    _rt("", "v1", "ConfigMap", "configmaps", True, ("cm",)),
    _rt("", "v1", "Secret", "secrets", True),
    _rt("", "v1", "Event", "events", True, ("ev",)),
    _rt("", "v1", "Service", "services", True, ("svc",), ("status",), categories=("all",)),
    _rt("", "v1", "ServiceAccount", "serviceaccounts", True, ("sa",), ("token",)),
    _rt("apps", "v1", "Deployment", "deployments", True, ("deploy",), ("status",), True, ("all",)),
    _rt("batch", "v1", "Job", "jobs", True, (), ("status",), True, ("all",)),
    _rt("coordination.k8s.io", "v1", "Lease", "leases", True),
    _rt("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, ("pc",)),
    _rt("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, ("netpol",)),
    _rt("events.k8s.io", "v1", "Event", "events", True, ("ev",)),
    _rt("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    _rt("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    _rt("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    _rt("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    _rt(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        False,
        generational=True,
    ),
    _rt(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        False,
        ("crd", "crds"),
        ("status",),
        True,
    ),
)

# Preferred order of groups in discovery, as a real server lists them.
_GROUP_ORDER = (
    "",
    "apps",
    "batch",
    "coordination.k8s.io",
    "scheduling.k8s.io",
    "networking.k8s.io",
    "events.k8s.io",
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
)


class Registry:
    """Resource types by (group, version, plural) and by (apiVersion, kind)."""

    def __init__(self, types: tuple[ResourceType, ...] = BUILTINS) -> None:
        self._types: dict[tuple[str, str], ResourceType] = {}
        for rt in types:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        self._types[rt.key] = rt

    def remove(self, group: str, plural: str) -> None:
        self._types.pop((group, plural), None)

    def all(self) -> list[ResourceType]:
        return list(self._types.values())

    def find(self, group: str, version: str, plural: str) -> ResourceType | None:
        rt = self._types.get((group, plural))
        if rt is None or version not in rt.versions():
            return None
        return rt

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        for rt in self._types.values():
            if rt.group == group and rt.kind == kind and version in rt.versions():
                return rt
        return None

    def groups(self) -> list[tuple[str, list[str]]]:
        """Groups (core excluded) with their versions, in discovery order."""
        found: dict[str, list[str]] = {}
        for rt in self._types.values():
            if rt.group:
                versions = found.setdefault(rt.group, [])
                for v in rt.versions():
                    if v not in versions:
                        versions.append(v)
        order = {g: i for i, g in enumerate(_GROUP_ORDER)}
        return sorted(found.items(), key=lambda gv: (order.get(gv[0], len(order)), gv[0]))

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self._types.values() if rt.group == group and version in rt.versions()]
