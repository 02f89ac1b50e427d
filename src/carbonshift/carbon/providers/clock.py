"""The one seam for time: every provider reads the clock and sleeps through a :class:`Clock`.

Tests and the simulator pass a :class:`ManualClock`, whose ``sleep`` only advances its own
time and records the delay, so retry and back-off run in virtual time.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SystemClock"]


class Clock(Protocol):
    """Wall-clock time (aware UTC) and sleeping."""

    def now(self) -> datetime:
        """The current time, an aware UTC datetime."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` seconds."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class ManualClock:
    """A clock that moves only when told to; ``sleep`` advances it and records ``slept_s``."""

    def __init__(self, start: datetime) -> None:
        self._now = start
        self.slept_s: list[float] = []

    def now(self) -> datetime:
        return self._now

    def sleep(self, seconds: float) -> None:
        self.slept_s.append(seconds)
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` seconds forward."""
        self._now += timedelta(seconds=seconds)
