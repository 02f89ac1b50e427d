"""WattTime API v3: marginal emissions (``co2_moer``) and its 0-100 signal index.

Log in with HTTP basic auth for a bearer token (valid 30 minutes), then ask by ``region``
(see :class:`~carbonshift.carbon.providers.zones.ZoneTable`). Shapes
(``https://api.watttime.org``)::

    GET /login                       (basic auth)      {"token": "..."}
    GET /v3/signal-index?region=CAISO_NORTH&signal_type=co2_moer
      {"data": [{"point_time": "2024-01-01T00:00:00+00:00", "value": 77.0}],
       "meta": {"region": "CAISO_NORTH", "signal_type": "co2_moer", "units": "percentile",
                "data_point_period_seconds": 300, ...}}
    GET /v3/forecast?region=...&signal_type=co2_moer&horizon_hours=24   (0..72 h)
    GET /v3/historical?region=...&signal_type=co2_moer&start=...&end=...  (at most 32 days)
      {"data": [{"point_time": "...", "value": 850.5}, ...],
       "meta": {"units": "lbs_co2_per_mwh", "data_point_period_seconds": 300, ...}}

Values in lbs/MWh are converted to g/kWh (x 0.45359237). A bad login or an expired token
answers 401 (a token is renewed once per request); a region outside the plan answers 403; an
unknown region 400 or 404.
"""

from __future__ import annotations

import math
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
    upstream_error,
)
from carbonshift.carbon.providers._resample import Point, series_from_points
from carbonshift.carbon.providers.base import LiveProvider, Reading
from carbonshift.carbon.providers.cache import DiskCache
from carbonshift.carbon.providers.clock import Clock
from carbonshift.carbon.providers.secrets import Secret
from carbonshift.carbon.providers.zones import ZoneTable
from carbonshift.carbon.series import CarbonSeries, CiKind

__all__ = ["WattTimeProvider"]

USER_ENV = "CARBONSHIFT_WATTTIME_USERNAME"
PASSWORD_ENV = "CARBONSHIFT_WATTTIME_PASSWORD"
_TOKEN_LIFETIME = timedelta(minutes=25)  # WattTime tokens last 30 minutes
_HISTORICAL_MOST = timedelta(days=31)
_MAX_HORIZON_H = 72
#: g/kWh per unit of each ``meta.units`` WattTime uses for emissions
_TO_G_PER_KWH = {
    "lbs_co2_per_mwh": 0.45359237,
    "kg_co2_per_mwh": 1.0,
    "g_co2_per_kwh": 1.0,
    "percentile": 1.0,
}


