"""One adapter per workload kind, one reconciler per controller (docs/design/0007-kind-adapters.md).

=========================  ============================  ===================================
kind                       held by                       used by
=========================  ============================  ===================================
core/v1 Pod                scheduling gate               the one-cluster controller, webhook
batch/v1 Job               ``spec.suspend``              the controller, webhook and hub
kueue.x-k8s.io/v1beta2     our AdmissionCheck (Retry)    the hub
Workload
workload.codeflare.dev/    not copied to a spoke (hub    the hub
v1beta1 AppWrapper         label), or our
                           ``dispatchingGates``
=========================  ============================  ===================================

A hub Job, and an AppWrapper labelled for the hub, are placed as a copy the hub owns in the
spoke: their adapters have the :class:`Copied` capability (:data:`COPIED_KINDS`).

The controllers look a kind up in :data:`ADAPTERS` and never branch on a kind name; an
adapter reads plain JSON objects and answers patch bodies, the controllers do the I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from carbonshift.k8s.kinds.appwrapper import APPWRAPPER, AppWrapperAdapter
from carbonshift.k8s.kinds.base import (
    Copied,
    Gated,
    HubKind,
    IntentSource,
    KindAdapter,
    OptIn,
    Suspendable,
    WorkloadKind,
    condition_true,
)
from carbonshift.k8s.kinds.job import HUB_JOB, JOB, JobAdapter
from carbonshift.k8s.kinds.kueue import WORKLOAD, WorkloadAdapter
from carbonshift.k8s.kinds.pod import POD, PodAdapter

__all__ = [
    "ADAPTERS",
    "APPWRAPPER",
    "CONTROLLER_KINDS",
    "COPIED_KINDS",
    "HUB_JOB",
    "HUB_KINDS",
    "JOB",
    "POD",
    "WORKLOAD",
    "AppWrapperAdapter",
    "Copied",
    "Gated",
    "HubKind",
    "IntentSource",
    "JobAdapter",
    "KindAdapter",
    "OptIn",
    "PodAdapter",
    "Suspendable",
    "WorkloadAdapter",
    "WorkloadKind",
    "adapter_of",
    "condition_true",
]

ADAPTERS: dict[str, KindAdapter] = {
    "Pod": POD,
    "Job": JOB,
    "Workload": WORKLOAD,
    "AppWrapper": APPWRAPPER,
}
"""Every kind carbonshift acts on, by ``kind`` (a Job as the one-cluster controller reads it)."""
CONTROLLER_KINDS: tuple[PodAdapter | JobAdapter, ...] = (POD, JOB)
"""The kinds the one-cluster controller and its webhook hold."""
HUB_KINDS: tuple[HubKind, ...] = (HUB_JOB, WORKLOAD, APPWRAPPER)
"""The kinds the hub places."""
COPIED_KINDS: dict[str, Copied] = {HUB_JOB.kind: HUB_JOB, APPWRAPPER.kind: APPWRAPPER}
"""The hub kinds that may be placed as a copy the hub owns in the spoke (each object says
whether it is: :meth:`Copied.copied`), by ``kind``."""


def adapter_of(obj: Mapping[str, Any]) -> KindAdapter | None:
    """The adapter for ``obj["kind"]`` (None: a kind carbonshift does not act on)."""
    return ADAPTERS.get(str(obj.get("kind")))
