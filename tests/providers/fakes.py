"""Loopback fakes of the four carbon services, reproducing their documented shapes and errors.

One FastAPI app mounts each fake under a prefix (``/em``, ``/wt``, ``/gb``, ``/sdk``). Each
fake has a settable ``now`` (the service's clock), a log of requests, and a queue of scripted
faults answered before the normal route: ``(status, headers, body)``.
Values are deterministic functions of time so tests can name ``want_*`` values exactly.
"""

from __future__ import annotations

import asyncio
import base64
import math
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse

EM_TOKEN = "em-secret-token-123"
WT_USER = "wt-user"
WT_PASSWORD = "wt-secret-password-456"
T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def em_value(moment: datetime, kind: str = "direct") -> float:
    """Electricity Maps fake: hourly, 100 + 10 * hour-of-day (+50 for life-cycle)."""
    return 100.0 + 10.0 * moment.hour + (50.0 if kind == "lifecycle" else 0.0)


def wt_value_lbs(moment: datetime) -> float:
    """WattTime fake: 5-minute MOER in lbs/MWh, 1000 + minute-of-day."""
    return 1000.0 + moment.hour * 60 + moment.minute


def gb_value(moment: datetime, region: int | None) -> float:
    """GB fake: half-hourly, 200 + 2 * half-hour index of the day (+ region id)."""
    return 200.0 + 2.0 * (moment.hour * 2 + moment.minute // 30) + (region or 0)


def sdk_value(moment: datetime) -> float:
    """SDK fake: hourly rating 300 + hour-of-day."""
    return 300.0 + moment.hour


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


@dataclass
class Fake:
    """State shared by a fake's routes."""

    now: datetime = T0
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    faults: deque[tuple[int, dict[str, str], Any]] = field(default_factory=deque)
    always_fail: tuple[int, dict[str, str], Any] | None = None
    delay_s: float = 0.0
    forecast_skips_h: int = 0

    def reset(self) -> None:
        self.now = T0
        self.requests.clear()
        self.faults.clear()
        self.always_fail = None
        self.delay_s = 0.0
        self.forecast_skips_h = 0

    async def intercept(self, request: Request) -> Response | None:
        path = request.url.path.removeprefix(request.scope.get("root_path", ""))
        self.requests.append((path, dict(request.query_params)))
        # the fault is taken before the delay: a delayed request whose client gave up must
        # not wake after the next test's reset and take that test's fault (seen in CI)
        fault = self.faults.popleft() if self.faults else self.always_fail
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if fault is None:
            return None
        status, headers, body = fault
        if isinstance(body, str):
            return PlainTextResponse(body, status_code=status, headers=headers)
        return JSONResponse(body, status_code=status, headers=headers)


def _hours(start: datetime, end: datetime) -> list[datetime]:
    first = start.replace(minute=0, second=0, microsecond=0)
    if first < start:
        first += timedelta(hours=1)
    n = max(0, math.ceil((end - first) / timedelta(hours=1)))
    return [first + timedelta(hours=i) for i in range(n)]


def electricitymaps_app(fake: Fake) -> FastAPI:
    app = FastAPI()
    known = {"DE", "FR", "GB"}

    async def guard(request: Request, zone: str) -> Response | None:
        if (hit := await fake.intercept(request)) is not None:
            return hit
        token = request.headers.get("auth-token")
        if token != EM_TOKEN:
            # a careless service echoes the key back: our errors must not
            return JSONResponse({"message": f"Invalid auth-token {token}"}, status_code=401)
        if zone not in known:
            return JSONResponse({"message": f"Zone '{zone}' does not exist."}, status_code=404)
        return None

    @app.get("/v3/carbon-intensity/latest")
    async def latest(
        request: Request, zone: str, factor: str = Query("lifecycle", alias="emissionFactorType")
    ) -> Any:
        if (hit := await guard(request, zone)) is not None:
            return hit
        hour = fake.now.replace(minute=0, second=0, microsecond=0)
        return {
            "zone": zone,
            "carbonIntensity": em_value(hour, factor),
            "datetime": _iso(hour),
            "updatedAt": _iso(fake.now),
            "createdAt": _iso(fake.now),
            "emissionFactorType": factor,
            "isEstimated": True,
            "estimationMethod": "TIME_SLICER_AVERAGE",
        }

    @app.get("/v3/carbon-intensity/past-range")
    async def past_range(
        request: Request,
        zone: str,
        start: str,
        end: str,
        factor: str = Query("lifecycle", alias="emissionFactorType"),
    ) -> Any:
        if (hit := await guard(request, zone)) is not None:
            return hit
        lo, hi = _parse(start), _parse(end)
        if hi - lo > timedelta(days=10):
            return JSONResponse({"message": "Range larger than 10 days"}, status_code=400)
        return {
            "zone": zone,
            "data": [
                {
                    "zone": zone,
                    "carbonIntensity": em_value(h, factor),
                    "datetime": _iso(h),
                    "emissionFactorType": factor,
                    "isEstimated": False,
                    "estimationMethod": None,
                }
                for h in _hours(lo, hi)
            ],
        }

    @app.get("/v3/carbon-intensity/forecast")
    async def forecast(
        request: Request, zone: str, factor: str = Query("lifecycle", alias="emissionFactorType")
    ) -> Any:
        if (hit := await guard(request, zone)) is not None:
            return hit
        hour = fake.now.replace(minute=0, second=0, microsecond=0)
        return {
            "zone": zone,
            "forecast": [
                {"carbonIntensity": em_value(h, factor), "datetime": _iso(h)}
                for h in _hours(
                    hour + timedelta(hours=fake.forecast_skips_h), hour + timedelta(hours=24)
                )
            ],
            "updatedAt": _iso(fake.now),
        }

    return app


def watttime_app(fake: Fake) -> FastAPI:
    app = FastAPI()
    tokens: set[str] = set()
    app.state.tokens = tokens
    regions = {"CAISO_NORTH", "DE"}

    @app.get("/login")
    async def login(request: Request) -> Any:
        if (hit := await fake.intercept(request)) is not None:
            return hit
        header = request.headers.get("authorization", "")
        want = "Basic " + base64.b64encode(f"{WT_USER}:{WT_PASSWORD}".encode()).decode()
        if header != want:
            return JSONResponse({"error": "Unauthorized"}, status_code=401)
        token = f"wt-token-{len(tokens) + 1}-abcdef"
        tokens.add(token)
        return {"token": token}

    async def guard(request: Request, region: str) -> Response | None:
        if (hit := await fake.intercept(request)) is not None:
            return hit
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        if bearer not in tokens:
            return JSONResponse({"error": "Invalid or expired token"}, status_code=401)
        if region == "PJM_NJ":
            return JSONResponse({"error": "Unauthorized to access region PJM_NJ"}, status_code=403)
        if region not in regions:
            return JSONResponse({"error": f"Invalid region {region}"}, status_code=400)
        return None

    def meta(region: str, units: str) -> dict[str, Any]:
        return {
            "data_point_period_seconds": 300,
            "region": region,
            "signal_type": "co2_moer",
            "model": {"date": "2023-03-01"},
            "units": units,
            "warnings": [],
            "generated_at": fake.now.isoformat(),
        }

    def five_min(lo: datetime, hi: datetime) -> list[datetime]:
        first = lo.replace(minute=lo.minute - lo.minute % 5, second=0, microsecond=0)
        n = max(0, math.ceil((hi - first) / timedelta(minutes=5)))
        return [first + timedelta(minutes=5 * i) for i in range(n)]

    @app.get("/v3/historical")
    async def historical(
        request: Request, region: str, start: str, end: str, signal_type: str = "co2_moer"
    ) -> Any:
        if (hit := await guard(request, region)) is not None:
            return hit
        points = five_min(_parse(start), _parse(end))
        return {
            "data": [{"point_time": p.isoformat(), "value": wt_value_lbs(p)} for p in points],
            "meta": meta(region, "lbs_co2_per_mwh"),
        }

    @app.get("/v3/forecast")
    async def forecast(
        request: Request, region: str, signal_type: str = "co2_moer", horizon_hours: int = 24
    ) -> Any:
        if (hit := await guard(request, region)) is not None:
            return hit
        points = five_min(fake.now, fake.now + timedelta(hours=horizon_hours))
        body = {
            "data": [{"point_time": p.isoformat(), "value": wt_value_lbs(p)} for p in points],
            "meta": meta(region, "lbs_co2_per_mwh"),
        }
        body["meta"]["generated_at_period_seconds"] = 300
        return body

    @app.get("/v3/signal-index")
    async def signal_index(request: Request, region: str, signal_type: str = "co2_moer") -> Any:
        if (hit := await guard(request, region)) is not None:
            return hit
        point = five_min(fake.now, fake.now + timedelta(minutes=1))[0]
        return {
            "data": [{"point_time": point.isoformat(), "value": 42.0}],
            "meta": meta(region, "percentile"),
        }

    return app


def gb_app(fake: Fake) -> FastAPI:
    app = FastAPI()

    def bad(message: str) -> JSONResponse:
        return JSONResponse(
            {"error": {"code": "400 Bad Request", "message": message}}, status_code=400
        )

    def periods(lo: datetime, hi: datetime, region: int | None) -> list[dict[str, Any]]:
        first = lo.replace(minute=lo.minute - lo.minute % 30, second=0, microsecond=0)
        out = []
        cursor = first
        while cursor < hi:
            actual = gb_value(cursor, region) if cursor < fake.now else None
            intensity: dict[str, Any] = {
                "forecast": gb_value(cursor, region) + 1,
                "index": "moderate",
            }
            if region is None:
                intensity["actual"] = actual
            out.append(
                {
                    "from": cursor.strftime("%Y-%m-%dT%H:%MZ"),
                    "to": (cursor + timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%MZ"),
                    "intensity": intensity,
                }
            )
            cursor += timedelta(minutes=30)
        return out

    def parse_or_none(text: str) -> datetime | None:
        try:
            return _parse(text)
        except ValueError:
            return None

    async def answer(request: Request, start: str, end: str, region: int | None) -> Any:
        if (hit := await fake.intercept(request)) is not None:
            return hit
        lo = parse_or_none(start)
        if lo is None:
            return bad("Please enter a valid ISO 8601 datetime")
        if end == "fw48h":
            hi: datetime | None = lo + timedelta(hours=48)
        else:
            hi = parse_or_none(end)
        if hi is None:
            return bad("Please enter a valid ISO 8601 datetime")
        if region is not None and not 1 <= region <= 17:
            return bad("Please enter a valid region id")
        rows = periods(lo, hi, region)
        if region is None:
            return {"data": rows}
        return {
            "data": {
                "regionid": region,
                "dnoregion": "UKPN London",
                "shortname": "London",
                "data": [{**r, "generationmix": [{"fuel": "gas", "perc": 40.0}]} for r in rows],
            }
        }

    @app.get("/intensity")
    async def current(request: Request) -> Any:
        now = fake.now
        return await answer(
            request, now.isoformat(), (now + timedelta(minutes=1)).isoformat(), None
        )

    @app.get("/intensity/{start}/{end}")
    async def national(request: Request, start: str, end: str) -> Any:
        return await answer(request, start, end, None)

    @app.get("/regional/intensity/{start}/{end}/regionid/{region}")
    async def regional(request: Request, start: str, end: str, region: int) -> Any:
        return await answer(request, start, end, region)

    return app


def sdk_app(fake: Fake) -> FastAPI:
    app = FastAPI()
    known = {"westeurope", "DE"}

    def problem(location: str) -> JSONResponse:
        return JSONResponse(
            {
                "type": "https://tools.ietf.org/html/rfc7231#section-6.5.1",
                "title": "ArgumentException",
                "status": 400,
                "detail": f"Unknown location: '{location}' not found",
            },
            status_code=400,
        )

    @app.get("/emissions/bylocations")
    async def bylocations(
        request: Request, location: str, time: str, to_time: str = Query(alias="toTime")
    ) -> Any:
        if (hit := await fake.intercept(request)) is not None:
            return hit
        if location not in known:
            return problem(location)
        return [
            {
                "location": location,
                "time": h.isoformat(),
                "rating": sdk_value(h),
                "duration": "01:00:00",
            }
            for h in _hours(_parse(time).replace(minute=0), _parse(to_time))
        ]

    @app.get("/emissions/forecasts/current")
    async def forecasts(
        request: Request,
        location: str,
        data_start_at: str = Query(alias="dataStartAt"),
        data_end_at: str = Query(alias="dataEndAt"),
    ) -> Any:
        if (hit := await fake.intercept(request)) is not None:
            return hit
        if location not in known:
            return problem(location)
        lo, hi = _parse(data_start_at).replace(minute=0), _parse(data_end_at)
        data = [
            {
                "location": location,
                "timestamp": h.isoformat(),
                "duration": 60,
                "value": sdk_value(h),
            }
            for h in _hours(lo, hi)
        ]
        return [
            {
                "generatedAt": fake.now.isoformat(),
                "requestedAt": fake.now.isoformat(),
                "location": location,
                "dataStartAt": data_start_at,
                "dataEndAt": data_end_at,
                "windowSize": 60,
                "optimalDataPoints": [min(data, key=lambda d: d["value"])] if data else [],
                "forecastData": data,
            }
        ]

    return app


@dataclass
class Fakes:
    """The four fakes and their state."""

    em: Fake = field(default_factory=Fake)
    wt: Fake = field(default_factory=Fake)
    gb: Fake = field(default_factory=Fake)
    sdk: Fake = field(default_factory=Fake)

    def app(self) -> FastAPI:
        root = FastAPI()
        root.mount("/em", electricitymaps_app(self.em))
        self.wt_app = watttime_app(self.wt)
        root.mount("/wt", self.wt_app)
        root.mount("/gb", gb_app(self.gb))
        root.mount("/sdk", sdk_app(self.sdk))
        return root

    def reset(self) -> None:
        for fake in (self.em, self.wt, self.gb, self.sdk):
            fake.reset()
        self.wt_app.state.tokens.clear()

    def set_now(self, now: datetime) -> None:
        for fake in (self.em, self.wt, self.gb, self.sdk):
            fake.now = now
