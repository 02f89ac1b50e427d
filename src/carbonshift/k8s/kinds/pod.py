"""Pod: held by the scheduling gate ``carbonshift.io/hold``, added at admission only."""

from __future__ import annotations

from collections.abc import Mapping

from carbonshift.k8s.keys import HOLD_GATE
from carbonshift.k8s.kinds.base import (
    IntentSource,
    Obj,
    OptIn,
    WorkloadKind,
    api_path,
    metadata,
)

__all__ = ["POD", "PodAdapter"]

_TERMINAL = ("Succeeded", "Failed")


def _gates(obj: Obj) -> list[str]:
    return [str(g.get("name")) for g in (obj.get("spec") or {}).get("schedulingGates") or []]


class PodAdapter:
    """core/v1 Pod (one-cluster controller)."""

    kind: WorkloadKind = "Pod"
    api_version = "v1"
    plural = "pods"
    shared_hold = False
    late_hold = False

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        return api_path(self.api_version, self.plural, namespace, name)

    def intent_source(self, obj: Obj, owners: Mapping[str, Obj]) -> IntentSource | None:
        return IntentSource("Pod", metadata(obj), obj.get("spec") or {}, None, OptIn.LABEL)

    def pod_specs(self, obj: Obj) -> list[Obj]:
        return [obj.get("spec") or {}]

    def is_held(self, obj: Obj) -> bool:
        return HOLD_GATE in _gates(obj)

    def is_finished(self, obj: Obj) -> bool:
        return (obj.get("status") or {}).get("phase") in _TERMINAL

    def runs_on(self, obj: Obj) -> str | None:
        node = (obj.get("spec") or {}).get("nodeName")
        return str(node) if node else None

    opt_in_switch = "manage_pods"

    def held_elsewhere(self, obj: Obj) -> str | None:
        owners = metadata(obj).get("ownerReferences") or []
        if any(ref.get("kind") == "Job" for ref in owners):
            return "a Job's pod: the Job is held, not its pods"
        return None

    def admission_ops(self, obj: Obj) -> list[Obj] | str | None:
        spec = obj.get("spec") or {}
        if spec.get("nodeName"):
            return "spec.nodeName is set, so no gate can be added"
        gates = spec.get("schedulingGates") or []
        if any(g.get("name") == HOLD_GATE for g in gates):
            return None
        if gates:  # the API server refuses to add a gate after creation: now or never
            return [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": HOLD_GATE}}]
        return [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": HOLD_GATE}]}]

    def release_spec(self, obj: Obj, affinity: Obj | None) -> Obj:
        others = [
            g
            for g in (obj.get("spec") or {}).get("schedulingGates") or []
            if g.get("name") != HOLD_GATE
        ]
        # null removes the list (a merge patch cannot remove one element of it)
        spec: Obj = {"schedulingGates": others or None}
        if affinity is not None:
            spec["affinity"] = affinity
        return spec


POD = PodAdapter()
