"""The fall-back chain: live sources in order, then stale cache, then the offline floor.

A chain serves ONE signal kind, and every source in it must serve that kind: a marginal
value never stands in for an average one. Order of tries for each request:

1. each live source that covers the zone, in the configured order (fresh cache, else a live
   call); a source that just failed for a temporary reason rests for ``cooldown_s`` (or
   the ``Retry-After`` it asked for), so an outage costs one round of retries, not one per
   request;
2. each source's cache however old, up to ``max_stale_s`` (the answer says how stale);
3. average kinds only: the embedded Electricity Maps data, replayed for dates past its end
   from t - y x 364 days (same weekday, hour and season; docs/formats.md (scenario));
4. otherwise a :class:`ProviderUnavailableError` naming every failure, secrets removed.

Every answer of an average kind is screened by the outlier rule of
:mod:`carbonshift.carbon.quality`: suspect points are listed in :attr:`Answer.suspect` and
logged once per zone, source and change; ``outliers`` (``CARBONSHIFT_OUTLIERS``) says whether
to ``keep`` the answer unscreened, ``flag`` (the default: listed, values unchanged) or
``interpolate`` them.

:meth:`FallbackChain.answer` returns the window with the trail of attempts;
:meth:`FallbackChain.window` satisfies the :class:`~carbonshift.carbon.series.Signal` protocol.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

import numpy as np

from carbonshift.carbon.freshness import Freshness
from carbonshift.carbon.providers._http import AuthError
from carbonshift.carbon.providers.base import check_window_args, unit_of
from carbonshift.carbon.providers.clock import Clock, SystemClock
from carbonshift.carbon.providers.zones import check_zone_name
from carbonshift.carbon.quality import OutlierAction, interpolate_suspect, suspect_points
from carbonshift.carbon.series import CiKind, Signal, SignalWindow
from carbonshift.carbon.signal import EmbeddedSignal
from carbonshift.errors import CarbonshiftError, InputError, PermanentError, TemporaryError
from carbonshift.units import format_utc, to_utc

__all__ = [
    "AVERAGE_KINDS",
    "Answer",
    "Attempt",
    "ChainSource",
    "EmbeddedReplay",
    "FallbackChain",
    "NoSourceError",
    "ProviderUnavailableError",
    "SourcesRefusedError",
]

_LOG = logging.getLogger("carbonshift.carbon.providers.chain")

AVERAGE_KINDS = frozenset({CiKind.DIRECT, CiKind.LCA})


class ChainSource(Protocol):
    """What a chain needs of a source (every :class:`LiveProvider`, and :class:`CsvDirectory`)."""

    name: str
    kinds: frozenset[CiKind]

    @property
    def clock(self) -> Clock:
        """The clock the source reads."""
        ...

    def covers(self, zone: str) -> bool:
        """Whether the source can know ``zone`` at all."""
        ...

    def supports(self, kind: CiKind) -> bool:
        """Whether the source serves ``kind``."""
        ...

    def window(
        self,
        zone: str,
        start: datetime,
        end: datetime,
        *,
        slot_minutes: int = 60,
        kind: CiKind = CiKind.DIRECT,
    ) -> SignalWindow:
        """A fresh answer (or a fresh cache hit)."""
        ...

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
        """An old answer from the cache, or None."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class ProviderUnavailableError(TemporaryError):
    """No source of the chain could answer for now; the message lists each one's failure."""


class NoSourceError(InputError):
    """Every source refused the request itself (unknown zone, range outside the data)."""


