"""Electricity Maps API v3: latest, past range and forecast of carbon intensity.

Requests carry the key in the ``auth-token`` header. ``emissionFactorType`` picks direct
(:attr:`CiKind.DIRECT`) or life-cycle (:attr:`CiKind.LCA`, the service's default) values.
Shapes (``https://api.electricitymap.org``)::

    GET /v3/carbon-intensity/latest?zone=DE
      {"zone": "DE", "carbonIntensity": 302, "datetime": "2024-05-21T00:00:00.000Z",
       "updatedAt": "...", "emissionFactorType": "lifecycle", "isEstimated": false}
    GET /v3/carbon-intensity/past-range?zone=DE&start=...&end=...   (at most 10 days)
      {"zone": "DE", "data": [{"carbonIntensity": 302, "datetime": "...", ...}, ...]}
    GET /v3/carbon-intensity/forecast?zone=DE
      {"zone": "DE", "forecast": [{"carbonIntensity": 302, "datetime": "..."}], "updatedAt": "..."}

A bad key answers 401 (or 403); an unknown zone 400/404 with a message naming the zone.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx

from carbonshift.carbon.providers._http import (
    AuthError,
    HttpSource,
    RetryPolicy,
    UnknownZoneError,
)
from carbonshift.carbon.providers._parse import (
    as_list,
    chunks,
    field,
    iso,
    number_or_none,
    time_of,
)
from carbonshift.carbon.providers._resample import Point, series_from_points
from carbonshift.carbon.providers.base import LiveProvider, Reading
from carbonshift.carbon.providers.cache import DiskCache
from carbonshift.carbon.providers.clock import Clock
from carbonshift.carbon.providers.secrets import Secret
from carbonshift.carbon.series import CarbonSeries, CiKind

__all__ = ["ElectricityMapsProvider"]

TOKEN_ENV = "CARBONSHIFT_ELECTRICITYMAPS_TOKEN"
_FACTOR = {CiKind.DIRECT: "direct", CiKind.LCA: "lifecycle"}
_PAST_RANGE_MOST = timedelta(days=10)


class ElectricityMapsProvider(LiveProvider):
    """Average carbon intensity (direct or life-cycle), hourly, from Electricity Maps."""

    name = "electricitymaps"
    kinds = frozenset({CiKind.DIRECT, CiKind.LCA})
    default_url = "https://api.electricitymap.org"

    def __init__(
        self,
        token: Secret | None,
        *,
        base_url: str = default_url,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        cache: DiskCache | None = None,
        ttl_s: float = 900.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        http = HttpSource(
            self.name,
            base_url,
            retry=retry,
            clock=clock,
            secrets=(token,),
            auth_hint=f"check the key in ${TOKEN_ENV} (or the file in ${TOKEN_ENV}_FILE)",
            transport=transport,
        )
        super().__init__(http, cache=cache, ttl_s=ttl_s)
        self._token = token

    def _headers(self) -> dict[str, str]:
        if not self._token:
            raise AuthError(
                f"{self.name}: no API key; set ${TOKEN_ENV} or ${TOKEN_ENV}_FILE, or leave "
                "electricitymaps out of the chain"
            )
        return {"auth-token": self._token.reveal()}

    def _unknown_zone(self, zone: str) -> Any:
        def hook(response: httpx.Response) -> Exception | None:
            if response.status_code in (400, 404):
                return UnknownZoneError(
                    f"{self.name}: zone {zone!r} refused (HTTP {response.status_code}: "
                    f"{self.http.body_snippet(response, 120)}); use an Electricity Maps zone "
                    "id such as DE or US-CAL-CISO"
                )
            return None

        return hook

    def _get(self, path: str, zone: str, params: dict[str, str]) -> Any:
        return self.http.get_json(
            path,
            params={"zone": zone, **params},
            headers=self._headers(),
            on_client_error=self._unknown_zone(zone),
        )

    def latest(self, zone: str, kind: CiKind = CiKind.LCA) -> Reading:
        """The current hour's value."""
        self._check_kind(kind)
        body = self._get("/v3/carbon-intensity/latest", zone, {"emissionFactorType": _FACTOR[kind]})
        value = number_or_none(field(body, "carbonIntensity", self.name), self.name, "value")
        if value is None:
            raise UnknownZoneError(f"{self.name}: no current value for zone {zone!r}")
        return Reading(
            zone=zone,
            kind=kind,
            at=time_of(field(body, "datetime", self.name), self.name, "datetime"),
            value=value,
            source=self.name,
            estimated=bool(body.get("isEstimated", False)),
        )

    def fetch(self, zone: str, start: datetime, end: datetime, kind: CiKind) -> CarbonSeries:
        self._check_kind(kind)
        factor = {"emissionFactorType": _FACTOR[kind]}
        now_hour = self.clock.now().replace(minute=0, second=0, microsecond=0)
        points: list[Point] = []
        for lo, hi in chunks(start, min(end, now_hour), _PAST_RANGE_MOST):
            body = self._get(
                "/v3/carbon-intensity/past-range",
                zone,
                {"start": iso(lo), "end": iso(hi), **factor},
            )
            points += self._points(as_list(field(body, "data", self.name), self.name, "data"))
        if end > now_hour:
            body = self._get("/v3/carbon-intensity/forecast", zone, factor)
            rows = as_list(field(body, "forecast", self.name), self.name, "forecast")
            points += self._points(rows, estimated=True)
            if start < now_hour + timedelta(hours=1) and all(p[0] != now_hour for p in points):
                # some forecasts begin with the next hour: the current one is /latest
                current = self.latest(zone, kind)
                if current.at == now_hour:
                    points.append((current.at, 60, current.value, current.estimated))
        return series_from_points(points, zone=zone, kind=kind, source=self.name)

    def _points(self, rows: list[Any], *, estimated: bool | None = None) -> list[Point]:
        out: list[Point] = []
        for row in rows:
            value = number_or_none(field(row, "carbonIntensity", self.name), self.name, "value")
            if value is None:
                continue
            moment = time_of(field(row, "datetime", self.name), self.name, "datetime")
            is_estimate = bool(row.get("isEstimated", False)) if estimated is None else estimated
            out.append((moment, 60, value, is_estimate))
        return out
