"""``carbonshift reproduce``: a seed paper's experiment on the embedded data, ours beside theirs."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from carbonshift.cli._limits import horizon_cells_option, plan_cells_option, plan_limits
from carbonshift.cli._output import Column, OutputFormat, emit_rows, output_folder
from carbonshift.sim.reproduce import REPRODUCTIONS, reproduce

__all__ = ["command"]


def command(
    name: str = typer.Argument(..., help=f"Which paper: {', '.join(REPRODUCTIONS)}."),
    out: Path = typer.Option(Path("out/reproduce"), "--out", help="Output folder."),
    quick: bool = typer.Option(False, "--quick", help="One seed instead of five."),
    output_format: OutputFormat = typer.Option(
        OutputFormat.TABLE, "--format", help="table, json or csv (machine column names)."
    ),
    traces: Path | None = typer.Option(
        None, "--traces", help="Folder with gaia/ and pwa/ traces (default ../shared/data/traces)."
    ),
    max_plan_cells: int = plan_cells_option(),
    max_horizon_cells: int = horizon_cells_option(),
) -> None:
    """Run a seed paper's experiment and print our figures next to the published ones.

    Example: carbonshift reproduce caspian --quick --out out/caspian

    Every planning round is checked against --max-plan-cells and --max-horizon-cells
    (docs/reliability.md, limits of a solve); 0 lifts a limit: ... --max-plan-cells 0
    """
    limits = plan_limits(max_plan_cells, max_horizon_cells)
    output_folder(out, "--out", "a reproduction's outputs (tables, plots)")
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

        result = reproduce(name, target, quick=quick, step=step, traces=traces, limits=limits)
    emit_rows(
        result.rows,
        [Column(c, label=c, right=True, cell=_cell) for c in result.columns],
        fmt=output_format,
        title=f"{name} reproduction (ours beside the paper's)",
        json_payload={"name": result.name, "rows": list(result.rows)},
    )
    if output_format is not OutputFormat.TABLE:
        return
    out_console = Console()
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
