"""Builders of raw Kubernetes objects (plain JSON dicts) for the controller's tests."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

T0 = "2023-11-14T00:00:00Z"


def pod(
    name: str = "p1",
    *,
    namespace: str = "batch",
    managed: str | None = "true",
    annotations: dict[str, str] | None = None,
    cpu: str | None = "2",
    memory: str | None = None,
    created: str | None = T0,
    priority_class: str | None = None,
    gates: list[str] | None = None,
    uid: str | None = None,
    owner_job: str | None = None,
) -> Obj:
    """A one-container Pod; ``managed`` sets the carbonshift.io/managed label (None: none)."""
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{name}",
        "labels": {} if managed is None else {"carbonshift.io/managed": managed},
        "annotations": dict(annotations or {}),
    }
    if created is not None:
        meta["creationTimestamp"] = created
    if owner_job is not None:
        meta["ownerReferences"] = [
            {"kind": "Job", "name": owner_job, "uid": "u", "apiVersion": "batch/v1"}
        ]
    spec: Obj = {
        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": requests}}],
    }
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def job(
    name: str = "j1",
    *,
    namespace: str = "batch",
    managed: str | None = "true",
    annotations: dict[str, str] | None = None,
    cpu: str = "1",
    parallelism: int | None = None,
    suspend: bool | None = None,
    created: str | None = T0,
) -> Obj:
    """A batch/v1 Job whose pod template asks for ``cpu``."""
    template = pod(name, namespace=namespace, managed=managed, cpu=cpu, created=None)
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "labels": {} if managed is None else {"carbonshift.io/managed": managed},
        "annotations": dict(annotations or {}),
    }
    if created is not None:
        meta["creationTimestamp"] = created
    spec: Obj = {
        "template": {
            "metadata": {"labels": template["metadata"]["labels"]},
            "spec": {**template["spec"], "restartPolicy": "Never"},
        },
    }
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if suspend is not None:
        spec["suspend"] = suspend
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


def node(
    name: str = "n1", *, cpu: str = "8", memory: str = "32Gi", labels: dict[str, str] | None = None
) -> Obj:
    """A Ready node with ``cpu`` and ``memory`` allocatable."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
