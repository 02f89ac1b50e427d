"""The client-side rate limit of the controller's API requests: a token bucket.

As client-go's ``flowcontrol.NewTokenBucketRateLimiter(qps, burst)``: the bucket holds at most
``burst`` tokens and refills at ``qps`` tokens per second; every request takes one, and waits
when none is left. Taking is a reservation (as ``golang.org/x/time/rate``'s ``Reserve``): the
count may go below zero, and a request that finds it at ``-n`` waits ``(n + 1) / qps`` s, so
requests leave in the order they asked, whatever the event loop does. Watches are not
limited (a watch is one long request).

The same bucket budgets the controller's Events (``events.qps`` / ``.burst``), which are not
worth a wait: :meth:`TokenBucket.take` takes a token only when one is there (client-go's
``TryAccept``), and the caller drops the Event otherwise.

The limiter paces the transport in real time (``time.monotonic`` and ``asyncio.sleep`` by
default), like client-go, not in planning time: a virtual planning clock that stands still
while the controller writes must not stop its writes. Tests pass a fake ``now_s`` and
``sleep`` and count tokens, not seconds.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable

from carbonshift.errors import InputError

__all__ = ["TokenBucket", "bucket_or_none"]


def bucket_or_none(qps: float, burst: int) -> TokenBucket | None:
    """A :class:`TokenBucket` of ``qps`` / ``burst``, or None where ``qps`` is 0 (no limit,
    as the ``client_connection`` and ``events`` config sections say)."""
    return TokenBucket(qps, burst) if qps > 0 else None


class TokenBucket:
    """``qps`` requests per second on average, bursts of up to ``burst`` (module doc)."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        now_s: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if not (0 < qps < math.inf):
            raise InputError(
                f"rate limit qps {qps!r} requests/s must be a finite number > 0; "
                "use e.g. 50 (kube-scheduler's default), or no limiter at all"
            )
        if burst < 1:
            raise InputError(
                f"rate limit burst {burst!r} requests must be a whole number >= 1; "
                "use e.g. 100 (kube-scheduler's default)"
            )
        self.qps = float(qps)
        self.burst = int(burst)
        self._now_s = now_s
        self._sleep = sleep
        self._tokens = float(burst)
        self._last_s = now_s()
        #: requests that took a token, and the seconds they waited in all
        self.taken = 0
        self.waited_s = 0.0
        #: called with each request's wait in seconds (0 included), e.g. a metric's observe
        self.observe: Callable[[float], None] | None = None

    def tokens(self) -> float:
        """Tokens in the bucket now (negative: that many requests are already waiting)."""
        now = self._now_s()
        elapsed = max(0.0, now - self._last_s)
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
        self._last_s = now
        return self._tokens

    def take(self) -> bool:
        """Take one token if one is there now, without waiting or reserving (client-go's
        ``TryAccept``); answers whether it was taken."""
        if self.tokens() < 1.0:
            return False
        self._tokens -= 1.0
        self.taken += 1
        return True

    def reserve(self) -> float:
        """Take one token; answer the seconds to wait before sending (0: at once)."""
        self._tokens = self.tokens() - 1.0
        self.taken += 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def wait(self) -> float:
        """Take one token and wait until it may be used; answer the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            await self._sleep(delay)
        self.waited_s += delay
        if self.observe is not None:
            self.observe(delay)
        return delay
