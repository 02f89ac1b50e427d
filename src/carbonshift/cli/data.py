"""``carbonshift data``: look at the embedded carbon data (zones, resampled windows, plots)."""

from __future__ import annotations

import csv
import io
import itertools
import json
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from carbonshift._extras import pyplot
from carbonshift.carbon.embedded import ATTRIBUTION, zone_catalogue
from carbonshift.carbon.readers import read_carbon_csv
from carbonshift.carbon.series import CarbonSeries, CiKind, SignalWindow
from carbonshift.carbon.signal import EmbeddedSignal, SeriesSignal, replay_source
from carbonshift.errors import InputError
from carbonshift.units import format_utc, parse_utc

__all__ = ["app"]

app = typer.Typer(
    name="data",
    help=(
        "Show carbon-intensity data (embedded: Electricity Maps, 12 zones, 2021-2023 hourly).\n\n"
        "Example: carbonshift data show DE --start 2023-11-14T00:00Z --end 2023-11-15T00:00Z"
    ),
    no_args_is_help=True,
)


class ZonesFormat(StrEnum):
    """Output formats of ``data zones``."""

    TABLE = "table"
    JSON = "json"


class ShowFormat(StrEnum):
    """Output formats of ``data show``."""

    TABLE = "table"
    JSON = "json"
    CSV = "csv"


class Kind(StrEnum):
    """The intensity kinds the data hold."""

    DIRECT = "direct"
    LCA = "lca"


@app.command("zones")
def zones(
    output: ZonesFormat = typer.Option(ZonesFormat.TABLE, "--format", help="table or json."),
) -> None:
    """List the embedded zones: id, name, country, aliases, share of estimated hours, span.

    Example: carbonshift data zones --format json
    """
    catalogue = zone_catalogue()
    if output is ZonesFormat.JSON:
        rows = [
            {
                "id": z.id,
                "name": z.name,
                "country": z.country,
                "aliases": list(z.aliases),
                "estimated_share": z.estimated_share,
                "start": format_utc(z.start),
                "end": format_utc(z.end),
                "step_minutes": z.step_minutes,
            }
            for z in catalogue
        ]
        typer.echo(json.dumps(rows, indent=1, ensure_ascii=False))
        return
    table = Table(title="Embedded carbon-intensity zones", caption=ATTRIBUTION)
    for column in ("zone", "name", "country", "aliases", "estimated %", "hourly, UTC"):
        table.add_column(column, justify="right" if column == "estimated %" else "left")
    for z in catalogue:
        table.add_row(
            z.id,
            z.name,
            z.country,
            ", ".join(z.aliases),
            f"{100 * z.estimated_share:.1f}",
            f"{z.start:%Y-%m-%d}..{z.end - timedelta(minutes=z.step_minutes):%Y-%m-%d}",
        )
    Console().print(table)


def _window(
    zone: str,
    start: datetime,
    end: datetime,
    slot_minutes: int,
    kind: CiKind,
    csv_path: Path | None,
    replay: bool,
) -> tuple[SignalWindow, CarbonSeries]:
    signal: SeriesSignal | EmbeddedSignal
    if csv_path is not None:
        series = read_carbon_csv(csv_path, kind, zone=zone)
        signal = SeriesSignal([series], allow_replay=replay)
    else:
        signal = EmbeddedSignal(allow_replay=replay)
    window = signal.window(zone, start, end, slot_minutes=slot_minutes, kind=kind)
    return window, signal.series(zone, kind)


def _rows(window: SignalWindow, series: CarbonSeries) -> list[dict[str, Any]]:
    """One dict per slot: ``start``, ``ci_g_per_kwh`` (+ ``replayed_from`` when replayed)."""
    starts = window.slot_starts()
    rows: list[dict[str, Any]] = [
        {"start": format_utc(s), "ci_g_per_kwh": float(v)}
        for s, v in zip(starts, window.values_g_per_kwh, strict=True)
    ]
    if window.replayed_from is not None:
        for row, slot_start in zip(rows, starts, strict=True):
            source = replay_source(series, slot_start)
            row["replayed_from"] = None if source == slot_start else format_utc(source)
    return rows


