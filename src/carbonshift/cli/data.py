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
from carbonshift.carbon.potential import ShiftingPotential, shifting_potential
from carbonshift.carbon.quality import (
    BoolArray,
    OutlierAction,
    apply_outlier_action,
    suspect_in_span,
)
from carbonshift.carbon.readers import read_carbon_csv
from carbonshift.carbon.series import CarbonSeries, CiKind, SignalWindow
from carbonshift.carbon.signal import EmbeddedSignal, SeriesSignal, replay_source
from carbonshift.carbon.zones import resolve_zone
from carbonshift.cli._output import Column, OutputFormat, emit_rows, output_image
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
    CSV = "csv"


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
    output: ZonesFormat = typer.Option(
        ZonesFormat.TABLE, "--format", help="table, json or csv (machine column names)."
    ),
) -> None:
    """List the embedded zones: id, name, country, aliases, share of estimated hours, span.

    Example: carbonshift data zones --format json
    """
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
            "hourly": f"{z.start:%Y-%m-%d}..{z.end - timedelta(minutes=z.step_minutes):%Y-%m-%d}",
        }
        for z in zone_catalogue()
    ]
    if output is ZonesFormat.JSON:
        for row in rows:
            del row["hourly"]
        typer.echo(json.dumps(rows, indent=1, ensure_ascii=False))
        return
    columns = [
        Column("id", "zone"),
        Column("name"),
        Column("country"),
        Column("aliases", show=lambda row: ", ".join(row["aliases"])),
        Column("estimated_share", "estimated %", right=True, cell=lambda v: f"{100 * v:.1f}"),
        Column("hourly", "hourly, UTC"),
    ]
    emit_rows(
        rows,
        columns,
        fmt=OutputFormat(output.value),
        title="Embedded carbon-intensity zones",
        caption=ATTRIBUTION,
        csv_keys=[
            "id",
            "name",
            "country",
            "aliases",
            "estimated_share",
            "start",
            "end",
            "step_minutes",
        ],
    )


def _window(
    zone: str,
    start: datetime,
    end: datetime,
    slot_minutes: int,
    kind: CiKind,
    csv_path: Path | None,
    replay: bool,
    outliers: OutlierAction = OutlierAction.KEEP,
) -> tuple[SignalWindow, CarbonSeries, BoolArray]:
    """The resampled window, the native series it came from (after ``outliers``) and that
    series' suspect points (carbon/quality.py)."""
    if csv_path is not None:
        native = read_carbon_csv(csv_path, kind, zone=zone)
    else:
        native = EmbeddedSignal(allow_replay=replay).series(zone, kind)
    series, suspect = apply_outlier_action(native, outliers)
    window = SeriesSignal([series], allow_replay=replay).window(
        series.zone, start, end, slot_minutes=slot_minutes, kind=kind
    )
    return window, series, suspect


