"""batch/v1 Job: held by ``spec.suspend: true`` (at admission, or after, before it starts).

The one-cluster controller holds Jobs opted in by its label rule; the hub holds the Jobs that
carry the hub label and places a copy in a spoke.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from carbonshift.k8s.keys import HUB_LABEL, HUB_UID_LABEL, PLACED_CLUSTER, RUNTIME
from carbonshift.k8s.kinds.base import (
    IntentSource,
    Obj,
    OptIn,
    WorkloadKind,
    api_path,
    condition_true,
    copy_metadata,
    job_intent_source,
    metadata,
)
from carbonshift.k8s.kinds.kueue import QUEUE_LABEL

__all__ = ["HUB_JOB", "JOB", "JobAdapter", "copy_template"]

_TEMPLATE_LABELS = (
    "batch.kubernetes.io/controller-uid",
    "batch.kubernetes.io/job-name",
    "controller-uid",
    "job-name",
)


def copy_template(template: Obj, remaining_s: int) -> Obj:
    """A Job's pod ``template`` for a copy: the Job controller's labels dropped, the expected
    runtime set to what is left. New dicts where it differs; the rest is shared with the
    cached hub object, which nothing writes to (a deep copy per release was a tenth of a
    pass at 3,000 Jobs)."""
    out = dict(template)
    tmeta = out["metadata"] = dict(out.get("metadata") or {})
    tmeta["labels"] = {
        k: v for k, v in (tmeta.get("labels") or {}).items() if k not in _TEMPLATE_LABELS
    }
    tmeta["annotations"] = {**(tmeta.get("annotations") or {}), RUNTIME: f"{remaining_s}s"}
    return out


class JobAdapter:
    """batch/v1 Job: :data:`JOB` for the one-cluster controller (opted in by its label rule,
    a hub Job refused), :data:`HUB_JOB` for the hub (opted in by the hub label)."""

    kind: WorkloadKind = "Job"
    api_version = "batch/v1"
    plural = "jobs"
    shared_hold = True
    late_hold = True

    def __init__(self, opt_in: OptIn = OptIn.LABEL) -> None:
        self.opt_in = opt_in

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        return api_path(self.api_version, self.plural, namespace, name)

    def intent_source(self, obj: Obj, owners: Mapping[str, Obj]) -> IntentSource | None:
        return job_intent_source("Job", metadata(obj), obj, self.opt_in)

    def pod_specs(self, obj: Obj) -> list[Obj]:
        return [((obj.get("spec") or {}).get("template") or {}).get("spec") or {}]

    def is_held(self, obj: Obj) -> bool:
        return bool((obj.get("spec") or {}).get("suspend"))

    def is_finished(self, obj: Obj) -> bool:
        return condition_true(obj, "Complete") or condition_true(obj, "Failed")

    def runs_on(self, obj: Obj) -> str | None:
        # a hub Job runs as a copy in the spoke the hub wrote down before creating it
        placed = (metadata(obj).get("annotations") or {}).get(PLACED_CLUSTER)
        return str(placed) if placed else None

    def spoke_jobs(self, obj: Obj) -> set[tuple[str, str]]:
        """The hub Job's copy in the spoke: same namespace and name."""
        meta = metadata(obj)
        return {(str(meta.get("namespace", "")), str(meta.get("name")))}

    def hub_owns(self, obj: Obj, check_names: Collection[str]) -> bool:
        """A hub Job: the hub label, and neither Kueue's (a Kueue Job is placed through its
        Workload) nor a spoke copy's."""
        labels = metadata(obj).get("labels") or {}
        return (
            labels.get(HUB_LABEL) == "true"
            and QUEUE_LABEL not in labels
            and HUB_UID_LABEL not in labels
        )

    def copied(self, obj: Obj) -> bool:
        """A hub Job always runs as a copy in its spoke."""
        return True

    def spoke_copy(self, obj: Obj, cluster: str, remaining_s: int) -> Obj:
        spec = obj.get("spec") or {}
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": copy_metadata(obj, cluster),
            "spec": {
                **{k: spec[k] for k in ("parallelism", "completions", "backoffLimit") if k in spec},
                "suspend": False,
                "template": copy_template(spec.get("template") or {}, remaining_s),
            },
        }

    def copy_status(self, obj: Obj, copy: Obj) -> Obj:
        """The copy's times, counts and conditions beside the hub Job's ``Suspended``
        condition (the hub Job stays suspended: Kubernetes 1.32 accepts ``Complete`` beside
        it in a ``/status`` write)."""
        status = copy.get("status") or {}
        out = dict(obj.get("status") or {})
        kept = [c for c in out.get("conditions") or [] if c.get("type") == "Suspended"]
        out.update(
            {
                k: status[k]
                for k in ("startTime", "completionTime", "succeeded", "failed")
                if k in status
            }
        )
        out["active"] = 0
        out["conditions"] = kept + [
            c for c in status.get("conditions") or [] if c.get("type") != "Suspended"
        ]
        return out

    def succeeded(self, obj: Obj) -> bool:
        return condition_true(obj, "Complete")

    def copy_summary(self, copy: Obj) -> Obj:
        status = copy.get("status") or {}
        return {
            "active": status.get("active", 0),
            "succeeded": status.get("succeeded", 0),
            "failed": status.get("failed", 0),
            "startTime": status.get("startTime"),
        }

    opt_in_switch = "manage_jobs"

    def held_elsewhere(self, obj: Obj) -> str | None:
        return None

    def admission_ops(self, obj: Obj) -> list[Obj] | str | None:
        if (obj.get("spec") or {}).get("suspend"):
            return []
        return [{"op": "add", "path": "/spec/suspend", "value": True}]

    def hold_spec(self, obj: Obj) -> Obj:
        return {"suspend": True}

    def release_spec(self, obj: Obj, affinity: Obj | None) -> Obj:
        spec: Obj = {"suspend": False}
        if affinity is not None:
            spec["template"] = {"spec": {"affinity": affinity}}
        return spec


JOB = JobAdapter()
HUB_JOB = JobAdapter(OptIn.HUB_LABEL)
