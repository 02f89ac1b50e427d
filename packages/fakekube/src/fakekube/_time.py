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