def _plot(window: SignalWindow, path: Path) -> None:
    plt = pyplot(needed_for="carbonshift data show --plot")

    edges = [t.replace(tzinfo=None) for t in [*window.slot_starts(), window.end]]
    values = window.values_g_per_kwh
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.step(np.array(edges, dtype="datetime64[s]"), np.append(values, values[-1]), where="post")
    ax.set_ylabel(f"{window.kind.value} carbon intensity (g/kWh)")
    ax.set_xlabel("UTC")
    title = f"{window.zone}, {window.slot_minutes}-minute slots"
    if window.replayed_from is not None:
        title += " (replayed from " + " .. ".join(f"{t:%Y-%m-%d}" for t in window.replayed_from)
        title += ")"
    ax.set_title(title)
    fig.text(0.99, 0.01, ATTRIBUTION, ha="right", va="bottom", fontsize=7)
    fig.autofmt_xdate()
    try:
        fig.savefig(path, dpi=100)
    except OSError as exc:
        raise InputError(
            f"--plot {path}: cannot write the image ({exc.strerror}); check the folder"
        ) from exc
    finally:
        plt.close(fig)


@app.command("show")
def show(
    zone: str = typer.Argument(..., help="Zone id or alias (DE, DE-LU, GB, CA-ON, ...)."),
    start: str = typer.Option(..., "--start", help="Start, ISO 8601 UTC: 2023-11-14T00:00Z."),
    end: str = typer.Option(..., "--end", help="End (exclusive), ISO 8601 UTC."),
    slot_minutes: int = typer.Option(60, "--slot-minutes", help="Slot length, 5..1440 minutes."),
    kind: Kind = typer.Option(Kind.DIRECT, "--kind", help="direct or lca (life-cycle)."),
    output: ShowFormat = typer.Option(ShowFormat.TABLE, "--format", help="table, json or csv."),
    plot: Path | None = typer.Option(None, "--plot", help="Also draw the window to this PNG."),
    csv_path: Path | None = typer.Option(
        None,
        "--csv",
        help="Read the zone from this CSV (Electricity Maps export or timestamp,value) "
        "instead of the embedded data.",
    ),
    replay: bool = typer.Option(
        True,
        "--replay/--no-replay",
        help="Answer times past the data by replaying t - k x 7 days (marked); "
        "--no-replay refuses them.",
    ),
) -> None:
    """Show a zone's intensity over [START, END) in time-weighted SLOT-MINUTES slots.

    Slots align to START; a partial last slot is averaged over what it covers.

    Times past the data (2023 for the embedded data) are replayed from t - k x 7 days, marked.

    Example: carbonshift data show DE --start 2023-11-14T00:00Z --end 2023-11-16T00:00Z --slot-minutes 120 --format json
    """  # noqa: E501
    ci_kind = CiKind(kind.value)
    begin = parse_utc(start, what="--start")
    finish = parse_utc(end, what="--end")
    window, series = _window(zone, begin, finish, slot_minutes, ci_kind, csv_path, replay)
    rows = _rows(window, series)
    if window.replayed_from is not None:
        first, last = window.replayed_from
        typer.echo(
            f"note: times after the data were replayed from {format_utc(first)} .. "
            f"{format_utc(last)} (t - k x 7 days)",
            err=True,
        )
    if plot is not None:
        _plot(window, plot)
    if output is ShowFormat.JSON:
        typer.echo(json.dumps(rows, indent=1))
    elif output is ShowFormat.CSV:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        typer.echo(buffer.getvalue(), nl=False)
    else:
        title = f"{window.zone} {ci_kind.value} intensity, {slot_minutes}-minute slots (UTC)"
        table = Table(title=title, caption=ATTRIBUTION if csv_path is None else window.source)
        table.add_column("start")
        table.add_column("ci_g_per_kwh", justify="right")
        if window.replayed_from is not None:
            table.add_column("replayed from")
        for row in rows:
            cells = [row["start"], f"{row['ci_g_per_kwh']:.2f}"]
            if window.replayed_from is not None:
                cells.append(row["replayed_from"] or "")
            table.add_row(*cells)
        Console().print(table)
        bounds = [*window.slot_starts(), window.end]
        widths_s = [(b - a).total_seconds() for a, b in itertools.pairwise(bounds)]
        weighted = zip(widths_s, window.values_g_per_kwh, strict=True)
        mean = sum(w * float(v) for w, v in weighted) / sum(widths_s)
        typer.echo(
            f"{len(rows)} slots, time-weighted mean {mean:.2f} g/kWh, "
            f"estimated share {100 * window.estimated_share:.1f} %"
        )
