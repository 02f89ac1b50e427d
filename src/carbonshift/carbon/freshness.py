"""How fresh the carbon data behind an answer are, and one honest log line per zone and change.

A :class:`Freshness` says where the values behind one answer came from: the source that
answered, whether they were replayed from earlier dates (:mod:`carbonshift.carbon.replay`),
how old the data are, and which sources failed first. An answer is **degraded** when it was
replayed, came from a stale cache, or came from a fall-back (a source before it failed, or the
last good forecast was reused). The advice API's ``/healthz``, the controller's and the
hub's ``--check`` and metrics, and the reasons given to held workloads all read it.

:class:`FreshnessBoard` keeps the latest freshness per zone and logs a line when a zone's
state changes (degraded, with the reasons, at WARNING; back to fresh at INFO), not once per
answer: a controller replanning every minute on replayed data says so once.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from carbonshift.units import format_utc

__all__ = ["Freshness", "FreshnessBoard", "freshness_gauges"]


@dataclass(frozen=True, slots=True)
class Freshness:
    """Where the values of one answer for ``zone`` came from (see the module docstring).

    ``data_age_s``: seconds from when the data were fetched (a cache) or end (replayed data)
    to the time of the answer; 0 for data fetched live, or data that cover the time asked.
    ``stale``: answered from a cache past its freshness.
    ``failed``: ``"source: why"`` for each source that failed before the answer, or why a
    previous forecast was reused.
    """

    zone: str
    source: str
    data_age_s: float = 0.0
    replayed_from: tuple[datetime, datetime] | None = None
    stale: bool = False
    failed: tuple[str, ...] = ()

    @property
    def replayed(self) -> bool:
        """Whether some values were replayed from earlier dates."""
        return self.replayed_from is not None

    @property
    def degraded(self) -> bool:
        """Replayed, stale or a fall-back."""
        return self.replayed or self.stale or bool(self.failed)

    def reasons(self) -> tuple[str, ...]:
        """One line per reason this answer is degraded (empty when it is not)."""
        out: list[str] = []
        if self.replayed_from is not None:
            first, last = self.replayed_from
            out.append(
                f"zone {self.zone}: {self.source} data replayed from {format_utc(first)} .. "
                f"{format_utc(last)} (the data end {self.data_age_s:.0f} s before now)"
            )
        elif self.stale:
            out.append(
                f"zone {self.zone}: stale data from {self.source}, {self.data_age_s:.0f} s old"
            )
        out.extend(f"zone {self.zone}: fell back past {why}" for why in self.failed)
        return tuple(out)

    def state(self) -> tuple[str, bool, bool, tuple[str, ...]]:
        """What a change is judged on: source, replayed, stale and which sources failed (not
        the age, nor how they failed: a source resting after a failure is the same state)."""
        failed = tuple(sorted({why.split(":", 1)[0] for why in self.failed}))
        return (self.source, self.replayed, self.stale, failed)


class FreshnessBoard:
    """The latest :class:`Freshness` per zone; logs once per zone and change. Thread-safe."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self._log = logger or logging.getLogger("carbonshift.carbon")
        self._latest: dict[str, Freshness] = {}
        self._lock = threading.Lock()

    def record(self, freshness: Freshness) -> Freshness | None:
        """Keep ``freshness`` for its zone; answers the one it replaces (None: first)."""
        with self._lock:
            before = self._latest.get(freshness.zone)
            self._latest[freshness.zone] = freshness
        if before is not None and before.state() == freshness.state():
            return before
        if freshness.degraded:
            self._log.warning(
                "carbon data for zone %s are degraded (source %s): %s",
                freshness.zone,
                freshness.source,
                "; ".join(freshness.reasons()),
            )
        elif before is not None:
            self._log.info(
                "carbon data for zone %s are fresh again (source %s)",
                freshness.zone,
                freshness.source,
            )
        return before

    def latest(self) -> dict[str, Freshness]:
        """The latest freshness of every zone seen, by zone."""
        with self._lock:
            return dict(self._latest)

    def reasons(self) -> list[str]:
        """Every degraded zone's reasons, zones sorted."""
        return [r for _, f in sorted(self.latest().items()) for r in f.reasons()]


def freshness_gauges(registry: Any) -> tuple[Any, Any]:
    """The two Prometheus gauges every server exports for carbon freshness, on ``registry``:
    ``carbonshift_carbon_data_age_seconds{zone,source}`` and ``carbonshift_carbon_replayed{zone}``.

    One definition for the API, the controller and the hub; prometheus-client is imported
    here, on use, so the carbon layer itself needs no server extra.
    """
    from prometheus_client import Gauge

    data_age = Gauge(
        "carbonshift_carbon_data_age_seconds",
        "Age of the carbon data behind the last answer or plan for a zone (0: live), seconds",
        ["zone", "source"],
        registry=registry,
    )
    replayed = Gauge(
        "carbonshift_carbon_replayed",
        "1 when the last answer or plan for a zone used replayed carbon data",
        ["zone"],
        registry=registry,
    )
    return data_age, replayed
