"""Builders for manifests used by the fake API server's tests."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def pod(
    name: str = "p1",
    *,
    gates: tuple[str, ...] = (),
    runtime: str | None = None,
    cpu: str | None = None,
    node_selector: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    """A minimal valid Pod manifest."""
    container: Obj = {"name": "main", "image": "busybox:1.36"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}, "annotations": {}},
        "spec": {"containers": [container], **spec},
    }
    if gates:
        body["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    if runtime:
        body["metadata"]["annotations"]["carbonshift.io/expected-runtime"] = runtime
    if node_selector:
        body["spec"]["nodeSelector"] = node_selector
    return body


def job(
    name: str = "j1",
    *,
    suspend: bool = False,
    runtime: str = "1h",
    completions: int = 1,
    parallelism: int = 1,
) -> Obj:
    """A minimal valid batch/v1 Job manifest."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "suspend": suspend,
            "completions": completions,
            "parallelism": parallelism,
            "template": {
                "metadata": {"annotations": {"carbonshift.io/expected-runtime": runtime}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox:1.36"}],
                },
            },
        },
    }


PODS = "/api/v1/namespaces/default/pods"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
MERGE = {"content-type": "application/merge-patch+json"}
JSONPATCH = {"content-type": "application/json-patch+json"}
STRATEGIC = {"content-type": "application/strategic-merge-patch+json"}
APPLY = {"content-type": "application/apply-patch+yaml"}
