"""Reading upstream JSON defensively: any shape error becomes an UpstreamFormatError."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from carbonshift.carbon.providers._http import UpstreamFormatError
from carbonshift.errors import InputError
from carbonshift.units import format_utc, parse_utc

__all__ = ["as_list", "chunks", "field", "number_or_none", "time_of", "upstream_error"]


def upstream_error(source: str, what: str) -> UpstreamFormatError:
    """The error for a body that lacks the documented shape."""
    return UpstreamFormatError(
        f"{source}: the answer {what}, unlike the documented shape; the service may have "
        "changed or be degraded, retry later or report it"
    )


def field(obj: Any, key: str, source: str) -> Any:
    """``obj[key]`` of a JSON object, or an UpstreamFormatError."""
    if not isinstance(obj, dict) or key not in obj:
        raise upstream_error(source, f"has no field {key!r}")
    return obj[key]


def as_list(obj: Any, source: str, what: str) -> list[Any]:
    """A JSON array, or an UpstreamFormatError."""
    if not isinstance(obj, list):
        raise upstream_error(source, f"field {what!r} is not a list")
    return obj


def number_or_none(obj: Any, source: str, what: str) -> float | None:
    """A JSON number (None stays None), or an UpstreamFormatError."""
    if obj is None:
        return None
    if isinstance(obj, bool) or not isinstance(obj, int | float):
        raise upstream_error(source, f"field {what!r} is {obj!r}, not a number")
    return float(obj)


def time_of(obj: Any, source: str, what: str) -> datetime:
    """An ISO 8601 time, or an UpstreamFormatError."""
    if not isinstance(obj, str):
        raise upstream_error(source, f"field {what!r} is {obj!r}, not a time")
    try:
        return parse_utc(obj, what=what)
    except InputError as exc:
        raise upstream_error(source, f"field {what!r} is {obj!r}, not an ISO 8601 time") from exc


def chunks(start: datetime, end: datetime, most: timedelta) -> list[tuple[datetime, datetime]]:
    """``[start, end)`` cut into pieces of at most ``most``."""
    out: list[tuple[datetime, datetime]] = []
    cursor = start
    while cursor < end:
        stop = min(end, cursor + most)
        out.append((cursor, stop))
        cursor = stop
    return out


def iso(moment: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ``."""
    return format_utc(moment)
