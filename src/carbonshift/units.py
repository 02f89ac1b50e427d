"""Parsing and formatting of times and durations, always in UTC.

Every timestamp inside carbonshift is an aware ``datetime`` in UTC. These helpers accept the
spellings users type (``2023-11-14T00:00Z``, ``2023-11-14 00:00:00``, ``12h``, ``90m``) and
refuse anything ambiguous with an :class:`~carbonshift.errors.InputError`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from carbonshift.errors import InputError

__all__ = ["format_utc", "parse_duration", "parse_utc", "to_utc"]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d)\s*$", re.IGNORECASE)
_UNIT_S = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def to_utc(moment: datetime, *, what: str = "time") -> datetime:
    """Return ``moment`` in UTC; a naive datetime is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def parse_utc(text: str, *, what: str = "time") -> datetime:
    """Parse an ISO 8601 time (``Z`` or an offset; naive means UTC) into an aware UTC datetime.

    >>> parse_utc("2023-11-14T00:00Z").isoformat()
    '2023-11-14T00:00:00+00:00'
    """
    cleaned = text.strip()
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(cleaned)
    except ValueError as exc:
        raise InputError(
            f"{what} {text!r} is not an ISO 8601 time; write it like 2023-11-14T00:00Z (UTC)"
        ) from exc
    return to_utc(moment, what=what)


def format_utc(moment: datetime) -> str:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return to_utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_duration(text: str, *, what: str = "duration") -> timedelta:
    """Parse ``30s``, ``90m``, ``12h``, ``1.5h`` or ``2d`` into a timedelta.

    >>> parse_duration("1.5h")
    datetime.timedelta(seconds=5400)
    """
    match = _DURATION.match(text)
    if match is None:
        raise InputError(
            f"{what} {text!r} is not a duration; write a number and a unit s, m, h or d, like 12h"
        )
    seconds = float(match.group(1)) * _UNIT_S[match.group(2).lower()]
    return timedelta(seconds=seconds)
