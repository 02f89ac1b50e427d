"""Opt-in tier against real clusters: a hub and at least one spoke.

Runs only with ``CARBONSHIFT_REAL_HUB_KUBECONFIG`` (the hub) and
``CARBONSHIFT_REAL_SPOKES`` (``name=kubeconfig-path,...``, the spokes; they must be other
clusters than the hub, since a spoke copy has the hub Job's namespace and name). It installs
the ``CarbonCluster`` CRD from ``deploy/hub`` on the hub if missing, then, under names with a
random suffix: a namespace on the hub and the spokes, a kubeconfig Secret and a
``CarbonCluster`` per spoke, and one urgent hub Job (100m CPU, 1 minute, no slack); runs one
hub pass in real time and checks that the Job was released to a healthy spoke, that the copy
there carries the hub Job's UID, and that the hub wrote Events. Everything it made is deleted
at the end (the CRD stays). It needs cluster-admin on the hub (CRD, CarbonClusters) and the
rights of ``deploy/hub/spoke-rbac.yaml`` on the spokes. Kueue and MCAD are not exercised here.
"""

from __future__ import annotations

import base64
import contextlib
import os
import uuid
from pathlib import Path

import pytest
import yaml

from carbonshift.k8s.client import ConflictError, connect
from carbonshift.k8s.clock import SystemClock
from carbonshift.k8s.multicluster import HubConfig, HubController, HubObserver
from carbonshift.k8s.multicluster.api import HubApi
from carbonshift.k8s.multicluster.workloads import HUB_UID_LABEL, PLACED_CLUSTER

HUB = os.environ.get("CARBONSHIFT_REAL_HUB_KUBECONFIG", "")
SPOKES = dict(
    item.split("=", 1)
    for item in os.environ.get("CARBONSHIFT_REAL_SPOKES", "").split(",")
    if "=" in item
)
CRD = Path(__file__).resolve().parents[2] / "deploy" / "hub" / "crd-carboncluster.yaml"

pytestmark = [
    pytest.mark.realcluster,
    pytest.mark.skipif(
        not (HUB and SPOKES),
        reason="set CARBONSHIFT_REAL_HUB_KUBECONFIG and CARBONSHIFT_REAL_SPOKES=name=path,...",
    ),
]


async def test_a_hub_job_is_released_to_a_real_spoke() -> None:
    clock = SystemClock()
    suffix = uuid.uuid4().hex[:6]
    ns, system = f"carbonshift-e2e-{suffix}", "carbonshift-system"
    hub = HubApi(await connect(HUB, clock))
    spokes = {name: HubApi(await connect(path, clock)) for name, path in SPOKES.items()}
    names = {name: f"e2e-{suffix}-{name}" for name in SPOKES}
    with contextlib.suppress(ConflictError):
        await hub.create(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            yaml.safe_load(CRD.read_text()),
        )
    for namespace in (ns, system):
        with contextlib.suppress(ConflictError):
            await hub.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    try:
        for spoke, path in SPOKES.items():
            await hub.create(
                f"/api/v1/namespaces/{system}/secrets",
                {
                    "metadata": {"name": names[spoke]},
                    "data": {"kubeconfig": base64.b64encode(Path(path).read_bytes()).decode()},
                },
            )
            await hub.create(
                "/apis/carbonshift.io/v1alpha1/carbonclusters",
                {
                    "apiVersion": "carbonshift.io/v1alpha1",
                    "kind": "CarbonCluster",
                    "metadata": {"name": names[spoke]},
                    "spec": {"zone": "DE", "kubeconfigSecretRef": {"name": names[spoke]}},
                },
            )
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "probe",
                "labels": {"carbonshift.io/hub": "true"},
                "annotations": {
                    "carbonshift.io/expected-runtime": "1m",
                    "carbonshift.io/deadline": "1m",
                },
            },
            "spec": {
                "suspend": True,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "main",
                                "image": "busybox:1.36",
                                "command": ["sleep", "30"],
                                "resources": {"requests": {"cpu": "100m"}},
                            }
                        ],
                    }
                },
            },
        }
        created = await hub.create(f"/apis/batch/v1/namespaces/{ns}/jobs", job)
        config = HubConfig.model_validate(
            {"planning": {"policy": "fluidos", "forecast": "seasonal-day"}}
        )
        controller = HubController(config, hub, clock)
        observer = HubObserver(controller)
        await observer.reconcile()
        got = await hub.get(f"/apis/batch/v1/namespaces/{ns}/jobs/probe")
        placed = got["metadata"]["annotations"][PLACED_CLUSTER]
        spoke = next(s for s, n in names.items() if n == placed)
        remote = await spokes[spoke].get(f"/apis/batch/v1/namespaces/{ns}/jobs/probe")
        assert remote["metadata"]["labels"][HUB_UID_LABEL] == created["metadata"]["uid"]
        events = await hub.list_items(f"/api/v1/namespaces/{ns}/events")
        assert "CarbonReleased" in {e.get("reason") for e in events}
        await controller.close()
    finally:
        for api in spokes.values():
            with contextlib.suppress(Exception):
                await api.delete(f"/api/v1/namespaces/{ns}")
            await api.close()
        for spoke in SPOKES:
            with contextlib.suppress(Exception):
                await hub.delete(f"/apis/carbonshift.io/v1alpha1/carbonclusters/{names[spoke]}")
            with contextlib.suppress(Exception):
                await hub.delete(f"/api/v1/namespaces/{system}/secrets/{names[spoke]}")
        with contextlib.suppress(Exception):
            await hub.delete(f"/api/v1/namespaces/{ns}")
        await hub.close()
