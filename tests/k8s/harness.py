"""A controller process wired to a fake cluster in virtual time, as a test drives it.

The controller (with its webhook over TLS, extender, metrics and leader election) runs on
the test's event loop; the fake API server runs in its own thread. Every blocking call into
the fake server goes through ``asyncio.to_thread`` so that the webhook can answer while the
server waits for it. :meth:`Harness.step` advances the virtual clock, wakes the controller
and waits until it has handled everything due.
"""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from carbonshift.k8s.app import ControllerApp
from carbonshift.k8s.client import connect
from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.config import ControllerConfig, parse_config
from carbonshift.k8s.kinds import JOB, POD
from carbonshift.k8s.reconciler import Controller
from fakekube import FakeKube
from tests.k8s import rbac
from tests.k8s.certs import Certs, make_certs

Obj = dict[str, Any]

WEBHOOK_NS, WEBHOOK_SERVICE = "carbonshift-system", "carbonshift-webhook"
WEBHOOK_MANIFEST = Path(__file__).resolve().parents[2] / "deploy/base/mutatingwebhook.yaml"


def webhook_configuration(ca_pem: bytes) -> Obj:
    """The MutatingWebhookConfiguration of deploy/base, as shipped, with the test CA."""
    config: Obj = yaml.safe_load(WEBHOOK_MANIFEST.read_text())
    for webhook in config["webhooks"]:
        webhook["clientConfig"]["caBundle"] = base64.b64encode(ca_pem).decode()
    return config


def controller_config(certs: Certs, **overrides: Any) -> ControllerConfig:
    tls = {"port": 0, "cert_file": str(certs.cert_file), "key_file": str(certs.key_file)}
    raw: dict[str, Any] = {
        "cluster": {"zone": "DE", "resources": ["cpu"], "watts_per_unit": {"cpu": 10.0}},
        # the hold rule off, as in the simulator's default scenario: these tests hold 10 W
        # workloads whose savings are below the controller's defaults (1 g, 1 %); the rule
        # itself is tested in tests/k8s/test_planner.py and tests/planning/test_hold.py
        "planning": {
            "policy": "fluidos",
            "forecast": "oracle",
            "horizon_slots": 24,
            "min_saving_g": 0,
            "min_saving_pct": 0,
            "replan_min_improvement_g": 0,
            "replan_min_improvement_pct": 0,
        },
        "defaults": {"deadline_hours": 24, "expected_runtime_minutes": 60},
        "webhook": tls,
        "extender": tls,
        "metrics": {"port": 0},
        "leader_election": {"namespace": WEBHOOK_NS, "lease_duration_s": 15},
        "identity": "controller-a",
    }
    for section, values in overrides.items():
        if isinstance(values, dict):
            raw.setdefault(section, {}).update(values)
        else:
            raw[section] = values
    return parse_config(raw)


@dataclass
class Harness:
    kube: FakeKube
    clock: ExternalClock
    certs: Certs
    app: ControllerApp | None = None

    @property
    def controller(self) -> Controller:
        assert self.app is not None
        assert self.app.controller is not None
        return self.app.controller

    async def start(self, config: ControllerConfig) -> ControllerApp:
        """Start a controller process (webhook endpoint registered, leader elected), as
        ServiceAccount carbonshift-controller under the shipped deploy/base RBAC."""
        kubeconfig = await asyncio.to_thread(
            self.kube.service_account_kubeconfig, WEBHOOK_NS, "carbonshift-controller"
        )
        app = ControllerApp(config, await connect(str(kubeconfig), self.clock), self.clock)
        await app.start()
        await asyncio.to_thread(
            self.kube.register_service_endpoint,
            WEBHOOK_NS,
            WEBHOOK_SERVICE,
            app.servers["webhook"].url,
        )
        self.app = app
        if app.elector is not None:
            await asyncio.wait_for(app.elector.is_leader.wait(), timeout=30)
        await self.controller.until_idle()
        return app

    async def stop(self) -> None:
        if self.app is not None:
            await self.app.stop()
            self.app = None

    async def create(self, obj: Obj) -> Obj:
        result: Obj = await asyncio.to_thread(self.kube.create, obj)
        return result

    async def get(self, kind: str, name: str, namespace: str = "batch") -> Obj:
        api_version = "batch/v1" if kind == "Job" else "v1"
        result: Obj = await asyncio.to_thread(self.kube.get, kind, name, namespace, api_version)
        return result

    async def caught_up(self) -> None:
        """Wait until the controller's cache holds every Pod and Job at the server's version
        and its watches have handed on each of those versions' events (the echo of the
        controller's own write comes after the write's answer has filled the cache, and it
        queues the check that acts on the write: a step that ended before it came would
        miss that check)."""
        for _ in range(2000):
            watched = self.controller._rv
            pods = await asyncio.to_thread(self.kube.list, "Pod")
            jobs = await asyncio.to_thread(self.kube.list, "Job", None, "batch/v1")
            cache = {**self.controller.pods, **self.controller.jobs}
            listed = [("Pod", o) for o in pods] + [("Job", o) for o in jobs]
            behind = [
                o
                for kind, o in listed
                if (cache.get(f"{kind}/{o['metadata']['namespace']}/{o['metadata']['name']}") or {})
                .get("metadata", {})
                .get("resourceVersion")
                != o["metadata"]["resourceVersion"]
                or _watch_behind(watched, kind, o)
            ]
            if not behind:
                return
            await asyncio.sleep(0.01)
        mine = {k: v["metadata"].get("resourceVersion") for k, v in cache.items()}
        raise AssertionError(
            f"the controller's cache stayed behind: {[o['metadata'] for o in behind[:3]]}; "
            f"cache {mine}; watched {self.controller._rv}"
        )

    async def step(self, **delta: float) -> None:
        """Advance the virtual clock, let the fake cluster and the controller catch up."""
        await asyncio.to_thread(self.kube.advance, **delta)
        self.clock.poke()
        if self.app is not None:
            for _ in range(3):
                await self.caught_up()
                self.clock.poke()
                await self.controller.until_idle()
                await asyncio.to_thread(self.kube.settle)


def _watch_behind(watched: dict[str, str], kind: str, obj: Obj) -> bool:
    """Whether the controller's watch of ``kind`` has not yet handed on ``obj``'s version
    (no watch yet, before the first list: not behind)."""
    path = POD.path() if kind == "Pod" else JOB.path()
    at = watched.get(path) or ""
    return at.isdigit() and int(at) < int(obj["metadata"]["resourceVersion"])


async def make_harness(kube: FakeKube, tmp_path: Path, *, rbac_on: bool = True) -> Harness:
    """Namespaces, webhook configuration, certificates and the shipped deploy/base RBAC
    (enforced from then on unless ``rbac_on`` is False: kubectl sends no credentials over
    plain HTTP); no controller yet."""
    certs = make_certs(tmp_path / "tls")
    for name, labels in ((WEBHOOK_NS, {}), ("batch", {"team": "ml"})):
        await asyncio.to_thread(
            kube.create,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}},
        )
    await asyncio.to_thread(kube.create, webhook_configuration(certs.ca_pem))
    await asyncio.to_thread(rbac.install, kube, rbac.CONTROLLER_RBAC)
    if rbac_on:
        await asyncio.to_thread(kube.enforce_rbac)
    return Harness(kube, ExternalClock(kube.now, poll_s=3600.0), certs)
