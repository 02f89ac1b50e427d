# ruff: noqa: N803, N815 - the Carbon Aware SDK names its query parameters and fields in camelCase
"""The Carbon Aware SDK WebAPI, drop-in: its routes, parameters, defaults, shapes and errors.

Semantics follow the SDK's ``CarbonAwareController``, ``EmissionsHandler``/
``EmissionsAggregator`` and ``ForecastHandler`` (docs/api.md cites the files):

* **Emissions** (``/emissions/bylocation(s)``, ``bylocations/best``) are past data: ``time``
  defaults to now and ``toTime`` to ``time`` (a point in time: the one data point holding it);
  ``toTime`` without ``time`` is refused; a range reaching past now stops at the current data
  point, one wholly in the future has no data (204). ``best`` keeps every point with the
  lowest rating over all locations.
* **Average** (``/emissions/average-carbon-intensity``): the time-weighted mean over
  ``[startTime, endTime)``; all three parameters required.
* **Forecasts** (``/emissions/forecasts/current`` and ``batch``): the forecast as of now (or
  ``requestedAt``) spans the server's horizon; ``dataStartAt``/``dataEndAt`` default to its
  first and last point and must lie inside it; ``forecastData`` is the rolling average of
  ``windowSize`` minutes started every data point from ``dataStartAt`` (a window must end by
  ``dataEndAt``); ``windowSize`` defaults to one data point; ``optimalDataPoints`` are every
  point with the lowest value.
* **Locations** are cloud region names (:mod:`carbonshift.api.regions`) or zone ids; answers
  echo the name asked. ``/locations`` lists the region table like the SDK's location source.

Bad input answers 400 with the SDK's ``ValidationProblemDetails`` shape (``type``, ``title``,
``status``, ``detail``, ``errors: {field: [messages]}``); outages keep the app's 503 with
``Retry-After``. Every answer also carries carbonshift's provenance fields (``kind``,
``unit``, ``source``, ``staleSince``, ``replayed``, ``fallback``, ``outliers``, ``suspect``) and
``zone``, which SDK clients ignore; an emissions data point's ``suspect`` lists only itself.

The module also serves Swagger UI and ReDoc from the package (``/docs``, ``/redoc``): no CDN.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Body, FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field, StrictInt

from carbonshift.api.advice import floor_to_slot
from carbonshift.api.models import EmissionsData, EmissionsDataPoint, Provenance
from carbonshift.api.regions import ZONE_PATTERN, RegionTable
from carbonshift.carbon.providers import Answer, Clock
from carbonshift.carbon.series import CiKind
from carbonshift.carbon.zones import resolve_zone
from carbonshift.errors import InputError
from carbonshift.units import format_utc, to_utc

__all__ = ["SdkContext", "SdkInputError", "install", "rolling_means"]

STATIC_DIR = Path(__file__).parent / "static"

#: the problem type ASP.NET gives a 400 (RFC 7231 section 6.5.1)
_BAD_REQUEST_TYPE = "https://tools.ietf.org/html/rfc7231#section-6.5.1"

AnswerFn = Callable[[str, datetime, datetime, int, CiKind], Answer]
ProvenanceFn = Callable[[Answer], dict[str, Any]]

_EMISSIONS_SLOT_MINUTES = 60
#: longest range of past emissions one request may ask (asked in pieces the app allows)
MAX_EMISSIONS_DAYS = 31

# query parameter types shared by the routes (module level: annotations are resolved here)
KindQuery = Annotated[
    CiKind | None, Query(description="signal kind (carbonshift; default: the server's)")
]
LocationsQuery = Annotated[
    list[str], Query(description="cloud regions or zone ids, e.g. eastus or DE")
]
TimeQuery = Annotated[datetime | None, Query(description="start of the data; default now")]
ToTimeQuery = Annotated[
    datetime | None, Query(description="end of the data; default: time (a point in time)")
]
DurationQuery = Annotated[int, Query(description="accepted and ignored, as by the SDK's handler")]


@dataclass(frozen=True, slots=True)
class SdkContext:
    """What the SDK routes need from the app: its carbon answers and limits."""

    answer: AnswerFn
    provenance: ProvenanceFn
    clock: Clock
    kind: CiKind
    regions: RegionTable
    max_locations: int = 50
    horizon_hours: int = 24
    max_range_hours: int = 7 * 24


class SdkInputError(InputError):
    """Bad input to an SDK route, naming the parameter (``field``) as the SDK does."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class SdkProblem(BaseModel):
    """The SDK's 400 body: ASP.NET ``ValidationProblemDetails``."""

    type: str = _BAD_REQUEST_TYPE
    title: str
    status: int
    detail: str | None = None
    errors: dict[str, list[str]] = Field(default_factory=dict)


