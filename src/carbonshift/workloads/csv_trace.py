"""Reader of the trace CSV of docs/formats.md (scenario) (the GAIA ``arrival_time,length,cpus``).

Required columns: ``arrival_time`` (since the trace's start), ``length`` (exact run time) and
``cpus`` (units of ``resource`` the job holds), all in ``time_unit`` (``hours`` or
``seconds``) where they are times. Optional columns: ``deadline`` (absolute, same unit and
origin as ``arrival_time``; an empty cell means "none given"), ``critical`` (true/false,
1/0, yes/no), ``id``, ``user``, ``queue``. Other columns are ignored (logged once).

A job without a deadline gets ``deadline = arrival + deadline_factor x length``.
"""

from __future__ import annotations

import csv
import difflib
import logging
import warnings
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from carbonshift.errors import InputError
from carbonshift.files import DecompressedTooLargeError, open_decompressed
from carbonshift.workloads._parse import RowSink, did_you_mean, open_text, parse_finite
from carbonshift.workloads.model import ReadReport, Workload

if TYPE_CHECKING:
    from _csv import Reader

__all__ = ["TIME_UNITS", "read_trace_csv"]

_log = logging.getLogger("carbonshift.workloads")

#: Seconds per unit of the ``time_unit`` names a trace CSV may use.
TIME_UNITS = {"hours": 3600.0, "seconds": 1.0}
_REQUIRED = ("arrival_time", "length", "cpus")
_OPTIONAL = ("deadline", "critical", "id", "user", "queue")
_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f", ""}


def check_deadline_factor(deadline_factor: float) -> None:
    """Refuse a deadline factor that is negative or not finite."""
    if not (deadline_factor >= 0 and deadline_factor != float("inf")):
        raise InputError(
            f"deadline_factor is {deadline_factor!r}; it must be a finite number >= 0 "
            "(deadline = arrival + deadline_factor x length; 1 means no slack)"
        )


def time_unit_hours(time_unit: str) -> float:
    """Hours per ``time_unit`` (``hours`` or ``seconds``); anything else is an InputError."""
    if time_unit not in TIME_UNITS:
        raise InputError(
            f"time_unit {time_unit!r} is not known; {did_you_mean(time_unit, list(TIME_UNITS))}"
        )
    return TIME_UNITS[time_unit] / 3600.0


def read_trace_csv(
    path: str | Path,
    *,
    time_unit: str = "hours",
    resource: str = "gpu",
    deadline_factor: float = 3.0,
    strict: bool = True,
    start: datetime | None = None,
) -> Workload:
    """Read a trace CSV into a :class:`Workload` (its ``report`` says what was left out).

    ``strict`` raises :class:`InputError` at the first malformed row (naming file, line,
    column, value and fix); otherwise malformed rows are skipped and counted. Rows with
    ``length`` 0 describe no work: they are skipped and counted as ``zero-length`` in both
    modes. ``start`` is the UTC moment of arrival 0, when the caller knows it.
    """
    unit_h = time_unit_hours(time_unit)
    check_deadline_factor(deadline_factor)
    fast = _read_clean(
        path, unit_h=unit_h, resource=resource, deadline_factor=deadline_factor, start=start
    )
    if fast is not None:
        return fast
    sink = RowSink(path, strict=strict)
    ids: list[str] = []
    submit: list[float] = []
    runtime: list[float] = []
    demand: list[float] = []
    deadline: list[float] = []
    critical: list[bool] = []
    users: list[str | None] = []
    queues: list[str | None] = []
    rows = 0
    with open_text(path) as text:
        reader = csv.reader(text)
        header = _read_header(reader, str(path))
        col = {name: i for i, name in enumerate(header)}
        i_arr, i_len, i_cpu = (col[c] for c in _REQUIRED)
        i_dl, i_crit, i_id, i_user, i_queue = (col.get(c) for c in _OPTIONAL)
        ignored = [c for c in header if c not in _REQUIRED and c not in _OPTIONAL]
        if ignored:
            _log.info("%s: ignoring columns %s", path, ignored)
        width = len(header)
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # blank line
            line = reader.line_num
            ordinal = rows
            rows += 1
            if len(row) != width:
                sink.bad(
                    line,
                    "(row)",
                    ",".join(row),
                    f"has {len(row)} fields but the header has {width}",
                    "give one value per header column",
                )
                continue
            arrival = parse_finite(row[i_arr])
            if arrival is None or arrival < 0:
                sink.bad(
                    line,
                    "arrival_time",
                    row[i_arr],
                    "is not a number >= 0",
                    f"write the arrival in {time_unit} since the trace's start",
                )
                continue
            length = parse_finite(row[i_len])
            if length is None or length < 0:
                sink.bad(
                    line,
                    "length",
                    row[i_len],
                    "is not a number >= 0",
                    f"write the run time in {time_unit}",
                )
                continue
            cpus = parse_finite(row[i_cpu])
            if cpus is None or cpus <= 0:
                sink.bad(
                    line,
                    "cpus",
                    row[i_cpu],
                    "is not a number > 0",
                    f"write how many units of {resource!r} the job holds",
                )
                continue
            dl: float | None = None
            if i_dl is not None and row[i_dl].strip():
                dl = parse_finite(row[i_dl])
                if dl is None:
                    sink.bad(
                        line,
                        "deadline",
                        row[i_dl],
                        "is not a number",
                        f"write the deadline in {time_unit} since the trace's start, or leave "
                        "it empty",
                    )
                    continue
            crit = False
            if i_crit is not None:
                flag = row[i_crit].strip().lower()
                if flag not in _TRUE and flag not in _FALSE:
                    sink.bad(
                        line,
                        "critical",
                        row[i_crit],
                        "is not a true/false value",
                        "write true or false (or 1/0)",
                    )
                    continue
                crit = flag in _TRUE
            if length == 0:
                sink.skip("zero-length")
                continue
            arrival_h = arrival * unit_h
            length_h = length * unit_h
            ids.append(row[i_id].strip() if i_id is not None else f"j{ordinal}")
            submit.append(arrival_h)
            runtime.append(length_h)
            demand.append(cpus)
            deadline.append(
                dl * unit_h if dl is not None else arrival_h + deadline_factor * length_h
            )
            critical.append(crit)
            users.append((row[i_user].strip() or None) if i_user is not None else None)
            queues.append((row[i_queue].strip() or None) if i_queue is not None else None)
    report = sink.report(rows, len(ids), {})
    return Workload.from_columns(
        ids=ids,
        submit_h=submit,
        runtime_h=runtime,
        demand={resource: demand},
        deadline_h=deadline,
        critical=critical,
        source=str(path),
        start=start,
        users=users if i_user is not None else None,
        queues=queues if i_queue is not None else None,
        report=report,
        validate=i_id is not None,  # only user-given ids can clash; values were checked above
    )


