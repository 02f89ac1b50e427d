"""Opt-in tier against a real cluster: runs only with KUBECONFIG and CARBONSHIFT_REAL_CLUSTER=1.

It creates a namespace ``carbonshift-e2e-<random>``, a gated Pod (the gate set by the test,
so no webhook needs installing), runs the controller in real time for one planning pass and
checks that the Pod carries its planned start and reason, or was released; then deletes the
namespace. It needs RBAC for namespaces, pods, jobs, nodes, events and leases.
"""

from __future__ import annotations

import os
import uuid

import pytest

from carbonshift.k8s.client import connect
from carbonshift.k8s.clock import SystemClock
from carbonshift.k8s.config import parse_config
from carbonshift.k8s.reconciler import Controller, pod_path
from tests.k8s.objects import pod

pytestmark = [
    pytest.mark.realcluster,
    pytest.mark.skipif(
        not (os.environ.get("KUBECONFIG") and os.environ.get("CARBONSHIFT_REAL_CLUSTER") == "1"),
        reason="set KUBECONFIG and CARBONSHIFT_REAL_CLUSTER=1 to run against a real cluster",
    ),
]


async def test_a_gated_pod_gets_a_plan_on_a_real_cluster() -> None:
    clock = SystemClock()
    kube = await connect(os.environ["KUBECONFIG"], clock)
    namespace = f"carbonshift-e2e-{uuid.uuid4().hex[:6]}"
    await kube.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    try:
        obj = pod(
            "probe",
            namespace=namespace,
            created=None,
            cpu="100m",
            gates=["carbonshift.io/hold"],
            annotations={"carbonshift.io/deadline": "12h", "carbonshift.io/expected-runtime": "1h"},
        )
        del obj["metadata"]["uid"]
        await kube.create(f"/api/v1/namespaces/{namespace}/pods", obj)
        config = parse_config({"cluster": {"zone": "DE"}, "leader_election": {"enabled": False}})
        controller = Controller(config, kube, clock)
        await controller.plan_pass()
        got = await kube.get(pod_path(namespace, "probe"))
        notes = got["metadata"].get("annotations") or {}
        assert notes.get("carbonshift.io/state") in ("held", "released")
        assert "carbonshift.io/reason" in notes
    finally:
        await kube.delete(f"/api/v1/namespaces/{namespace}")
        await kube.close()
