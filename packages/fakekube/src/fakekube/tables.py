"""``meta.k8s.io/v1`` Tables, the form ``kubectl get`` asks for and prints.

Columns follow the API server's printers for the kinds carbonshift uses (pods, nodes, jobs,
namespaces, events); a custom resource gets NAME and its CRD version's
``additionalPrinterColumns`` (a JSONPath each, evaluated as the apiextensions server does:
dotted fields, ``[n]``, ``[*]`` and ``[?(@.field=='value')]`` filters, the first match;
``date`` columns printed as an age), or NAME and AGE when it declares none; every other kind
gets NAME and AGE. Ages are measured on the cluster's clock, so they move with virtual time.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from fakekube._time import parse_utc
from fakekube.errors import ConfigError
from fakekube.resources import ResourceType

__all__ = ["to_table"]

Obj = dict[str, Any]


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery duration.HumanDuration, roughly."""
    s = int(max(0, seconds))
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    return f"{days}d"


def _age(obj: Obj, now: datetime) -> str:
    created = obj.get("metadata", {}).get("creationTimestamp")
    return human_duration((now - parse_utc(created)).total_seconds()) if created else "<unknown>"


def _pod_status(pod: Obj) -> str:
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return "Terminating"
    if (pod.get("spec") or {}).get("schedulingGates"):
        return "SchedulingGated"
    phase = (pod.get("status") or {}).get("phase", "Pending")
    return "Completed" if phase == "Succeeded" else "Error" if phase == "Failed" else str(phase)


