"""``carbonshift reproduce``: a seed paper's experiment on the embedded data, ours beside theirs."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from carbonshift.sim.reproduce import REPRODUCTIONS, reproduce

__all__ = ["command"]


def command(
    name: str = typer.Argument(..., help=f"Which paper: {', '.join(REPRODUCTIONS)}."),
    out: Path = typer.Option(Path("out/reproduce"), "--out", help="Output folder."),
    quick: bool = typer.Option(False, "--quick", help="One seed instead of five."),
    output_format: str = typer.Option("table", "--format", help="table or json."),
    traces: Path | None = typer.Option(
        None, "--traces", help="Folder with gaia/ and pwa/ traces (default ../shared/data/traces)."
    ),
) -> None:
    """Run a seed paper's experiment and print our figures next to the published ones.

    Example: carbonshift reproduce caspian --quick --out out/caspian
    """
    if output_format not in ("table", "json"):
        raise typer.BadParameter(f"--format {output_format!r}: use table or json")
    console = Console(stderr=True)
    target = out / name
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(name, total=None)

        def step(done: int, total: int, what: str) -> None:
            progress.update(task, completed=done, total=total, description=f"{name}: {what}")

        result = reproduce(name, target, quick=quick, step=step, traces=traces)
    if output_format == "json":
        typer.echo(json.dumps({"name": result.name, "rows": list(result.rows)}, indent=1))
        return
    table = Table(title=f"{name} reproduction (ours beside the paper's)")
    for column in result.columns:
        table.add_column(column, justify="right", overflow="fold")
    for row in result.rows:
        table.add_row(*(_cell(row.get(c)) for c in result.columns))
    out_console = Console()
    out_console.print(table)
    for note in result.notes:
        out_console.print(f"- {note}")
    for path in result.files:
        out_console.print(f"wrote {path}")
    report = target / "omega1-0.5" / "report.html"
    if report.exists():
        out_console.print(f"report: {report}")


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
