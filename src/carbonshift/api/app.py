"""The advice API: Carbon Aware SDK endpoints, advice, planning, health and metrics.

Routes only translate between wire objects and the core: the fall-back chains of
:mod:`carbonshift.carbon.providers` answer carbon questions, :mod:`carbonshift.planning`
plans. Errors become one-line JSON problems: bad input 400/413/422, refused upstream
credentials 502, an outage with nothing to fall back on 503 with ``Retry-After``; an
unexpected error is a 500 without a traceback (the server log has it).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import Body, FastAPI, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from starlette.exceptions import HTTPException as StarletteHTTPException

from carbonshift.api.advice import (
    JobAsk,
    Run,
    advise_job,
    power_w_of,
)
from carbonshift.api.models import (
    AdviseRequest,
    AdviseResponse,
    Problem,
    Provenance,
    RunOption,
)
from carbonshift.api.regions import RegionTable
from carbonshift.api.sdk import SdkContext
from carbonshift.api.sdk import install as install_sdk
from carbonshift.carbon.providers import Answer, ChainSet, Clock, SystemClock, unit_of
from carbonshift.carbon.series import CiKind
from carbonshift.errors import CarbonshiftError, InputError, PermanentError, TemporaryError
from carbonshift.units import format_utc, parse_duration, to_utc

__all__ = ["ApiSettings", "create_app"]

_LOG = logging.getLogger("carbonshift.api")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ApiSettings:
    """Limits and defaults of the advice API."""

    #: default signal kind of answers (``kind`` query or field overrides it)
    kind: CiKind = CiKind.DIRECT
    #: largest request body, bytes
    max_body_bytes: int = 2_000_000
    #: most jobs in one ``/v1/plan`` instance
    max_jobs: int = 2_000
    #: most jobs x clusters x slots in one ``/v1/plan`` instance
    max_plan_cells: int = 2_000_000
    #: most locations in one request
    max_locations: int = 50
    #: longest time range one request may ask about, hours
    max_range_hours: int = 7 * 24
    #: default look-ahead of forecasts and advice, hours
    default_horizon_hours: int = 24


def _problem(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    titles = {
        404: "Not Found",
        405: "Method Not Allowed",
        400: "Bad Request",
        413: "Payload Too Large",
        422: "Unprocessable Entity",
        500: "Internal Server Error",
        502: "Bad Gateway",
        503: "Service Unavailable",
    }
    body = {"title": titles.get(status, "Error"), "status": status, "detail": detail}
    return JSONResponse(body, status_code=status, headers=headers)


class _BodyLimit:
    """Refuse request bodies larger than ``limit`` bytes with 413, streamed or not."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        detail = (
            f"request body is larger than {self.limit} bytes; send a smaller instance or split "
            "the jobs"
        )
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await _problem(413, detail)(scope, receive, send)
                return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLargeError(detail)
            return message

        try:
            await self.app(scope, limited, send)
        except _TooLargeError as exc:
            await _problem(413, str(exc))(scope, receive, send)


class _TooLargeError(Exception):
    pass


class _Measure:
    """Count and time every request by route template and status (pure ASGI: no buffering)."""

    def __init__(
        self, app: Callable[[Scope, Receive, Send], Awaitable[None]], metrics: _Metrics
    ) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = scope.get("route")
            name = getattr(route, "path", "unmatched")
            self.metrics.requests.labels(name, scope.get("method", ""), str(status[0])).inc()
            self.metrics.latency.labels(name).observe(time.perf_counter() - started)


class _Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "carbonshift_api_requests",
            "HTTP requests answered",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "carbonshift_api_request_seconds",
            "Time to answer a request, seconds",
            ["route"],
            registry=self.registry,
        )
        self.answers = Counter(
            "carbonshift_carbon_answers",
            "Carbon answers by the source that gave them",
            ["kind", "source", "outcome"],
            registry=self.registry,
        )
        self.fallbacks = Counter(
            "carbonshift_carbon_fallbacks",
            "Sources that failed and were fallen back from",
            ["kind", "source"],
            registry=self.registry,
        )


_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": Problem, "description": "a bad value; detail says which and the fix"},
    413: {"model": Problem, "description": "the request body is too large"},
    422: {"model": Problem, "description": "the request does not match the schema"},
    502: {"model": Problem, "description": "a carbon source refused our credentials"},
    503: {"model": Problem, "description": "no carbon source can answer now; see Retry-After"},
}


_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
_LATEST = datetime(2200, 1, 1, tzinfo=UTC)


def _time_of(value: datetime | None, default: datetime, what: str = "time") -> datetime:
    moment = default if value is None else to_utc(value)
    if not _EARLIEST <= moment < _LATEST:
        raise InputError(
            f"{what} {moment.isoformat()} is outside 1970-2199; give a time in that range (UTC)"
        )
    return moment