class SdkEmissionsData(EmissionsData):
    """The SDK's ``EmissionsData``: ``location`` as asked, ``duration`` a TimeSpan."""

    zone: str = Field(description="the grid zone the location maps to (carbonshift)")


class SdkForecastPoint(EmissionsDataPoint):
    """The SDK's ``EmissionsDataDTO``: ``duration`` in minutes."""


class SdkForecast(Provenance):
    """The SDK's ``EmissionsForecastDTO``."""

    generatedAt: datetime
    requestedAt: datetime
    location: str
    zone: str
    dataStartAt: datetime
    dataEndAt: datetime
    windowSize: int
    optimalDataPoints: list[SdkForecastPoint]
    forecastData: list[SdkForecastPoint]


class CarbonIntensityBatch(BaseModel):
    """One item of ``POST /emissions/average-carbon-intensity/batch``."""

    location: str | None = Field(None, examples=["eastus"], max_length=64)
    startTime: datetime | None = Field(None, examples=["2022-03-01T15:30:00Z"])
    endTime: datetime | None = Field(None, examples=["2022-03-01T18:30:00Z"])


class CarbonIntensity(Provenance):
    """The SDK's ``CarbonIntensityDTO``."""

    location: str
    zone: str
    startTime: datetime
    endTime: datetime
    carbonIntensity: float


class ForecastBatch(BaseModel):
    """One item of ``POST /emissions/forecasts/batch`` (the SDK's ``EmissionsForecastBatchDTO``)."""

    requestedAt: datetime | None = Field(None, examples=["2022-06-01T12:01:00Z"])
    location: str | None = Field(None, examples=["eastus"], max_length=64)
    dataStartAt: datetime | None = Field(None, examples=["2022-06-01T14:00:00Z"])
    dataEndAt: datetime | None = Field(None, examples=["2022-06-01T18:00:00Z"])
    windowSize: StrictInt | None = Field(None, examples=[30])


class SdkLocation(BaseModel):
    """The SDK's ``Location`` (``/locations`` values), plus the zone."""

    latitude: float | None
    longitude: float | None
    name: str
    zone: str
    provider: str


_SDK_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": SdkProblem, "description": "a bad parameter; errors names it"},
    503: {"description": "no carbon source can answer now; see Retry-After"},
}


def _problem(title: str, detail: str | None, errors: dict[str, list[str]]) -> JSONResponse:
    body = SdkProblem(title=title, status=400, detail=detail, errors=errors)
    return JSONResponse(body.model_dump(), status_code=400)


def _validation_problem(exc: RequestValidationError) -> JSONResponse:
    errors: dict[str, list[str]] = {}
    for error in exc.errors():
        loc = [str(p) for p in error.get("loc", ()) if p not in ("query", "body")]
        name = ".".join(loc) or "request"
        if error.get("type") == "missing":
            message = f"The {name} field is required."
        elif error.get("type") == "json_invalid":
            name, message = "request", "The request body is not valid JSON."
        else:
            message = f"The value {error.get('input')!r} is not valid for {name}."
        errors.setdefault(name, []).append(message)
    return _problem("One or more validation errors occurred.", None, errors)