def _rows(
    window: SignalWindow, series: CarbonSeries, suspect: BoolArray | None = None
) -> list[dict[str, Any]]:
    """One dict per slot: ``start``, ``ci_g_per_kwh`` (+ ``replayed_from`` when replayed, and
    ``suspect`` when ``suspect`` is given: a slot holding a suspect native point)."""
    starts = window.slot_starts()
    rows: list[dict[str, Any]] = [
        {"start": format_utc(s), "ci_g_per_kwh": float(v)}
        for s, v in zip(starts, window.values_g_per_kwh, strict=True)
    ]
    if suspect is not None:
        width = timedelta(minutes=window.slot_minutes)
        for row, slot_start in zip(rows, starts, strict=True):
            source = replay_source(series, slot_start)
            row["suspect"] = bool(suspect_in_span(series, suspect, source, source + width))
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
        path.parent.mkdir(parents=True, exist_ok=True)
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
        help="Answer times past the data by replaying t - y x 364 days (marked); "
        "--no-replay refuses them.",
    ),
    outliers: OutlierAction = typer.Option(
        OutlierAction.FLAG,
        "--outliers",
        help="Implausible points (a robust spike rule, docs/providers.md): flag (mark the "
        "slots), keep (as they are), or interpolate (from their neighbours).",
    ),
) -> None:
    """Show a zone's intensity over [START, END) in time-weighted SLOT-MINUTES slots.

    Slots align to START; a partial last slot is averaged over what it covers.

    Times past the data (2023 for the embedded data) are replayed from t - y x 364 days (same
    weekday, hour and season; whole weeks for data shorter than 364 days), marked.

    Example: carbonshift data show DE --start 2023-11-14T00:00Z --end 2023-11-16T00:00Z --slot-minutes 120 --format json
    """  # noqa: E501
    ci_kind = CiKind(kind.value)
    begin = parse_utc(start, what="--start")
    finish = parse_utc(end, what="--end")
    window, series, suspect = _window(
        zone, begin, finish, slot_minutes, ci_kind, csv_path, replay, outliers
    )
    flagged = outliers is OutlierAction.FLAG
    rows = _rows(window, series, suspect if flagged else None)
    if outliers is not OutlierAction.KEEP:
        found = [
            p
            for t in window.slot_starts()
            for p in suspect_in_span(
                series,
                suspect,
                replay_source(series, t),
                replay_source(series, t) + timedelta(minutes=slot_minutes),
            )
        ]
        if found:
            what = "interpolated from their neighbours" if not flagged else "marked suspect"
            verb = "at" if flagged else "now"
            listed = ", ".join(f"{format_utc(t)} {verb} {v:.1f} g/kWh" for t, v in found[:5])
            typer.echo(
                f"note: {len(found)} implausible point(s) {what}: {listed}"
                + (" ..." if len(found) > 5 else ""),
                err=True,
            )
    if window.replayed_from is not None:
        first, last = window.replayed_from
        typer.echo(
            f"note: times after the data were replayed from {format_utc(first)} .. "
            f"{format_utc(last)} (t - y x 364 days)",
            err=True,
        )
    if plot is not None:
        _plot(window, output_image(plot, "--plot"))
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
        if flagged:
            table.add_column("suspect")
        for row in rows:
            cells = [row["start"], f"{row['ci_g_per_kwh']:.2f}"]
            if window.replayed_from is not None:
                cells.append(row["replayed_from"] or "")
            if flagged:
                cells.append("suspect" if row["suspect"] else "")
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


class PotentialFormat(StrEnum):
    """Output formats of ``data potential``."""

    TABLE = "table"
    JSON = "json"
    CSV = "csv"


_POTENTIAL_COLUMNS = (
    ("temporal", "waiting"),
    ("spatial", "moving"),
    ("spatiotemporal", "both"),
)


def _potential_rows(results: list[ShiftingPotential]) -> list[dict[str, Any]]:
    """Rows with the machine column names: percentages, rounded to 0.01."""
    rows: list[dict[str, Any]] = []
    for p in results:
        row: dict[str, Any] = {
            "zone": p.zone,
            "arrivals": p.arrivals,
            "at_once_mean_g_per_kwh": round(p.at_once_mean_g_per_kwh, 2),
        }
        for name, _ in _POTENTIAL_COLUMNS:
            for stat in ("mean", "p10", "p90"):
                value = getattr(p, f"{name}_{stat}")
                row[f"{name}_saving_pct_{stat}"] = (
                    None if value != value else round(100 * value, 2)  # NaN: no arrivals
                )
        rows.append(row)
    return rows


