"""Parsing and formatting of times and durations, always in UTC.

Every timestamp inside carbonshift is an aware ``datetime`` in UTC. These helpers accept the
spellings users type (``2023-11-14T00:00Z``, ``2023-11-14 00:00:00``, ``12h``, ``90m``) and
refuse anything ambiguous with an :class:`~carbonshift.errors.InputError`.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta

from carbonshift.errors import InputError

__all__ = [
    "MAX_DURATION_S",
    "DurationTooLongError",
    "format_utc",
    "parse_duration",
    "parse_utc",
    "to_utc",
]

# re.ASCII: \d would also match Arabic-Indic, fullwidth and other Unicode digits, which
# float() reads ("١٢h" was 12 h); a duration is written in ASCII digits.
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d)\s*$", re.IGNORECASE | re.ASCII)
#: The longest duration any parser accepts: ``timedelta`` overflows at 999,999,999 days, and no
#: caller plans further than centuries; callers cap lower where they need (annotations, API).
MAX_DURATION_S = 1e6 * 86400.0
_UNIT_S = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def to_utc(moment: datetime, *, what: str = "time") -> datetime:
    """Return ``moment`` in UTC; a naive datetime is taken to be UTC already.

    A time whose offset would move it past year 1 or 9999 raises :class:`InputError`.
    """
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise InputError(
            f"{what} {moment.isoformat()} leaves the years 1-9999 when shifted to UTC; "
            "give a time between 0002 and 9998 (UTC)"
        ) from None


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


@functools.lru_cache(maxsize=4096)
def format_utc(moment: datetime) -> str:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SSZ``.

    Remembered for the last 4,096 moments: a controller pass writes a planned and a latest
    start on each of 10,000 held workloads, nearly all slot boundaries and a few dozen
    deadlines (bench/controller.md, "Per-request and per-workload CPU"). Equal keys give
    equal texts: aware datetimes are equal only when they are the same instant, and a
    naive one never equals an aware one."""
    return to_utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


class DurationTooLongError(InputError):
    """A duration longer than :data:`MAX_DURATION_S`; callers with a lower cap say theirs."""


def _shown(text: str) -> str:
    """``text`` quoted for a message, cut to 40 characters so 400 nines stay one short line."""
    return repr(text) if len(text) <= 40 else repr(text[:37] + "...")


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
    unit = match.group(2).lower()
    seconds = float(match.group(1)) * _UNIT_S[unit]
    if not seconds <= MAX_DURATION_S:  # also catches inf from 400 nines
        raise DurationTooLongError(
            f"{what} {_shown(text)} is longer than {MAX_DURATION_S / 86400:.0f} d "
            f"(the most a duration can hold); give a shorter number of {unit}, like 12h"
        )
    return timedelta(seconds=seconds)
