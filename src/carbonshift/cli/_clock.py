"""The one clock the CLI's verbs read "now" from, and hand to the providers they build.

``advise`` and ``forecast show`` (their default start), ``controller --check`` and
``hub --check`` (the slot they check), ``status`` (the time left to a planned start) read
:func:`now`; the provider chains they build read :data:`CLOCK` too, so that one answer
does not mix two clocks. Tests pin it (``tests.builders.pin_cli_clock``): a verb's output
then does not depend on the hour, day or date the test runs at. The controller, the hub and
the simulator take their clock by argument instead (``carbonshift.k8s.clock``).
"""

from __future__ import annotations

from datetime import datetime

from carbonshift.carbon.providers.clock import Clock, SystemClock

__all__ = ["CLOCK", "now"]

#: the CLI's clock: the wall clock, or a ``ManualClock`` a test puts here
CLOCK: Clock = SystemClock()


def now() -> datetime:
    """The current time (aware UTC) by :data:`CLOCK`."""
    return CLOCK.now()
