"""What every live provider shares: kind check, cache look-up, fetch, resampling, staleness.

A provider implements :meth:`LiveProvider.fetch` (native points of one zone over a range) and
inherits :meth:`LiveProvider.window`, which satisfies the :class:`~carbonshift.carbon.series.Signal`
protocol. ``stale_since`` on an answer is when its data were fetched from the service: ``None``
for a live fetch made for this answer, the fetch time for an answer from the cache.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime, timedelta

from carbonshift.carbon.providers._http import HttpSource
from carbonshift.carbon.providers._resample import resample
from carbonshift.carbon.providers.cache import DiskCache
from carbonshift.carbon.providers.clock import Clock
from carbonshift.carbon.series import CarbonSeries, CiKind, SignalWindow
from carbonshift.errors import InputError
from carbonshift.units import format_utc, to_utc

__all__ = ["LiveProvider", "Reading", "check_window_args", "unit_of"]


_UNITS = {
    CiKind.DIRECT: "gCO2eq/kWh",
    CiKind.LCA: "gCO2eq/kWh",
    CiKind.MARGINAL: "gCO2/kWh",
    CiKind.INDEX: "percentile (0-100)",
}


def unit_of(kind: CiKind) -> str:
    """The unit of values of ``kind`` (every answer states it)."""
    return _UNITS[kind]


@dataclass(frozen=True, slots=True)
class Reading:
    """One current value of a zone's signal."""

    zone: str
    kind: CiKind
    at: datetime
    value: float
    source: str
    estimated: bool = False

    @property
    def unit(self) -> str:
        """The unit of ``value``."""
        return unit_of(self.kind)


def check_window_args(start: datetime, end: datetime, slot_minutes: int) -> None:
    """Refuse empty ranges and slot lengths that are not whole positive minutes."""
    if slot_minutes < 1:
        raise InputError(f"slot_minutes is {slot_minutes}; it must be a whole number >= 1")
    if end <= start:
        raise InputError(
            f"the window ends at {format_utc(end)}, not after its start {format_utc(start)}; "
            "give an end later than the start"
        )


def _floor_hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def _ceil_hour(moment: datetime) -> datetime:
    floored = _floor_hour(moment)
    return floored if floored == moment else floored + timedelta(hours=1)


class LiveProvider(ABC):
    """A carbon-data web service answering windows through a cache with a time-to-live."""

    #: the source name used in answers, caches and chain configuration
    name: str = "live"
    #: the signal kinds this service can answer
    kinds: frozenset[CiKind] = frozenset()

    def __init__(
        self,
        http: HttpSource,
        *,
        cache: DiskCache | None = None,
        ttl_s: float = 900.0,
    ) -> None:
        self.http = http
        self.cache = cache
        self.ttl_s = ttl_s

    @property
    def clock(self) -> Clock:
        """The clock the provider reads and sleeps through."""
        return self.http.clock

    def close(self) -> None:
        """Release connections."""
        self.http.close()

    @abstractmethod
    def fetch(self, zone: str, start: datetime, end: datetime, kind: CiKind) -> CarbonSeries:
        """Native data of ``zone`` covering ``[start, end)`` as far as the service has it."""

    def covers(self, zone: str) -> bool:
        """Whether the service can know ``zone`` at all (a chain skips it otherwise)."""
        return True

    def supports(self, kind: CiKind) -> bool:
        """Whether the service serves ``kind``."""
        return kind in self.kinds

    def _check_kind(self, kind: CiKind) -> None:
        if kind not in self.kinds:
            have = ", ".join(sorted(k.value for k in self.kinds))
            raise InputError(
                f"{self.name} serves kind {have}, not {kind.value!r}; ask one of those or "
                "another source"
            )

    def window(
        self,
        zone: str,
        start: datetime,
        end: datetime,
        *,
        slot_minutes: int = 60,
        kind: CiKind = CiKind.DIRECT,
    ) -> SignalWindow:
        """Intensity over ``[start, end)``: fresh cache, else a live fetch (then cached)."""
        start, end = to_utc(start), to_utc(end)
        check_window_args(start, end, slot_minutes)
        self._check_kind(kind)
        if self.cache is not None:
            hit = self.cache.get(self.name, zone, kind, start, end)
            if hit is not None and self._age_s(hit.fetched_at) < self.ttl_s:
                return self._to_window(hit.series, start, end, slot_minutes, hit.fetched_at)
        series = self.fetch(zone, _floor_hour(start), _ceil_hour(end), kind)
        if self.cache is not None:
            self.cache.put(series, self.clock.now())
        return self._to_window(series, start, end, slot_minutes, None)

    def cached_window(
        self,
        zone: str,
        start: datetime,
        end: datetime,
        *,
        slot_minutes: int,
        kind: CiKind,
        max_age_s: float,
    ) -> SignalWindow | None:
        """The cached answer however stale (up to ``max_age_s``), or None: the last resort."""
        if self.cache is None or kind not in self.kinds:
            return None
        hit = self.cache.get(self.name, zone, kind, to_utc(start), to_utc(end))
        if hit is None or self._age_s(hit.fetched_at) > max_age_s:
            return None
        return self._to_window(hit.series, to_utc(start), to_utc(end), slot_minutes, hit.fetched_at)

    def _age_s(self, fetched_at: datetime) -> float:
        return (self.clock.now() - fetched_at).total_seconds()

    def _to_window(
        self,
        series: CarbonSeries,
        start: datetime,
        end: datetime,
        slot_minutes: int,
        stale_since: datetime | None,
    ) -> SignalWindow:
        values, estimated_share = resample(series, start, end, slot_minutes)
        return SignalWindow(
            zone=series.zone,
            kind=series.kind,
            start=start,
            end=end,
            slot_minutes=slot_minutes,
            values_g_per_kwh=values,
            source=self.name,
            estimated_share=estimated_share,
            stale_since=stale_since,
        )
