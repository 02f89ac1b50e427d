"""Reading of whitespace-separated job logs whose first 11 fields mean the same thing.

The Standard Workload Format (SWF, 18 fields) and the Grid Workload Format (GWF, 29 fields,
designed as an extension of SWF) share fields 1-11: job id, submit time, wait time, run time,
allocated processors, average CPU time, used memory, requested processors, requested time,
requested memory, status. Both write -1 for "unknown". The format modules say what differs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from carbonshift.errors import InputError
from carbonshift.workloads._parse import RowSink, did_you_mean, open_text, parse_finite
from carbonshift.workloads.csv_trace import check_deadline_factor
from carbonshift.workloads.model import Workload

__all__ = ["LogLayout", "Processors", "read_field_log"]

Processors = Literal["allocated", "requested"]
_PROCESSORS = ("allocated", "requested")

# 0-based positions of the shared fields
_JOB, _SUBMIT, _RUN, _ALLOC, _REQ, _STATUS = 0, 1, 3, 4, 7, 10
_CANCELLED = 5
_PARTIAL = (2, 3, 4)


@dataclass(frozen=True, slots=True)
class LogLayout:
    """What differs between the formats: field count, comment marker, names, user/queue fields."""

    name: str
    n_fields: int
    comment: str
    field_names: tuple[str, ...]
    user_field: int
    queue_field: int
    parse_header: Callable[[str, dict[str, str]], None]
    #: turns the header and the submit times (seconds, as written) into (origin_s, start)
    origin: Callable[[dict[str, str], list[float]], tuple[float, datetime | None]]


def read_field_log(
    path: str | Path,
    layout: LogLayout,
    *,
    resource: str,
    processors: Processors,
    deadline_factor: float,
    strict: bool,
) -> Workload:
    """Read a SWF/GWF-like log (see the module docstring of each format for the rules)."""
    if processors not in _PROCESSORS:
        raise InputError(
            f"processors {processors!r} is not known; {did_you_mean(processors, _PROCESSORS)}"
        )
    check_deadline_factor(deadline_factor)
    first, second = (_ALLOC, _REQ) if processors == "allocated" else (_REQ, _ALLOC)
    sink = RowSink(path, strict=strict)
    header: dict[str, str] = {}
    ids: list[str] = []
    submit_s: list[float] = []
    run_h: list[float] = []
    procs: list[float] = []
    users: list[str | None] = []
    queues: list[str | None] = []
    rows = 0
    names = layout.field_names
    with open_text(path) as text:
        for line_no, raw in enumerate(text, start=1):
            stripped = raw.strip()
            if not stripped:
                continue
            if stripped.startswith(layout.comment):
                layout.parse_header(stripped[len(layout.comment) :].strip(), header)
                continue
            rows += 1
            fields = stripped.split()
            if len(fields) != layout.n_fields:
                sink.bad(
                    line_no,
                    "(row)",
                    stripped[:80],
                    f"has {len(fields)} fields",
                    f"a {layout.name} line has exactly {layout.n_fields} whitespace-separated "
                    "fields (-1 where unknown)",
                )
                continue
            numbers: dict[int, float] = {}
            bad = False
            for index in (_SUBMIT, _RUN, _ALLOC, _REQ, _STATUS):
                value = parse_finite(fields[index])
                if value is None or (value < 0 and value != -1):
                    sink.bad(
                        line_no,
                        names[index],
                        fields[index],
                        "is not a number >= 0 or -1 (unknown)",
                        f"fix field {index + 1} of this {layout.name} line",
                    )
                    bad = True
                    break
                numbers[index] = value
            if bad:
                continue
            status = int(numbers[_STATUS])
            if status == _CANCELLED:
                sink.skip("cancelled")
                continue
            if status in _PARTIAL:
                sink.skip("partial-execution")
                continue
            if numbers[_SUBMIT] == -1:
                sink.skip("unknown-submit")
                continue
            run = numbers[_RUN]
            if run == -1:
                sink.skip("unknown-runtime")
                continue
            if run == 0:
                sink.skip("zero-length")
                continue
            count = numbers[first] if numbers[first] != -1 else numbers[second]
            if count == -1:
                sink.skip("unknown-processors")
                continue
            if count == 0:
                sink.skip("zero-processors")
                continue
            ids.append(fields[_JOB])
            submit_s.append(numbers[_SUBMIT])
            run_h.append(run / 3600.0)
            procs.append(count)
            user = fields[layout.user_field]
            queue = fields[layout.queue_field]
            users.append(None if user == "-1" else user)
            queues.append(None if queue == "-1" else queue)
    origin_s, start = layout.origin(header, submit_s)
    submit_h = [(s - origin_s) / 3600.0 for s in submit_s]
    if submit_h and min(submit_h) < 0:
        raise InputError(
            f"{path}: a submit time lies {-min(submit_h):.3f} h before the log's start "
            f"({layout.name} header); fix the header or the submit times"
        )
    deadline_h = [s + deadline_factor * r for s, r in zip(submit_h, run_h, strict=True)]
    report = sink.report(rows, len(ids), header)
    return Workload.from_columns(
        ids=ids,
        submit_h=submit_h,
        runtime_h=run_h,
        demand={resource: procs},
        deadline_h=deadline_h,
        source=str(path),
        start=start,
        users=users,
        queues=queues,
        report=report,
    )
