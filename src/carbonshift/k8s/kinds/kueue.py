"""Kueue Workload (``kueue.x-k8s.io/v1beta2``, the version the real CRD stores; v1beta1 is
served too): the hub holds it through its AdmissionCheck (state Retry with
``requeueAfterSeconds``) and places it with the check Ready, ``podSetUpdates`` and
``status.nominatedClusterNames``, as a MultiKueue dispatcher does.

The user writes the intent on the Job Kueue made the Workload for (its owner); a Workload is
the hub's by its admission check, so it needs no opt-in label.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from carbonshift.k8s.keys import DONE_SECONDS, PLACED_CLUSTER
from carbonshift.k8s.kinds.base import (
    IntentSource,
    Obj,
    OptIn,
    WorkloadKind,
    api_path,
    condition_true,
    job_intent_source,
    metadata,
)

__all__ = ["QUEUE_LABEL", "WORKLOAD", "WorkloadAdapter"]

GROUP_VERSION = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""The label that puts a Job in a Kueue LocalQueue."""


class WorkloadAdapter:
    """kueue.x-k8s.io/v1beta2 Workload (hub)."""

    kind: WorkloadKind = "Workload"
    api_version = GROUP_VERSION
    plural = "workloads"
    shared_hold = False
    late_hold = True

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        return api_path(self.api_version, self.plural, namespace, name)

    def owner_job(self, obj: Obj, owners: Mapping[str, Obj]) -> Obj | None:
        """The Job this Workload was made for, if ``owners`` holds it."""
        for ref in metadata(obj).get("ownerReferences") or []:
            if ref.get("kind") == "Job" and ref.get("uid") in owners:
                return owners[ref["uid"]]
        return None

    def intent_source(self, obj: Obj, owners: Mapping[str, Obj]) -> IntentSource | None:
        job = self.owner_job(obj, owners)
        if job is None:
            return None
        return job_intent_source("Workload", metadata(job), job, OptIn.KIND)

    def pod_specs(self, obj: Obj) -> list[Obj]:
        return [
            (ps.get("template") or {}).get("spec") or {}
            for ps in (obj.get("spec") or {}).get("podSets") or []
        ]

    def our_check(self, obj: Obj, names: Collection[str]) -> Obj | None:
        """Our AdmissionCheck's state on this Workload (one of ``names``), if it has one."""
        for check in (obj.get("status") or {}).get("admissionChecks") or []:
            if check.get("name") in names:
                return dict(check)
        return None

    def hub_owns(self, obj: Obj, check_names: Collection[str]) -> bool:
        """Under our admission check, or already planned by the hub."""
        notes = metadata(obj).get("annotations") or {}
        if PLACED_CLUSTER in notes or DONE_SECONDS in notes:
            return True
        return self.our_check(obj, check_names) is not None

    def is_held(self, obj: Obj) -> bool:
        """Not admitted: Kueue keeps a Workload from running until every check is Ready."""
        return (obj.get("status") or {}).get("admission") is None

    def is_finished(self, obj: Obj) -> bool:
        return condition_true(obj, "Finished")

    def runs_on(self, obj: Obj) -> str | None:
        status = obj.get("status") or {}
        if status.get("clusterName"):
            return str(status["clusterName"])
        nominated = status.get("nominatedClusterNames") or []
        return str(nominated[0]) if len(nominated) == 1 else None

    def spoke_jobs(self, obj: Obj) -> set[tuple[str, str]]:
        """(namespace, name) of the Jobs that run it in its spoke: MultiKueue's remote copy
        of the owner Job."""
        meta = metadata(obj)
        ns = str(meta.get("namespace", ""))
        return {
            (ns, str(ref.get("name")))
            for ref in meta.get("ownerReferences") or []
            if ref.get("kind") == "Job"
        }


WORKLOAD = WorkloadAdapter()