class SourcesRefusedError(PermanentError):
    """Nothing answered and some source refused our credentials: the server's setup is wrong."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try of the chain: ``outcome`` is ``live``, ``cache``, ``replayed`` (local files
    past their end), ``stale-cache``, ``embedded`` or ``error`` (then ``detail`` says why,
    secrets removed)."""

    source: str
    outcome: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Answer:
    """A window and how the chain got it."""

    window: SignalWindow
    attempts: tuple[Attempt, ...]
    now: datetime
    #: points the outlier rule (carbon/quality.py) found implausible: (slot start, value as
    #: the source gave it); with ``interpolate`` the window holds the interpolated values
    suspect: tuple[tuple[datetime, float], ...] = ()
    #: what the chain did with them (``keep``: not screened)
    outliers: OutlierAction = OutlierAction.FLAG

    @property
    def unit(self) -> str:
        """The unit of the window's values."""
        return unit_of(self.window.kind)

    @property
    def fell_back(self) -> bool:
        """Whether some source before the answering one failed."""
        return any(a.outcome == "error" for a in self.attempts)

    @property
    def stale_age_s(self) -> float | None:
        """Seconds since the data were fetched (None: fetched live for this answer)."""
        since = self.window.stale_since
        return None if since is None else max(0.0, (self.now - since).total_seconds())

    @property
    def freshness(self) -> Freshness:
        """Where this answer's values came from, for health, metrics and logs."""
        window = self.window
        last = self.attempts[-1].outcome if self.attempts else ""
        return Freshness(
            zone=window.zone,
            source=window.source,
            data_age_s=self.stale_age_s or 0.0,
            replayed_from=window.replayed_from,
            stale=last == "stale-cache",
            failed=tuple(f"{a.source}: {a.detail}" for a in self.attempts if a.outcome == "error"),
        )


class EmbeddedReplay:
    """The embedded hourly data as a Signal; times past its end replay t - y x 364 days."""

    name = "embedded"

    def window(
        self,
        zone: str,
        start: datetime,
        end: datetime,
        *,
        slot_minutes: int = 60,
        kind: CiKind = CiKind.DIRECT,
    ) -> SignalWindow:
        """Embedded values; a replayed answer is stale since the end of the data."""
        signal = EmbeddedSignal(allow_replay=True)
        window = signal.window(zone, start, end, slot_minutes=slot_minutes, kind=kind)
        if window.replayed_from is not None and window.stale_since is None:
            window = replace(window, stale_since=signal.series(zone, kind).end)
        return replace(window, source=self.name)


