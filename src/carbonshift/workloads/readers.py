"""One entry point for every trace format: :func:`read_workload` picks the reader by file name."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from carbonshift.errors import InputError
from carbonshift.workloads._parse import did_you_mean
from carbonshift.workloads.csv_trace import read_trace_csv
from carbonshift.workloads.gwf import read_gwf
from carbonshift.workloads.model import Workload
from carbonshift.workloads.swf import read_swf

__all__ = ["TraceFormat", "read_workload", "trace_format"]

TraceFormat = Literal["csv", "swf", "gwf"]
_FORMATS: tuple[TraceFormat, ...] = ("csv", "swf", "gwf")


def trace_format(path: str | Path) -> TraceFormat:
    """The format of ``path`` from its name (``x.csv``, ``x.swf.gz``, ``x.gwf.zip``...)."""
    name = Path(path).name.lower()
    for suffix in (".gz", ".zip"):
        name = name.removesuffix(suffix)
    for fmt in _FORMATS:
        if name.endswith(f".{fmt}"):
            return fmt
    raise InputError(
        f"cannot tell the trace format of {str(path)!r} from its name; name it .csv, .swf or "
        ".gwf (optionally .gz or .zip), or pass format="
    )


def read_workload(
    path: str | Path,
    *,
    format: TraceFormat | None = None,
    resource: str | None = None,
    deadline_factor: float = 3.0,
    time_unit: str = "hours",
    strict: bool = True,
) -> Workload:
    """Read a trace of any supported format.

    ``resource`` defaults to ``gpu`` for the CSV (docs/formats.md (scenario)) and ``cpu`` for
    SWF and GWF logs (processors). ``time_unit`` applies to the CSV only (SWF and GWF are in
    seconds by definition).
    """
    fmt = format if format is not None else trace_format(path)
    if fmt == "csv":
        return read_trace_csv(
            path,
            time_unit=time_unit,
            resource=resource or "gpu",
            deadline_factor=deadline_factor,
            strict=strict,
        )
    if fmt == "swf":
        return read_swf(
            path, resource=resource or "cpu", deadline_factor=deadline_factor, strict=strict
        )
    if fmt == "gwf":
        return read_gwf(
            path, resource=resource or "cpu", deadline_factor=deadline_factor, strict=strict
        )
    raise InputError(f"trace format {fmt!r} is not known; {did_you_mean(fmt, _FORMATS)}")
