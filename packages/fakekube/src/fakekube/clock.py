"""The fake cluster's clock: virtual (advanced by tests) or real time with a speed factor.

Every timestamp the server writes and every decision of the emulated controllers reads
:meth:`Clock.now`; nothing else in the fake server looks at the wall clock.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from fakekube.errors import ConfigError

__all__ = ["Clock", "format_micro_time", "format_time"]


def format_time(moment: datetime) -> str:
    """metav1.Time: RFC 3339, seconds precision, ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(moment: datetime) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds, ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Clock:
    """Virtual when ``virtual`` (moves only on :meth:`advance`); else real time x ``speed``."""

    def __init__(
        self, start: datetime | None = None, *, virtual: bool = True, speed: float = 1.0
    ) -> None:
        if speed <= 0:
            raise ConfigError(
                f"clock speed {speed} is not positive; use 1.0 for real time, 60 for a minute per second"  # noqa: E501
            )
        base = start or datetime.now(UTC).replace(microsecond=0)
        self._start = base.astimezone(UTC)
        self._offset = timedelta(0)
        self.virtual = virtual
        self.speed = speed
        self._t0 = time.monotonic()

    def now(self) -> datetime:
        if self.virtual:
            return self._start + self._offset
        elapsed = (time.monotonic() - self._t0) * self.speed
        return self._start + self._offset + timedelta(seconds=elapsed)

    def advance(self, delta: timedelta) -> datetime:
        """Move the clock forward by ``delta`` (also in real-time mode: a jump)."""
        if delta < timedelta(0):
            raise ConfigError(
                f"cannot move the clock back by {delta}; advance by a positive duration"
            )
        self._offset += delta
        return self.now()