class WattTimeProvider(LiveProvider):
    """Marginal CO2 (5-minute MOER) and its percentile index, from WattTime."""

    name = "watttime"
    kinds = frozenset({CiKind.MARGINAL, CiKind.INDEX})
    default_url = "https://api.watttime.org"

    def __init__(
        self,
        username: str | None,
        password: Secret | None,
        *,
        zones: ZoneTable | None = None,
        base_url: str = default_url,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        cache: DiskCache | None = None,
        ttl_s: float = 300.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._token: Secret | None = None
        http = HttpSource(
            self.name,
            base_url,
            retry=retry,
            clock=clock,
            secrets=(password,),
            auth_hint=(
                f"check ${USER_ENV} and ${PASSWORD_ENV} (or ${PASSWORD_ENV}_FILE); 403 also "
                "means the region is outside your WattTime plan"
            ),
            transport=transport,
        )
        super().__init__(http, cache=cache, ttl_s=ttl_s)
        self._username = username
        self._password = password
        self._token_at: datetime | None = None
        self.zones = zones or ZoneTable()

    def _login(self) -> Secret:
        if not self._username or not self._password:
            raise AuthError(
                f"{self.name}: no credentials; set ${USER_ENV} and ${PASSWORD_ENV} (or "
                f"${PASSWORD_ENV}_FILE), or leave watttime out of the chain"
            )
        body = self.http.get_json("/login", auth=(self._username, self._password.reveal()))
        token = field(body, "token", self.name)
        if not isinstance(token, str) or not token:
            raise upstream_error(self.name, "of /login has no token")
        self._token = Secret(token)
        self.http.secrets = (self._password, self._token)
        self._token_at = self.clock.now()
        return self._token

    def _bearer(self) -> Secret:
        fresh = self._token_at is not None and self.clock.now() - self._token_at < _TOKEN_LIFETIME
        if self._token is not None and fresh:
            return self._token
        return self._login()

    def _get(self, path: str, zone: str, params: dict[str, str]) -> Any:
        region = self.zones.watttime_region(zone)

        def hook(response: httpx.Response) -> Exception | None:
            if response.status_code in (400, 404):
                return UnknownZoneError(
                    f"{self.name}: region {region!r} (zone {zone!r}) refused (HTTP "
                    f"{response.status_code}: {self.http.body_snippet(response, 120)}); map "
                    "the zone to a WattTime region in the zone table"
                )
            return None

        query = {"region": region, "signal_type": "co2_moer", **params}
        for renewed in (False, True):
            headers = {"Authorization": f"Bearer {self._bearer().reveal()}"}
            try:
                return self.http.get_json(path, params=query, headers=headers, on_client_error=hook)
            except AuthError as exc:
                if renewed or exc.status_code != 401:
                    raise
                self._token = None  # expired token: log in again, once
        raise AssertionError("unreachable")

    def latest(self, zone: str, kind: CiKind = CiKind.INDEX) -> Reading:
        """The current index (``INDEX``) or the first forecast point (``MARGINAL``)."""
        self._check_kind(kind)
        now = self.clock.now()
        series = self.fetch(zone, now, now + timedelta(minutes=5), kind)
        return Reading(
            zone=zone,
            kind=kind,
            at=series.start,
            value=float(series.values_g_per_kwh[0]),
            source=self.name,
            estimated=kind is CiKind.MARGINAL,
        )

    def fetch(self, zone: str, start: datetime, end: datetime, kind: CiKind) -> CarbonSeries:
        self._check_kind(kind)
        if kind is CiKind.INDEX:
            body = self._get("/v3/signal-index", zone, {})
            return series_from_points(
                self._points(body, estimated=False), zone=zone, kind=kind, source=self.name
            )
        now = self.clock.now()
        points: list[Point] = []
        for lo, hi in chunks(start, min(end, now), _HISTORICAL_MOST):
            body = self._get("/v3/historical", zone, {"start": iso(lo), "end": iso(hi)})
            points += self._points(body, estimated=False)
        if end > now:
            hours = min(_MAX_HORIZON_H, math.ceil((end - now).total_seconds() / 3600))
            body = self._get("/v3/forecast", zone, {"horizon_hours": str(hours)})
            points += self._points(body, estimated=True)
        return series_from_points(points, zone=zone, kind=kind, source=self.name)

    def _points(self, body: Any, *, estimated: bool) -> list[Point]:
        meta = field(body, "meta", self.name)
        units = str(meta.get("units", "lbs_co2_per_mwh")) if isinstance(meta, dict) else ""
        if units not in _TO_G_PER_KWH:
            raise upstream_error(self.name, f"has meta.units {units!r}, not a known unit")
        scale = _TO_G_PER_KWH[units]
        period = meta.get("data_point_period_seconds", 300) if isinstance(meta, dict) else 300
        period_s = number_or_none(period, self.name, "data_point_period_seconds") or 300.0
        minutes = max(1, round(period_s / 60))
        out: list[Point] = []
        for row in as_list(field(body, "data", self.name), self.name, "data"):
            value = number_or_none(field(row, "value", self.name), self.name, "value")
            if value is None:
                continue
            moment = time_of(field(row, "point_time", self.name), self.name, "point_time")
            out.append((moment, minutes, value * scale, estimated))
        return out
