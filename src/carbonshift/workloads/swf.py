"""Reader of the Standard Workload Format (SWF) of the Parallel Workloads Archive.

Format version 2.2 (Feitelson et al., "Experience with using the Parallel Workloads Archive",
JPDC 2014; https://www.cs.huji.ac.il/labs/parallel/workload/swf.html): one job per line, 18
whitespace-separated fields (job number, submit time in seconds since the log's start, wait
time, run time, allocated processors, average CPU time, used memory, requested processors,
requested time, requested memory, status, user, group, executable, queue, partition,
preceding job, think time), -1 where a value is unknown; header lines start with ``;`` and
hold ``Key: value`` pairs (``UnixStartTime``, ``MaxProcs``, ``TimeZoneString``...).

How carbonshift reads it:

- ``submit_h`` is the submit time in hours; the workload's ``start`` is the header's
  ``UnixStartTime`` (UTC) when present.
- ``runtime_h`` is the run time (field 4); the demand of ``resource`` is the allocated
  processors (field 5) or, with ``processors="requested"``, the requested ones (field 8),
  each falling back to the other when it is -1.
- Left out and counted (never an error): cancelled jobs (status 5), the lines of partial
  executions (status 2, 3, 4; the job's summary line is kept), and jobs whose submit time,
  run time or processor count is unknown or whose run time or processor count is 0.
- Deadline: SWF has none, so ``deadline = submit + deadline_factor x run time``.
- A malformed line raises :class:`~carbonshift.errors.InputError` when ``strict``, else it
  is skipped and counted (``report.skipped["malformed"]``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from carbonshift.errors import InputError
from carbonshift.workloads._fields import LogLayout, Processors, read_field_log
from carbonshift.workloads.model import Workload

__all__ = ["SWF_FIELDS", "read_swf"]

#: The 18 SWF field names, in order.
SWF_FIELDS = (
    "job",
    "submit",
    "wait",
    "run",
    "alloc_procs",
    "avg_cpu",
    "used_mem",
    "req_procs",
    "req_time",
    "req_mem",
    "status",
    "user",
    "group",
    "app",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)


def _parse_header(text: str, header: dict[str, str]) -> None:
    key, sep, value = text.partition(":")
    if not sep or not key.strip() or " " in key.strip():
        return  # a continuation or free-text comment line
    key = key.strip()
    value = value.strip()
    header[key] = f"{header[key]}\n{value}" if key in header else value


def _origin(header: dict[str, str], submit_s: list[float]) -> tuple[float, datetime | None]:
    raw = header.get("UnixStartTime")
    if raw is None:
        return 0.0, None
    try:
        epoch = float(raw.split()[0])
    except (ValueError, IndexError) as exc:
        raise InputError(
            f"SWF header UnixStartTime {raw!r} is not a number; write seconds since 1970 (UTC)"
        ) from exc
    return 0.0, datetime.fromtimestamp(epoch, UTC)


_LAYOUT = LogLayout(
    name="SWF",
    n_fields=18,
    comment=";",
    field_names=SWF_FIELDS,
    user_field=11,
    queue_field=14,
    parse_header=_parse_header,
    origin=_origin,
)


def read_swf(
    path: str | Path,
    *,
    resource: str = "cpu",
    processors: Processors = "allocated",
    deadline_factor: float = 3.0,
    strict: bool = True,
) -> Workload:
    """Read an SWF log (plain, ``.gz`` or ``.zip``) into a :class:`Workload`.

    ``report.header`` holds the header's ``Key: value`` pairs (``MaxProcs``, ``MaxNodes``,
    ``UnixStartTime``, ``Acknowledge``...); ``report.skipped`` counts what was left out.
    """
    return read_field_log(
        path,
        _LAYOUT,
        resource=resource,
        processors=processors,
        deadline_factor=deadline_factor,
        strict=strict,
    )
