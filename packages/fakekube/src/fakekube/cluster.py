"""The fake cluster: registry, store, clock, API verbs, faults and the controller loop.

Everything here runs on one asyncio event loop (the HTTP server's); callers on other threads
go through :class:`~fakekube.runner.FakeKube`, which schedules work on
that loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from fakekube.api import FakeApi
from fakekube.auth import Authenticator
from fakekube.clock import Clock, format_time
from fakekube.controllers import run_controllers
from fakekube.errors import ConfigError
from fakekube.faults import FaultInjector
from fakekube.resources import Registry
from fakekube.selection import parse_quantity
from fakekube.store import Store

__all__ = ["FakeCluster", "FakeKubeConfig"]

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class FakeKubeConfig:
    """Start-up settings of a fake cluster; every field has a usable default."""

    nodes: int = 3
    """Number of worker nodes ``node-0`` ... ``node-{n-1}``."""
    cpu: str = "8"
    """Allocatable cpu per node (a Quantity: ``8``, ``7500m``)."""
    memory: str = "32Gi"
    """Allocatable memory per node (a Quantity)."""
    gpu: int = 0
    """Allocatable ``nvidia.com/gpu`` per node (0: none advertised)."""
    pods_per_node: int = 110
    node_labels: dict[str, str] = field(default_factory=dict)
    """Extra labels put on every node."""
    virtual_time: bool = True
    """True: the clock moves only on ``advance``; False: real time x ``speed``."""
    speed: float = 1.0
    """Real-time mode only: cluster seconds per wall-clock second."""
    start: datetime | None = None
    """The clock's start (UTC); None: now, to the second."""
    controllers: bool = True
    """Run the emulated scheduler, kubelet, Job and namespace controllers."""
    event_window: int = 1000
    """How many recent changes a watch can resume from before answering 410 Gone."""
    bookmark_interval_s: float = 5.0
    """Wall-clock seconds between BOOKMARK events on watches that asked for them."""
    tick_s: float = 1.0
    """Real-time mode only: wall-clock seconds between controller passes."""
    seed: int = 0
    """Seed for generated names and fault draws."""
    custom_resources: tuple[Obj, ...] = ()
    """CustomResourceDefinition objects to install at start-up."""
    rbac: bool = False
    """Authorize every resource request by RBAC (fakekube.auth); False: everyone is admin."""

    def __post_init__(self) -> None:
        if self.nodes < 0:
            raise ConfigError(f"nodes {self.nodes} is negative; give 0 or more nodes")
        for what, value in (("cpu", self.cpu), ("memory", self.memory)):
            if parse_quantity(value) is None:
                raise ConfigError(
                    f"{what} {value!r} is not a Kubernetes quantity; write it like 8, 500m or 32Gi"
                )
        if self.gpu < 0:
            raise ConfigError(f"gpu {self.gpu} is negative; give 0 or more GPUs per node")


class FakeCluster:
    """One fake cluster; ``await start()`` on the loop that will serve it."""

    def __init__(self, config: FakeKubeConfig) -> None:
        self.config = config
        self.registry = Registry()
        self.store = Store(window=config.event_window)
        self.clock = Clock(config.start, virtual=config.virtual_time, speed=config.speed)
        self.api = FakeApi(self.registry, self.store, self.clock, seed=config.seed)
        self.faults = FaultInjector(config.seed)
        self.auth = Authenticator()
        self.rbac = config.rbac
        """Whether RBAC is enforced now (``FakeKube.enforce_rbac`` turns it on after setup)."""
        self.host = "127.0.0.1:0"
        self._kick: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._settle_lock: asyncio.Lock | None = None
        self.controller_errors: list[str] = []

    async def start(self) -> None:
        self._kick = asyncio.Event()
        self._settle_lock = asyncio.Lock()
        await self._seed()
        self.store.on_commit.append(self._kick.set)
        if self.config.controllers:
            self._tasks.append(asyncio.create_task(self._controller_loop()))
        self._tasks.append(asyncio.create_task(self._bookmark_loop()))

    async def stop(self) -> None:
        self.drop_watches()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()

    async def _seed(self) -> None:
        api = self.api
        for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            await api.create(api.kind("Namespace"), "", {"metadata": {"name": name}})
        pc_rt = api.kind("PriorityClass", "scheduling.k8s.io/v1")
        for name, value in (
            ("system-cluster-critical", 2_000_000_000),
            ("system-node-critical", 2_000_001_000),
        ):
            await api.create(
                pc_rt, "", {"metadata": {"name": name}, "value": value, "description": "built in"}
            )
        node_rt = api.kind("Node")
        allocatable = {
            "cpu": self.config.cpu,
            "memory": self.config.memory,
            "pods": str(self.config.pods_per_node),
        }
        if self.config.gpu:
            allocatable["nvidia.com/gpu"] = str(self.config.gpu)
        now = format_time(self.clock.now())
        for i in range(self.config.nodes):
            name = f"node-{i}"
            labels = {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                **self.config.node_labels,
            }
            node = {
                "metadata": {"name": name, "labels": labels},
                "spec": {},
                "status": {
                    "capacity": dict(allocatable),
                    "allocatable": dict(allocatable),
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "KubeletReady",
                            "message": "kubelet is posting ready status",
                            "lastHeartbeatTime": now,
                            "lastTransitionTime": now,
                        }
                    ],
                    "addresses": [
                        {"type": "InternalIP", "address": f"10.0.0.{i + 1}"},
                        {"type": "Hostname", "address": name},
                    ],
                    "nodeInfo": {
                        "kubeletVersion": "v1.32.0-fakekube",
                        "operatingSystem": "linux",
                        "architecture": "amd64",
                        "containerRuntimeVersion": "fake://1.0",
                    },
                },
            }
            await api.create(node_rt, "", node)
        for crd in self.config.custom_resources:
            await api.create(
                api.kind("CustomResourceDefinition", "apiextensions.k8s.io/v1"),
                "",
                copy.deepcopy(crd),
            )

    async def settle(self) -> int:
        """Run the controllers to a fixed point now; return the rounds taken."""
        if not self.config.controllers:
            return 0
        assert self._settle_lock is not None
        async with self._settle_lock:
            return await run_controllers(self.api)

    async def advance(self, delta: timedelta) -> datetime:
        now = self.clock.advance(delta)
        await self.settle()
        return now

    async def _controller_loop(self) -> None:
        assert self._kick is not None
        while True:
            if self.config.virtual_time:
                await self._kick.wait()
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._kick.wait(), self.config.tick_s)
            self._kick.clear()
            try:
                await self.settle()
            except Exception as exc:  # a controller bug must not kill the server
                self.controller_errors.append(repr(exc))
            await asyncio.sleep(0)

    async def _bookmark_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.bookmark_interval_s)
            self.send_bookmarks()

    def send_bookmarks(self) -> None:
        rv = str(self.store.rv)
        for watcher in self.store.watchers():
            if watcher.bookmarks:
                watcher.send(
                    {
                        "type": "BOOKMARK",
                        "object": {
                            "kind": watcher.rt.kind,
                            "apiVersion": watcher.api_version,
                            "metadata": {"resourceVersion": rv},
                        },
                    }
                )

    def drop_watches(self) -> int:
        """Close every open watch (the client sees the stream end); return how many."""
        watchers = self.store.watchers()
        for watcher in watchers:
            watcher.close()
            self.store.unwatch(watcher)
        return len(watchers)
