"""The slot rules of docs/formats.md (scenario, "Time"): real time to slot indexes, in one place.

Every online caller (simulator, controller, hub) and the workload converter use these. Times
are hours on one axis (any origin); slot 0 begins at ``origin_h``; a slot lasts
``slot_minutes``.

- ``runtime_slots = ceil(runtime_h / slot_h)``, at least 1 (execution still lasts the exact
  runtime);
- ``release_slot`` = the first slot boundary at or after the submission, never negative;
- ``deadline_slot = floor((deadline_h - origin_h) / slot_h)`` (negative when it has passed);
  an online job without a deadline (``inf``) gets :data:`NO_DEADLINE_SLOT`, never late;
- ``end_slot`` (exclusive) = ``ceil((end_h - origin_h) / slot_h)``: work holds capacity in
  every slot it touches;
- ``waited_slots = floor((origin_h - submit_h) / slot_h)``, at least 0;
- the look-ahead is at least the configured horizon, long enough for the longest runtime,
  and never past a cap.

Quotients within :data:`SLOT_EPS` slot of a whole number count as that number, so that 0.5 h
on 30-minute slots is exactly 1 slot despite floating point.
"""

from __future__ import annotations

import math

from carbonshift.errors import InputError

__all__ = [
    "NO_DEADLINE_SLOT",
    "SLOT_EPS",
    "deadline_slot",
    "end_slot",
    "horizon_slots",
    "release_slot",
    "runtime_slots",
    "slot_hours",
    "start_slot_of",
    "waited_slots",
]

#: Tolerance, in slots, under which a quotient counts as a whole number.
SLOT_EPS = 1e-9
#: The deadline slot of online work that has no deadline: far past any horizon, never late.
NO_DEADLINE_SLOT = 10**9


def slot_hours(slot_minutes: int) -> float:
    """One slot in hours; ``slot_minutes`` must be a whole number >= 1."""
    if not (isinstance(slot_minutes, int) and slot_minutes >= 1):
        raise InputError(
            f"slot_minutes is {slot_minutes!r}; it must be a whole number of minutes >= 1"
        )
    return slot_minutes / 60.0


def runtime_slots(runtime_h: float, slot_minutes: int) -> int:
    """``ceil(runtime_h / slot)``, at least 1."""
    return max(1, math.ceil(runtime_h / slot_hours(slot_minutes) - SLOT_EPS))


def release_slot(submit_h: float, slot_minutes: int, origin_h: float = 0.0) -> int:
    """The first slot boundary at or after ``submit_h``, relative to ``origin_h``, never < 0."""
    return max(0, math.ceil((submit_h - origin_h) / slot_hours(slot_minutes) - SLOT_EPS))


def deadline_slot(deadline_h: float, slot_minutes: int, origin_h: float = 0.0) -> int:
    """``floor((deadline_h - origin_h) / slot)``; :data:`NO_DEADLINE_SLOT` for ``inf``."""
    if not math.isfinite(deadline_h):
        return NO_DEADLINE_SLOT
    return math.floor((deadline_h - origin_h) / slot_hours(slot_minutes) + SLOT_EPS)


def end_slot(end_h: float, slot_minutes: int, origin_h: float = 0.0) -> int:
    """The slot after the last one that work ending at ``end_h`` touches (may be <= 0)."""
    return math.ceil((end_h - origin_h) / slot_hours(slot_minutes) - SLOT_EPS)


def start_slot_of(start_h: float, slot_minutes: int, origin_h: float = 0.0) -> int:
    """The slot holding ``start_h``, never < 0 (work already started holds from slot 0)."""
    return max(0, math.floor((start_h - origin_h) / slot_hours(slot_minutes) + SLOT_EPS))


def waited_slots(submit_h: float, slot_minutes: int, origin_h: float = 0.0) -> int:
    """Whole slots from ``submit_h`` to slot 0, never < 0."""
    return max(0, math.floor((origin_h - submit_h) / slot_hours(slot_minutes) + SLOT_EPS))


def horizon_slots(min_slots: int, longest_slots: int, cap_slots: int | None = None) -> int:
    """The look-ahead of one planning call: at least ``min_slots``, long enough for the
    longest pending runtime, but never past ``cap_slots`` (when given; it is raised to
    ``min_slots`` if lower)."""
    horizon = max(min_slots, longest_slots)
    if cap_slots is not None:
        horizon = min(horizon, max(min_slots, cap_slots))
    return horizon
