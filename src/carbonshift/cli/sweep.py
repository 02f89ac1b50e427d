"""``carbonshift sweep``: policies x parameters x seeds x scenarios, in parallel processes."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from carbonshift.sim.sweep import load_sweep, run_sweep

__all__ = ["command"]


def command(
    sweep: Path = typer.Argument(..., help="Sweep TOML file (see docs/simulator.md)."),
    out: Path = typer.Option(..., "--out", help="Output folder for sweep.csv, sweep.png, ..."),
    workers: int | None = typer.Option(None, "--workers", help="Processes (overrides the file)."),
    keep_runs: bool = typer.Option(False, "--keep-runs", help="Keep each run's jobs.csv etc."),
    output_format: str = typer.Option("table", "--format", help="table or json."),
    dask: str | None = typer.Option(
        None, "--dask", help="Run on the Dask scheduler at this address (the dask extra)."
    ),
    policy: list[str] = typer.Option(
        [],
        "--policy",
        "-p",
        help="Sweep this policy instead of the file's [[policies]] (a name or "
        "package.module:function, default parameters); repeatable.",
    ),
) -> None:
    """Run a sweep and print seed means per scenario, policy and parameters.

    Example: carbonshift sweep examples/sweep-caspian.toml --out out/sweep --workers 2

    Your own policy against a built-in: ... --policy my_policy.greenest:greenest --policy asap
    """
    if output_format not in ("table", "json"):
        raise typer.BadParameter(f"--format {output_format!r}: use table or json")
    spec = load_sweep(sweep, policies=policy or None)
    if workers is not None:
        if workers < 1:
            raise typer.BadParameter(f"--workers {workers}: give a whole number >= 1")
        spec = type(spec)(spec.runs, workers, spec.swept)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} runs"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("sweep", total=len(spec.runs))

        def step(done: int, total: int, what: str) -> None:
            bar.update(task, completed=done, total=total, description=f"sweep: {what}")

        summary = run_sweep(spec, out, step=step, keep_runs=keep_runs, dask_address=dask)
    if output_format == "json":
        typer.echo(json.dumps(summary, indent=1))
        return
    table = Table(title=f"sweep {sweep} ({len(spec.runs)} runs; seed means)")
    columns = ("scenario", "params", "seeds", "carbon_saving_pct", "deadline_met_pct")
    for column in (*columns, "completion"):
        table.add_column(column, overflow="fold")
    for row in summary:
        cells = [_cell(row.get(c)) for c in columns]
        table.add_row(*cells, _cell(row.get("mean_completion_ratio")))
    console = Console()
    console.print(table)
    console.print(f"wrote {out}/sweep.csv, sweep_summary.csv, sweep.png")


def _cell(value: object) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
