"""``carbonshift hub``: run the hub controller that places work in spoke clusters."""

from __future__ import annotations

import asyncio
import json
from enum import StrEnum
from pathlib import Path

import typer

from carbonshift.k8s.client import connect
from carbonshift.k8s.clock import SystemClock
from carbonshift.k8s.multicluster import HubConfig, HubController
from carbonshift.k8s.multicluster.api import HubApi
from carbonshift.k8s.multicluster.config import load_hub_config

__all__ = ["command"]


class Format(StrEnum):
    """Output format of ``--once``."""

    TABLE = "table"
    JSON = "json"


async def _run(
    config: HubConfig, kubeconfig: str | None, once: bool, resync_s: float
) -> dict[str, object]:
    clock = SystemClock()
    hub = HubApi(await connect(kubeconfig, clock))
    controller = HubController(config, hub, clock)
    try:
        if not once:
            typer.echo("carbonshift hub running; Ctrl-C stops it", err=True)
            await controller.run(resync_s)
        round_ = await controller.reconcile()
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
        False, "--once", help="Reconcile once, print spokes and decisions, and exit."
    ),
    resync_s: float = typer.Option(30.0, "--resync-s", min=1.0, help="Seconds between passes."),
    fmt: Format = typer.Option(Format.TABLE, "--format", help="Output of --once: table or json."),
) -> None:
    """Place opted-in hub Jobs, Kueue workloads and AppWrappers in the cleaner spoke and slot.

    Example: carbonshift hub --kubeconfig hub.kubeconfig --once --format json
    """
    loaded = load_hub_config(config) if config is not None else HubConfig()
    result = asyncio.run(_run(loaded, kubeconfig, once, resync_s))
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
