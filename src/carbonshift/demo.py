"""``make demo`` (``python -m carbonshift.demo``): the embedded carbon data and a forecast duel.

Prints a table of the embedded zones with their mean direct intensity in 2023, then scores
every forecaster on one zone (default DE) for forecasts issued every hour of 2023, 24 h ahead,
and writes a PNG (one week of actuals against day-ahead forecasts, and the MAE per method)
into ``out/demo/``; then runs the main job, Caspian's online experiment on three real grid
zones (``carbonshift reproduce caspian --quick``), and points to its HTML report. Runs
offline in about a minute and a half (92 s of CPU on the development machine).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from carbonshift.carbon.embedded import ATTRIBUTION, load_series, zone_catalogue
from carbonshift.carbon.evaluation import ForecastScore, evaluate
from carbonshift.carbon.forecast import forecaster_names, make_forecaster
from carbonshift.carbon.series import CarbonSeries
from carbonshift.errors import CarbonshiftError
from carbonshift.sim.reproduce import reproduce

__all__ = ["main"]

YEAR = 2023
HORIZON_H = 24
WEEK_START = datetime(2023, 11, 13, tzinfo=UTC)  # a Monday
PLOT_METHODS = ("wma", "seasonal-day", "ewma-profile", "persistence", "noisy-oracle")


def _year_slice(series: CarbonSeries, year: int) -> np.ndarray:
    step = timedelta(minutes=series.step_minutes)
    first = int((datetime(year, 1, 1, tzinfo=UTC) - series.start) / step)
    last = int((datetime(year + 1, 1, 1, tzinfo=UTC) - series.start) / step)
    return series.values_g_per_kwh[max(first, 0) : max(last, 0)]


def zones_table(year: int = YEAR) -> Table:
    """The embedded zones, cleanest first, with their mean, min and max direct intensity."""
    rows = []
    for info in zone_catalogue():
        values = _year_slice(load_series(info.id), year)
        rows.append((info, float(values.mean()), float(values.min()), float(values.max())))
    table = Table(title=f"Embedded zones: direct carbon intensity in {year} (g/kWh)")
    for column in ("zone", "name", "mean", "min", "max", "estimated %"):
        table.add_column(column, justify="left" if column in {"zone", "name"} else "right")
    for info, mean, low, high in sorted(rows, key=lambda r: r[1]):
        table.add_row(
            info.id,
            info.name,
            f"{mean:.0f}",
            f"{low:.0f}",
            f"{high:.0f}",
            f"{100 * info.estimated_share:.0f}",
        )
    return table


def scores_table(scores: Sequence[ForecastScore], title: str) -> Table:
    """One row per method: MAE, bias, MAPE and window hit rate."""
    table = Table(title=title)
    for column in ("method", "MAE g/kWh", "bias g/kWh", "MAPE %", "6 h window hit %"):
        table.add_column(column, justify="left" if column == "method" else "right")
    for s in sorted(scores, key=lambda s: s.mae_g_per_kwh):
        table.add_row(
            s.method,
            f"{s.mae_g_per_kwh:.1f}",
            f"{s.bias_g_per_kwh:+.1f}",
            "-" if s.mape_pct is None else f"{s.mape_pct:.1f}",
            "-" if s.window_hit_rate is None else f"{100 * s.window_hit_rate:.0f}",
        )
    return table


def plot(series: CarbonSeries, scores: Sequence[ForecastScore], path: Path) -> Path:
    """One week of actuals against day-ahead forecasts (issued daily at 00:00 UTC), and the
    MAE of each method over the year."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    issues = [WEEK_START + timedelta(days=d) for d in range(7)]
    hours = [WEEK_START + timedelta(hours=h) for h in range(24 * 7)]
    fig, (ax_week, ax_mae) = plt.subplots(
        2, 1, figsize=(11, 7.5), gridspec_kw={"height_ratios": [3, 2]}
    )
    actual = make_forecaster("oracle").forecast_many(series, issues, HORIZON_H).ravel()
    ax_week.plot(hours, actual, color="black", linewidth=2.2, label="actual")
    for name in PLOT_METHODS:
        values = make_forecaster(name).forecast_many(series, issues, HORIZON_H).ravel()
        ax_week.plot(hours, values, linewidth=1.2, label=name)
    ax_week.set_title(f"{series.zone}: day-ahead forecasts issued daily at 00:00 UTC")
    ax_week.set_ylabel("direct intensity, g/kWh")
    ax_week.legend(ncol=3, fontsize=8)
    ax_week.grid(alpha=0.3)
    ordered = sorted(scores, key=lambda s: s.mae_g_per_kwh)
    ax_mae.barh([s.method for s in ordered], [s.mae_g_per_kwh for s in ordered], color="#4c72b0")
    ax_mae.invert_yaxis()
    ax_mae.set_xlabel(f"MAE over {YEAR}, g/kWh (forecasts issued hourly, {HORIZON_H} h ahead)")
    ax_mae.grid(axis="x", alpha=0.3)
    fig.text(0.01, 0.005, ATTRIBUTION, fontsize=7, color="grey")
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; return the exit code."""
    parser = argparse.ArgumentParser(prog="python -m carbonshift.demo", description=__doc__)
    parser.add_argument("--zone", default="DE", help="zone for the forecast comparison")
    parser.add_argument("--out", type=Path, default=Path("out/demo"), help="output folder")
    args = parser.parse_args(argv)
    console = Console()
    try:
        console.print(zones_table())
        series = load_series(args.zone)
        scores = evaluate(
            series,
            forecaster_names(),
            datetime(YEAR, 1, 1, tzinfo=UTC),
            datetime(YEAR + 1, 1, 1, tzinfo=UTC),
            horizon_slots=HORIZON_H,
        )
    except CarbonshiftError as exc:
        console.print(f"error: {exc}", style="red", highlight=False)
        return 2
    console.print(
        scores_table(
            scores,
            f"{series.zone} {YEAR}: forecasts issued every hour, {HORIZON_H} h ahead "
            f"({scores[0].issues} issues)",
        )
    )
    png = plot(series, scores, args.out / "forecast_comparison.png")
    summary = args.out / "forecast_eval.json"
    summary.write_text(json.dumps([s.to_json() for s in scores], indent=2) + "\n")
    console.print(f"wrote {png} and {summary}")
    try:
        _caspian(console, args.out / "caspian")
    except CarbonshiftError as exc:
        console.print(f"error: {exc}", style="red", highlight=False)
        return 2
    console.print(ATTRIBUTION, style="dim")
    return 0


def _caspian(console: Console, out: Path) -> None:
    """The main job: Caspian's online experiment (quick: one seed), ours beside the paper's."""
    console.print("\n[bold]Caspian reproduction[/] (carbonshift reproduce caspian --quick)")
    result = reproduce("caspian", out, quick=True)
    table = Table(title="carbon saving vs omega1 = 0, deadlines met, completion ratio")
    columns = (
        "policy",
        "omega1",
        "saving_pct",
        "paper_saving_pct",
        "deadline_met_pct",
        "completion_ratio",
    )
    for column in columns:
        table.add_column(column, justify="right", overflow="fold")
    for row in result.rows:
        table.add_row(*(_cell(row[c]) for c in columns))
    console.print(table)
    for note in result.notes:
        console.print(f"- {note}")
    console.print(f"report: {out / 'omega1-0.5' / 'report.html'}")


def _cell(value: object) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if isinstance(value, float | int) else str(value)


if __name__ == "__main__":
    raise SystemExit(main())
