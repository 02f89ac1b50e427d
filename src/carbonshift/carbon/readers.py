"""Readers for carbon-intensity CSV files: the Electricity Maps export and ``timestamp,value``.

Two formats (docs/formats.md (scenario)):

- **Electricity Maps hourly export**: a ``Datetime (UTC)`` column (``YYYY-MM-DD HH:MM:SS``,
  hour-beginning, UTC; ISO 8601 with ``T``/``Z`` is accepted too) and intensity columns
  whose headers contain ``CO₂`` or ``CO2`` and, for ``kind="direct"``, ``direct``, or for
  ``kind="lca"``, ``LCA`` or ``life cycle`` (case-insensitive). ``Zone Id`` and
  ``Data Estimated`` are used when present.
- **Plain** ``timestamp,value``: ISO 8601 times (naive means UTC) and g/kWh values.

The step of an Electricity Maps export is 60 minutes (pass ``step_minutes`` for another
resolution); that of a plain file is the smallest distance between consecutive rows (a whole
number of minutes; 60 for a one-row file). Every row must follow the previous one by a
whole number of steps:

- a duplicated or out-of-order time, or a time off the step grid, is always an error;
- a gap (missing steps) is an error by default; ``fill="previous"`` repeats the last value
  before the gap, ``fill="interpolate"`` interpolates linearly between its two sides. Filled
  steps are marked ``estimated`` in the returned series.

Values must be finite numbers >= 0 (zero is valid: real grids have zero-carbon hours). Every
error is an :class:`~carbonshift.errors.InputError` naming the file, the line, the value and
the fix.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path

import numpy as np

from carbonshift.carbon.series import CarbonSeries, CiKind
from carbonshift.domain import MAX_CARBON_G_PER_KWH
from carbonshift.errors import InputError
from carbonshift.files import read_input_text

__all__ = [
    "GapFill",
    "detect_format",
    "read_carbon_csv",
    "read_electricitymaps_csv",
    "read_timestamp_value_csv",
]

TIME_COLUMN = "Datetime (UTC)"


class GapFill(StrEnum):
    """What a reader does with missing steps inside a file."""

    ERROR = "error"  #: refuse the file (default)
    PREVIOUS = "previous"  #: repeat the value before the gap
    INTERPOLATE = "interpolate"  #: linear between the values on both sides of the gap


@dataclass(frozen=True, slots=True)
class _Row:
    line: int
    moment: datetime
    value_g_per_kwh: float
    estimated: bool


def _parse_time(text: str, path: Path, line: int, column: str) -> datetime:
    cleaned = text.strip()
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(cleaned)
    except ValueError as exc:
        raise InputError(
            f"{path}: line {line}: {column} {text!r} is not a date and time; "
            "write it like 2023-11-14 00:00:00 (UTC) or 2023-11-14T00:00:00Z"
        ) from exc
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _parse_value(text: str, path: Path, line: int, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (np.isfinite(value) and value >= 0):
        raise InputError(
            f"{path}: line {line}: {column} {text!r} is not an intensity in g/kWh; "
            "write a finite number >= 0 like 123.4 (0 is allowed)"
        )
    if value > MAX_CARBON_G_PER_KWH:
        # 1e300 ran (1e297 kg) and 1.7e308 overflowed to "inf g/kWh" in a planning round
        raise InputError(
            f"{path}: line {line}: {column} {text!r} g/kWh is above {MAX_CARBON_G_PER_KWH:g} "
            "g/kWh, the most carbonshift reads (docs/formats.md); is the column in g/kWh "
            "(not mg, or g/MWh)?"
        )
    return value


def _matches_kind(header: str, kind: CiKind) -> bool:
    low = header.lower()
    if "co₂" not in low and "co2" not in low:
        return False
    if kind is CiKind.DIRECT:
        return "direct" in low
    if kind is CiKind.LCA:
        return "lca" in low or "life cycle" in low or "lifecycle" in low
    return False


def _intensity_column(headers: Sequence[str], kind: CiKind, path: Path) -> str:
    found = [h for h in headers if _matches_kind(h, kind)]
    if kind not in (CiKind.DIRECT, CiKind.LCA):
        raise InputError(
            f"{path}: ci_kind {kind.value!r} is not in Electricity Maps exports; "
            "use 'direct' or 'lca'"
        )
    wanted = "'direct'" if kind is CiKind.DIRECT else "'LCA' or 'life cycle'"
    if not found:
        raise InputError(
            f"{path}: no column whose header contains 'CO2' (or 'CO₂') and {wanted} among "
            f"{list(headers)}; export the {kind.value} carbon intensity or choose another ci_kind"
        )
    if len(found) > 1:
        raise InputError(
            f"{path}: several {kind.value} intensity columns {found}; keep one in the file"
        )
    return found[0]


def _open(path: Path) -> list[str]:
    return read_input_text(path, "carbon CSV", encoding="utf-8-sig").splitlines()


def _headers(lines: list[str], path: Path) -> list[str]:
    if not lines or not lines[0].strip():
        raise InputError(f"{path}: the file is empty; expected a CSV with a header line")
    return [h.strip() for h in next(csv.reader([lines[0]]))]


def detect_format(path: str | Path) -> str:
    """``"electricitymaps"`` or ``"timestamp-value"``, from the header line of ``path``."""
    file = Path(path)
    headers = _headers(_open(file), file)
    return _detect(headers, file)


def _detect(headers: list[str], path: Path) -> str:
    if TIME_COLUMN in headers:
        return "electricitymaps"
    low = [h.lower() for h in headers]
    if "timestamp" in low and "value" in low:
        return "timestamp-value"
    raise InputError(
        f"{path}: header {headers} has neither a {TIME_COLUMN!r} column (Electricity Maps "
        "export) nor 'timestamp' and 'value' columns; use one of these two formats"
    )


def _series_from_rows(
    rows: list[_Row],
    path: Path,
    *,
    zone: str,
    kind: CiKind,
    fill: GapFill,
    step_minutes: int | None,
) -> CarbonSeries:
    if not rows:
        raise InputError(f"{path}: the file has a header but no data rows; add values")
    if step_minutes is None:
        step_minutes = _infer_step_minutes(rows, path)
    if step_minutes < 1:
        raise InputError(f"{path}: step_minutes {step_minutes} must be a whole number >= 1")
    step = timedelta(minutes=step_minutes)
    values: list[float] = [rows[0].value_g_per_kwh]
    estimated: list[bool] = [rows[0].estimated]
    for previous, row in itertools.pairwise(rows):
        _order_error(previous, row, path)
        gap = row.moment - previous.moment
        steps, rest = divmod(gap, step)
        if rest:
            raise InputError(
                f"{path}: line {row.line}: time {row.moment:%Y-%m-%d %H:%M:%S} is not on the "
                f"{step_minutes}-minute grid that starts at {rows[0].moment:%Y-%m-%d %H:%M:%S} "
                "UTC; give every row a time on that grid"
            )
        missing = steps - 1
        if missing > 0:
            if fill is GapFill.ERROR:
                first = previous.moment + step
                raise InputError(
                    f"{path}: line {row.line}: {missing} step(s) of {step_minutes} minutes "
                    f"missing from {first:%Y-%m-%d %H:%M:%S} UTC to before "
                    f"{row.moment:%Y-%m-%d %H:%M:%S}; add the rows, or pass "
                    "fill='previous' or fill='interpolate' to fill the gap explicitly"
                )
            if fill is GapFill.PREVIOUS:
                values.extend([previous.value_g_per_kwh] * missing)
            else:
                fractions = np.arange(1, missing + 1) / (missing + 1)
                span = row.value_g_per_kwh - previous.value_g_per_kwh
                values.extend((previous.value_g_per_kwh + fractions * span).tolist())
            estimated.extend([True] * missing)
        values.append(row.value_g_per_kwh)
        estimated.append(row.estimated)
    array = np.asarray(values, dtype=np.float64)
    flags = np.asarray(estimated, dtype=bool)
    return CarbonSeries(
        zone=zone,
        kind=kind,
        start=rows[0].moment,
        step_minutes=step_minutes,
        values_g_per_kwh=array,
        estimated=flags,
        source=f"csv:{path}",
    )


def _infer_step_minutes(rows: list[_Row], path: Path) -> int:
    """The smallest distance between consecutive rows, in whole minutes (60 for one row)."""
    if len(rows) < 2:
        return 60
    for previous, row in itertools.pairwise(rows):
        _order_error(previous, row, path)
    times = np.array([r.moment.timestamp() for r in rows])
    smallest = float(np.diff(times).min()) / 60
    if smallest != int(smallest):
        raise InputError(
            f"{path}: rows are {smallest:g} minutes apart at the closest; steps must be a "
            "whole number of minutes (or pass step_minutes)"
        )
    return int(smallest)


def _order_error(previous: _Row, row: _Row, path: Path) -> None:
    if row.moment == previous.moment:
        raise InputError(
            f"{path}: line {row.line}: time {row.moment:%Y-%m-%d %H:%M:%S} UTC appears twice "
            f"(also line {previous.line}); keep one row per time"
        )
    if row.moment < previous.moment:
        raise InputError(
            f"{path}: line {row.line}: time {row.moment:%Y-%m-%d %H:%M:%S} UTC comes after "
            f"{previous.moment:%Y-%m-%d %H:%M:%S} (line {previous.line}); sort the rows by time"
        )


def _dict_rows(lines: list[str]) -> Iterable[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(lines)
    for record in reader:
        if not any((v or "").strip() for v in record.values() if isinstance(v, str)):
            continue  # blank line
        yield reader.line_num, {(k or "").strip(): (v or "") for k, v in record.items()}


def read_electricitymaps_csv(
    path: str | Path,
    kind: CiKind | str = CiKind.DIRECT,
    *,
    zone: str | None = None,
    fill: GapFill | str = GapFill.ERROR,
    step_minutes: int | None = None,
) -> CarbonSeries:
    """Read an Electricity Maps hourly export (docs/formats.md (scenario)); step 60 min by default.

    The zone is ``zone`` if given, else the file's ``Zone Id`` column, else the file's stem.
    """
    file = Path(path)
    ci_kind, gap_fill = _kind(kind, file), _fill(fill)
    lines = _open(file)
    headers = _headers(lines, file)
    if TIME_COLUMN not in headers:
        raise InputError(
            f"{file}: no {TIME_COLUMN!r} column among {headers}; an Electricity Maps export "
            "has one (or use a plain timestamp,value CSV)"
        )
    column = _intensity_column(headers, ci_kind, file)
    has_estimated = "Data Estimated" in headers
    zones: set[str] = set()
    rows: list[_Row] = []
    for line, record in _dict_rows(lines):
        moment = _parse_time(record.get(TIME_COLUMN, ""), file, line, TIME_COLUMN)
        value = _parse_value(record.get(column, ""), file, line, column)
        flag = has_estimated and record["Data Estimated"].strip().lower() == "true"
        if record.get("Zone Id", "").strip():
            zones.add(record["Zone Id"].strip())
        rows.append(_Row(line, moment, value, flag))
    if zone is None:
        if len(zones) > 1:
            raise InputError(
                f"{file}: Zone Id column holds several zones {sorted(zones)}; "
                "give one file per zone"
            )
        zone = zones.pop() if zones else file.name.split(".")[0]
    return _series_from_rows(
        rows, file, zone=zone, kind=ci_kind, fill=gap_fill, step_minutes=step_minutes or 60
    )


def read_timestamp_value_csv(
    path: str | Path,
    *,
    zone: str | None = None,
    kind: CiKind | str = CiKind.DIRECT,
    fill: GapFill | str = GapFill.ERROR,
    step_minutes: int | None = None,
) -> CarbonSeries:
    """Read a plain ``timestamp,value`` CSV (values in g/kWh; ``kind`` says which kind).

    The zone is ``zone`` if given, else the file's stem.
    """
    file = Path(path)
    ci_kind, gap_fill = _kind(kind, file, any_kind=True), _fill(fill)
    lines = _open(file)
    headers = _headers(lines, file)
    by_lower = {h.lower(): h for h in headers}
    missing = [name for name in ("timestamp", "value") if name not in by_lower]
    if missing:
        raise InputError(
            f"{file}: column(s) {missing} missing from header {headers}; "
            "the plain format is a header line 'timestamp,value' then one row per step"
        )
    time_column, value_column = by_lower["timestamp"], by_lower["value"]
    rows = [
        _Row(
            line,
            _parse_time(record.get(time_column, ""), file, line, "timestamp"),
            _parse_value(record.get(value_column, ""), file, line, "value"),
            False,
        )
        for line, record in _dict_rows(lines)
    ]
    return _series_from_rows(
        rows,
        file,
        zone=zone if zone is not None else file.name.split(".")[0],
        kind=ci_kind,
        fill=gap_fill,
        step_minutes=step_minutes,
    )


def read_carbon_csv(
    path: str | Path,
    kind: CiKind | str = CiKind.DIRECT,
    *,
    zone: str | None = None,
    fill: GapFill | str = GapFill.ERROR,
    step_minutes: int | None = None,
) -> CarbonSeries:
    """Read either format, told apart by the header line (see :func:`detect_format`)."""
    file = Path(path)
    if _detect(_headers(_open(file), file), file) == "electricitymaps":
        return read_electricitymaps_csv(file, kind, zone=zone, fill=fill, step_minutes=step_minutes)
    return read_timestamp_value_csv(
        file, zone=zone, kind=kind, fill=fill, step_minutes=step_minutes
    )


def _kind(kind: CiKind | str, path: Path, *, any_kind: bool = False) -> CiKind:
    try:
        ci_kind = CiKind(kind)
    except ValueError:
        allowed = ", ".join(repr(k.value) for k in CiKind) if any_kind else "'direct' or 'lca'"
        raise InputError(f"{path}: ci_kind {kind!r} is unknown; use {allowed}") from None
    return ci_kind


def _fill(fill: GapFill | str) -> GapFill:
    try:
        return GapFill(fill)
    except ValueError:
        raise InputError(
            f"fill {fill!r} is unknown; use 'error' (default), 'previous' or 'interpolate'"
        ) from None
