"""Opt-in tier against a real cluster, under the shipped RBAC; and its twin on the fake.

With ``KUBECONFIG`` (an admin's) and ``CARBONSHIFT_REAL_CLUSTER=1``, the real-cluster test
applies ``deploy/base``'s ServiceAccount and RBAC to the cluster (server-side apply, field
manager ``carbonshift-e2e``; left in place, as an installation would leave them), asks for the
``carbonshift-controller`` ServiceAccount's token with a TokenRequest, creates a namespace
``carbonshift-e2e-<random>`` and a gated Pod there as the admin (the gate set by the test,
so no webhook needs installing), runs one planning pass of the controller **as that
ServiceAccount**, checks that the Pod carries its planned start and reason, or was
released, then deletes the namespace. The same steps run in the normal tier against the
fake API server with RBAC enforced, so the opt-in tier's own code is tested everywhere.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from carbonshift.k8s.client import ApiKube, connect
from carbonshift.k8s.clock import Clock, ExternalClock, SystemClock
from carbonshift.k8s.config import parse_config
from carbonshift.k8s.reconciler import Controller, pod_path
from fakekube import FakeKube
from tests.k8s.objects import pod
from tests.k8s.rbac import CONTROLLER_RBAC, NAMESPACE
from tests.k8s.realcluster import apply_shipped_rbac, service_account_kubeconfig

REAL = pytest.mark.skipif(
    not (os.environ.get("KUBECONFIG") and os.environ.get("CARBONSHIFT_REAL_CLUSTER") == "1"),
    reason="set KUBECONFIG and CARBONSHIFT_REAL_CLUSTER=1 to run against a real cluster",
)


async def a_gated_pod_gets_a_plan_under_the_shipped_rbac(
    admin_kubeconfig: Path, clock: Clock, workdir: Path
) -> dict[str, str]:
    """The steps of the module docstring; the Pod's annotations after the pass."""
    admin: ApiKube = await connect(str(admin_kubeconfig), clock)
    namespace = f"carbonshift-e2e-{uuid.uuid4().hex[:6]}"
    try:
        await apply_shipped_rbac(admin, CONTROLLER_RBAC)
        identity = await service_account_kubeconfig(
            admin,
            admin_kubeconfig,
            NAMESPACE,
            "carbonshift-controller",
            workdir / "controller.kubeconfig",
        )
        await admin.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
        obj = pod(
            "probe",
            namespace=namespace,
            created=None,
            cpu="100m",
            gates=["carbonshift.io/hold"],
            annotations={"carbonshift.io/deadline": "12h", "carbonshift.io/expected-runtime": "1h"},
        )
        del obj["metadata"]["uid"]
        await admin.create(f"/api/v1/namespaces/{namespace}/pods", obj)
        kube = await connect(str(identity), clock)
        try:
            config = parse_config(
                {"cluster": {"zone": "DE"}, "leader_election": {"enabled": False}}
            )
            await Controller(config, kube, clock).plan_pass()
        finally:
            await kube.close()
        got = await admin.get(pod_path(namespace, "probe"))
        return dict(got["metadata"].get("annotations") or {})
    finally:
        try:
            await admin.delete(f"/api/v1/namespaces/{namespace}")
        finally:
            await admin.close()


@pytest.mark.realcluster
@REAL
async def test_a_gated_pod_gets_a_plan_on_a_real_cluster(tmp_path: Path) -> None:
    notes = await a_gated_pod_gets_a_plan_under_the_shipped_rbac(
        Path(os.environ["KUBECONFIG"]), SystemClock(), tmp_path
    )
    assert notes.get("carbonshift.io/state") in ("held", "released")
    assert "carbonshift.io/reason" in notes


@pytest.mark.fakekube_config(rbac=True, nodes=1)
async def test_the_real_cluster_steps_pass_on_the_fake_with_rbac_enforced(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    notes = await a_gated_pod_gets_a_plan_under_the_shipped_rbac(
        fakekube.kubeconfig, ExternalClock(fakekube.now), tmp_path
    )
    assert notes.get("carbonshift.io/state") in ("held", "released")
    assert "carbonshift.io/reason" in notes
