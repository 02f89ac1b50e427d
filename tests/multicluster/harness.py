"""A fake hub and spokes in one virtual time, and the hub controller wired to them.

Every fake cluster runs in its own thread (``run_fakekube``); blocking calls into them go
through ``asyncio.to_thread``. :meth:`Fleet.step` moves every clock together, runs one hub
reconcile and lets the spokes' emulated controllers start what was created.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from carbonshift.k8s.client import connect
from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.informer import namespaced_key
from carbonshift.k8s.intent import HUB_LABEL
from carbonshift.k8s.keys import HUB_UID_LABEL
from carbonshift.k8s.multicluster import HubConfig, HubController
from carbonshift.k8s.multicluster.api import HubApi
from carbonshift.k8s.multicluster.workloads import HOLD_GATE, QUEUE_LABEL
from fakekube import FakeKube, FakeKubeConfig, run_fakekube
from fakekube.plugins import appwrapper_crd, upstream_crds
from fakekube.plugins.appwrapper import AppWrapperEmulator, LocalMcadEmulator
from fakekube.plugins.kueue import KueueEmulator, setup_objects
from tests.k8s import rbac

#: The hold rule off, as in the simulator's default scenario: these tests exercise holding
#: and placing 10 W workloads whose savings are below the hub's defaults (1 g, 1 %); the rule
#: itself is tested in tests/planning/test_hold.py and tests/multicluster/test_plan_hub.py.
HOLD_OFF = {
    "min_saving_g": 0,
    "min_saving_pct": 0,
    "replan_min_improvement_g": 0,
    "replan_min_improvement_pct": 0,
}

Obj = dict[str, Any]
HUB_NS = "carbonshift-system"

#: spoke name -> (grid zone, watts per core)
SPOKES: dict[str, tuple[str, float]] = {"ca-on": ("CA-ON", 10.0), "de": ("DE", 10.0)}


@dataclass
class Fleet:
    hub: FakeKube
    spokes: dict[str, FakeKube]
    clock: ExternalClock
    config: HubConfig
    controller: HubController | None = None
    kueue: KueueEmulator | None = None
    mcad: AppWrapperEmulator | None = None
    spoke_mcad: LocalMcadEmulator | None = None
    """tardieu/mcad in each spoke (``real_mcad_crd``): dispatches the AppWrappers there."""

    @property
    def kubes(self) -> list[FakeKube]:
        return [self.hub, *self.spokes.values()]

    def now(self) -> datetime:
        return self.hub.now()

    async def start_controller(self) -> HubController:
        # as the shipped ServiceAccount under deploy/hub's RBAC, never as the admin
        kubeconfig = await asyncio.to_thread(
            self.hub.service_account_kubeconfig, HUB_NS, "carbonshift-hub"
        )
        api = HubApi(await connect(str(kubeconfig), self.clock))
        self.controller = HubController(self.config, api, self.clock)
        return self.controller

    async def stop_controller(self) -> None:
        if self.controller is not None:
            await self.controller.close()
            await self.controller.hub.close()
            self.controller = None

    async def settle(self) -> None:
        for kube in self.kubes:
            await kube.settle_async()
        for emulator in (self.kueue, self.mcad, self.spoke_mcad):
            if emulator is not None:
                await emulator.settle()
                for kube in self.kubes:
                    await kube.settle_async()

    async def caught_up(self) -> None:
        """Wait until the hub controller's watch-fed caches hold every hub object and spoke
        copy at the server's version and their watches have handed on those versions' events
        (watch events arrive when they arrive; a pass reads the caches as they are, so a test
        that asserts on one pass waits for them first)."""
        controller = self.controller
        if controller is None:
            return
        behind: list[str] = []
        for _ in range(1000):
            pairs = [
                (self.hub, informer, None)
                for informer in controller._caches.values()
                if informer.running and not informer.failing  # a pass relists a failed one
            ] + [
                (self.spokes[name], copies, HUB_UID_LABEL)
                for name, spoke in controller.spokes.items()
                for copies in spoke.kind_copies.values()
                if copies.running and not copies.failing and name in self.spokes
            ]
            behind = []
            for kube, informer, label in pairs:
                listed = await asyncio.to_thread(
                    kube.list, informer.kind, None, informer.api_version
                )
                want = {
                    namespaced_key(o): o["metadata"]["resourceVersion"]
                    for o in listed
                    if label is None or label in (o["metadata"].get("labels") or {})
                }
                have = {k: o["metadata"].get("resourceVersion") for k, o in informer.items.items()}
                if want != have:
                    diff = sorted(set(want.items()) ^ set(have.items()))[:4]
                    behind.append(f"{informer.path} {label or ''}: {diff}")
                # the cache may hold a version from the answer of the hub's own write before
                # its watch event (the echo) has come: wait for the watch too
                watched = informer.resource_version or ""
                newest = max((int(v) for v in want.values()), default=0)
                if watched.isdigit() and int(watched) < newest:
                    behind.append(f"{informer.path} {label or ''}: watched {watched} < {newest}")
            if not behind:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"the hub's caches stayed behind: {behind}")

    async def step(self, minutes: float) -> None:
        for kube in self.kubes:
            await kube.advance_async(minutes=minutes)
        await self.settle()
        if self.controller is not None:
            await self.caught_up()
            await self.controller.reconcile()
        await self.settle()

    async def create(self, kube: FakeKube, obj: Obj) -> Obj:
        result: Obj = await asyncio.to_thread(kube.create, obj)
        return result

    async def get(
        self, kube: FakeKube, kind: str, name: str, namespace: str = "", api_version: str = "v1"
    ) -> Obj:
        result: Obj = await asyncio.to_thread(kube.get, kind, name, namespace, api_version)
        return result

    async def delete(
        self, kube: FakeKube, kind: str, name: str, namespace: str = "", api_version: str = "v1"
    ) -> None:
        """Delete as the cluster's admin (the tests' own setup, not the product)."""

        def remove() -> None:
            api = kube.cluster.api
            kube._run(api.delete, api.kind(kind, api_version), namespace, name, {})

        await asyncio.to_thread(remove)

    async def list(
        self, kube: FakeKube, kind: str, namespace: str | None = None, api_version: str = "v1"
    ) -> list[Obj]:
        result: list[Obj] = await asyncio.to_thread(kube.list, kind, namespace, api_version)
        return result


def carbon_cluster(name: str, zone: str, watts: float) -> Obj:
    return {
        "apiVersion": "carbonshift.io/v1alpha1",
        "kind": "CarbonCluster",
        "metadata": {"name": name},
        "spec": {
            "zone": zone,
            "kubeconfigSecretRef": {"name": f"spoke-{name}", "key": "kubeconfig"},
            "wattsPerUnit": {"cpu": watts},
            "pue": 1.2,
            "embodiedGPerUnitHour": {"cpu": 1.0},
        },
    }


def kubeconfig_secret(name: str, kube: FakeKube, kubeconfig: Path | None = None) -> Obj:
    """The hub's Secret for spoke ``name``: ``kubeconfig`` (default: the spoke's admin one)."""
    text = (kubeconfig or kube.kubeconfig).read_text()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"spoke-{name}", "namespace": HUB_NS},
        "data": {"kubeconfig": base64.b64encode(text.encode()).decode()},
    }


def hub_job(
    name: str,
    *,
    cpu: int = 2,
    runtime_h: float = 2,
    deadline_h: float = 12,
    namespace: str = "batch",
    interruptible: bool = False,
    overhead: str = "",
    queue: str = "",
) -> Obj:
    """A hub Job (label carbonshift.io/hub: "true"; or a Kueue-queued one when ``queue`` is
    set), suspended."""
    runtime = f"{int(runtime_h * 60)}m"
    annotations = {
        "carbonshift.io/expected-runtime": runtime,
        "carbonshift.io/deadline": f"{int(deadline_h * 60)}m",
    }
    if interruptible:
        annotations["carbonshift.io/interruptible"] = "true"
    if overhead:
        annotations["carbonshift.io/restart-overhead"] = overhead
    labels = {QUEUE_LABEL: queue} if queue else {HUB_LABEL: "true"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "suspend": True,
            "template": {
                "metadata": {"annotations": {"carbonshift.io/expected-runtime": runtime}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": str(cpu)}},
                        }
                    ],
                },
            },
        },
    }


def appwrapper(
    name: str,
    *,
    cpu: int = 2,
    runtime_h: float = 2,
    deadline_h: float = 12,
    interruptible: bool = False,
    overhead: str = "",
    copied: bool = False,
) -> Obj:
    """An MCAD AppWrapper with one Job item, created behind our dispatching gate, or with
    ``copied`` labelled for the hub (``carbonshift.io/hub: "true"``, no gate): the hub places
    a copy in the spoke."""
    job = hub_job(
        name,
        cpu=cpu,
        runtime_h=runtime_h,
        deadline_h=deadline_h,
        interruptible=interruptible,
        overhead=overhead,
    )
    item = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": job["spec"],
    }
    item["spec"] = {**job["spec"], "suspend": False}
    spec: Obj = {"resources": {"GenericItems": [{"replicas": 1, "generictemplate": item}]}}
    if not copied:
        spec["dispatchingGates"] = [HOLD_GATE]
    return {
        "apiVersion": "workload.codeflare.dev/v1beta1",
        "kind": "AppWrapper",
        "metadata": {
            "name": name,
            "namespace": "batch",
            "annotations": job["metadata"]["annotations"],
            **({"labels": {HUB_LABEL: "true"}} if copied else {}),
        },
        "spec": spec,
    }


@contextlib.asynccontextmanager
async def fleet(
    start: datetime,
    *,
    spokes: dict[str, tuple[str, float]] | None = None,
    nodes: int = 2,
    cpu: str = "8",
    config: HubConfig | None = None,
    spoke_rbac: tuple[Path, ...] = rbac.SPOKE_RBAC,
    readable_secrets: list[str] | None = None,
    spoke_tls: bool = False,
    spoke_certificates: bool = False,
    real_mcad_crd: bool = False,
    mcad_spokes: tuple[str, ...] | None = None,
) -> AsyncIterator[Fleet]:
    """A hub (no nodes, every CRD) and spokes (``nodes`` x ``cpu``), all at ``start``.

    Every cluster enforces RBAC: the hub controller runs as ServiceAccount carbonshift-hub
    under deploy/hub/rbac.yaml, and reaches each spoke as a ServiceAccount bound to the
    ClusterRole of ``spoke_rbac`` (default: the shipped deploy/hub/spoke-rbac.yaml). The hub's
    Role may read the Secrets ``readable_secrets`` (default: every spoke's). ``spoke_tls``
    serves the spokes over HTTPS (the Secrets' kubeconfigs carry their CAs);
    ``spoke_certificates`` (with it) makes the hub's spoke identity a client-certificate
    user instead of a ServiceAccount token. ``real_mcad_crd`` installs tardieu/mcad's own
    AppWrapper CRD on the hub instead of the emulation's schema, and on every spoke, where
    :class:`LocalMcadEmulator` (``f.spoke_mcad``) dispatches the AppWrappers created there;
    the hub runs no MCAD then. ``mcad_spokes`` (default: all) names the spokes that have it."""
    spokes = spokes or SPOKES
    with contextlib.ExitStack() as stack:
        hub = stack.enter_context(
            run_fakekube(
                FakeKubeConfig(
                    nodes=0,
                    start=start,
                    custom_resources=hub_crds(real_mcad_crd=real_mcad_crd),
                    rbac=True,
                )
            )
        )
        kubes = {
            name: stack.enter_context(
                run_fakekube(
                    FakeKubeConfig(
                        nodes=nodes,
                        cpu=cpu,
                        start=start,
                        seed=i + 1,
                        rbac=True,
                        custom_resources=spoke_crds(
                            real_mcad_crd=real_mcad_crd
                            and (mcad_spokes is None or name in mcad_spokes)
                        ),
                    ),
                    tls=spoke_tls,
                )
            )
            for i, name in enumerate(spokes)
        }
        f = Fleet(
            hub,
            kubes,
            ExternalClock(hub.now, poll_s=3600.0),
            config
            or HubConfig.model_validate(
                {"planning": {"policy": "caspian", "forecast": "oracle", **HOLD_OFF}}
            ),
        )
        for ns in (HUB_NS, "batch"):
            await f.create(hub, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        secrets = [f"spoke-{n}" for n in spokes] if readable_secrets is None else readable_secrets
        await asyncio.to_thread(
            functools.partial(rbac.install, hub, rbac.HUB_RBAC, spoke_secrets=secrets)
        )
        for name, (zone, watts) in spokes.items():
            identity = (
                rbac.spoke_certificate_identity if spoke_certificates else rbac.spoke_identity
            )
            remote = await asyncio.to_thread(identity, kubes[name], rbac_files=spoke_rbac)
            await f.create(hub, kubeconfig_secret(name, kubes[name], remote))
            await f.create(hub, carbon_cluster(name, zone, watts))
        workers = {name: kube.base_url for name, kube in kubes.items()}
        tokens = {kube.base_url: kube.admin_token for kube in f.kubes}
        cas = {kube.base_url: str(kube.ca.cert) for kube in f.kubes if kube.ca is not None}
        f.kueue = KueueEmulator(hub.base_url, workers, tokens=tokens, ca_files=cas)
        if not real_mcad_crd:  # the emulation writes its own MCAD's status, not tardieu's
            f.mcad = AppWrapperEmulator(hub.base_url, workers, tokens=tokens, ca_files=cas)
        else:
            with_mcad = {
                n: u for n, u in workers.items() if mcad_spokes is None or n in mcad_spokes
            }
            f.spoke_mcad = LocalMcadEmulator(hub.base_url, with_mcad, tokens=tokens, ca_files=cas)
        for obj in kueue_setup(list(spokes)):
            await f.create(hub, obj)
        try:
            yield f
        finally:
            await f.stop_controller()
            await f.kueue.close()
            for mcad in (f.mcad, f.spoke_mcad):
                if mcad is not None:
                    await mcad.close()
            for kube in f.kubes:
                errors = kube.cluster.controller_errors
                assert not errors, f"a fake cluster's emulated controllers failed: {errors}"


KUEUE = "kueue.x-k8s.io/v1beta2"


def carboncluster_crd() -> Obj:
    """The CarbonCluster CRD as shipped: deploy/hub/crd-carboncluster.yaml (the one source)."""
    crd: Obj = yaml.safe_load((rbac.DEPLOY / "hub" / "crd-carboncluster.yaml").read_text())
    return crd


def hub_crds(*, real_mcad_crd: bool = False) -> tuple[Obj, ...]:
    """The hub's CRDs: the real Kueue ones (unchanged upstream copies), the CarbonCluster CRD
    as shipped in deploy/hub/, and the emulation's AppWrapper schema (the real tardieu/mcad
    CRD has no dispatchingGates nor clusterScheduling, which the hub writes: docs/fakekube.md),
    or with ``real_mcad_crd`` that real one."""
    if real_mcad_crd:
        mcad = tuple(c for c in upstream_crds("mcad") if c["spec"]["names"]["kind"] == "AppWrapper")
        return (*upstream_crds("kueue"), carboncluster_crd(), *mcad)
    return (*upstream_crds("kueue"), carboncluster_crd(), appwrapper_crd())


def spoke_crds(*, real_mcad_crd: bool = False) -> tuple[Obj, ...]:
    """A spoke's CRDs: none, or with ``real_mcad_crd`` tardieu/mcad's own AppWrapper CRD."""
    if not real_mcad_crd:
        return ()
    return tuple(c for c in upstream_crds("mcad") if c["spec"]["names"]["kind"] == "AppWrapper")


def kueue_setup(workers: list[str], *, quota_cpu: int = 64) -> list[Obj]:
    """Kueue v1beta2 objects: our AdmissionCheck, MultiKueue's, its config and clusters, a
    ClusterQueue and the ``batch`` LocalQueue (the emulation's builders, as in
    ``deploy/hub/kueue.yaml``)."""
    return setup_objects(workers, quota_cpu=quota_cpu)