class FallbackChain:
    """Sources of one kind tried in order; see the module docstring."""

    def __init__(
        self,
        kind: CiKind,
        sources: Sequence[ChainSource],
        *,
        floor: Signal | None = None,
        clock: Clock | None = None,
        max_stale_s: float = 7 * 86400.0,
        cooldown_s: float = 60.0,
        outliers: OutlierAction = OutlierAction.FLAG,
    ) -> None:
        for source in sources:
            if not source.supports(kind):
                have = ", ".join(sorted(k.value for k in source.kinds))
                raise InputError(
                    f"source {source.name!r} serves {have}, not {kind.value!r}; a fall-back "
                    "chain only holds sources of one kind: remove it or make another chain"
                )
        if floor is not None and kind not in AVERAGE_KINDS:
            raise InputError(
                f"a {kind.value} chain cannot end in embedded data (which are averages); "
                "marginal and index chains end in the cache"
            )
        self.kind = kind
        self.sources = tuple(sources)
        self.floor = floor
        self.clock = clock or (sources[0].clock if sources else SystemClock())
        self.max_stale_s = max_stale_s
        self.cooldown_s = cooldown_s
        self._resting_until: dict[str, tuple[datetime, str]] = {}
        self.outliers = outliers
        #: (zone, source) -> suspect times last logged, so a warning is logged once per change
        self._logged_suspect: dict[tuple[str, str], tuple[datetime, ...]] = {}

    @property
    def names(self) -> list[str]:
        """The sources in the order tried, the floor last."""
        return [s.name for s in self.sources] + (["embedded"] if self.floor is not None else [])

    def window(
        self,
        zone: str,
        start: datetime,
        end: datetime,
        *,
        slot_minutes: int = 60,
        kind: CiKind = CiKind.DIRECT,
    ) -> SignalWindow:
        """The Signal protocol: :meth:`answer`'s window."""
        if kind is not self.kind:
            raise InputError(
                f"this chain serves {self.kind.value!r} values, not {kind.value!r}; ask the "
                f"{kind.value} chain"
            )
        return self.answer(zone, start, end, slot_minutes=slot_minutes).window

    def _screen(self, answer: Answer) -> Answer:
        """Apply the outlier rule to ``answer`` as ``outliers`` says (docs/providers.md)."""
        if self.outliers is OutlierAction.KEEP or self.kind not in AVERAGE_KINDS:
            return replace(answer, outliers=OutlierAction.KEEP)
        window = answer.window
        values = np.asarray(window.values_g_per_kwh, dtype=np.float64)
        suspect = suspect_points(values)
        starts = window.slot_starts()
        points = tuple((starts[i], float(values[i])) for i in np.flatnonzero(suspect))
        key = (window.zone, window.source)
        times = tuple(t for t, _ in points)
        if times != self._logged_suspect.get(key, ()):
            self._logged_suspect[key] = times
            if points:
                _LOG.warning(
                    "%s answered %d implausible point(s) for %s (%s); %s",
                    window.source,
                    len(points),
                    window.zone,
                    ", ".join(f"{format_utc(t)} {v:g} g/kWh" for t, v in points[:5]),
                    "interpolated" if self.outliers is OutlierAction.INTERPOLATE else "flagged",
                )
        if self.outliers is OutlierAction.INTERPOLATE and points:
            fixed = interpolate_suspect(values, suspect)
            window = replace(window, values_g_per_kwh=fixed)
        return replace(answer, window=window, suspect=points, outliers=self.outliers)

    def answer(
        self, zone: str, start: datetime, end: datetime, *, slot_minutes: int = 60
    ) -> Answer:
        """The first answer in chain order, with the trail of attempts."""
        check_zone_name(zone)
        start, end = to_utc(start), to_utc(end)
        check_window_args(start, end, slot_minutes)
        trail: list[Attempt] = []
        temporary = refused = False
        for source in self.sources:
            if not source.covers(zone):
                continue
            resting = self._resting_until.get(source.name)
            if resting is not None and self.clock.now() < resting[0]:
                temporary = True
                trail.append(
                    Attempt(
                        source.name,
                        "error",
                        f"resting until {format_utc(resting[0])} after: {resting[1]}",
                    )
                )
                continue
            try:
                window = source.window(zone, start, end, slot_minutes=slot_minutes, kind=self.kind)
            except CarbonshiftError as exc:
                detail = f"{type(exc).__name__}: {exc}"
                if isinstance(exc, TemporaryError):
                    temporary = True
                    rest_s = max(self.cooldown_s, exc.delay_s)
                    until = self.clock.now() + timedelta(seconds=rest_s)
                    self._resting_until[source.name] = (until, detail)
                elif isinstance(exc, AuthError):
                    refused = True
                _LOG.warning("%s failed for %s: %s", source.name, zone, detail)
                trail.append(Attempt(source.name, "error", detail))
                continue
            self._resting_until.pop(source.name, None)
            if window.replayed_from is not None:
                outcome = "replayed"
            else:
                outcome = "live" if window.stale_since is None else "cache"
            trail.append(Attempt(source.name, outcome))
            return self._screen(Answer(window, tuple(trail), self.clock.now()))
        for source in self.sources:
            cached = source.cached_window(
                zone,
                start,
                end,
                slot_minutes=slot_minutes,
                kind=self.kind,
                max_age_s=self.max_stale_s,
            )
            if cached is not None:
                trail.append(Attempt(source.name, "stale-cache"))
                return self._screen(Answer(cached, tuple(trail), self.clock.now()))
        if self.floor is not None:
            try:
                window = self.floor.window(
                    zone, start, end, slot_minutes=slot_minutes, kind=self.kind
                )
            except CarbonshiftError as exc:
                trail.append(Attempt("embedded", "error", f"{type(exc).__name__}: {exc}"))
            else:
                if not window.source:
                    window = replace(window, source="embedded")
                trail.append(Attempt("embedded", "embedded"))
                return self._screen(Answer(window, tuple(trail), self.clock.now()))
        if trail:
            reasons = "; ".join(f"{a.source}: {a.detail}" for a in trail)
        elif self.sources:
            reasons = f"none of {', '.join(s.name for s in self.sources)} covers it"
        else:
            reasons = "no sources configured"
        floor_note = (
            ""
            if self.kind in AVERAGE_KINDS
            else "; marginal and index signals have no offline data to fall back on"
        )
        message = (
            f"no {self.kind.value} source answered for zone {zone!r} from {format_utc(start)} "
            f"to {format_utc(end)} and no cache younger than {self.max_stale_s:g} s ({reasons})"
            f"{floor_note}"
        )
        if temporary:
            raise ProviderUnavailableError(
                f"{message}; retry later or configure another source", delay_s=60.0
            )
        if refused:
            raise SourcesRefusedError(f"{message}; fix the credentials named above")
        raise NoSourceError(f"{message}; ask a zone and range that a source covers")
