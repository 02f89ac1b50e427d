"""UTC times and durations as the fake reads them from objects and flags."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from fakekube.errors import ConfigError

__all__ = ["parse_duration", "parse_utc"]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d)\s*$", re.IGNORECASE)
_UNIT_S = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
# timedelta holds at most 999,999,999 days; anything near it is a mistake, not a runtime.
_MAX_DURATION_S = 100 * 365 * 86400.0


def parse_utc(text: str, *, what: str = "time") -> datetime:
    """An ISO 8601 time (``Z`` or an offset; naive means UTC) as an aware UTC datetime."""
    cleaned = text.strip()
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(cleaned)
    except ValueError as exc:
        raise ConfigError(
            f"{what} {text!r} is not an ISO 8601 time; write it like 2023-11-14T00:00Z (UTC)"
        ) from exc
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def parse_duration(text: str, *, what: str = "duration") -> timedelta:
    """``30s``, ``90m``, ``12h``, ``1.5h`` or ``2d`` as a timedelta of at most 100 years."""
    match = _DURATION.match(text)
    if match is None:
        raise ConfigError(
            f"{what} {text!r} is not a duration; write a number and a unit s, m, h or d, like 12h"
        )
    seconds = float(match.group(1)) * _UNIT_S[match.group(2).lower()]
    if not seconds <= _MAX_DURATION_S:
        raise ConfigError(f"{what} {text!r} is longer than 100 years; give a shorter duration")
    return timedelta(seconds=seconds)


# Go's time.Parse against metav1.RFC3339Micro ("2006-01-02T15:04:05.000000Z07:00"), the
# layout MicroTime.UnmarshalJSON uses: each layout element with what the value must hold
# there. The text of a failure is Go's ParseError, which the API server passes on.
MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"
_MICRO_ELEMENTS: tuple[tuple[str, str], ...] = (
    ("2006", r"[0-9]{4}"),
    ("-", "-"),
    ("01", r"[0-9]{2}"),
    ("-", "-"),
    ("02", r"[0-9]{2}"),
    ("T", "T"),
    ("15", r"[0-9]{2}"),
    (":", ":"),
    ("04", r"[0-9]{2}"),
    (":", ":"),
    ("05", r"[0-9]{2}"),
    (".000000", r"\.[0-9]{6}"),
    ("Z07:00", r"Z|[+-][0-9]{2}:[0-9]{2}"),
)


def micro_time_error(value: object) -> str | None:
    """Why Go's ``time.Parse(RFC3339Micro, value)`` refuses ``value`` (its error text), or
    None when a MicroTime (``2023-06-01T00:00:00.000000Z``) reads it; null reads as zero."""
    if value is None:
        return None
    if not isinstance(value, str):
        kind = {bool: "bool", dict: "object", list: "array"}.get(type(value), "number")
        return f"json: cannot unmarshal {kind} into Go value of type string"
    rest = value
    for element, pattern in _MICRO_ELEMENTS:
        match = re.match(pattern, rest)
        if match is None:
            return (
                f'parsing time "{value}" as "{MICRO_LAYOUT}": cannot parse "{rest}" as "{element}"'
            )
        rest = rest[match.end() :]
    if rest:
        return f'parsing time "{value}": extra text: "{rest}"'
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        what = "month" if not 1 <= int(value[5:7]) <= 12 else "day"
        if int(value[11:13]) > 23 or int(value[14:16]) > 59 or int(value[17:19]) > 59:
            what = (
                "hour"
                if int(value[11:13]) > 23
                else "minute"
                if int(value[14:16]) > 59
                else "second"
            )
        return f'parsing time "{value}": {what} out of range'
    return None
