"""MCAD AppWrapper (``workload.codeflare.dev/v1beta1``: the only version the real CRD in
/work/shared/k8s-crds/mcad serves), placed by the hub in one of two ways, which the object
itself says:

- **a copy** (label ``carbonshift.io/hub: "true"``, as a hub Job): the hub holds it by not
  copying it (no MCAD may dispatch it on the hub) and places it by creating a copy in the
  spoke, where that spoke's MCAD dispatches it; the copy's status is mirrored back and the
  copy deleted when done. This needs no AppWrapper field, so it works with the real
  tardieu/mcad CRD, which has no ``spec.dispatchingGates``.
- **a gate** (our gate in ``spec.dispatchingGates``, kept only by a gate-capable CRD: the
  multi-cluster MCAD Caspian ran on): the hub holds it by the gate and places it by removing
  the gate and writing ``spec.schedulingSpec.clusterScheduling.policyResult.targetCluster``,
  as that MCAD's dispatcher reads them.

The label wins when an object has both (its gate then stays on the hub object and only keeps
a hub MCAD away; the copy carries no gate).

The intent is read from the AppWrapper's own metadata over its first wrapped Job's pod
template (``spec.resources.GenericItems[].generictemplate``, or ``spec.components[].template``
of the later AppWrapper controller).
"""

from __future__ import annotations

import copy as copying
from collections.abc import Collection, Mapping

from carbonshift.k8s.keys import (
    DONE_SECONDS,
    HOLD_GATE,
    HUB_LABEL,
    HUB_UID_LABEL,
    MANAGED_LABEL,
    PLACED_CLUSTER,
)
from carbonshift.k8s.kinds.base import (
    IntentSource,
    Obj,
    OptIn,
    WorkloadKind,
    api_path,
    copy_metadata,
    job_intent_source,
    metadata,
)
from carbonshift.k8s.kinds.job import copy_template

__all__ = ["APPWRAPPER", "AppWrapperAdapter"]

GROUP_VERSION = "workload.codeflare.dev/v1beta1"
FINISHED_STATES = ("Completed", "Failed")
"""``status.state`` of an AppWrapper that has run to its end (tardieu/mcad: ``Succeeded``
is written ``Completed``)."""
_HUB_ONLY = ("dispatchingGates", "dispatcherStatus")
"""``spec`` fields a copy does not carry: our gate, and a hub dispatcher's state."""


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

    def copied(self, obj: Obj) -> bool:
        """Labelled for the hub (``carbonshift.io/hub: "true"``) and not itself a copy."""
        labels = metadata(obj).get("labels") or {}
        return labels.get(HUB_LABEL) == "true" and HUB_UID_LABEL not in labels

    def hub_owns(self, obj: Obj, check_names: Collection[str]) -> bool:
        """Labelled for the hub, under our dispatching gate, or already planned by the hub;
        never a copy in a spoke (a hub that is also a spoke sees its own copies)."""
        if HUB_UID_LABEL in (metadata(obj).get("labels") or {}):
            return False
        notes = metadata(obj).get("annotations") or {}
        return (
            self.copied(obj)
            or PLACED_CLUSTER in notes
            or DONE_SECONDS in notes
            or HOLD_GATE in self.gates(obj)
        )

    def is_held(self, obj: Obj) -> bool:
        if self.copied(obj):  # held on the hub until a copy is placed
            return PLACED_CLUSTER not in (metadata(obj).get("annotations") or {})
        return HOLD_GATE in self.gates(obj)

    def is_finished(self, obj: Obj) -> bool:
        # the dispatcher's phase (spec.dispatcherStatus, as multi-cluster MCAD writes it), or
        # the state tardieu/mcad writes (and the hub mirrors from a finished copy)
        phase = ((obj.get("spec") or {}).get("dispatcherStatus") or {}).get("phase", "")
        state = (obj.get("status") or {}).get("state", "")
        return str(phase) in ("Succeeded", "Failed") or str(state) in FINISHED_STATES

    def runs_on(self, obj: Obj) -> str | None:
        scheduling = (obj.get("spec") or {}).get("schedulingSpec") or {}
        result = (scheduling.get("clusterScheduling") or {}).get("policyResult") or {}
        name = (result.get("targetCluster") or {}).get("name")
        if not name and self.copied(obj):
            name = (metadata(obj).get("annotations") or {}).get(PLACED_CLUSTER)
        return str(name) if name else None

    def spoke_copy(self, obj: Obj, cluster: str, remaining_s: int) -> Obj:
        """The AppWrapper as the spoke's MCAD dispatches it: no gate of ours, no hub
        dispatcher state or target cluster; each wrapped Job labelled
        ``carbonshift.io/managed: "false"`` and its pods expecting ``remaining_s``."""
        spec = copying.deepcopy(dict(obj.get("spec") or {}))
        gates = [g for g in self.gates(obj) if g != HOLD_GATE]
        for key in _HUB_ONLY:
            spec.pop(key, None)
        if gates:
            spec["dispatchingGates"] = gates
        scheduling = spec.get("schedulingSpec")
        if isinstance(scheduling, dict):
            scheduling.pop("clusterScheduling", None)
        for job in self.jobs({"spec": spec}):
            job_spec = job.setdefault("spec", {})
            job_spec["template"] = copy_template(job_spec.get("template") or {}, remaining_s)
            # what MCAD creates from it is placed already: a spoke's own carbonshift keeps off
            job.setdefault("metadata", {}).setdefault("labels", {})[MANAGED_LABEL] = "false"
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": copy_metadata(obj, cluster),
            "spec": spec,
        }

    def copy_status(self, obj: Obj, copy: Obj) -> Obj:
        """The copy's status as its MCAD wrote it (same CRD, so the same fields), with
        ``restarts`` 0 if it left it out (tardieu/mcad's CRD requires it in a status)."""
        return {"restarts": 0, **(copy.get("status") or {})}

    def succeeded(self, obj: Obj) -> bool:
        phase = ((obj.get("spec") or {}).get("dispatcherStatus") or {}).get("phase", "")
        return phase == "Succeeded" or (obj.get("status") or {}).get("state") == "Completed"

    def copy_summary(self, copy: Obj) -> Obj:
        status = copy.get("status") or {}
        return {
            "state": status.get("state", ""),
            "step": status.get("step", ""),
            "restarts": status.get("restarts", 0),
        }

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
