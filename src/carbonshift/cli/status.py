"""``carbonshift status``: the workloads carbonshift holds, when and where they will start, why."""

from __future__ import annotations

import asyncio
from datetime import datetime

import typer

from carbonshift.cli import _clock
from carbonshift.cli._output import Column, OutputFormat, emit_rows
from carbonshift.k8s.client import connect
from carbonshift.k8s.clock import SystemClock
from carbonshift.k8s.status import ROW_KEYS, WorkloadStatus, list_status

__all__ = ["command"]


async def _collect(
    kubeconfig: str | None, namespace: str | None, every_state: bool
) -> list[WorkloadStatus]:
    kube = await connect(kubeconfig, SystemClock())
    try:
        return await list_status(
            kube, namespace=namespace, states=None if every_state else ("held",)
        )
    finally:
        await kube.close()


def _in(planned: object) -> str:
    if not isinstance(planned, str):
        return "-"
    seconds = (datetime.fromisoformat(planned) - _clock.now()).total_seconds()
    if seconds <= 0:
        return f"{planned} (due)"
    hours, rest = divmod(int(seconds), 3600)
    return f"{planned} (in {hours} h {rest // 60:02d} min)"


def command(
    kubeconfig: str | None = typer.Option(
        None,
        "--kubeconfig",
        envvar="KUBECONFIG",
        help="kubeconfig file (default: in-cluster service account, then ~/.kube/config).",
    ),
    namespace: str | None = typer.Option(
        None, "--namespace", "-n", help="Only this namespace (default: all)."
    ),
    every_state: bool = typer.Option(
        False, "--all", help="Also released and not-held workloads, not only held ones."
    ),
    output: OutputFormat = typer.Option(
        OutputFormat.TABLE, "--format", help="table, json or csv (machine column names)."
    ),
) -> None:
    """List the workloads carbonshift holds: planned start, place, reason, estimated saving.

    Works on a cluster with the one-cluster controller and on a hub (Jobs, Kueue Workloads and
    AppWrappers, where the place is the spoke cluster). Soonest planned start first.

    Example: carbonshift status --kubeconfig ~/.kube/config -n batch
    """
    rows = asyncio.run(_collect(kubeconfig, namespace, every_state))
    machine = [r.as_row() for r in rows]
    columns = [
        Column("kind"),
        Column("namespace"),
        Column("name"),
        *([Column("state")] if every_state else []),
        Column(
            "planned_start", label="planned start (UTC)", show=lambda r: _in(r["planned_start"])
        ),
        Column("place", label="place", cell=lambda v: v or "-"),
        Column(
            "estimated_saving_g",
            label="est. saving, gCO2e",
            right=True,
            cell=lambda v: "-" if v is None else f"{v:,.1f}",
        ),
        Column("reason", label="why it waits"),
    ]
    title = f"{len(rows)} workload(s) " + ("carbonshift annotated" if every_state else "held")
    emit_rows(machine, columns, fmt=output, title=title, csv_keys=ROW_KEYS)
