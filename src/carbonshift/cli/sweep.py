"""``carbonshift sweep``: policies x parameters x seeds x scenarios, in parallel processes."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from carbonshift.cli._limits import horizon_cells_option, plan_cells_option, plan_limits
from carbonshift.cli._output import Column, OutputFormat, emit_rows, output_folder, with_interval
from carbonshift.cli._params import parse_grid_items
from carbonshift.sim.sweep import load_sweep, run_sweep

__all__ = ["command"]


def command(
    sweep: Path = typer.Argument(..., help="Sweep TOML file (see docs/simulator.md)."),
    out: Path = typer.Option(..., "--out", help="Output folder for sweep.csv, sweep.png, ..."),
    workers: int | None = typer.Option(None, "--workers", help="Processes (overrides the file)."),
    keep_runs: bool = typer.Option(False, "--keep-runs", help="Keep each run's jobs.csv etc."),
    output_format: OutputFormat = typer.Option(
        OutputFormat.TABLE, "--format", help="table, json or csv (machine column names)."
    ),
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
    param: list[str] = typer.Option(
        [],
        "--param",
        help="Sweep a parameter over these values on every policy, KEY=V1,V2,... "
        "(hold.* keys set the scenario's hold rule); repeatable, over the file's params.",
    ),
    max_plan_cells: int = plan_cells_option(),
    max_horizon_cells: int = horizon_cells_option(),
) -> None:
    """Run a sweep and print seed means per scenario, policy and parameters.

    Example: carbonshift sweep examples/sweep-caspian.toml --out out/sweep --workers 2

    Your own policy against a built-in: ... --policy my_policy.greenest:greenest --policy asap

    The hold thresholds: ... --policy carbonshift --param hold.min_saving_pct=0,5,10,20

    Every planning round is checked against --max-plan-cells and --max-horizon-cells
    (docs/reliability.md, limits of a solve); 0 lifts a limit: ... --max-plan-cells 0
    """
    limits = plan_limits(max_plan_cells, max_horizon_cells)
    output_folder(out, "--out", "a sweep's outputs (sweep.csv, sweep.png, ...)")
    spec = load_sweep(sweep, policies=policy or None, grid=parse_grid_items(param))
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

        summary = run_sweep(
            spec, out, step=step, keep_runs=keep_runs, dask_address=dask, limits=limits
        )
    columns = [
        Column("scenario"),
        Column("policy"),
        Column("params"),
        Column("seeds", right=True),
        *(
            Column(metric, right=True, show=with_interval(metric))
            for metric in ("carbon_saving_pct", "deadline_met_pct", "mean_completion_ratio")
        ),
    ]
    emit_rows(
        summary,
        columns,
        fmt=output_format,
        title=f"sweep {sweep} ({len(spec.runs)} runs; seed means [95 % interval])",
        json_payload=summary,
        csv_keys=list(dict.fromkeys(key for row in summary for key in row)),
    )
    if output_format is OutputFormat.TABLE:
        Console().print(f"wrote {out}/sweep.csv, sweep_summary.csv, sweep.png")
