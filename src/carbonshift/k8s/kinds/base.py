"""The adapter protocol: what the controller and the hub need to know about one workload kind.

Model: Kueue's ``jobframework.GenericJob`` (one reconciler, one adapter per kind, optional
capabilities as further interfaces). docs/design/0007-kind-adapters.md describes it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, Protocol

from carbonshift.k8s.keys import (
    ANNOTATION_PREFIX,
    HUB_LABEL,
    HUB_UID_LABEL,
    MANAGED_LABEL,
    PLACED_CLUSTER,
)

__all__ = [
    "Copied",
    "Gated",
    "HubKind",
    "IntentSource",
    "KindAdapter",
    "Obj",
    "OptIn",
    "Suspendable",
    "WorkloadKind",
    "api_path",
    "condition_true",
    "copy_metadata",
    "job_intent_source",
    "metadata",
]

Obj = dict[str, Any]
WorkloadKind = Literal["Pod", "Job", "Workload", "AppWrapper"]


class OptIn(Enum):
    """How a workload says that carbonshift may shift it."""

    LABEL = "label"
    """The one-cluster controller's rule: the managed label, an opted-in namespace or the
    not-critical priority class; a hub Job (hub label) is refused."""
    HUB_LABEL = "hub-label"
    """A hub Job: the hub label opts it in (the managed label can still say ``"false"``)."""
    KIND = "kind"
    """Ours by kind (a Kueue Workload under our admission check, an AppWrapper under our
    gate): opted in unless the managed label says ``"false"``."""


@dataclass(frozen=True, slots=True)
class IntentSource:
    """Where a workload's intent is read, without dressing it up as another kind.

    ``metadata`` gives the labels, annotations, identity and creation time (a Kueue
    Workload's come from its owner Job, where the user wrote them); ``pod_spec`` is one pod's
    spec and ``parallelism`` the raw ``spec.parallelism`` (None: one pod).
    """

    kind: WorkloadKind
    metadata: Mapping[str, Any]
    pod_spec: Mapping[str, Any]
    parallelism: object
    opt_in: OptIn


class KindAdapter(Protocol):
    """One workload kind: where it lives, how its intent is read, whether it is held or done,
    and where it runs. Holding and releasing are the optional capabilities below."""

    kind: WorkloadKind
    api_version: str
    plural: str
    shared_hold: bool
    """Whether the holding field is also the user's (a Job's ``spec.suspend``): then the
    object is held by carbonshift only while carbonshift says so on it."""
    late_hold: bool
    """Whether a created object can still be held (a Pod's gate cannot be added later)."""

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The API path of the collection (all namespaces, or one) or of one object."""
        ...

    def intent_source(self, obj: Obj, owners: Mapping[str, Obj]) -> IntentSource | None:
        """Where ``obj``'s intent is read (``owners``: objects by UID); None when it has none."""
        ...

    def pod_specs(self, obj: Obj) -> list[Obj]:
        """The spec of each kind of pod ``obj`` runs (a Kueue Workload: one per pod set)."""
        ...

    def is_held(self, obj: Obj) -> bool:
        """Whether ``obj`` carries carbonshift's hold (gate, suspension, dispatching gate)."""
        ...

    def is_finished(self, obj: Obj) -> bool:
        """Whether ``obj`` has run to its end (succeeded or failed)."""
        ...

    def runs_on(self, obj: Obj) -> str | None:
        """Where ``obj`` was sent: its node (Pod) or its cluster (hub kinds); None: not yet."""
        ...


class HubKind(KindAdapter, Protocol):
    """A kind the hub places in a spoke."""

    def spoke_jobs(self, obj: Obj) -> set[tuple[str, str]]:
        """(namespace, name) of the batch Jobs that run ``obj`` in its spoke."""
        ...

    def hub_owns(self, obj: Obj, check_names: Collection[str]) -> bool:
        """Whether the hub places ``obj`` (``check_names``: the Kueue AdmissionChecks the
        hub answers)."""
        ...


class Copied(HubKind, Protocol):
    """A hub kind the hub may place as a copy it owns in the spoke (a hub Job; an AppWrapper
    labelled for the hub): the copy is created at release, its status mirrored back, and it
    is deleted when it is done, suspended, recalled or its hub object is gone."""

    def copied(self, obj: Obj) -> bool:
        """Whether the hub places ``obj`` by a copy of its own in the spoke."""
        ...

    def spoke_copy(self, obj: Obj, cluster: str, remaining_s: int) -> Obj:
        """The copy of ``obj`` to create in spoke ``cluster``: same namespace and name,
        labelled with ``obj``'s UID (``carbonshift.io/hub-uid``), opted out of a spoke's own
        carbonshift; its pods expect to run ``remaining_s`` seconds."""
        ...

    def copy_status(self, obj: Obj, copy: Obj) -> Obj:
        """The ``status`` of hub object ``obj`` once its ``copy`` has finished."""
        ...

    def copy_summary(self, copy: Obj) -> Obj:
        """What the ``carbonshift.io/spoke-status`` annotation says of a running copy."""
        ...

    def succeeded(self, obj: Obj) -> bool:
        """Whether ``obj``, finished, succeeded (else it failed)."""
        ...


class Gated(Protocol):
    """A kind the one-cluster controller holds, at admission at the latest (a Pod's gate
    cannot be added later)."""

    opt_in_switch: str
    """The ``opt_in`` setting that turns holding this kind on (``manage_pods``)."""

    def held_elsewhere(self, obj: Obj) -> str | None:
        """Why ``obj`` is held through another object (a Job's pod: the Job), else None."""
        ...

    def admission_ops(self, obj: Obj) -> list[Obj] | str | None:
        """The JSONPatch ops that hold a new object; a reason when it cannot be held; None
        when it already is (admitted unchanged)."""
        ...

    def release_spec(self, obj: Obj, affinity: Obj | None) -> Obj:
        """The ``spec`` merge patch that releases ``obj`` (optionally pinned by ``affinity``)."""
        ...


class Suspendable(Gated, Protocol):
    """A kind that can also be held after creation (batch Job: ``spec.suspend``)."""

    def hold_spec(self, obj: Obj) -> Obj:
        """The ``spec`` merge patch that holds ``obj``."""
        ...


def metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return meta


def condition_true(obj: Mapping[str, Any], kind: str) -> bool:
    """Whether ``status.conditions`` has ``kind`` with status True."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def api_path(
    api_version: str, plural: str, namespace: str | None = None, name: str | None = None
) -> str:
    """The REST path of ``plural`` of ``api_version`` (``v1``: the core group), in
    ``namespace`` (None: every namespace), of object ``name`` (None: the collection)."""
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    base += f"/namespaces/{namespace}/{plural}" if namespace else f"/{plural}"
    return f"{base}/{name}" if name else base


def job_intent_source(
    kind: WorkloadKind, meta: Mapping[str, Any], job: Mapping[str, Any], opt_in: OptIn
) -> IntentSource:
    """The intent of a ``kind`` workload that runs ``job`` (a Job or a Job template): the
    annotations of ``meta``, the Job's pod template and parallelism."""
    spec = job.get("spec") or {}
    return IntentSource(
        kind, meta, (spec.get("template") or {}).get("spec") or {}, spec.get("parallelism"), opt_in
    )


def copy_metadata(obj: Obj, cluster: str) -> Obj:
    """The metadata of the spoke copy of hub object ``obj`` placed in ``cluster``: its name,
    namespace and labels (less the hub and managed labels) plus ``hub-uid`` and
    ``managed: "false"`` (a spoke's own carbonshift must not hold it again), its
    ``carbonshift.io/`` annotations plus ``placed-cluster``."""
    meta = metadata(obj)
    labels = {
        k: v for k, v in (meta.get("labels") or {}).items() if k not in (MANAGED_LABEL, HUB_LABEL)
    }
    labels[HUB_UID_LABEL] = str(meta.get("uid", ""))
    labels[MANAGED_LABEL] = "false"
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if k.startswith(ANNOTATION_PREFIX)
    }
    annotations[PLACED_CLUSTER] = cluster
    return {
        "name": meta["name"],
        "namespace": meta["namespace"],
        "labels": labels,
        "annotations": annotations,
    }
