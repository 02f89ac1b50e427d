"""A Carbon Aware SDK WebAPI server (Green Software Foundation) used as a data source.

The SDK forwards WattTime (marginal) or Electricity Maps (average) data; it does not say
which, so the operator declares the ``kind`` it serves. Shapes::

    GET /emissions/bylocations?location=eastus&time=...&toTime=...
      [{"location": "eastus", "time": "2022-06-01T00:00:00+00:00", "rating": 512.3,
        "duration": "00:05:00"}]
    GET /emissions/forecasts/current?location=eastus&dataStartAt=...&dataEndAt=...&windowSize=5
      [{"generatedAt": "...", "requestedAt": "...", "location": "eastus",
        "dataStartAt": "...", "dataEndAt": "...", "windowSize": 5,
        "optimalDataPoints": [{"location": ..., "timestamp": ..., "duration": 5, "value": ...}],
        "forecastData": [{"location": ..., "timestamp": ..., "duration": 5, "value": ...}]}]

``duration`` is a .NET TimeSpan (``"[d.]hh:mm:ss"``) in emissions data and minutes in
forecasts; ``value``/``rating`` are g/kWh. Errors: 400 with a ProblemDetails body
(``{"title": ..., "status": 400, "errors": {...}}``); no data: 204 or an empty list.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import httpx

from carbonshift.carbon.providers._http import HttpSource, RetryPolicy, UnknownZoneError
from carbonshift.carbon.providers._parse import (
    as_list,
    field,
    iso,
    number_or_none,
    time_of,
    upstream_error,
)
from carbonshift.carbon.providers._resample import Point, series_from_points
from carbonshift.carbon.providers.base import LiveProvider
from carbonshift.carbon.providers.cache import DiskCache
from carbonshift.carbon.providers.clock import Clock
from carbonshift.carbon.providers.zones import ZoneTable
from carbonshift.carbon.series import CarbonSeries, CiKind
from carbonshift.errors import DataRangeError

__all__ = ["CarbonAwareSdkProvider", "parse_timespan_minutes"]

_TIMESPAN = re.compile(r"^(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2})(?:\.\d+)?$")


def parse_timespan_minutes(value: Any) -> int:
    """Minutes of a .NET TimeSpan string (``"1.02:00:00"``) or of a number of minutes."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return max(1, round(value))
    if isinstance(value, str):
        match = _TIMESPAN.match(value.strip())
        if match:
            days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
            return max(1, round(days * 1440 + hours * 60 + minutes + seconds / 60))
    raise ValueError(f"duration {value!r} is not a TimeSpan or a number of minutes")


class CarbonAwareSdkProvider(LiveProvider):
    """Emissions and forecasts from a Carbon Aware SDK WebAPI at ``base_url``."""

    name = "carbon-aware-sdk"

    def __init__(
        self,
        base_url: str,
        *,
        kind: CiKind = CiKind.MARGINAL,
        zones: ZoneTable | None = None,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        cache: DiskCache | None = None,
        ttl_s: float = 300.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        http = HttpSource(self.name, base_url, retry=retry, clock=clock, transport=transport)
        super().__init__(http, cache=cache, ttl_s=ttl_s)
        self.kinds = frozenset({kind})
        self.zones = zones or ZoneTable()

    def _get(self, path: str, zone: str, params: dict[str, str]) -> Any:
        location = self.zones.sdk_location(zone)

        def hook(response: httpx.Response) -> Exception | None:
            text = response.text.lower()
            if response.status_code in (400, 404) and "location" in text:
                return UnknownZoneError(
                    f"{self.name}: location {location!r} (zone {zone!r}) refused (HTTP "
                    f"{response.status_code}: {self.http.body_snippet(response, 120)}); map the "
                    "zone to an SDK location in the zone table"
                )
            return None

        return self.http.get_json(
            path, params={"location": location, **params}, on_client_error=hook
        )

    def fetch(self, zone: str, start: datetime, end: datetime, kind: CiKind) -> CarbonSeries:
        self._check_kind(kind)
        now = self.clock.now()
        points: list[Point] = []
        if start < now:
            body = self._get(
                "/emissions/bylocations", zone, {"time": iso(start), "toTime": iso(min(end, now))}
            )
            for row in as_list(body or [], self.name, "emissions"):
                points.append(self._point(row, "time", "rating", estimated=False))
        if end > now:
            body = self._get(
                "/emissions/forecasts/current",
                zone,
                {"dataStartAt": iso(max(start, now)), "dataEndAt": iso(end)},
            )
            forecasts = as_list(body or [], self.name, "forecasts")
            if forecasts:
                rows = as_list(field(forecasts[0], "forecastData", self.name), self.name, "data")
                points += [self._point(r, "timestamp", "value", estimated=True) for r in rows]
        if not points:
            raise DataRangeError(
                f"{self.name}: no data for zone {zone!r} from {iso(start)} to {iso(end)}; ask "
                "another range or source"
            )
        return series_from_points(points, zone=zone, kind=kind, source=self.name)

    def _point(self, row: Any, time_key: str, value_key: str, *, estimated: bool) -> Point:
        moment = time_of(field(row, time_key, self.name), self.name, time_key)
        value = number_or_none(field(row, value_key, self.name), self.name, value_key)
        if value is None:
            raise upstream_error(self.name, f"has a null {value_key!r}")
        try:
            minutes = parse_timespan_minutes(field(row, "duration", self.name))
        except ValueError as exc:
            raise upstream_error(self.name, f"has a bad duration ({exc})") from exc
        return (moment, minutes, value, estimated)