def _plot_potential(rows: list[dict[str, Any]], title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    zones = [r["zone"] for r in rows]
    x = np.arange(len(zones))
    width = 0.27
    fig, ax = plt.subplots(figsize=(max(7.0, 1.2 * len(zones) + 4), 4))
    for i, (name, label) in enumerate(_POTENTIAL_COLUMNS):
        mean = np.array([r[f"{name}_saving_pct_mean"] or 0.0 for r in rows])
        low = np.array([r[f"{name}_saving_pct_p10"] or 0.0 for r in rows])
        high = np.array([r[f"{name}_saving_pct_p90"] or 0.0 for r in rows])
        at = x + (i - 1) * width
        bars = ax.bar(at, mean, width, label=f"{label} ({name})")
        # the spread is skewed (many arrivals save nothing), so whiskers span p10..p90
        # rather than an interval around the mean
        ax.vlines(at, low, high, color="black", linewidth=1)
        ax.scatter(at, high, marker="_", color=bars.patches[0].get_facecolor(), s=40)
    ax.set_xticks(x, zones)
    ax.set_ylabel("mean saving vs starting at once at home (%)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.text(
        0.99,
        0.01,
        "bars: mean over arrivals; lines: 10th to 90th percentile. " + ATTRIBUTION,
        ha="right",
        va="bottom",
        fontsize=6,
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=150)
    except OSError as exc:
        raise InputError(
            f"--plot {path}: cannot write the image ({exc.strerror}); check the folder"
        ) from exc
    finally:
        plt.close(fig)


@app.command("potential")
def potential(
    zones_text: str = typer.Option(
        ..., "--zones", help="Comma-separated embedded zones (ids or aliases): DE,GB,FR."
    ),
    slack_hours: int = typer.Option(
        24, "--slack-hours", help="How long a job may wait, whole hours (0..744)."
    ),
    runtime_hours: int = typer.Option(
        4, "--runtime-hours", help="How long a job runs, whole hours (1..744)."
    ),
    start: str | None = typer.Option(
        None, "--start", help="First arrival, ISO 8601 UTC (default: start of the common data)."
    ),
    end: str | None = typer.Option(
        None, "--end", help="End of the data used, ISO 8601 UTC (default: end of the common data)."
    ),
    kind: Kind = typer.Option(Kind.DIRECT, "--kind", help="direct or lca (life-cycle)."),
    output: PotentialFormat = typer.Option(
        PotentialFormat.TABLE, "--format", help="table, json or csv."
    ),
    plot: Path | None = typer.Option(None, "--plot", help="Also draw a bar chart to this PNG."),
) -> None:
    """Shifting potential per zone: what waiting, moving, or both could save at best.

    A job of RUNTIME-HOURS arrives at every hour; waiting it may start at the cleanest window
    within SLACK-HOURS (temporal), moving it may run at once in the cleanest of the zones
    given (spatial), or both. Savings are against starting at once in the home zone,
    averaged over arrivals (the method of the EuroSys'24 study of spatio-temporal shifting
    limits). An upper bound: capacity is unlimited, moving costs nothing, the future is known.

    Example: carbonshift data potential --zones DE,GB,FR,CA-ON --slack-hours 24 --runtime-hours 4
    """
    names = [z.strip() for z in zones_text.split(",") if z.strip()]
    if not names:
        raise InputError("--zones is empty; name at least one zone, e.g. --zones DE,GB")
    infos = [resolve_zone(z) for z in names]
    ids = list(dict.fromkeys(info.id for info in infos))
    begin = parse_utc(start, what="--start") if start else max(i.start for i in infos)
    finish = parse_utc(end, what="--end") if end else min(i.end for i in infos)
    if begin.minute or begin.second or finish.minute or finish.second:
        raise InputError(
            f"--start {format_utc(begin)} and --end {format_utc(finish)} must be whole UTC hours"
        )
    if finish <= begin:
        raise InputError(
            f"--end {format_utc(finish)} is not after --start {format_utc(begin)}; the zones' "
            "common data may not overlap"
        )
    signal = EmbeddedSignal(allow_replay=False)
    ci_kind = CiKind(kind.value)
    hourly = {
        z: signal.window(z, begin, finish, slot_minutes=60, kind=ci_kind).values_g_per_kwh
        for z in ids
    }
    results = shifting_potential(hourly, slack_hours=slack_hours, runtime_hours=runtime_hours)
    rows = _potential_rows(results)
    title = (
        f"Shifting potential, {runtime_hours} h jobs, up to {slack_hours} h slack, "
        f"{ci_kind.value} intensity, {begin:%Y-%m-%d}..{finish:%Y-%m-%d} (UTC)"
    )
    if plot is not None:
        _plot_potential(rows, title, output_image(plot, "--plot"))
    if output is PotentialFormat.JSON:
        typer.echo(json.dumps(rows, indent=1, allow_nan=False))
        return
    if output is PotentialFormat.CSV:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        typer.echo(buffer.getvalue(), nl=False)
        return
    table = Table(
        title=title,
        caption="Mean saving vs starting at once at home, [10th, 90th percentile] over "
        "arrivals. Upper bound: unlimited capacity, free moves, known future. " + ATTRIBUTION,
    )
    table.add_column("zone")
    table.add_column("arrivals", justify="right")
    table.add_column("at once, g/kWh", justify="right")
    for name, label in _POTENTIAL_COLUMNS:
        table.add_column(f"{label} ({name}) %", justify="right")
    for row in rows:
        cells = [row["zone"], str(row["arrivals"]), f"{row['at_once_mean_g_per_kwh']:.1f}"]
        for name, _ in _POTENTIAL_COLUMNS:
            mean, low, high = (row[f"{name}_saving_pct_{s}"] for s in ("mean", "p10", "p90"))
            cells.append("-" if mean is None else f"{mean:.1f} [{low:.1f}, {high:.1f}]")
        table.add_row(*cells)
    Console().print(table)
