"""MCAD AppWrapper (``workload.codeflare.dev/v1beta1``: the only version the real CRD in
/work/shared/k8s-crds/mcad serves): the hub holds it by its gate in ``spec.dispatchingGates``
and places it by removing the gate and writing
``spec.schedulingSpec.clusterScheduling.policyResult.targetCluster``, as multi-cluster MCAD's
dispatcher reads them.

The intent is read from the AppWrapper's own metadata over its first wrapped Job's pod
template (``spec.resources.GenericItems[].generictemplate``, or ``spec.components[].template``
of the later AppWrapper controller).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from carbonshift.k8s.keys import DONE_SECONDS, HOLD_GATE, PLACED_CLUSTER
from carbonshift.k8s.kinds.base import (
    IntentSource,
    Obj,
    OptIn,
    WorkloadKind,
    api_path,
    job_intent_source,
    metadata,
)

__all__ = ["APPWRAPPER", "AppWrapperAdapter"]

GROUP_VERSION = "workload.codeflare.dev/v1beta1"


def _items(aw: Obj) -> list[Obj]:
    spec = aw.get("spec") or {}
    templates = [
        item.get("generictemplate")
        for item in (spec.get("resources") or {}).get("GenericItems") or []
    ] + [item.get("template") for item in spec.get("components") or []]
    return [t for t in templates if isinstance(t, dict)]


class AppWrapperAdapter:
    """workload.codeflare.dev/v1beta1 AppWrapper (hub)."""

    kind: WorkloadKind = "AppWrapper"
    api_version = GROUP_VERSION
    plural = "appwrappers"
    shared_hold = False
    late_hold = True

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        return api_path(self.api_version, self.plural, namespace, name)

    def jobs(self, aw: Obj) -> list[Obj]:
        """The wrapped batch Jobs, in order."""
        return [t for t in _items(aw) if t.get("kind") == "Job"]

    def intent_source(self, obj: Obj, owners: Mapping[str, Obj]) -> IntentSource | None:
        jobs = self.jobs(obj)
        if not jobs:
            return None
        return job_intent_source("AppWrapper", metadata(obj), jobs[0], OptIn.KIND)

    def pod_specs(self, obj: Obj) -> list[Obj]:
        jobs = self.jobs(obj)
        return (
            [((jobs[0].get("spec") or {}).get("template") or {}).get("spec") or {}]
            if jobs
            else [{}]
        )

    def gates(self, obj: Obj) -> list[str]:
        """``spec.dispatchingGates``: MCAD's ``[]DispatchingGate`` of strings."""
        return [str(g) for g in (obj.get("spec") or {}).get("dispatchingGates") or []]

    def hub_owns(self, obj: Obj, check_names: Collection[str]) -> bool:
        """Under our dispatching gate, or already planned by the hub."""
        notes = metadata(obj).get("annotations") or {}
        return PLACED_CLUSTER in notes or DONE_SECONDS in notes or self.is_held(obj)

    def is_held(self, obj: Obj) -> bool:
        return HOLD_GATE in self.gates(obj)

    def is_finished(self, obj: Obj) -> bool:
        # the dispatcher's phase (spec.dispatcherStatus, as multi-cluster MCAD writes it)
        phase = ((obj.get("spec") or {}).get("dispatcherStatus") or {}).get("phase", "")
        return str(phase) in ("Succeeded", "Failed")

    def runs_on(self, obj: Obj) -> str | None:
        scheduling = (obj.get("spec") or {}).get("schedulingSpec") or {}
        result = (scheduling.get("clusterScheduling") or {}).get("policyResult") or {}
        name = (result.get("targetCluster") or {}).get("name")
        return str(name) if name else None

    def release_spec(self, obj: Obj, cluster: str) -> Obj:
        """Our gate off and the target cluster on, in one patch."""
        return {
            "dispatchingGates": [g for g in self.gates(obj) if g != HOLD_GATE],
            "schedulingSpec": {
                "clusterScheduling": {"policyResult": {"targetCluster": {"name": cluster}}}
            },
        }

    def hold_spec(self, obj: Obj) -> Obj:
        """Our gate back on and the target cleared, in one patch."""
        return {
            "dispatchingGates": [g for g in self.gates(obj) if g != HOLD_GATE] + [HOLD_GATE],
            "schedulingSpec": {"clusterScheduling": {"policyResult": None}},
        }

    def spoke_jobs(self, obj: Obj) -> set[tuple[str, str]]:
        """(namespace, name) of the wrapped Jobs, as they run in the spoke."""
        ns = str(metadata(obj).get("namespace", ""))
        return {(ns, str((j.get("metadata") or {}).get("name"))) for j in self.jobs(obj)}


APPWRAPPER = AppWrapperAdapter()
