"""Opt-in tier against real clusters: a hub and at least one spoke, under the shipped RBAC;
and its twin on fake clusters with RBAC enforced (normal tier).

Runs only with ``CARBONSHIFT_REAL_HUB_KUBECONFIG`` (the hub) and
``CARBONSHIFT_REAL_SPOKES`` (``name=kubeconfig-path,...``, the spokes; they must be other
clusters than the hub, since a spoke copy has the hub Job's namespace and name), each an
admin's kubeconfig. It installs the ``CarbonCluster`` CRD from ``deploy/hub`` on the hub if
missing and applies ``deploy/hub``'s ServiceAccount and RBAC there (the hub Role reading this
run's Secrets), and on each spoke ``spoke-rbac.yaml`` bound to a ServiceAccount
``carbonshift-hub-remote`` (cluster-wide read, Jobs in this run's namespace only), as
docs/multicluster.md tells an operator to. Then, under names with a random suffix: a
namespace on the hub and the spokes, a Secret per spoke holding a kubeconfig with the
spoke ServiceAccount's TokenRequest token (never the admin's), a ``CarbonCluster`` per spoke,
and one urgent hub Job (100m CPU, 1 minute, no slack); it runs one hub pass **as the hub's
ServiceAccount** and checks that the Job was released to a healthy spoke, that the copy
there carries the hub Job's UID, and that the hub wrote Events. The namespaces, Secrets and
CarbonClusters it made are deleted at the end (the CRD and the RBAC objects stay, as an
installation would leave them). Kueue and MCAD are not exercised here.
"""

from __future__ import annotations

import base64
import contextlib
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from carbonshift.k8s.client import ConflictError, connect
from carbonshift.k8s.clock import Clock, ExternalClock, SystemClock
from carbonshift.k8s.multicluster import HubConfig, HubController, HubObserver
from carbonshift.k8s.multicluster.api import HubApi
from carbonshift.k8s.multicluster.workloads import HUB_UID_LABEL, PLACED_CLUSTER
from fakekube import FakeKubeConfig, run_fakekube
from tests.k8s import rbac
from tests.k8s.realcluster import apply_shipped_rbac, service_account_kubeconfig
from tests.multicluster.harness import hub_crds

HUB = os.environ.get("CARBONSHIFT_REAL_HUB_KUBECONFIG", "")
SPOKES = dict(
    item.split("=", 1)
    for item in os.environ.get("CARBONSHIFT_REAL_SPOKES", "").split(",")
    if "=" in item
)
CRD = Path(__file__).resolve().parents[2] / "deploy" / "hub" / "crd-carboncluster.yaml"


async def a_hub_job_goes_to_a_spoke_under_the_shipped_rbac(
    hub_kubeconfig: Path, spoke_kubeconfigs: dict[str, Path], clock: Clock, workdir: Path
) -> None:
    """The steps of the module docstring, with their checks."""
    suffix = uuid.uuid4().hex[:6]
    ns, system = f"carbonshift-e2e-{suffix}", rbac.NAMESPACE
    hub = HubApi(await connect(str(hub_kubeconfig), clock))
    spokes = {name: HubApi(await connect(str(p), clock)) for name, p in spoke_kubeconfigs.items()}
    names = {name: f"e2e-{suffix}-{name}" for name in spoke_kubeconfigs}
    remote = "carbonshift-hub-remote"
    with contextlib.suppress(ConflictError):
        await hub.create(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            yaml.safe_load(CRD.read_text()),
        )
    for namespace in (ns, system):
        with contextlib.suppress(ConflictError):
            await hub.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    controller: HubController | None = None
    try:
        await apply_shipped_rbac(hub, rbac.HUB_RBAC, spoke_secrets=list(names.values()))
        hub_identity = await service_account_kubeconfig(
            hub, hub_kubeconfig, system, "carbonshift-hub", workdir / "hub.kubeconfig"
        )
        for spoke, admin in spokes.items():
            with contextlib.suppress(ConflictError):
                await admin.create("/api/v1/namespaces", {"metadata": {"name": ns}})
            bindings = [
                rbac.spoke_binding(system, remote),
                rbac.spoke_jobs_binding(system, remote, ns),
            ]
            service_account = {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": remote, "namespace": system},
            }
            await apply_shipped_rbac(admin, rbac.SPOKE_RBAC, extra=[service_account, *bindings])
            identity = await service_account_kubeconfig(
                admin, spoke_kubeconfigs[spoke], system, remote, workdir / f"{spoke}.kubeconfig"
            )
            await hub.create(
                f"/api/v1/namespaces/{system}/secrets",
                {
                    "metadata": {"name": names[spoke]},
                    "data": {"kubeconfig": base64.b64encode(identity.read_bytes()).decode()},
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
        as_hub = HubApi(await connect(str(hub_identity), clock))
        controller = HubController(config, as_hub, clock)
        observer = HubObserver(controller)
        await observer.reconcile()
        got = await hub.get(f"/apis/batch/v1/namespaces/{ns}/jobs/probe")
        placed = got["metadata"]["annotations"][PLACED_CLUSTER]
        spoke = next(s for s, n in names.items() if n == placed)
        copy = await spokes[spoke].get(f"/apis/batch/v1/namespaces/{ns}/jobs/probe")
        assert copy["metadata"]["labels"][HUB_UID_LABEL] == created["metadata"]["uid"]
        events = await hub.list_items(f"/api/v1/namespaces/{ns}/events")
        assert "CarbonReleased" in {e.get("reason") for e in events}
    finally:
        if controller is not None:
            await controller.close()
            await controller.hub.close()
        for api in spokes.values():
            with contextlib.suppress(Exception):
                await api.delete(f"/api/v1/namespaces/{ns}")
            await api.close()
        for spoke in spoke_kubeconfigs:
            with contextlib.suppress(Exception):
                await hub.delete(f"/apis/carbonshift.io/v1alpha1/carbonclusters/{names[spoke]}")
            with contextlib.suppress(Exception):
                await hub.delete(f"/api/v1/namespaces/{system}/secrets/{names[spoke]}")
        with contextlib.suppress(Exception):
            await hub.delete(f"/api/v1/namespaces/{ns}")
        await hub.close()


@pytest.mark.realcluster
@pytest.mark.skipif(
    not (HUB and SPOKES),
    reason="set CARBONSHIFT_REAL_HUB_KUBECONFIG and CARBONSHIFT_REAL_SPOKES=name=path,...",
)
async def test_a_hub_job_is_released_to_a_real_spoke(tmp_path: Path) -> None:
    await a_hub_job_goes_to_a_spoke_under_the_shipped_rbac(
        Path(HUB), {name: Path(p) for name, p in SPOKES.items()}, SystemClock(), tmp_path
    )


async def test_the_real_cluster_steps_pass_on_fake_clusters_with_rbac_enforced(
    tmp_path: Path,
) -> None:
    start = datetime(2023, 6, 1, tzinfo=UTC)
    with (
        run_fakekube(
            FakeKubeConfig(nodes=0, start=start, custom_resources=hub_crds(), rbac=True)
        ) as hub,
        run_fakekube(FakeKubeConfig(nodes=1, cpu="8", start=start, rbac=True)) as spoke,
    ):
        await a_hub_job_goes_to_a_spoke_under_the_shipped_rbac(
            hub.kubeconfig, {"west": spoke.kubeconfig}, ExternalClock(hub.now), tmp_path
        )
