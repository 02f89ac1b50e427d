"""The one seam through which the controller reads the time and sleeps.

:class:`SystemClock` is the wall clock. :class:`ExternalClock` reads another clock (the fake
API server's virtual clock in tests) and sleeps until that clock reaches a moment; tests call
:meth:`ExternalClock.poke` after advancing it so that sleepers wake at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["Clock", "ExternalClock", "SystemClock"]


class Clock(Protocol):
    """Time and sleeping, in one place."""

    def now(self) -> datetime:
        """The current time, aware UTC."""
        ...

    async def sleep_until(self, moment: datetime) -> None:
        """Return once :meth:`now` has reached ``moment`` (at once if it has)."""
        ...

    async def backoff(self, seconds: float) -> None:
        """Wait before retrying a request (transport pacing, not planning time)."""
        ...


class SystemClock:
    """The wall clock and asyncio sleeps."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep_until(self, moment: datetime) -> None:
        delay = (moment - self.now()).total_seconds()
        if delay > 0:
            await asyncio.sleep(delay)

    async def backoff(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class ExternalClock:
    """Time read from ``now_fn`` (e.g. a virtual clock), sleeps woken by :meth:`poke`.

    ``poll_s`` is a real-time safety net: a sleeper also re-reads the clock that often, so a
    forgotten poke delays, never deadlocks. Retry backoffs are real sleeps scaled by
    ``backoff_scale`` (the virtual clock does not move while the controller retries).
    """

    def __init__(
        self,
        now_fn: Callable[[], datetime],
        *,
        poll_s: float = 0.05,
        backoff_scale: float = 0.01,
    ) -> None:
        self._now_fn = now_fn
        self._poll_s = poll_s
        self._backoff_scale = backoff_scale
        self._changed: asyncio.Event | None = None

    def now(self) -> datetime:
        return self._now_fn().astimezone(UTC)

    def poke(self) -> None:
        """Wake sleepers to re-read the clock (call after advancing it, from the loop)."""
        if self._changed is not None:
            self._changed.set()

    async def sleep_until(self, moment: datetime) -> None:
        if self._changed is None:
            self._changed = asyncio.Event()
        while self.now() < moment:
            self._changed.clear()
            # asyncio.wait, not wait_for: 3.11's wait_for can swallow a cancellation
            waiter = asyncio.ensure_future(self._changed.wait())
            try:
                await asyncio.wait((waiter,), timeout=self._poll_s)
            finally:
                waiter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waiter

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of this clock's time."""
        await self.sleep_until(self.now() + timedelta(seconds=seconds))

    async def backoff(self, seconds: float) -> None:
        await asyncio.sleep(seconds * self._backoff_scale)
