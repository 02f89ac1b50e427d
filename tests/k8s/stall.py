"""Helpers of the tests that planning leaves the event loop free: a carbon source whose
forecast blocks until the test lets it go (a provider that hangs until its timeouts), and a
coroutine that ticks on the loop meanwhile."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import datetime

from carbonshift.k8s.planner import CarbonSource, Forecast

#: how long a gated forecast waits for the test before it goes on by itself, s: on code that
#: plans on the event loop the test cannot let it go, so the test fails after this long
#: instead of hanging
BLOCK_S = 5.0


class Gate:
    """Makes the first ``forecast`` of ``sources`` block (in whatever thread calls it) until
    :attr:`release` is set or :data:`BLOCK_S` pass; later calls answer at once."""

    def __init__(self, *sources: CarbonSource) -> None:
        self.entered = threading.Event()
        """Set when the first forecast has begun (and blocks)."""
        self.release = threading.Event()
        self.returned = threading.Event()
        """Set when the first forecast has answered."""
        self.released_in_time: bool | None = None
        """Whether the test let the first forecast go (False: it gave up after BLOCK_S)."""
        self.threads: list[int] = []
        """The thread of each forecast call."""
        self._first = True
        self._lock = threading.Lock()
        for source in sources:
            self._wrap(source)

    def _wrap(self, source: CarbonSource) -> None:
        inner = source.forecast

        def forecast(slot0: datetime, horizon_slots: int) -> Forecast:
            with self._lock:
                first, self._first = self._first, False
                self.threads.append(threading.get_ident())
            if not first:
                return inner(slot0, horizon_slots)
            self.entered.set()
            self.released_in_time = self.release.wait(BLOCK_S)
            try:
                return inner(slot0, horizon_slots)
            finally:
                self.returned.set()

        source.forecast = forecast  # type: ignore[method-assign]

    async def wait_entered(self, timeout_s: float = 30.0) -> None:
        """Wait (off the loop) until the first forecast has begun."""
        assert await asyncio.to_thread(self.entered.wait, timeout_s), "no forecast was asked"

    def assert_still_blocked(self, what: str) -> None:
        assert not self.returned.is_set(), (
            f"the forecast answered (after {BLOCK_S} s, let go: {self.released_in_time}) "
            f"before {what}: the planning call held the event loop"
        )


class Ticker:
    """A coroutine that sleeps 10 ms at a time and counts its turns."""

    def __init__(self) -> None:
        self.ticks = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.01)
            self.ticks += 1

    def start(self) -> Ticker:
        self._task = asyncio.create_task(self._run())
        return self

    async def ticked(self, at_least: int = 5, within_s: float = 2.0) -> int:
        """Wait until the ticker turned ``at_least`` more times; answers the turns seen."""
        before, began = self.ticks, time.monotonic()
        while self.ticks - before < at_least and time.monotonic() - began < within_s:
            await asyncio.sleep(0.01)
        return self.ticks - before

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
