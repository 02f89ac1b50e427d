"""The shared vocabulary of carbon data: signal kinds, native series and resampled windows.

A :class:`CarbonSeries` holds a zone's intensity at its native resolution (a step function:
value ``i`` holds over ``[start + i*step, start + (i+1)*step)``). A :class:`SignalWindow` is
what a :class:`Signal` answers: values resampled to slots of ``slot_minutes`` starting at the
requested start, with where they came from (replayed? estimated? how stale?).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

import numpy as np
import numpy.typing as npt

from carbonshift.errors import InputError

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
    """A zone's intensity at native resolution, ``step_minutes`` per value, from ``start`` (UTC).

    Checked when built (vectorised: about a millisecond per million values): ``start`` is
    timezone-aware, ``step_minutes`` a whole number >= 1, the values a 1-D array of real
    numbers (ints are kept as float64), finite and >= 0 g/kWh, ``estimated`` a boolean array
    of the same length. NaN marks a gap only where ``allow_gaps`` says so (providers' native
    series, filled or refused later by :func:`resample`); anything else is an
    :class:`~carbonshift.errors.InputError` naming the value, its unit and the fix.
    """

    zone: str
    kind: CiKind
    start: datetime
    step_minutes: int
    values_g_per_kwh: FloatArray
    estimated: BoolArray | None = None
    source: str = ""
    allow_gaps: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        where = f"carbon series of zone {self.zone!r}"
        if not isinstance(self.zone, str) or not self.zone:
            raise InputError(f"carbon series zone {self.zone!r} is not a zone name; give a str")
        if not isinstance(self.kind, CiKind):
            try:
                object.__setattr__(self, "kind", CiKind(self.kind))
            except ValueError:
                raise InputError(
                    f"{where}: kind {self.kind!r} is unknown; choose one of "
                    f"{[k.value for k in CiKind]}"
                ) from None
        if not isinstance(self.start, datetime) or self.start.utcoffset() is None:
            raise InputError(
                f"{where}: start {self.start!r} is not a timezone-aware datetime; give the UTC "
                "time, like datetime(2024, 1, 1, tzinfo=UTC)"
            )
        step = self.step_minutes
        if isinstance(step, bool) or not isinstance(step, int | np.integer) or step < 1:
            raise InputError(
                f"{where}: step_minutes {step!r} is not a whole number of minutes >= 1; give "
                "the step between values, like 60"
            )
        object.__setattr__(self, "step_minutes", int(step))
        object.__setattr__(self, "values_g_per_kwh", self._checked_values(where))
        if self.estimated is not None:
            flags = np.asarray(self.estimated)
            if flags.dtype != np.bool_ or flags.shape != self.values_g_per_kwh.shape:
                raise InputError(
                    f"{where}: estimated has {flags.size} value(s) of type {flags.dtype}, the "
                    f"series {len(self.values_g_per_kwh)}; give one bool per value, or None"
                )
            object.__setattr__(self, "estimated", flags)

    def _checked_values(self, where: str) -> FloatArray:
        raw = self.values_g_per_kwh
        array = np.asarray(raw) if not isinstance(raw, np.ndarray) else raw
        if array.dtype.kind not in "fiu" or array.ndim != 1:
            raise InputError(
                f"{where}: values_g_per_kwh is a {array.ndim}-D array of {array.dtype}; give a "
                "1-D array of real numbers in g/kWh (np.asarray(values, dtype=np.float64))"
            )
        values: FloatArray = array if array.dtype == np.float64 else array.astype(np.float64)
        # two vectorised passes (NaN < 0 is False); only the error path looks for the index
        bad = (~np.isfinite(values)) if not self.allow_gaps else np.isinf(values)
        if bad.any() or (values < 0).any():
            index = int(np.flatnonzero(bad | (values < 0))[0])
            moment = self.start + timedelta(minutes=self.step_minutes * index)
            raise InputError(
                f"{where}: value {float(values[index])!r} g/kWh at index {index} "
                f"({moment:%Y-%m-%d %H:%M} UTC) is not a finite number >= 0; fix or drop it "
                "(a CSV reader's fill= option fills gaps explicitly)"
            )
        return values

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