def _duration_of(text: str, what: str, most_hours: int) -> timedelta:
    try:
        duration = parse_duration(text, what=what)
    except OverflowError:
        raise InputError(f"{what} {text!r} is too long; give at most {most_hours} h") from None
    if duration > timedelta(hours=most_hours):
        raise InputError(f"{what} {text!r} is longer than {most_hours} h; give a shorter {what}")
    return duration


def create_app(
    chains: ChainSet,
    *,
    settings: ApiSettings | None = None,
    clock: Clock | None = None,
    regions: RegionTable | None = None,
) -> FastAPI:
    """The advice API over ``chains`` (one fall-back chain per signal kind); ``regions``
    maps cloud region names to zones for the Carbon Aware SDK routes (default: built-in)."""
    cfg = settings or ApiSettings()
    clk = clock or SystemClock()
    metrics = _Metrics()
    app = FastAPI(
        title="carbonshift advice API",
        version="1",
        description=(
            "When and where should a batch job run? Carbon Aware SDK compatible emissions "
            "endpoints, advice and planning (CONTRACTS.md v1). Every carbon answer states its "
            "signal kind, unit, source and staleness."
        ),
        docs_url=None,  # served offline by carbonshift.api.sdk.install_docs
        redoc_url=None,
    )
    app.add_middleware(_BodyLimit, limit=cfg.max_body_bytes)
    app.add_middleware(_Measure, metrics=metrics)

    @app.exception_handler(CarbonshiftError)
    async def _carbonshift_error(request: Request, exc: CarbonshiftError) -> JSONResponse:
        if isinstance(exc, InputError):
            return _problem(400, str(exc))
        if isinstance(exc, TemporaryError):
            return _problem(503, str(exc), {"Retry-After": str(max(1, math.ceil(exc.delay_s)))})
        if isinstance(exc, PermanentError):
            return _problem(502, str(exc))
        return _problem(500, str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        if exc.status_code == 400 and "parsing the body" in detail:
            detail = "the request body is not valid JSON; send a JSON object"
        return _problem(exc.status_code, detail, dict(exc.headers or {}))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        parts = []
        for error in errors[:3]:
            where = ".".join(str(p) for p in error.get("loc", ()))
            parts.append(f"{where}: {error.get('msg', 'invalid')}")
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        body = {
            "title": "Unprocessable Entity",
            "status": 422,
            "detail": "; ".join(parts) + more,
            "errors": jsonable_encoder(errors, custom_encoder={Exception: str}),
        }
        return JSONResponse(body, status_code=422)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        _LOG.exception("unexpected error answering %s %s", request.method, request.url.path)
        return _problem(500, "internal error; the server log has the details")

    def _answer(zone: str, start: datetime, end: datetime, slot: int, kind: CiKind) -> Answer:
        if end - start > timedelta(hours=cfg.max_range_hours):
            raise InputError(
                f"the range {format_utc(start)} to {format_utc(end)} is longer than "
                f"{cfg.max_range_hours} h; ask a shorter range"
            )
        answer = chains.chain(kind).answer(zone, start, end, slot_minutes=slot)
        for attempt in answer.attempts:
            if attempt.outcome == "error":
                metrics.fallbacks.labels(kind.value, attempt.source).inc()
        last = answer.attempts[-1] if answer.attempts else None
        metrics.answers.labels(
            kind.value, answer.window.source, last.outcome if last else "none"
        ).inc()
        return answer

    def _provenance(answer: Answer) -> dict[str, Any]:
        window = answer.window
        return {
            "kind": window.kind,
            "unit": unit_of(window.kind),
            "source": window.source,
            "staleSince": window.stale_since,
            "staleAgeSeconds": answer.stale_age_s,
            "replayed": window.replayed_from is not None,
            "fallback": [
                f"{a.source}: {a.detail}" for a in answer.attempts if a.outcome == "error"
            ],
        }

    install_sdk(
        app,
        SdkContext(
            answer=_answer,
            provenance=_provenance,
            clock=clk,
            kind=cfg.kind,
            regions=regions or RegionTable(),
            max_locations=cfg.max_locations,
            horizon_hours=cfg.default_horizon_hours,
            max_range_hours=cfg.max_range_hours,
        ),
    )

    @app.get("/healthz", tags=["operations"])
    def healthz() -> dict[str, Any]:
        """Liveness: the configured chains, by kind."""
        return {
            "status": "ok",
            "time": format_utc(clk.now()),
            "chains": {kind.value: chain.names for kind, chain in chains.chains.items()},
        }

    @app.get("/metrics", tags=["operations"], response_class=PlainTextResponse)
    def prometheus() -> PlainTextResponse:
        """Prometheus metrics (text exposition format)."""
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.post("/v1/advise", tags=["advice"], response_model=AdviseResponse, responses=_ERRORS)
    def advise(request: AdviseRequest) -> AdviseResponse:
        """The best zone and start for a job, and its saving over running now."""
        ci_kind = request.kind or cfg.kind
        if ci_kind is CiKind.INDEX:
            raise InputError(
                "kind 'index' has no unit to turn into emissions; ask direct, lca or marginal"
            )
        earliest = _time_of(request.earliest, clk.now(), "earliest")
        if request.deadline is not None:
            deadline = _time_of(request.deadline, clk.now(), "deadline")
        else:
            within = request.within or f"{cfg.default_horizon_hours}h"
            deadline = earliest + _duration_of(within, "within", cfg.max_range_hours)
        job = JobAsk(
            duration=_duration_of(request.duration, "duration", cfg.max_range_hours),
            zones=tuple(request.zones),
            earliest=earliest,
            deadline=deadline,
            power_w=power_w_of(request.power_w, request.demand, request.watts_per_unit),
            slot_minutes=request.slot_minutes,
        )
        advice = advise_job(job, lambda z, s, e, slot: _answer(z, s, e, slot, ci_kind))

        def option(run: Run) -> RunOption:
            window = run.answer.window
            return RunOption(
                zone=run.zone,
                start=run.start,
                end=run.end,
                ci_g_per_kwh=run.ci_g_per_kwh,
                emissions_g=run.emissions_g,
                source=window.source,
                stale_since=window.stale_since,
                replayed=window.replayed_from is not None,
            )

        return AdviseResponse(
            best=option(advice.best),
            now=option(advice.now),
            saving_g=advice.saving_g,
            saving_pct=advice.saving_pct,
            energy_kwh=advice.energy_kwh,
            power_w=advice.power_w,
            kind=ci_kind,
            unit=unit_of(ci_kind),
            per_zone=[option(r) for r in advice.per_zone],
            provenance={r.zone: Provenance(**_provenance(r.answer)) for r in advice.per_zone},
        )

    @app.post("/v1/plan", tags=["planning"], responses=_ERRORS)
    def plan(
        instance: Annotated[
            dict[str, Any],
            Body(description="a CONTRACTS.md v1 planning instance", examples=[{"version": 1}]),
        ],
        policy: Annotated[str, Query(description="a policy name, see /v1/policies")] = "caspian",
        param: Annotated[
            list[str] | None, Query(description="policy parameter key=value, repeatable")
        ] = None,
    ) -> dict[str, Any]:
        """A CONTRACTS.md plan (with ``scores``, ``status`` and ``feasible``) for an instance."""
        from carbonshift.domain import check_feasibility, score_plan
        from carbonshift.formats import instance_from_dict, plan_to_dict
        from carbonshift.planning import policy_spec, run_policy

        policy_spec(policy, import_modules=False)  # never a module named in a request
        jobs = instance.get("jobs")
        if isinstance(jobs, list) and len(jobs) > cfg.max_jobs:
            raise InputError(
                f"the instance has {len(jobs)} jobs; this server plans at most {cfg.max_jobs} "
                "per request"
            )
        parsed = instance_from_dict(instance, what="instance")
        cells = len(parsed.jobs) * len(parsed.clusters) * parsed.grid.horizon_slots
        if cells > cfg.max_plan_cells:
            raise InputError(
                f"the instance has {cells} job x cluster x slot cells; at most "
                f"{cfg.max_plan_cells} per request: shorten the horizon or send fewer jobs"
            )
        params: dict[str, str] = {}
        for item in param or []:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise InputError(f"param {item!r} is not key=value; write it like omega1=0.5")
            params[key.strip()] = value.strip()
        result = run_policy(policy, parsed, params, import_modules=False)
        body = plan_to_dict(result.plan, score_plan(parsed, result.plan))
        body["status"] = str(result.status)
        body["feasible"] = not check_feasibility(parsed, result.plan)
        body["stats"] = {k: float(v) for k, v in result.stats.items()}
        decoded: dict[str, Any] = json.loads(json.dumps(body, default=str))
        return decoded

    @app.get("/v1/policies", tags=["planning"])
    def policies() -> dict[str, Any]:
        """The policies ``/v1/plan`` accepts and their parameters."""
        from carbonshift.planning.registry import available_policies

        return {
            name: {
                "summary": spec.summary,
                "params": {p.name: {"default": p.default, "help": p.help} for p in spec.params},
            }
            for name, spec in available_policies().items()
        }

    return app
