"""``carbonshift simulate``: run a scenario (docs/formats.md (scenario)) against its baseline."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from carbonshift._extras import require
from carbonshift.cli._limits import horizon_cells_option, plan_cells_option, plan_limits
from carbonshift.cli._output import OutputFormat, emit_record, output_folder
from carbonshift.cli._params import parse_param_items
from carbonshift.sim.engine import ProgressFn
from carbonshift.sim.experiment import run_experiment
from carbonshift.sim.outputs import SUMMARY_KEYS, write_summary
from carbonshift.sim.report import FigureStyle
from carbonshift.sim.run import build_experiment, with_policy
from carbonshift.sim.scenario import load_scenario

__all__ = ["command"]


def command(
    scenario: Path = typer.Argument(..., help="Scenario TOML file (docs/formats.md (scenario))."),
    out: Path = typer.Option(..., "--out", help="Output folder for summary.json, jobs.csv, ..."),
    strict: bool = typer.Option(
        False, "--strict", help="Refuse a scenario with a job no cluster can hold."
    ),
    no_report: bool = typer.Option(False, "--no-report", help="Skip plots and report.html."),
    output_format: OutputFormat = typer.Option(
        OutputFormat.TABLE, "--format", help="table, json or csv (machine column names)."
    ),
    policy: str | None = typer.Option(
        None,
        "--policy",
        "-p",
        help="Replace the scenario's policy: a name or package.module:function.",
    ),
    param: list[str] = typer.Option(
        [], "--param", help="A policy parameter KEY=VALUE, repeatable (over [policy_params])."
    ),
    style: str = typer.Option(
        "default",
        "--style",
        help="Figure style: default (screens), paper (print: 3.5 in wide, serif, 300 dpi), "
        "or a matplotlib style file.",
    ),
    fig_width_in: float | None = typer.Option(
        None, "--fig-width", help="Figure width in inches (default: the style's)."
    ),
    dpi: int | None = typer.Option(None, "--dpi", help="PNG resolution (default: the style's)."),
    max_plan_cells: int = plan_cells_option(),
    max_horizon_cells: int = horizon_cells_option(),
) -> None:
    """Simulate a scenario's policy and its carbon-agnostic baseline on the same input.

    Writes summary.json, jobs.csv, baseline_jobs.csv, slots.csv, plots/ (each figure as
    PNG, SVG and PDF) and report.html.

    Example: carbonshift simulate examples/caspian.toml --out out/caspian

    For a script: carbonshift simulate examples/caspian.toml --out out/c --no-report --format csv

    For a paper: carbonshift simulate examples/caspian.toml --out out/paper --style paper

    Your own policy: carbonshift simulate examples/caspian.toml --out out/mine
    --policy my_policy.greenest:greenest (its folder on PYTHONPATH; docs/python-api.md)

    Every planning round is checked against --max-plan-cells and --max-horizon-cells
    (docs/reliability.md, limits of a solve); 0 lifts a limit: ... --max-plan-cells 0
    """
    limits = plan_limits(max_plan_cells, max_horizon_cells)
    output_folder(out, "--out", "simulate's outputs (summary.json, jobs.csv, ...)")
    if not no_report:  # say so before the run, not after it
        require("matplotlib", needed_for="carbonshift simulate's plots (--no-report skips them)")
    params = parse_param_items(param, example="omega1=0.5") if param else None
    figure_style = FigureStyle(style, width_in=fig_width_in, dpi=dpi)
    experiment = replace(
        with_policy(build_experiment(load_scenario(scenario), strict=strict), policy, params),
        plan_limits=limits,
    )
    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.0f} h simulated"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:

        def progress(label: str) -> ProgressFn:
            task = bar.add_task(label, total=None, completed=0)

            def update(done_h: float, expected_h: float) -> None:
                bar.update(task, completed=done_h, total=max(expected_h, done_h))

            return update

        summary = run_experiment(
            experiment, out, progress=progress, report=not no_report, style=figure_style
        )
    summary["scenario"] = str(scenario)
    write_summary(summary, out / "summary.json")
    emit_record(
        summary,
        [*SUMMARY_KEYS, "scenario"],
        fmt=output_format,
        title=f"simulation of {scenario}",
        json_payload=summary,
    )
    if output_format is OutputFormat.TABLE:
        Console().print(
            f"wrote {out}/summary.json, jobs.csv, slots.csv"
            + ("" if no_report else ", report.html")
        )
