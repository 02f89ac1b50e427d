"""``carbonshift advise``: when and where should one job run? (the API's /v1/advise, offline)."""

from __future__ import annotations

import dataclasses
import json

import typer
from rich.console import Console

from carbonshift.api.advice import JobAsk, Run, advise_job, power_w_of
from carbonshift.carbon.providers import ProviderSettings, build_chains
from carbonshift.carbon.series import CiKind
from carbonshift.cli import _clock
from carbonshift.cli._output import Column, OutputFormat, emit_rows
from carbonshift.errors import InputError
from carbonshift.units import format_utc, parse_duration, parse_utc

__all__ = ["command"]

#: W per unit of a --demand that names no watts (a mid-range server core or small GPU share)
DEFAULT_WATTS_PER_UNIT = 100.0


def command(
    duration: str = typer.Option(..., "--duration", help="Run time, like 3h or 90m."),
    zones: str = typer.Option(..., "--zones", help="Candidate zones, comma-separated."),
    within: str = typer.Option("24h", "--within", help="Finish within this long of --earliest."),
    deadline: str | None = typer.Option(None, "--deadline", help="Finish by (UTC, ISO 8601)."),
    earliest: str | None = typer.Option(None, "--earliest", help="Start no earlier (default now)."),
    power_w: float | None = typer.Option(None, "--power-w", help="Total power in W."),
    demand: list[str] = typer.Option(
        [],
        "--demand",
        help="RESOURCE=UNITS[@WATTS_PER_UNIT], repeatable, like gpu=2@300 or cpu=4 "
        f"({DEFAULT_WATTS_PER_UNIT:g} W per unit when not given).",
    ),
    slot_minutes: int = typer.Option(60, "--slot-minutes", min=5, max=1440, help="Start grid."),
    kind: str = typer.Option("direct", "--kind", help="direct, lca or marginal."),
    offline: bool = typer.Option(
        False, "--offline", help="No live source: embedded data (replayed past 2023)."
    ),
    output_format: OutputFormat = typer.Option(
        OutputFormat.TABLE,
        "--format",
        help="table, json or csv (one row per zone, machine column names).",
    ),
) -> None:
    """Advise the cleanest zone and start for one job, and its saving over running now.

    Sources come from CARBONSHIFT_* variables (docs/providers.md), like `carbonshift serve`.

    Example: carbonshift advise --duration 3h --zones DE,GB,CA-ON --earliest 2023-11-14T08:00Z
    --demand gpu=2@300 --offline

    One row per zone for a script: add --format csv
    """
    try:
        ci_kind = CiKind(kind.lower())
    except ValueError:
        raise InputError(
            f"--kind {kind!r} is not a signal kind; use direct, lca or marginal"
        ) from None
    if ci_kind is CiKind.INDEX:
        raise InputError("--kind index has no unit to turn into grams; use direct, lca or marginal")
    units, watts = {}, {}
    for item in demand:
        resource, _, rest = item.partition("=")
        amount, _, per_unit = rest.partition("@")
        try:
            units[resource] = float(amount)
            watts[resource] = float(per_unit) if per_unit else DEFAULT_WATTS_PER_UNIT
        except ValueError:
            raise InputError(
                f"--demand {item!r} is not RESOURCE=UNITS[@WATTS_PER_UNIT]; write it like "
                "gpu=2@300 or cpu=4"
            ) from None
    start = (
        parse_utc(earliest, what="--earliest")
        if earliest
        else _clock.now().replace(second=0, microsecond=0)
    )
    end = parse_utc(deadline, what="--deadline") if deadline else start + parse_duration(within)
    job = JobAsk(
        duration=parse_duration(duration, what="--duration"),
        zones=tuple(z.strip() for z in zones.split(",") if z.strip()),
        earliest=start,
        deadline=end,
        power_w=power_w_of(power_w, units, watts),
        slot_minutes=slot_minutes,
    )
    settings = ProviderSettings.from_env()
    if offline:
        settings = dataclasses.replace(settings, offline=True)
    chains = build_chains(settings, clock=_clock.CLOCK)
    try:
        chain = chains.chain(ci_kind)
        advice = advise_job(job, lambda z, s, e, slot: chain.answer(z, s, e, slot_minutes=slot))
    finally:
        chains.close()
    if output_format is OutputFormat.JSON:
        typer.echo(
            json.dumps(
                {
                    "best": _row(advice.best),
                    "now": _row(advice.now),
                    "saving_g": advice.saving_g,
                    "saving_pct": advice.saving_pct,
                    "energy_kwh": advice.energy_kwh,
                    "per_zone": [_row(r) for r in advice.per_zone],
                },
                indent=1,
            )
        )
        return
    rows = [_row(run) for run in sorted(advice.per_zone, key=lambda r: r.emissions_g)]
    columns = [
        Column("zone"),
        Column("start", right=True),
        Column("ci_g_per_kwh", "g/kWh", right=True, cell=lambda v: f"{v:.1f}"),
        Column("emissions_g", "grams", right=True, cell=lambda v: f"{v:.1f}"),
        Column("source"),
    ]
    emit_rows(
        rows,
        columns,
        fmt=output_format,
        title=f"{duration} at {advice.power_w:g} W: best start per zone",
        csv_keys=["zone", "start", "end", "ci_g_per_kwh", "emissions_g", "source"],
    )
    if output_format is OutputFormat.CSV:
        return
    console = Console()
    saving = "n/a" if advice.saving_pct is None else f"{advice.saving_pct:.1f} %"
    console.print(
        f"advice: run in {advice.best.zone} at {format_utc(advice.best.start)}: "
        f"{advice.best.emissions_g:.1f} g, against {advice.now.emissions_g:.1f} g now in "
        f"{advice.now.zone} (saves {advice.saving_g:.1f} g, {saving})"
    )


def _row(run: Run) -> dict[str, object]:
    window = run.answer.window
    return {
        "zone": run.zone,
        "start": format_utc(run.start),
        "end": format_utc(run.end),
        "ci_g_per_kwh": run.ci_g_per_kwh,
        "emissions_g": run.emissions_g,
        "source": window.source + (" (replayed)" if window.replayed_from else ""),
    }