class _SdkRoute(APIRoute):
    """A route whose bad input answers the SDK's 400 shape (other errors: the app's)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                return _validation_problem(exc)
            except InputError as exc:
                field = exc.field if isinstance(exc, SdkInputError) else None
                errors = {field: [str(exc)]} if field else {}
                return _problem("ArgumentException", str(exc), errors)

        return answer


def _timespan(minutes: int) -> str:
    hours, rest = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    text = f"{hours:02d}:{rest:02d}:00"
    return f"{days}.{text}" if days else text


def rolling_means(
    start: datetime,
    slot_minutes: int,
    values: Sequence[float] | np.ndarray,
    window_starts: Sequence[datetime],
    window_minutes: float,
) -> list[float]:
    """Time-weighted means of a step series over ``[s, s + window_minutes)`` for each start.

    The series holds ``values[i]`` over ``[start + i x slot, start + (i+1) x slot)``; windows
    must lie inside it. A window over a missing value (NaN) has a NaN mean.
    """
    raw = np.asarray(values, dtype=float)
    missing = np.isnan(raw).astype(float)
    vals = np.where(missing > 0, 0.0, raw)
    n = len(vals)

    def integral(of: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        # the integral of a step series (in slot units) from its start to each offset
        cum = np.concatenate([[0.0], np.cumsum(of)])
        index = np.clip(np.floor(offsets).astype(int), 0, n - 1)
        result: np.ndarray = cum[index] + of[index] * (offsets - index)
        return result

    slot_s = slot_minutes * 60.0
    lo = np.array([(to_utc(s) - start).total_seconds() / slot_s for s in window_starts])
    hi = lo + window_minutes / slot_minutes
    means: np.ndarray = (integral(vals, hi) - integral(vals, lo)) / (hi - lo)
    gaps = integral(missing, hi) - integral(missing, lo) > 1e-9
    means[gaps] = np.nan
    return [float(v) for v in means]


_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
_LATEST = datetime(2200, 1, 1, tzinfo=UTC)


def _moment(value: datetime, field: str) -> datetime:
    """``value`` in UTC, refused (naming ``field``) outside 1970-2199."""
    moment = to_utc(value)
    if not _EARLIEST <= moment < _LATEST:
        raise SdkInputError(
            field, f"{field} {moment.isoformat()} is outside 1970-2199; give a time in that range"
        )
    return moment


def _resolution_of(window_minutes: int | None) -> int:
    if not window_minutes:
        return 60
    return max(5, math.gcd(window_minutes, 60))


def _ceil_to_slot(moment: datetime, slot_minutes: int) -> datetime:
    floored = floor_to_slot(moment, slot_minutes)
    return floored if floored == moment else floored + timedelta(minutes=slot_minutes)


class _Sdk:
    def __init__(self, ctx: SdkContext) -> None:
        self.ctx = ctx

    # -- locations -------------------------------------------------------------------------
    def zone_of(self, name: str, field: str = "location") -> str:
        text = name.strip()
        if not text:
            raise SdkInputError(field, "Required field: A value for 'location' must be provided.")
        region = self.ctx.regions.get(text)
        if region is not None:
            return region.zone
        if ZONE_PATTERN.match(text):
            return text
        try:
            return resolve_zone(text).id
        except InputError:
            pass
        shown = ", ".join(self.ctx.regions.names())
        raise SdkInputError(
            field,
            f"Unknown Location: {name[:64]!r} not found; give a cloud region ({shown}), a zone id "
            "like DE, or map your name with carbonshift serve --region-map FILE",
        )

    def names(self, location: Sequence[str]) -> list[tuple[str, str]]:
        names = [n for n in location if n.strip()]
        if not names:
            raise SdkInputError(
                "location", "Required field: A value for 'location' must be provided."
            )
        if len(names) > self.ctx.max_locations:
            raise SdkInputError(
                "location",
                f"{len(names)} locations asked; at most {self.ctx.max_locations} per request",
            )
        return [(n, self.zone_of(n)) for n in names]

    # -- emissions (past data) -------------------------------------------------------------
    def emissions(
        self,
        location: Sequence[str],
        time: datetime | None,
        toTime: datetime | None,
        kind: CiKind | None,
    ) -> list[dict[str, Any]]:
        pairs = self.names(location)
        if toTime is not None and time is None:
            raise SdkInputError("time", "time must be defined if toTime is defined")
        now = self.ctx.clock.now()
        start = now if time is None else _moment(time, "time")
        end = start if toTime is None else _moment(toTime, "toTime")
        if toTime is not None and not start < end:
            raise SdkInputError("time", "time must be before toTime")
        slot = _EMISSIONS_SLOT_MINUTES
        lo = floor_to_slot(start, slot)
        hi = _ceil_to_slot(end, slot) if end > start else lo + timedelta(minutes=slot)
        hi = min(hi, floor_to_slot(now, slot) + timedelta(minutes=slot))  # measured data only
        if hi <= lo:
            return []
        if hi - lo > timedelta(days=MAX_EMISSIONS_DAYS):
            raise SdkInputError(
                "toTime",
                f"the range {format_utc(lo)} to {format_utc(hi)} is longer than "
                f"{MAX_EMISSIONS_DAYS} days; ask a shorter range (or several)",
            )
        ci_kind = kind or self.ctx.kind
        piece = timedelta(hours=self.ctx.max_range_hours)
        out: list[dict[str, Any]] = []
        for name, zone in pairs:
            piece_start = lo
            while piece_start < hi:
                piece_end = min(hi, piece_start + piece)
                answer = self.ctx.answer(zone, piece_start, piece_end, slot, ci_kind)
                out.extend(self._points(name, zone, answer))
                piece_start = piece_end
        return out

    def _points(self, name: str, zone: str, answer: Answer) -> list[dict[str, Any]]:
        provenance = self.ctx.provenance(answer)
        suspect = {point["timestamp"]: point for point in provenance.get("suspect", [])}
        window = answer.window
        return [
            {
                **provenance,
                # each data point lists only itself, if suspect
                "suspect": [suspect[moment]] if moment in suspect else [],
                "location": name,
                "zone": zone,
                "time": moment,
                "rating": float(value),
                "duration": _timespan(window.slot_minutes),
            }
            for moment, value in zip(window.slot_starts(), window.values_g_per_kwh, strict=True)
            if not math.isnan(float(value))
        ]

    # -- averages --------------------------------------------------------------------------
    def average(
        self,
        location: str | None,
        startTime: datetime | None,
        endTime: datetime | None,
        kind: CiKind | None,
    ) -> dict[str, Any]:
        if location is None or not location.strip():
            raise SdkInputError("location", "location is not set")
        if startTime is None:
            raise SdkInputError("startTime", "startTime is not set")
        if endTime is None:
            raise SdkInputError("endTime", "endTime is not set")
        zone = self.zone_of(location)
        start, end = _moment(startTime, "startTime"), _moment(endTime, "endTime")
        if not start < end:
            raise SdkInputError("startTime", "startTime must be before endTime")
        slot = _EMISSIONS_SLOT_MINUTES
        lo, hi = floor_to_slot(start, slot), _ceil_to_slot(end, slot)
        answer = self.ctx.answer(zone, lo, hi, slot, kind or self.ctx.kind)
        got = answer.window
        minutes = (end - start).total_seconds() / 60.0
        (mean,) = rolling_means(got.start, got.slot_minutes, got.values_g_per_kwh, [start], minutes)
        if math.isnan(mean):
            raise SdkInputError(
                "location",
                f"the data of {location!r} have gaps between {format_utc(start)} and "
                f"{format_utc(end)}; ask another range",
            )
        return {
            **self.ctx.provenance(answer),
            "location": location,
            "zone": zone,
            "startTime": startTime,
            "endTime": endTime,
            "carbonIntensity": mean,
        }

    # -- forecasts -------------------------------------------------------------------------
    def forecast(
        self,
        name: str,
        requested_at: datetime,
        dataStartAt: datetime | None,
        dataEndAt: datetime | None,
        windowSize: int | None,
        kind: CiKind | None,
    ) -> dict[str, Any]:
        zone = self.zone_of(name)
        if windowSize is not None and windowSize < 0:
            raise SdkInputError("windowSize", f"windowSize {windowSize} is negative; give minutes")
        res = _resolution_of(windowSize)
        first = floor_to_slot(requested_at, res)
        last_end = first + timedelta(hours=self.ctx.horizon_hours)
        start = first if dataStartAt is None else _moment(dataStartAt, "dataStartAt")
        end = last_end if dataEndAt is None else _moment(dataEndAt, "dataEndAt")
        span = f"{format_utc(first)} to {format_utc(last_end)}"
        if not first <= start <= last_end:
            raise SdkInputError(
                "dataStartAt",
                f"dataStartAt {format_utc(start)} is outside the forecast data ({span}); give a "
                "time within it",
            )
        if not first <= end <= last_end:
            raise SdkInputError(
                "dataEndAt",
                f"dataEndAt {format_utc(end)} is outside the forecast data ({span}); give a "
                "time within it",
            )
        if not start < end:
            raise SdkInputError("dataStartAt", "dataStartAt must be before dataEndAt")
        window = windowSize or res
        lo, hi = floor_to_slot(start, res), _ceil_to_slot(end, res)
        answer = self.ctx.answer(zone, lo, hi, res, kind or self.ctx.kind)
        step = timedelta(minutes=res)
        starts: list[datetime] = []
        moment = start
        while moment + timedelta(minutes=window) <= end:
            starts.append(moment)
            moment += step
        got = answer.window
        values = rolling_means(got.start, got.slot_minutes, got.values_g_per_kwh, starts, window)
        kept = [(s, v) for s, v in zip(starts, values, strict=True) if not math.isnan(v)]
        points = [  # a window over a gap in the source's data has no mean: left out
            {"location": name, "timestamp": s, "duration": window, "value": v} for s, v in kept
        ]
        best = min((v for _s, v in kept), default=None)
        return {
            **self.ctx.provenance(answer),
            "generatedAt": min(answer.window.stale_since or answer.now, requested_at),
            "requestedAt": requested_at,
            "location": name,
            "zone": zone,
            "dataStartAt": start,
            "dataEndAt": end,
            "windowSize": window,
            "optimalDataPoints": [p for p in points if p["value"] == best],
            "forecastData": points,
        }


def _router(sdk: _Sdk) -> APIRouter:
    router = APIRouter(route_class=_SdkRoute, tags=["carbon-aware-sdk"], responses=_SDK_ERRORS)

    def no_content_or(items: list[dict[str, Any]]) -> Any:
        return items if items else Response(status_code=204)

    @router.get(
        "/emissions/bylocations",
        response_model=list[SdkEmissionsData],
        responses={204: {"description": "no data in that time"}},
    )
    def bylocations(
        location: LocationsQuery,
        time: TimeQuery = None,
        toTime: ToTimeQuery = None,
        durationMinutes: DurationQuery = 0,
        kind: KindQuery = None,
    ) -> Any:
        """Observed emissions of each location between ``time`` and ``toTime``."""
        return no_content_or(sdk.emissions(location, time, toTime, kind))

    @router.get(
        "/emissions/bylocation",
        response_model=list[SdkEmissionsData],
        responses={204: {"description": "no data in that time"}},
    )
    def bylocation(
        location: Annotated[str, Query(description="a cloud region or zone id, e.g. eastus")],
        time: TimeQuery = None,
        toTime: ToTimeQuery = None,
        durationMinutes: DurationQuery = 0,
        kind: KindQuery = None,
    ) -> Any:
        """Observed emissions of one location between ``time`` and ``toTime``."""
        return no_content_or(sdk.emissions([location], time, toTime, kind))

    @router.get(
        "/emissions/bylocations/best",
        response_model=list[SdkEmissionsData],
        responses={204: {"description": "no data in that time"}},
    )
    def bylocations_best(
        location: LocationsQuery,
        time: TimeQuery = None,
        toTime: ToTimeQuery = None,
        durationMinutes: DurationQuery = 0,
        kind: KindQuery = None,
    ) -> Any:
        """The lowest observed emissions over all locations (every point that ties)."""
        items = sdk.emissions(location, time, toTime, kind)
        best = min((i["rating"] for i in items), default=None)
        return no_content_or([i for i in items if i["rating"] == best])

    @router.get("/emissions/average-carbon-intensity", response_model=CarbonIntensity)
    def average_carbon_intensity(
        location: Annotated[str | None, Query(description="a cloud region or zone id")] = None,
        startTime: Annotated[datetime | None, Query(description="required")] = None,
        endTime: Annotated[datetime | None, Query(description="required")] = None,
        kind: KindQuery = None,
    ) -> Any:
        """The time-weighted average intensity of a location over ``[startTime, endTime)``."""
        return sdk.average(location, startTime, endTime, kind)

    @router.post("/emissions/average-carbon-intensity/batch", response_model=list[CarbonIntensity])
    def average_carbon_intensity_batch(
        items: Annotated[list[CarbonIntensityBatch], Body(max_length=50)],
        kind: KindQuery = None,
    ) -> Any:
        """One average per item, each with its own location and time range."""
        return [sdk.average(i.location, i.startTime, i.endTime, kind) for i in items]

    @router.get("/emissions/forecasts/current", response_model=list[SdkForecast])
    def forecasts_current(
        location: LocationsQuery,
        dataStartAt: Annotated[datetime | None, Query(description="default: first point")] = None,
        dataEndAt: Annotated[datetime | None, Query(description="default: end of data")] = None,
        windowSize: Annotated[
            int | None, Query(le=10080, description="minutes; default one data point")
        ] = None,
        kind: KindQuery = None,
    ) -> Any:
        """The current forecast of each location, its rolling averages and the optimal ones."""
        now = sdk.ctx.clock.now()
        return [
            sdk.forecast(name, now, dataStartAt, dataEndAt, windowSize, kind)
            for name, _zone in sdk.names(location)
        ]

    @router.post("/emissions/forecasts/batch", response_model=list[SdkForecast])
    def forecasts_batch(
        items: Annotated[list[ForecastBatch], Body(max_length=50)],
        kind: KindQuery = None,
    ) -> Any:
        """The forecast as of each item's ``requestedAt``, windowed like ``current``."""
        out = []
        for item in items:
            if item.requestedAt is None:
                raise SdkInputError("requestedAt", "requestedAt is not set")
            if item.location is None or not item.location.strip():
                raise SdkInputError("location", "location is not set")
            if item.windowSize is not None and item.windowSize > 10080:
                raise SdkInputError("windowSize", "windowSize is longer than 10080 minutes")
            out.append(
                sdk.forecast(
                    item.location,
                    _moment(item.requestedAt, "requestedAt"),
                    item.dataStartAt,
                    item.dataEndAt,
                    item.windowSize,
                    kind,
                )
            )
        return out

    @router.get("/locations", response_model=dict[str, SdkLocation])
    def locations() -> Any:
        """Every cloud region name this server knows, with coordinates and zone."""
        return {
            name: {
                "latitude": region.latitude,
                "longitude": region.longitude,
                "name": name,
                "zone": region.zone,
                "provider": region.provider,
            }
            for name, region in sorted(sdk.ctx.regions.regions.items())
        }

    return router


def install_docs(app: FastAPI) -> None:
    """Serve Swagger UI at ``/docs`` and ReDoc at ``/redoc`` from the package's own assets.

    The app must be created with ``docs_url=None, redoc_url=None``.
    """
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    title = app.title

    @app.get("/docs", include_in_schema=False)
    def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=root + (app.openapi_url or "/openapi.json"),
            title=f"{title} - Swagger UI",
            swagger_js_url=root + "/static/swagger-ui/swagger-ui-bundle.js",
            swagger_css_url=root + "/static/swagger-ui/swagger-ui.css",
            swagger_favicon_url=root + "/static/swagger-ui/favicon-32x32.png",
            oauth2_redirect_url=None,
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=root + (app.openapi_url or "/openapi.json"),
            title=f"{title} - ReDoc",
            redoc_js_url=root + "/static/redoc/redoc.standalone.js",
            redoc_favicon_url=root + "/static/swagger-ui/favicon-32x32.png",
            with_google_fonts=False,
        )


def install(app: FastAPI, ctx: SdkContext) -> None:
    """Add the SDK routes and the offline API docs to ``app``."""
    app.include_router(_router(_Sdk(ctx)))
    install_docs(app)