def _pod_row(pod: Obj, now: datetime) -> list[Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    total = len((pod.get("spec") or {}).get("containers") or [])
    ready = sum(1 for s in statuses if s.get("ready"))
    node = (pod.get("spec") or {}).get("nodeName") or "<none>"
    ip = (pod.get("status") or {}).get("podIP") or "<none>"
    return [
        pod["metadata"]["name"],
        f"{ready}/{total}",
        _pod_status(pod),
        0,
        _age(pod, now),
        ip,
        node,
        "<none>",
        "<none>",
    ]


def _job_status(job: Obj) -> str:
    conditions = {
        c.get("type"): c.get("status") for c in (job.get("status") or {}).get("conditions") or []
    }
    for kind in ("Complete", "Failed", "Suspended"):
        if conditions.get(kind) == "True":
            return kind
    return "Running"


def _job_row(job: Obj, now: datetime) -> list[Any]:
    status = job.get("status") or {}
    completions = f"{status.get('succeeded', 0)}/{(job.get('spec') or {}).get('completions', 1)}"
    start, end = status.get("startTime"), status.get("completionTime")
    duration = (
        human_duration(((parse_utc(end) if end else now) - parse_utc(start)).total_seconds())
        if start
        else ""
    )
    return [job["metadata"]["name"], _job_status(job), completions, duration, _age(job, now)]


def _node_row(node: Obj, now: datetime) -> list[Any]:
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or []
    )
    status = "Ready" if ready else "NotReady"
    if (node.get("spec") or {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    version = ((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")
    return [node["metadata"]["name"], status, "<none>", _age(node, now), version]


def _event_row(event: Obj, now: datetime) -> list[Any]:
    inv = event.get("involvedObject") or {}
    last = event.get("lastTimestamp") or event.get("metadata", {}).get("creationTimestamp")
    seen = human_duration((now - parse_utc(last)).total_seconds()) if last else "<unknown>"
    return [
        seen,
        event.get("type", ""),
        event.get("reason", ""),
        f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}",
        event.get("message", ""),
    ]


_Col = tuple[str, str, int]
_PRINTERS: dict[str, tuple[list[_Col], Callable[[Obj, datetime], list[Any]]]] = {
    "Pod": (
        [
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ],
        _pod_row,
    ),
    "Job": (
        [
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Completions", "string", 0),
            ("Duration", "string", 0),
            ("Age", "string", 0),
        ],
        _job_row,
    ),
    "Node": (
        [
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Roles", "string", 0),
            ("Age", "string", 0),
            ("Version", "string", 0),
        ],
        _node_row,
    ),
    "Namespace": (
        [("Name", "string", 0), ("Status", "string", 0), ("Age", "string", 0)],
        lambda o, now: [
            o["metadata"]["name"],
            (o.get("status") or {}).get("phase", "Active"),
            _age(o, now),
        ],
    ),
    "Event": (
        [
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Message", "string", 0),
        ],
        _event_row,
    ),
}


_STEP = re.compile(
    r"""\.([A-Za-z0-9_\-]+)|\[(\d+|\*)\]|\[\?\(@\.([A-Za-z0-9_.\-]+)\s*==\s*['"]([^'"]*)['"]\)\]"""
)


def json_path(obj: Any, path: str) -> Any:
    """The first value ``path`` (``.status.conditions[?(@.type=='Ready')].status``) selects in
    ``obj``; None when nothing does."""
    found: list[Any] = [obj]
    text = path.strip().removeprefix("{").removesuffix("}").removeprefix("$")
    at = 0
    while at < len(text):
        m = _STEP.match(text, at)
        if m is None:
            return None  # a form this subset does not read
        at = m.end()
        field, index, key, value = m.groups()
        out: list[Any] = []
        for v in found:
            if field is not None and isinstance(v, dict) and field in v:
                out.append(v[field])
            elif index == "*" and isinstance(v, list):
                out += v
            elif index is not None and index != "*" and isinstance(v, list):
                if int(index) < len(v):
                    out.append(v[int(index)])
            elif key is not None and isinstance(v, list):
                out += [e for e in v if str(json_path(e, "." + key)) == value]
        found = out
    return found[0] if found else None


def _custom_printer(
    columns: Sequence[Obj],
) -> tuple[list[_Col], Callable[[Obj, datetime], list[Any]]]:
    cols: list[_Col] = [("Name", "string", 0)] + [
        (str(c.get("name")), str(c.get("type", "string")), int(c.get("priority", 0) or 0))
        for c in columns
    ]

    def row(obj: Obj, now: datetime) -> list[Any]:
        cells: list[Any] = [obj["metadata"]["name"]]
        for c in columns:
            value = json_path(obj, str(c.get("jsonPath", "")))
            if c.get("type") == "date" and isinstance(value, str):
                with contextlib.suppress(ConfigError):  # not a time: printed as it is
                    value = human_duration((now - parse_utc(value)).total_seconds())
            elif isinstance(value, dict | list):
                value = str(value)
            cells.append(value)
        return cells

    return cols, row


def to_table(
    rt: ResourceType,
    items: list[Obj],
    now: datetime,
    resource_version: str,
    *,
    continue_: str | None = None,
    columns: bool = True,
    printer_columns: Sequence[Obj] = (),
) -> Obj:
    """A Table of ``items``; ``printer_columns``: the CRD's, for a custom resource."""
    name_age: tuple[list[_Col], Callable[[Obj, datetime], list[Any]]] = (
        [("Name", "string", 0), ("Age", "string", 0)],
        lambda o, n: [o["metadata"]["name"], _age(o, n)],
    )
    if rt.custom:
        cols, row = _custom_printer(printer_columns) if printer_columns else name_age
    else:
        cols, row = _PRINTERS.get(rt.kind, name_age)
    meta: Obj = {"resourceVersion": resource_version}
    if continue_:
        meta["continue"] = continue_
    table: Obj = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": [],
        "rows": [],
    }
    if columns:
        table["columnDefinitions"] = [
            {
                "name": name,
                "type": type_,
                "format": "name" if name == "Name" else "",
                "description": name,
                "priority": prio,
            }
            for name, type_, prio in cols
        ]
    for item in items:
        partial = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": item.get("metadata", {}),
        }
        table["rows"].append({"cells": row(item, now), "object": partial})
    return table
