"""The shared vocabulary of carbon data: signal kinds, native series and resampled windows.

A :class:`CarbonSeries` holds a zone's intensity at its native resolution (a step function:
value ``i`` holds over ``[start + i*step, start + (i+1)*step)``). A :class:`SignalWindow` is
what a :class:`Signal` answers: values resampled to slots of ``slot_minutes`` starting at the
requested start, with where they came from (replayed? estimated? how stale?).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

import numpy as np
import numpy.typing as npt

__all__ = ["CarbonSeries", "CiKind", "Signal", "SignalWindow"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


class CiKind(StrEnum):
    """What a carbon value measures (and so which values may replace it in a fall-back)."""

    DIRECT = "direct"  #: average, direct (operational) emissions, g/kWh
    LCA = "lca"  #: average, life-cycle emissions, g/kWh
    MARGINAL = "marginal"  #: marginal emissions, g/kWh
    INDEX = "index"  #: a relative index (0-100), no unit


@dataclass(frozen=True, slots=True, eq=False)
class CarbonSeries:
    """A zone's intensity at native resolution, ``step_minutes`` per value, from ``start`` (UTC)."""

    zone: str
    kind: CiKind
    start: datetime
    step_minutes: int
    values_g_per_kwh: FloatArray
    estimated: BoolArray | None = None
    source: str = ""

    @property
    def end(self) -> datetime:
        """The end (exclusive) of the last step."""
        return self.start + timedelta(minutes=self.step_minutes * len(self.values_g_per_kwh))

    def __len__(self) -> int:
        return len(self.values_g_per_kwh)


@dataclass(frozen=True, slots=True, eq=False)
class SignalWindow:
    """Intensity over ``[start, end)`` in slots of ``slot_minutes`` (the last may be partial).

    ``replayed_from`` is set when some values were replayed from earlier dates (docs/formats.md
    section 3: t - y x 364 days, or whole weeks for short data); ``stale_since`` when a
    provider answered from an old cache.
    """

    zone: str
    kind: CiKind
    start: datetime
    end: datetime
    slot_minutes: int
    values_g_per_kwh: FloatArray
    source: str = ""
    replayed_from: tuple[datetime, datetime] | None = None
    estimated_share: float = 0.0
    stale_since: datetime | None = None

    def slot_starts(self) -> list[datetime]:
        """The start of each slot."""
        step = timedelta(minutes=self.slot_minutes)
        return [self.start + i * step for i in range(len(self.values_g_per_kwh))]


class Signal(Protocol):
    """A source of carbon intensity for grid zones."""

    def window(
        self,
        zone: str,
        start: datetime,
        end: datetime,
        *,
        slot_minutes: int = 60,
        kind: CiKind = CiKind.DIRECT,
    ) -> SignalWindow:
        """Intensity of ``zone`` over ``[start, end)`` resampled to ``slot_minutes`` slots."""
        ...
