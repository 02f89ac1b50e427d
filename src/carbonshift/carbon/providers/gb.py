"""The GB Carbon Intensity API (National Energy System Operator): no key, half-hourly.

National and regional carbon intensity of Great Britain, actual where measured and a
forecast for 48 hours ahead. The factors count direct emissions of generation
(:attr:`CiKind.DIRECT`). Shapes (``https://api.carbonintensity.org.uk``; times
``YYYY-MM-DDTHH:MMZ``)::

    GET /intensity
    GET /intensity/{from}/{to}            (at most 14 days)
    GET /intensity/{from}/fw48h
      {"data": [{"from": "2018-01-20T12:00Z", "to": "2018-01-20T12:30Z",
                 "intensity": {"forecast": 266, "actual": 263, "index": "moderate"}}]}
    GET /regional/regionid/{id}
    GET /regional/intensity/{from}/{to}/regionid/{id}
    GET /regional/intensity/{from}/fw48h/regionid/{id}
      {"data": {"regionid": 13, "shortname": "London",
                "data": [{"from": ..., "to": ...,
                          "intensity": {"forecast": 180, "index": "moderate"},
                          "generationmix": [...]}]}}     (some answers wrap it in a list)

Errors: 400 with ``{"error": {"code": "400 Bad Request", "message": "..."}}``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx

from carbonshift.carbon.providers._http import HttpSource, RetryPolicy, UnknownZoneError
from carbonshift.carbon.providers._parse import (
    as_list,
    chunks,
    field,
    number_or_none,
    time_of,
    upstream_error,
)
from carbonshift.carbon.providers._resample import Point, series_from_points
from carbonshift.carbon.providers.base import LiveProvider, Reading
from carbonshift.carbon.providers.cache import DiskCache
from carbonshift.carbon.providers.clock import Clock
from carbonshift.carbon.providers.zones import ZoneTable
from carbonshift.carbon.series import CarbonSeries, CiKind

__all__ = ["GbCarbonIntensityProvider"]

_RANGE_MOST = timedelta(days=14)
_HALF_HOUR = timedelta(minutes=30)


def _gb_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%MZ")


class GbCarbonIntensityProvider(LiveProvider):
    """Great Britain's half-hourly direct carbon intensity, national or per region."""

    name = "gb"
    kinds = frozenset({CiKind.DIRECT})
    default_url = "https://api.carbonintensity.org.uk"

    def __init__(
        self,
        *,
        zones: ZoneTable | None = None,
        base_url: str = default_url,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        cache: DiskCache | None = None,
        ttl_s: float = 900.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        http = HttpSource(self.name, base_url, retry=retry, clock=clock, transport=transport)
        super().__init__(http, cache=cache, ttl_s=ttl_s)
        self.zones = zones or ZoneTable()

    def covers(self, zone: str) -> bool:
        return self.zones.is_gb(zone)

    def _region(self, zone: str) -> int | None:
        if not self.zones.is_gb(zone):
            raise UnknownZoneError(
                f"{self.name}: zone {zone!r} is not in Great Britain; the GB Carbon Intensity "
                "API serves GB and GB-R1..GB-R17 (add others to the zone table)"
            )
        return self.zones.gb_region(zone)

    def _get(self, path: str, zone: str) -> Any:
        def hook(response: httpx.Response) -> Exception | None:
            if response.status_code in (400, 404) and "region" in response.text.lower():
                return UnknownZoneError(
                    f"{self.name}: zone {zone!r} refused (HTTP {response.status_code}: "
                    f"{self.http.body_snippet(response, 120)}); fix its region id in the zone table"
                )
            return None

        return self.http.get_json(path, on_client_error=hook)

    def latest(self, zone: str, kind: CiKind = CiKind.DIRECT) -> Reading:
        """The current half hour."""
        self._check_kind(kind)
        region = self._region(zone)
        path = "/intensity" if region is None else f"/regional/regionid/{region}"
        points = self._points(self._get(path, zone), regional=region is not None)
        if not points:
            raise upstream_error(self.name, "has no current period")
        moment, _, value, estimated = points[-1]
        return Reading(zone, kind, moment, value, self.name, estimated)

    def fetch(self, zone: str, start: datetime, end: datetime, kind: CiKind) -> CarbonSeries:
        self._check_kind(kind)
        region = self._region(zone)
        suffix = "" if region is None else f"/regionid/{region}"
        base = "/intensity" if region is None else "/regional/intensity"
        now = self.clock.now().replace(second=0, microsecond=0)
        now = now - timedelta(minutes=now.minute % 30)
        points: list[Point] = []
        # one half hour earlier: the service keys periods by their end in some answers
        past = chunks(start - _HALF_HOUR, min(end, now), _RANGE_MOST) if start < now else []
        for lo, hi in past:
            body = self._get(f"{base}/{_gb_time(lo)}/{_gb_time(hi)}{suffix}", zone)
            points += self._points(body, regional=region is not None)
        if end > now:
            body = self._get(f"{base}/{_gb_time(now)}/fw48h{suffix}", zone)
            points += self._points(body, regional=region is not None)
        return series_from_points(points, zone=zone, kind=kind, source=self.name)

    def _points(self, body: Any, *, regional: bool) -> list[Point]:
        data = field(body, "data", self.name)
        if regional:
            if isinstance(data, list):
                if not data:
                    return []
                data = data[0]
            data = field(data, "data", self.name)
        out: dict[datetime, Point] = {}
        for row in as_list(data, self.name, "data"):
            moment = time_of(field(row, "from", self.name), self.name, "from")
            until = time_of(field(row, "to", self.name), self.name, "to")
            intensity = field(row, "intensity", self.name)
            actual = number_or_none(
                intensity.get("actual") if isinstance(intensity, dict) else None,
                self.name,
                "actual",
            )
            forecast = number_or_none(
                field(intensity, "forecast", self.name), self.name, "forecast"
            )
            value = actual if actual is not None else forecast
            if value is None:
                continue
            minutes = max(1, round((until - moment).total_seconds() / 60))
            out[moment] = (moment, minutes, value, actual is None)
        return list(out.values())
