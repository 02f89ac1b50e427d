"""Reader of the Grid Workload Format (GWF) of the Grid Workloads Archive.

Iosup et al., "The Grid Workloads Archive", Future Generation Computer Systems 24(7), 2008;
field list at http://gwa.ewi.tudelft.nl/grid-workload-format/ . GWF extends SWF: one job per
line, 29 whitespace-separated fields, -1 where unknown, ``#`` comment lines. Fields 1-11 mean
what they mean in SWF (JobID, SubmitTime, WaitTime, RunTime, NProcs (allocated),
AverageCPUTimeUsed, UsedMemory, ReqNProcs, ReqTime, ReqMemory, Status); then UserID, GroupID,
ExecutableID, QueueID, PartitionID, OrigSiteID, LastRunSiteID, JobStructure (UNITARY or BoT),
JobStructureParams, UsedNetwork, UsedLocalDiskSpace, UsedResources, ReqPlatform, ReqNetwork,
ReqLocalDiskSpace, ReqResources, VOID, ProjectID.

How carbonshift reads it: SubmitTime is Unix time in seconds (as in the archive's traces);
the workload's ``start`` is the earliest kept submit time (UTC) and ``submit_h`` counts hours
from it. Everything else follows :mod:`carbonshift.workloads.swf` (processor choice, skipped
rows, deadline from ``deadline_factor``, strict and lenient modes). No GWF file ships with
carbonshift; ``tests/workloads/data/tiny.gwf`` was written from the field list.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from carbonshift.workloads._fields import LogLayout, Processors, read_field_log
from carbonshift.workloads.model import Workload

__all__ = ["GWF_FIELDS", "read_gwf"]

#: The 29 GWF field names, in order.
GWF_FIELDS = (
    "JobID",
    "SubmitTime",
    "WaitTime",
    "RunTime",
    "NProcs",
    "AverageCPUTimeUsed",
    "UsedMemory",
    "ReqNProcs",
    "ReqTime",
    "ReqMemory",
    "Status",
    "UserID",
    "GroupID",
    "ExecutableID",
    "QueueID",
    "PartitionID",
    "OrigSiteID",
    "LastRunSiteID",
    "JobStructure",
    "JobStructureParams",
    "UsedNetwork",
    "UsedLocalDiskSpace",
    "UsedResources",
    "ReqPlatform",
    "ReqNetwork",
    "ReqLocalDiskSpace",
    "ReqResources",
    "VOID",
    "ProjectID",
)


def _parse_header(text: str, header: dict[str, str]) -> None:
    key, sep, value = text.partition(":")
    if sep and key.strip() and " " not in key.strip():
        header[key.strip()] = value.strip()


def _origin(header: dict[str, str], submit_s: list[float]) -> tuple[float, datetime | None]:
    if not submit_s:
        return 0.0, None
    first = min(submit_s)
    return first, datetime.fromtimestamp(first, UTC)


_LAYOUT = LogLayout(
    name="GWF",
    n_fields=29,
    comment="#",
    field_names=GWF_FIELDS,
    user_field=11,
    queue_field=14,
    parse_header=_parse_header,
    origin=_origin,
)


def read_gwf(
    path: str | Path,
    *,
    resource: str = "cpu",
    processors: Processors = "allocated",
    deadline_factor: float = 3.0,
    strict: bool = True,
) -> Workload:
    """Read a GWF trace (plain, ``.gz`` or ``.zip``) into a :class:`Workload`."""
    return read_field_log(
        path,
        _LAYOUT,
        resource=resource,
        processors=processors,
        deadline_factor=deadline_factor,
        strict=strict,
    )
