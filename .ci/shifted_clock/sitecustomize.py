"""Loaded by every Python that ``.ci/shifted-clock`` starts (it is put on PYTHONPATH).

libfaketime 0.9.10 shifts the wall clock; with its monotonic clock faked too, timed thread
waits (``Event.wait``, ``Lock.acquire(timeout=)``) never return, so the script leaves the
monotonic clock real (``FAKETIME_DONT_FAKE_MONOTONIC=1``). That mode makes ``time.sleep``
fail with EINVAL (libfaketime rewrites its absolute ``clock_nanosleep`` deadline), so sleep
goes through ``select`` here instead. Nothing else is changed.
"""

from __future__ import annotations

import os
import select
import time

if os.environ.get("FAKETIME_DONT_FAKE_MONOTONIC") == "1" and os.environ.get("FAKETIME"):

    def _sleep(seconds: float) -> None:
        if seconds > 0:
            select.select([], [], [], seconds)

    time.sleep = _sleep
