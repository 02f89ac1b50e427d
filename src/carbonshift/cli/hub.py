"""``carbonshift hub``: run the hub controller that places work in spoke clusters.

Run mode serves Prometheus ``/metrics`` (``metrics`` section), elects a leader among hub
replicas with a Lease (``leader_election`` section; only the leader reconciles) and records
Events on the hub objects after each pass; ``--once`` reconciles once, records its Events and
prints what it decided.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from prometheus_client import make_asgi_app

from carbonshift.carbon.providers._http import ScrubSecrets
from carbonshift.cli import _clock
from carbonshift.k8s import heap
from carbonshift.k8s.app import Served, serve
from carbonshift.k8s.client import ApiKube, connect
from carbonshift.k8s.clock import SystemClock
from carbonshift.k8s.leader import LeaderElector
from carbonshift.k8s.multicluster import (
    HubConfig,
    HubController,
    HubMetrics,
    HubObserver,
    HubRunner,
)
from carbonshift.k8s.multicluster.api import HubApi
from carbonshift.k8s.multicluster.config import load_hub_config
from carbonshift.k8s.planner import carbon_source_for, check_source

__all__ = ["command"]


class Format(StrEnum):
    """Output format of ``--once``."""

    TABLE = "table"
    JSON = "json"


def _identity(config: HubConfig) -> str:
    return config.leader_election.identity or f"{socket.gethostname()}-{os.getpid()}"


async def _serve(controller: HubController, kube: ApiKube, resync_s: float) -> None:
    """Run mode: /metrics, leader election, reconcile + observe every ``resync_s``."""
    config, clock = controller.config, controller.clock
    identity = _identity(config)
    metrics = HubMetrics()
    if kube.limiter is not None:
        kube.limiter.observe = metrics.rate_limit_wait.observe
    observer = HubObserver(controller, metrics, identity=identity)
    elector: LeaderElector | None = None
    served: Served | None = None
    tasks: list[asyncio.Task[Any]] = []
    try:
        if config.metrics.enabled:
            app = make_asgi_app(metrics.registry)
            served = await serve("metrics", app, config.metrics, tls=False)
            typer.echo(f"metrics on http://{config.metrics.host}:{served.port}/metrics", err=True)
        if config.leader_election.enabled:
            elector = LeaderElector(config.leader_election, kube, clock, identity)
            tasks.append(asyncio.create_task(elector.run()))
            lease = f"{config.leader_election.namespace}/{config.leader_election.lease_name}"
            typer.echo(f"{identity} campaigns for Lease {lease}", err=True)
        runner = HubRunner(observer, resync_s=resync_s, elector=elector)
        tasks.append(asyncio.create_task(runner.run()))
        stop = asyncio.Event()  # SIGTERM (kubelet) or SIGINT (Ctrl-C): give the Lease up, exit
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        stopper = asyncio.create_task(stop.wait())
        typer.echo("carbonshift hub running; Ctrl-C or SIGTERM stops it", err=True)
        try:
            done, _ = await asyncio.wait([*tasks, stopper], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
        for task in done:
            if task is not stopper:
                task.result()
        if stop.is_set():
            typer.echo("carbonshift hub stopping: giving the Lease up", err=True)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if elector is not None:
            await elector.release()  # the next replica takes over at once
        if served is not None:
            served.server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await served.task


async def _run(
    config: HubConfig, kubeconfig: str | None, once: bool, resync_s: float
) -> dict[str, object]:
    ScrubSecrets.install()  # no credential in the logs, even at debug level
    clock = SystemClock()
    limit = config.client_connection
    kube = await connect(kubeconfig, clock, qps=limit.qps, burst=limit.burst)
    hub = HubApi(kube)
    # the process's own hub: the collector tuned, the heap settled once its first lists are in
    heap.prepare()
    controller = HubController(config, hub, clock, after_list=heap.settle)
    try:
        if not once:
            await _serve(controller, kube, resync_s)
            return {}
        observer = HubObserver(controller, identity=_identity(config))
        round_ = await observer.reconcile()
        return {
            "spokes": {
                name: {"health": s.health, "zone": s.spec.zone, "capacity": s.capacity}
                for name, s in sorted(controller.spokes.items())
            },
            "decisions": {
                key: {
                    "cluster": d.cluster,
                    "start": d.start.strftime("%Y-%m-%dT%H:%MZ"),
                    "start_now": d.start_now,
                    "reason": d.reason,
                }
                for key, d in sorted((round_.decisions if round_ else {}).items())
            },
        }
    finally:
        await controller.close()
        await hub.close()


def command(
    config: Path | None = typer.Option(
        None,
        "--config",
        "-c",
        help="Hub configuration (.yaml or .toml; docs/multicluster.md); default: built-in.",
        envvar="CARBONSHIFT_HUB_CONFIG",
    ),
    kubeconfig: str | None = typer.Option(
        None,
        "--kubeconfig",
        envvar="KUBECONFIG",
        help="Hub kubeconfig (default: in-cluster service account, then ~/.kube/config).",
    ),
    once: bool = typer.Option(
        False,
        "--once",
        help="Reconcile once (no leader election, no /metrics), record its Events, write "
        "every plan (no hold_writes_per_pass limit), print spokes and decisions, and exit.",
    ),
    resync_s: float = typer.Option(30.0, "--resync-s", min=1.0, help="Seconds between passes."),
    check: bool = typer.Option(
        False,
        "--check",
        help="Validate the configuration, print the carbon source chain and what it answers "
        "now for each --zone (ok, degraded with the reasons, or failing), and exit; no cluster "
        "is contacted.",
    ),
    zones: list[str] = typer.Option(
        ["DE"], "--zone", help="Zone(s) --check asks about (repeat; the spokes' zones)."
    ),
    fmt: Format = typer.Option(
        Format.TABLE, "--format", help="Output of --once and --check: table or json."
    ),
) -> None:
    """Place opted-in hub Jobs, Kueue workloads and AppWrappers in the cleaner spoke and slot.

    Runs until stopped: /metrics, Lease leader election (only the leader reconciles), Events.

    Example: carbonshift hub --kubeconfig hub.kubeconfig --once --format json

    Example: carbonshift hub --config deploy/hub/hub.yaml --resync-s 30

    Example: carbonshift hub --config deploy/hub/hub.yaml --check --zone DE --zone GB
    """
    loaded = load_hub_config(config) if config is not None else HubConfig()
    if check:
        now = _clock.now()
        report = {
            zone: check_source(cfg, carbon_source_for(cfg, clock=_clock.CLOCK), now)
            for zone in zones
            for cfg in [loaded.controller_config(zone)]
        }
        if fmt is Format.JSON:
            typer.echo(
                json.dumps({"planning": loaded.planning.model_dump(), "carbon": report}, indent=1)
            )
            return
        typer.echo(f"policy {loaded.planning.policy}, forecast {loaded.planning.forecast}")
        for zone, carbon in report.items():
            for key, value in carbon.items():
                typer.echo(f"{zone + '.' + key:26} {value}")
        return
    if once:  # one pass and no next one to write the rest: every plan in this pass
        loaded = loaded.model_copy(update={"hold_writes_per_pass": 0})
    result = asyncio.run(_run(loaded, kubeconfig, once, resync_s))
    if not once:  # run mode ended by SIGTERM or Ctrl-C: the Lease is given up, nothing to print
        return
    if fmt is Format.JSON:
        typer.echo(json.dumps(result, indent=1))
        return
    spokes = result["spokes"]
    decisions = result["decisions"]
    assert isinstance(spokes, dict)
    assert isinstance(decisions, dict)
    for name, spoke in spokes.items():
        typer.echo(f"spoke {name:12} {spoke['zone']:8} {spoke['health']:13} {spoke['capacity']}")
    for key, d in decisions.items():
        when = "now" if d["start_now"] else d["start"]
        typer.echo(f"{key:40} {d['cluster'] or '-':10} {when:18} {d['reason']}")


if __name__ == "__main__":  # until the verb is registered in cli/app.py
    typer.run(command)
