"""One printer for the commands that print rows: a table for people, JSON or CSV for tools.

Tables carry human titles ("carbon saved, %"); CSV and JSON keep the machine names
(``carbon_saving_pct``) and full precision, so a script can read what a person reads.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from carbonshift.errors import InputError

__all__ = [
    "Column",
    "OutputFormat",
    "emit_record",
    "emit_rows",
    "human_label",
    "is_stdout",
    "output_folder",
    "output_image",
    "with_interval",
]


class OutputFormat(StrEnum):
    """How a command prints its rows."""

    TABLE = "table"
    JSON = "json"
    CSV = "csv"


#: Human titles of the machine names that several commands print.
_LABELS = {
    "policy": "policy",
    "baseline": "baseline",
    "scenario": "scenario",
    "params": "parameters",
    "seeds": "seeds",
    "carbon_kg": "carbon, kg CO2e",
    "baseline_carbon_kg": "baseline carbon, kg CO2e",
    "carbon_saving_pct": "carbon saved, %",
    "jobs_total": "jobs arrived",
    "jobs_completed": "jobs completed",
    "jobs_rejected": "jobs rejected",
    "deadline_met_pct": "deadlines met, %",
    "mean_completion_ratio": "mean completion ratio",
    "mean_wait_h": "mean wait, h",
    "planner_seconds_total": "planner time, s",
    "planner_seconds_max": "slowest planning round, s",
    "idle_carbon_kg": "idle carbon, kg CO2e",
    "status": "status",
    "operational_g": "operational carbon, g CO2e",
    "embodied_g": "embodied carbon, g CO2e",
    "carbon_g": "carbon, g CO2e",
    "gru": "green resource utilisation (GRU)",
    "on_time": "jobs on time",
    "late": "jobs late",
    "unscheduled": "jobs unscheduled",
    "feasible": "feasible",
    "solve_seconds": "solve time, s",
    "plan": "plan file",
    "lower_bound_g": "certified lower bound, g CO2e",
    "gap": "gap to the lower bound",
    "zone": "zone",
    "start": "start (UTC)",
    "end": "end (UTC)",
    "ci_g_per_kwh": "mean intensity, g/kWh",
    "emissions_g": "emissions, g CO2e",
    "source": "source",
    "method": "method",
    "mae_g_per_kwh": "MAE, g/kWh",
    "bias_g_per_kwh": "bias, g/kWh",
    "mape_pct": "MAPE, %",
    "window_hit_rate": "window hit rate",
    "issues": "issues",
}


def human_label(key: str) -> str:
    """The table title of a machine name: a known label, else the name with spaces."""
    return _LABELS.get(key, key.replace("_", " "))


def _short(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.4g}"
    return str(value)


@dataclass(frozen=True, slots=True)
class Column:
    """A printed column: its machine ``key``, table ``label`` (default: :func:`human_label`),
    alignment, and how the table shows it: ``cell`` formats the value, or ``show`` builds the
    text from the whole row (e.g. a mean with its interval)."""

    key: str
    label: str | None = None
    right: bool = False
    cell: Callable[[Any], str] = _short
    show: Callable[[Mapping[str, Any]], str] | None = None

    @property
    def title(self) -> str:
        return self.label if self.label is not None else human_label(self.key)

    def text(self, row: Mapping[str, Any]) -> str:
        """The table cell of ``row``."""
        return self.show(row) if self.show is not None else self.cell(row.get(self.key))


def with_interval(key: str) -> Callable[[Mapping[str, Any]], str]:
    """Show ``<key>_mean`` with its ``[<key>_ci95_lo, <key>_ci95_hi]`` when the row has one."""

    def show(row: Mapping[str, Any]) -> str:
        mean = row.get(f"{key}_mean", row.get(key))
        low, high = row.get(f"{key}_ci95_lo"), row.get(f"{key}_ci95_hi")
        if isinstance(low, float) and isinstance(high, float) and math.isfinite(high - low):
            return f"{_short(mean)} [{low:.3g}, {high:.3g}]"
        return _short(mean)

    return show


def _csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict | list):
        return json.dumps(value, allow_nan=False)
    return str(value)


def emit_rows(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[Column],
    *,
    fmt: OutputFormat,
    title: str,
    caption: str | None = None,
    json_payload: Any = None,
    csv_keys: Sequence[str] | None = None,
) -> None:
    """Print ``rows`` as a table (``columns`` only, human titles), JSON (every key, or
    ``json_payload`` when given) or CSV (machine names, full precision: ``csv_keys``, else
    the ``columns``' keys)."""
    if fmt is OutputFormat.JSON:
        payload = json_payload if json_payload is not None else [dict(r) for r in rows]
        typer.echo(json.dumps(payload, indent=1, allow_nan=False))
        return
    if fmt is OutputFormat.CSV:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        keys = list(csv_keys) if csv_keys is not None else [c.key for c in columns]
        writer.writerow(keys)
        for row in rows:
            writer.writerow([_csv_value(row.get(k)) for k in keys])
        typer.echo(buffer.getvalue(), nl=False)
        return
    table = Table(title=title, caption=caption)
    for column in columns:
        table.add_column(column.title, justify="right" if column.right else "left", overflow="fold")
    for row in rows:
        table.add_row(*(column.text(row) for column in columns))
    Console().print(table)


def emit_record(
    record: Mapping[str, Any],
    keys: Sequence[str],
    *,
    fmt: OutputFormat,
    title: str,
    cell: Callable[[str, Any], str] | None = None,
    json_payload: Any = None,
) -> None:
    """Print one result (a summary): a two-column table of human titles and values, one CSV
    row under the machine names ``keys``, or JSON (``record``, or ``json_payload``)."""
    if fmt is not OutputFormat.TABLE:
        emit_rows(
            [record],
            [Column(k) for k in keys],
            fmt=fmt,
            title=title,
            json_payload=json_payload if json_payload is not None else dict(record),
        )
        return
    shown = cell or (
        lambda _key, value: _short(value) if not isinstance(value, float) else f"{value:.6g}"
    )
    rows = [{"metric": human_label(k), "value": shown(k, record.get(k))} for k in keys]
    emit_rows(rows, [Column("metric"), Column("value", right=True)], fmt=fmt, title=title)


def is_stdout(path: Path) -> bool:
    """Whether an output option names standard output (``-``, as users expect)."""
    return str(path) == "-"


def output_folder(path: Path, option: str, what: str) -> Path:
    """``path`` for an option that names a folder; ``-`` (stdout) is refused: a folder of
    several files cannot go to one stream."""
    if is_stdout(path):
        raise InputError(
            f"{option} - : {what} are several files, not one stream; give a folder name, "
            f"like {option} out/run"
        )
    return path


def output_image(path: Path, option: str) -> Path:
    """``path`` for an option that names an image file; ``-`` (stdout) is refused."""
    if is_stdout(path):
        raise InputError(
            f"{option} - : a PNG image is not written to stdout; give a file name, like "
            f"{option} window.png"
        )
    return path
