"""``carbonshift forecast``: evaluate forecasters on the embedded data and the GB sample."""

from __future__ import annotations

import json
import time
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TimeElapsedColumn

from carbonshift.carbon.embedded import load_series
from carbonshift.carbon.evaluation import ForecastScore, evaluate
from carbonshift.carbon.forecast import FORECASTERS, Forecaster, make_forecaster
from carbonshift.carbon.gb_sample import ATTRIBUTION, compare_gb_sample, default_sample_dir
from carbonshift.carbon.series import CiKind
from carbonshift.cli import _clock
from carbonshift.cli._output import Column, OutputFormat, emit_rows
from carbonshift.errors import InputError

__all__ = ["app"]

app = typer.Typer(
    help=(
        "Forecasters and their errors.\n\n"
        "Example: carbonshift forecast eval --zone DE --year 2023 --horizon-hours 24"
    ),
    no_args_is_help=True,
)


#: ``--format``: table, json or csv (machine column names).
Format = OutputFormat
_FORMAT_HELP = "table, json or csv (machine column names)."


_PARAM_HELP = (
    "A forecaster parameter as METHOD.NAME=VALUE, repeatable "
    "(e.g. noisy-oracle.mae_g_per_kwh=30, ewma-profile.alpha=0.5)."
)


def _parse_methods(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise InputError(f"--methods {text!r} names no method; give e.g. wma,persistence")
    return names


def _parse_value(text: str) -> object:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _parse_params(items: list[str], methods: list[str]) -> dict[str, dict[str, object]]:
    params: dict[str, dict[str, object]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        method, dot, name = key.strip().rpartition(".")
        if not sep or not dot or not method or not name:
            raise InputError(
                f"--param {item!r} is not METHOD.NAME=VALUE; write it like "
                "noisy-oracle.mae_g_per_kwh=30"
            )
        if method not in methods:
            raise InputError(
                f"--param {item!r} is for {method!r}, which is not in --methods "
                f"({','.join(methods)}); add it there or drop the parameter"
            )
        params.setdefault(method, {})[name] = _parse_value(value.strip())
    return params


def _build(methods: list[str], params: dict[str, dict[str, object]]) -> dict[str, Forecaster]:
    return {name: make_forecaster(name, params.get(name)) for name in methods}


class _LazyProgress:
    """A rich progress bar on stderr that appears only once the work has taken over 1 s."""

    def __init__(self, description: str, delay_s: float = 1.0) -> None:
        self._description = description
        self._delay_s = delay_s
        self._started = time.monotonic()
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, done: int, total: int) -> None:
        if self._progress is None:
            if time.monotonic() - self._started < self._delay_s:
                return
            self._progress = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                "{task.completed}/{task.total}",
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(self._description, total=total)
        assert self._task is not None
        self._progress.update(self._task, completed=done, total=total)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _print_scores(scores: list[ForecastScore], output: Format, title: str) -> None:
    if output is Format.JSON:
        typer.echo(json.dumps([s.to_json() for s in scores], indent=2))
        return
    columns = [
        Column("method"),
        Column("mae_g_per_kwh", "MAE g/kWh", right=True, cell=_fmt),
        Column("bias_g_per_kwh", "bias g/kWh", right=True, cell=_fmt),
        Column("mape_pct", "MAPE %", right=True, cell=_fmt),
        Column(
            "window_hit_rate",
            "window hit %",
            right=True,
            cell=lambda rate: _fmt(None if rate is None else 100.0 * rate),
        ),
        Column("issues", right=True),
    ]
    rows = [s.to_json() for s in scores]
    emit_rows(rows, columns, fmt=output, title=title, csv_keys=list(rows[0]) if rows else None)
    if output is Format.TABLE and any(s.zero_actuals for s in scores):
        typer.echo(f"MAPE skipped {scores[0].zero_actuals} slots whose actual value is 0.")


def _slots(hours: int, slot_minutes: int, what: str) -> int:
    if hours < 1 or (hours * 60) % slot_minutes:
        raise InputError(
            f"{what} {hours} h is not a whole number >= 1 of {slot_minutes}-minute slots; "
            "give whole hours that fill whole slots"
        )
    return hours * 60 // slot_minutes


@app.command("eval")
def eval_command(
    zone: str = typer.Option(..., "--zone", help="Embedded zone id or alias (DE, GB, CA-ON)."),
    year: int = typer.Option(2023, "--year", help="Issue forecasts every hour of this year."),
    horizon_hours: int = typer.Option(24, "--horizon-hours", help="Forecast horizon, hours."),
    methods: str = typer.Option(
        ",".join(FORECASTERS), "--methods", help="Comma-separated forecaster names."
    ),
    window_hours: int = typer.Option(
        6, "--window-hours", help="Length of the lowest-carbon window for the hit rate, hours."
    ),
    slot_minutes: int = typer.Option(60, "--slot-minutes", help="Forecast slot length."),
    kind: str = typer.Option("direct", "--kind", help="Intensity: direct or lca."),
    param: list[str] = typer.Option([], "--param", help=_PARAM_HELP),
    output: Format = typer.Option(Format.TABLE, "--format", help=_FORMAT_HELP),
) -> None:
    """MAE, bias, MAPE and window hit rate of forecasts issued every hour of a year.

    Issue times that run past the data, or that a method cannot serve, are left out.

    Every method is scored on the same issue times (the "issues" column).

    Example: carbonshift forecast eval --zone DE --year 2023 --horizon-hours 24
    --methods wma,persistence,seasonal-day --window-hours 6 --format table
    """
    names = _parse_methods(methods)
    forecasters = _build(names, _parse_params(param, names))
    horizon_slots = _slots(horizon_hours, slot_minutes, "--horizon-hours")
    window_slots = _slots(window_hours, slot_minutes, "--window-hours")
    series = load_series(zone, kind)
    if not 1 <= year <= 9998:
        raise InputError(f"--year {year} is not a calendar year; give one like 2023")
    progress = _LazyProgress(f"{series.zone} {year}")
    try:
        scores = evaluate(
            series,
            forecasters,
            datetime(year, 1, 1, tzinfo=UTC),
            datetime(year + 1, 1, 1, tzinfo=UTC),
            horizon_slots=horizon_slots,
            slot_minutes=slot_minutes,
            window_slots=window_slots,
            progress=progress,
        )
    finally:
        progress.close()
    title = (
        f"{series.zone} {year}, {kind}, forecasts issued hourly, horizon {horizon_hours} h, "
        f"{slot_minutes}-min slots, window {window_hours} h"
    )
    _print_scores(scores, output, title)


@app.command("gb-sample")
def gb_sample_command(
    sample_dir: Path = typer.Option(
        None,
        "--sample-dir",
        help="The gb-forecast-sample folder (default: $CARBONSHIFT_SHARED or ../shared).",
    ),
    methods: str = typer.Option(
        "noisy-oracle,wma,seasonal-day,ewma-profile",
        "--methods",
        help="Our forecasters to score beside the published ones.",
    ),
    param: list[str] = typer.Option([], "--param", help=_PARAM_HELP),
    output: Format = typer.Option(Format.TABLE, "--format", help=_FORMAT_HELP),
) -> None:
    """The real GB national forecasts' MAE and bias beside ours on the embedded GB data.

    Published forecasts (issued 2023-03-15 and 2023-03-16) are scored half-hourly against
    the published actuals of 2023-03-16 01:00 to 2023-03-17 01:00 UTC; our forecasters,
    issued at the same hours, hourly against the embedded Electricity Maps GB series.

    Example: carbonshift forecast gb-sample --param noisy-oracle.mae_g_per_kwh=24
    """
    names = _parse_methods(methods)
    forecasters = _build(names, _parse_params(param, names))
    rows = compare_gb_sample(
        sample_dir or default_sample_dir(), load_series("GB", CiKind.DIRECT), forecasters
    )
    if output is Format.JSON:
        typer.echo(json.dumps([r.to_json() for r in rows], indent=2))
        return
    columns = [
        Column("method"),
        Column("truth", show=lambda row: "neso" if row["truth"] == "neso-actual" else "em"),
        Column(
            "issued_at",
            "issued",
            show=lambda row: str(row["issued_at"])[5:16].replace("T", " ") + "Z",
        ),
        Column("lead_h", "lead h", show=lambda row: "{:.0f}-{:.0f}".format(*row["lead_h"])),
        Column("points", right=True),
        Column("mae_g_per_kwh", "MAE g/kWh", cell=_fmt),
        Column("bias_g_per_kwh", "bias g/kWh", cell=_fmt),
    ]
    machine = [r.to_json() for r in rows]
    emit_rows(
        machine,
        columns,
        fmt=output,
        title="GB, 2023-03-16 01:00 to 2023-03-17 01:00 UTC",
        caption=f"truth neso: published actuals; em: embedded Electricity Maps GB. {ATTRIBUTION}",
        csv_keys=list(machine[0]) if machine else None,
    )


@app.command("methods")
def methods_command(
    output: Format = typer.Option(Format.TABLE, "--format", help=_FORMAT_HELP),
) -> None:
    """List the forecasters, their parameters and defaults.

    Example: carbonshift forecast methods --format json
    """
    listing: list[dict[str, Any]] = []
    for name, factory in FORECASTERS.items():
        defaults = {f.name: f.default for f in fields(factory)} if isinstance(factory, type) else {}
        doc = (factory.__doc__ or "").strip().splitlines()[0]
        listing.append({"name": name, "params": defaults, "summary": doc})
    if output is Format.JSON:
        typer.echo(json.dumps(listing, indent=2))
        return
    columns = [
        Column("name"),
        Column(
            "params",
            show=lambda row: ", ".join(f"{k}={v}" for k, v in row["params"].items()) or "-",
        ),
        Column("summary"),
    ]
    emit_rows(listing, columns, fmt=output, title="forecasters")


@app.command("show")
def show_command(
    zone: str = typer.Option(..., "--zone", help="Zone, like DE, GB, GB-R13 or CAISO_NORTH."),
    source: str = typer.Option(
        "embedded",
        "--source",
        help="electricitymaps, watttime, gb, carbon-aware-sdk, csv or embedded.",
    ),
    kind: str = typer.Option("direct", "--kind", help="direct, lca, marginal or index."),
    start: str | None = typer.Option(None, "--start", help="First slot (UTC; default now)."),
    hours: int = typer.Option(24, "--hours", min=1, max=24 * 14, help="How far ahead (h)."),
    slot_minutes: int = typer.Option(60, "--slot-minutes", min=5, max=1440, help="Slot length."),
    output: Format = typer.Option(Format.TABLE, "--format", help=_FORMAT_HELP),
) -> None:
    """Show one source's forecast (or data) for a zone, with its kind, unit and staleness.

    Sources and keys come from CARBONSHIFT_* variables (docs/providers.md); `embedded`
    replays the shipped 2021-2023 data for later dates, and says so.

    Example: carbonshift forecast show --zone DE --source embedded --start 2023-11-14T00:00Z
    """
    from datetime import timedelta

    from carbonshift.carbon.providers import SOURCE_NAMES, ProviderSettings, single_source_chain
    from carbonshift.units import format_utc, parse_utc

    try:
        ci_kind = CiKind(kind.lower())
    except ValueError:
        raise InputError(
            f"--kind {kind!r} is not a signal kind; use direct, lca, marginal or index"
        ) from None
    if source not in SOURCE_NAMES:
        raise InputError(f"--source {source!r} is not known; use one of {', '.join(SOURCE_NAMES)}")
    first = (
        parse_utc(start, what="--start")
        if start
        else _clock.now().replace(minute=0, second=0, microsecond=0)
    )
    chain = single_source_chain(source, ci_kind, ProviderSettings.from_env(), clock=_clock.CLOCK)
    answer = chain.answer(zone, first, first + timedelta(hours=hours), slot_minutes=slot_minutes)
    window = answer.window
    replayed = (
        None
        if window.replayed_from is None
        else [format_utc(window.replayed_from[0]), format_utc(window.replayed_from[1])]
    )
    if output is Format.JSON:
        typer.echo(
            json.dumps(
                {
                    "zone": zone,
                    "kind": window.kind.value,
                    "unit": answer.unit,
                    "source": window.source,
                    "stale_age_s": answer.stale_age_s,
                    "replayed_from": replayed,
                    "values": [
                        {"start": format_utc(t), "value": float(v)}
                        for t, v in zip(window.slot_starts(), window.values_g_per_kwh, strict=True)
                    ],
                },
                indent=1,
            )
        )
        return
    values = [
        {"start": format_utc(t), "value": float(v)}
        for t, v in zip(window.slot_starts(), window.values_g_per_kwh, strict=True)
    ]
    emit_rows(
        values,
        [Column("start"), Column("value", answer.unit, right=True, cell=lambda v: f"{v:.1f}")],
        fmt=output,
        title=f"{zone} {window.kind.value} from {window.source} ({answer.unit})",
    )
    # the notes go to stderr under csv, so that stdout stays one table
    note = Console(stderr=output is Format.CSV)
    if replayed:
        note.print(f"replayed from {replayed[0]} to {replayed[1]} (t - y x 364 days)")
    if answer.stale_age_s:
        note.print(f"stale: data fetched {answer.stale_age_s:.0f} s ago")