def _read_header(reader: Reader, path: str) -> list[str]:
    for row in reader:
        if row and any(cell.strip() for cell in row):
            header = [cell.strip().lstrip("\ufeff").strip().lower() for cell in row]
            missing = [c for c in _REQUIRED if c not in header]
            if missing:
                hints = "".join(
                    f"; column {close[0]!r}: did you mean {c!r}?"
                    for c in missing
                    if (close := difflib.get_close_matches(c, header, n=1))
                )
                raise InputError(
                    f"{path}:{reader.line_num}: the header {header} lacks columns {missing}"
                    f"{hints}; a trace CSV starts with arrival_time,length,cpus"
                )
            return header
    raise InputError(
        f"{path} is empty; a trace CSV starts with the header arrival_time,length,cpus"
    )


_FAST_COLUMNS = {"arrival_time", "length", "cpus", "deadline"}


def _read_clean(
    path: str | Path,
    *,
    unit_h: float,
    resource: str,
    deadline_factor: float,
    start: datetime | None,
) -> Workload | None:
    """The vectorised path (pandas) for a clean file with numeric columns only.

    Returns ``None`` whenever anything needs the row-by-row reader: a parse problem, a
    missing or bad value, a zero length, text columns. That reader then gives the exact
    diagnostics, and for a clean file both give the same workload.
    """
    file = Path(path)
    try:  # pandas comes with carbonshift[sim]; the controller's image goes without it
        import pandas as pd
    except ModuleNotFoundError:
        return None
    try:  # an InputError (no such file, a FIFO, too large) is a ValueError: open_text says it
        with open_decompressed(file, "trace") as handle, warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(handle, dtype=np.float64, index_col=False, encoding="utf-8")
    except DecompressedTooLargeError:
        raise  # said once here: the row-by-row reader would expand the bomb a second time
    except (ValueError, OSError, EOFError, pd.errors.ParserError, pd.errors.ParserWarning):
        return None
    columns = [str(c).strip().lstrip("\ufeff").strip().lower() for c in frame.columns]
    if len(set(columns)) != len(columns) or not set(_REQUIRED) <= set(columns) <= _FAST_COLUMNS:
        return None
    frame.columns = pd.Index(columns)
    arrival = frame["arrival_time"].to_numpy(dtype=np.float64)
    length = frame["length"].to_numpy(dtype=np.float64)
    cpus = frame["cpus"].to_numpy(dtype=np.float64)
    if not (
        np.isfinite(arrival).all()
        and np.isfinite(length).all()
        and np.isfinite(cpus).all()
        and (arrival >= 0).all()
        and (length > 0).all()
        and (cpus > 0).all()
    ):
        return None
    arrival_h = arrival * unit_h
    length_h = length * unit_h
    deadline_h = arrival_h + deadline_factor * length_h
    if "deadline" in frame:
        given = frame["deadline"].to_numpy(dtype=np.float64)
        if np.isinf(given).any():
            return None
        deadline_h = np.where(np.isnan(given), deadline_h, given * unit_h)
    n = len(arrival)
    report = ReadReport(path=str(path), rows_read=n, jobs_kept=n)
    return Workload.from_columns(
        ids=[f"j{i}" for i in range(n)],
        submit_h=arrival_h,
        runtime_h=length_h,
        demand={resource: cpus},
        deadline_h=deadline_h,
        source=str(path),
        start=start,
        report=report,
        validate=False,
    )
