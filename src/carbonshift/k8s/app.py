"""Everything one controller process runs: reconciler, leader election, webhook, extender and
metrics servers, wired to one configuration, one client and one clock.

:class:`ControllerApp` starts them on the running event loop and stops them; the CLI verb
``carbonshift controller`` and the end-to-end tests both use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from prometheus_client import make_asgi_app

from carbonshift.errors import InputError
from carbonshift.k8s import heap
from carbonshift.k8s.client import ApiKube, Kube, connect
from carbonshift.k8s.clock import Clock, SystemClock
from carbonshift.k8s.config import ControllerConfig, ServerSection
from carbonshift.k8s.extender import extender_app
from carbonshift.k8s.leader import LeaderElector
from carbonshift.k8s.metrics import Metrics
from carbonshift.k8s.reconciler import Controller
from carbonshift.k8s.webhook import webhook_app

__all__ = ["ControllerApp", "Served", "serve"]

_LOG = logging.getLogger("carbonshift.k8s")


@dataclass
class Served:
    """A running HTTP(S) server."""

    name: str
    server: uvicorn.Server
    task: asyncio.Task[None]
    port: int
    tls: bool

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"


async def serve(name: str, app: Any, section: ServerSection, *, tls: bool = True) -> Served:
    """Serve ``app`` on ``section.host:port`` (TLS when ``tls`` and a cert is configured)."""
    if tls and not (section.cert_file and section.key_file):
        raise InputError(
            f"{name}.cert_file and {name}.key_file are required: the API server and "
            "kube-scheduler call webhooks and extenders over https"
        )
    for what, path in (("cert_file", section.cert_file), ("key_file", section.key_file)):
        if tls and path and not Path(path).is_file():
            raise InputError(
                f"{name}.{what} {path!r} is not a file; give the PEM file of the serving "
                "certificate (docs/controller.md, Deploying)"
            )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((section.host, section.port))
    except OSError as exc:
        sock.close()
        raise InputError(
            f"{name} cannot listen on {section.host}:{section.port}: {exc.strerror}; "
            f"pick another {name}.port"
        ) from None
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ssl_certfile=section.cert_file if tls else None,
        ssl_keyfile=section.key_file if tls else None,
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
            raise InputError(f"{name} did not start")
        await asyncio.sleep(0.01)
    return Served(name, server, task, sock.getsockname()[1], tls)


@dataclass
class ControllerApp:
    """A controller process on the running loop: ``await start()``, ``await stop()``."""

    config: ControllerConfig
    kube: Kube
    clock: Clock = field(default_factory=SystemClock)
    metrics: Metrics = field(default_factory=Metrics)
    servers: dict[str, Served] = field(default_factory=dict)
    controller: Controller | None = None
    elector: LeaderElector | None = None
    settle_heap: bool = False
    """Whether the app tunes the garbage collector (:func:`carbonshift.k8s.heap.prepare` at
    the start, :func:`~carbonshift.k8s.heap.settle` once the first lists are stored):
    process-wide, so set by :meth:`connect`, the process's own entry, and not by tests that
    start many apps in one process."""
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if isinstance(self.kube, ApiKube) and self.kube.limiter is not None:
            self.kube.limiter.observe = self.metrics.rate_limit_wait.observe

    @classmethod
    async def connect(
        cls, config: ControllerConfig, kubeconfig: str | None, clock: Clock | None = None
    ) -> ControllerApp:
        """An app with a client from ``kubeconfig`` (None: in-cluster, then ~/.kube/config),
        as the process runs it (``carbonshift controller``): it settles the heap."""
        clock = clock or SystemClock()
        limit = config.client_connection
        kube = await connect(kubeconfig, clock, qps=limit.qps, burst=limit.burst)
        return cls(config=config, kube=kube, clock=clock, settle_heap=True)

    async def start(self) -> None:
        config = self.config
        if self.settle_heap:
            heap.prepare()
        self.controller = Controller(
            config,
            self.kube,
            self.clock,
            metrics=self.metrics,
            after_list=heap.settle if self.settle_heap else None,
        )
        nodes = self.controller.nodes
        if config.webhook.enabled:
            board = self.controller.source.board
            app = webhook_app(config, self.clock, self.metrics, board.reasons)
            self.servers["webhook"] = await serve("webhook", app, config.webhook)
        if config.extender.enabled:
            ext_app = extender_app(config, self.clock, nodes.get, self.controller.source)
            self.servers["extender"] = await serve("extender", ext_app, config.extender)
        if config.metrics.enabled:
            metrics_app = make_asgi_app(self.metrics.registry)
            self.servers["metrics"] = await serve("metrics", metrics_app, config.metrics, tls=False)
        leader: asyncio.Event | None = None
        if config.leader_election.enabled and not config.dry_run:  # dry run writes no Lease
            identity = config.identity or f"{socket.gethostname()}-{os.getpid()}"
            self.elector = LeaderElector(
                config.leader_election, self.kube, self.clock, identity, self.metrics
            )
            leader = self.elector.is_leader
            self._tasks.append(asyncio.create_task(self.elector.run()))
        self._tasks.append(asyncio.create_task(self.controller.run(leader)))

    async def wait(self) -> None:
        """Run until a task fails or the process is cancelled."""
        done, _ = await asyncio.wait(self._tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            task.result()

    async def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        if self.elector is not None:
            await self.elector.release()
        for served in self.servers.values():
            served.server.should_exit = True
        for served in self.servers.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await served.task
        self.servers.clear()
        if isinstance(self.kube, ApiKube):
            await self.kube.close()
