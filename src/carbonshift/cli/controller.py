"""``carbonshift controller``: run the Kubernetes controller, webhook, extender and metrics."""

from __future__ import annotations

import asyncio
import json
import signal
from enum import StrEnum
from pathlib import Path

import typer

from carbonshift.carbon.providers._http import ScrubSecrets
from carbonshift.cli import _clock
from carbonshift.k8s.app import ControllerApp
from carbonshift.k8s.config import ControllerConfig, load_config
from carbonshift.k8s.planner import carbon_source_for, check_source

__all__ = ["command"]


class Format(StrEnum):
    """Output format of ``--check``."""

    TABLE = "table"
    JSON = "json"


def _summary(config: ControllerConfig) -> dict[str, object]:
    return {
        "cluster": config.cluster.name,
        "zone": config.cluster.zone,
        "resources": list(config.cluster.resources),
        "policy": config.planning.policy,
        "forecast": config.planning.forecast,
        "slot_minutes": config.planning.slot_minutes,
        "namespaces_opted_in": list(config.opt_in.namespaces),
        "dry_run": config.dry_run,
        "webhook": f"{config.webhook.host}:{config.webhook.port}"
        if config.webhook.enabled
        else None,
        "extender": (
            f"{config.extender.host}:{config.extender.port}" if config.extender.enabled else None
        ),
        "metrics": f"{config.metrics.host}:{config.metrics.port}"
        if config.metrics.enabled
        else None,
        "leader_election": config.leader_election.enabled,
    }


async def _run(config: ControllerConfig, kubeconfig: str | None) -> None:
    ScrubSecrets.install()  # no credential in the logs, even at debug level
    app = await ControllerApp.connect(config, kubeconfig)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await app.start()
    ports = {name: served.port for name, served in app.servers.items()}
    typer.echo(f"carbonshift controller running ({json.dumps(ports)}); Ctrl-C stops it", err=True)
    waiter = asyncio.create_task(app.wait())
    stopper = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait((waiter, stopper), return_when=asyncio.FIRST_COMPLETED)
        if waiter.done():
            waiter.result()
    finally:
        stopper.cancel()
        waiter.cancel()
        await app.stop()


def command(
    config: Path = typer.Option(
        ...,
        "--config",
        "-c",
        help="Configuration file (.yaml or .toml); docs/controller.md.",
        envvar="CARBONSHIFT_CONTROLLER_CONFIG",
    ),
    kubeconfig: str | None = typer.Option(
        None,
        "--kubeconfig",
        envvar="KUBECONFIG",
        help="kubeconfig file (default: in-cluster service account, then ~/.kube/config).",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Plan and report (logs, metrics); write nothing to the cluster."
    ),
    check: bool = typer.Option(
        False,
        "--check",
        help="Validate the configuration, print it, the carbon source chain and what it "
        "answers now (ok, degraded with the reasons, or failing), and exit.",
    ),
    fmt: Format = typer.Option(Format.TABLE, "--format", help="Output of --check: table or json."),
) -> None:
    """Hold opted-in Pods and Jobs until their planned low-carbon slot, never past the deadline.

    Example: carbonshift controller --config deploy/base/config.yaml --kubeconfig ~/.kube/config

    Example: carbonshift controller --config deploy/base/config.yaml --check
    """
    loaded = load_config(config)
    if dry_run:
        loaded = loaded.model_copy(update={"dry_run": True})
    if check:
        summary = _summary(loaded)
        carbon = check_source(loaded, carbon_source_for(loaded, clock=_clock.CLOCK), _clock.now())
        if fmt is Format.JSON:
            typer.echo(json.dumps({**summary, "carbon": carbon}, indent=1))
        else:
            for key, value in summary.items():
                typer.echo(f"{key:20} {value}")
            for key, value in carbon.items():
                typer.echo(f"{'carbon.' + key:26} {value}")
        return
    asyncio.run(_run(loaded, kubeconfig))
