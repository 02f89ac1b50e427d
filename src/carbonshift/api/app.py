"""The advice API: Carbon Aware SDK endpoints, advice, planning, health and metrics.

Routes only translate between wire objects and the core: the fall-back chains of
:mod:`carbonshift.carbon.providers` answer carbon questions, :mod:`carbonshift.planning`
plans. Errors become one-line JSON problems: bad input 400/413/422, refused upstream
credentials 502, an outage with nothing to fall back on 503 with ``Retry-After``; an
unexpected error is a 500 without a traceback (the server log has it).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
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
from carbonshift.api.solves import (
    DEFAULT_SOLVE_MEMORY_MB,
    BusyError,
    ClientGoneError,
    SolveRunner,
)
from carbonshift.bounded import BoundedBuffer, TooLargeError
from carbonshift.carbon.freshness import Freshness, FreshnessBoard, freshness_gauges
from carbonshift.carbon.providers import (
    Answer,
    ChainSet,
    Clock,
    Secret,
    SystemClock,
    unit_of,
)
from carbonshift.carbon.series import CiKind
from carbonshift.errors import CarbonshiftError, InputError, PermanentError, TemporaryError
from carbonshift.units import DurationTooLongError, format_utc, parse_duration, to_utc

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
    #: longest time a client may take to send its whole request body, seconds; past it the
    #: request is answered 408 and the connection is freed (a body sent a byte a minute)
    body_timeout_s: float = 30.0
    #: most jobs in one ``/v1/plan`` instance
    max_jobs: int = 2_000
    #: most jobs x clusters x slots in one ``/v1/plan`` instance (job classes for
    #: ``carbonshift``), times the policy's cost weight
    #: (:data:`carbonshift.planning.limits.POLICY_CELL_COST`: 1 for greedy policies, more for
    #: LP and MILP ones; the one check, :func:`carbonshift.planning.limits.check_plan_size`)
    max_plan_cells: int = 2_000_000
    #: wall-time budget of one ``/v1/plan`` solve, seconds; the worker is killed past it
    max_solve_s: float = 30.0
    #: most ``/v1/plan`` solves running at once (each in a worker process); more: 429
    max_solves: int = 2
    #: address-space cap of one ``/v1/plan`` solve worker, MiB (None: no cap); a solve past
    #: it is stopped and answered 400
    max_solve_memory_mb: int | None = DEFAULT_SOLVE_MEMORY_MB
    #: largest srr ``samples`` this server accepts (the CLI allows more)
    max_samples: int = 1_000
    #: bearer token every request needs, except ``/healthz`` and ``/metrics`` (None: open)
    token: Secret | None = None
    #: requests per minute one client address may make, bursts included (0: no limit, the
    #: library default; ``carbonshift serve`` sets 300); ``/healthz`` and ``/metrics`` are
    #: not counted
    rate_per_minute: int = 0
    #: most locations in one request
    max_locations: int = 50
    #: longest time range one request may ask about, hours
    max_range_hours: int = 7 * 24
    #: default look-ahead of forecasts and advice, hours
    default_horizon_hours: int = 24


#: policy parameters that are wall-time limits: capped at the request budget
_TIME_LIMIT_PARAMS = ("time_limit_s", "lp_time_limit_s")
#: CPU budgets of one step of a policy, lowered to this share of the server's budget per
#: request unless the request sets them (carbonshift's step 8b would otherwise spend its 30 s
#: default on a late plan of 1,000 jobs and meet the 30 s budget; step 7h's cluster pairs
#: spend 14-18 s of CPU on ten-zone 300 and cjps-small 100; docs/api.md)
_STEP_CPU_PARAMS = {"late_milp_cpu_s": 1 / 3, "pair_cpu_s": 1 / 4}


def _problem(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    titles = {
        401: "Unauthorized",
        404: "Not Found",
        405: "Method Not Allowed",
        400: "Bad Request",
        408: "Request Timeout",
        413: "Payload Too Large",
        422: "Unprocessable Entity",
        429: "Too Many Requests",
        500: "Internal Server Error",
        502: "Bad Gateway",
        503: "Service Unavailable",
    }
    body = {"title": titles.get(status, "Error"), "status": status, "detail": detail}
    return JSONResponse(body, status_code=status, headers=headers)


class _BodyLimit:
    """Refuse request bodies larger than ``limit`` bytes with 413, streamed or not.

    The body is read here, up to the limit, before the app sees it, so a chunked body without
    a Content-Length gets the same 413 as a declared one; the app then reads it from memory,
    and later ``receive`` calls (disconnect detection) go to the server."""

    def __init__(
        self,
        app: Callable[[Scope, Receive, Send], Awaitable[None]],
        limit: int,
        timeout_s: float = 30.0,
    ) -> None:
        self.app = app
        self.limit = limit
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = BoundedBuffer(
            self.limit, what="the request body", fix="send a smaller instance or split the jobs"
        )
        try:
            for name, value in scope.get("headers", []):
                if name == b"content-length":
                    body.expect(value)
            async with asyncio.timeout(self.timeout_s):
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        return  # the client went away before its body was complete
                    body.add(message.get("body", b""))
                    if not message.get("more_body", False):
                        break
        except TooLargeError:
            too_large = _problem(
                413,
                f"request body is larger than {self.limit} bytes; send a smaller instance or "
                "split the jobs",
            )
            await too_large(scope, receive, send)
            return
        except TimeoutError:
            slow = _problem(
                408,
                f"the request body did not arrive within {self.timeout_s:g} s "
                f"({body.size_bytes} bytes came); send the whole body at once",
                headers={"connection": "close"},
            )
            await slow(scope, receive, send)
            return
        whole = body.take()
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": whole, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


#: paths probes and scrapers reach without a token and outside the rate limit
_OPEN_PATHS = frozenset({"/healthz", "/metrics"})


class _Guard:
    """Bearer token and per-client rate limit (a token bucket of ``rate_per_minute``)."""

    def __init__(
        self,
        app: Callable[[Scope, Receive, Send], Awaitable[None]],
        token: Secret | None,
        rate_per_minute: int,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.expected = b"Bearer " + token.reveal().encode() if token else None
        self.rate_per_s = rate_per_minute / 60.0
        self.burst = float(rate_per_minute)
        self.monotonic = monotonic
        self.buckets: dict[str, tuple[float, float]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in _OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self.expected is not None:
            given = dict(scope.get("headers", [])).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                response = _problem(
                    401,
                    "this server needs 'Authorization: Bearer <token>' (CARBONSHIFT_API_TOKEN)",
                    {"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        if self.rate_per_s > 0:
            wait_s = self._take(str((scope.get("client") or ("?",))[0]))
            if wait_s > 0:
                response = _problem(
                    429,
                    f"more than {self.burst:g} requests per minute from this client; retry in "
                    f"{math.ceil(wait_s)} s",
                    {"Retry-After": str(math.ceil(wait_s))},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _take(self, client: str) -> float:
        """0 when ``client`` may go on (one token taken), else seconds until it may."""
        now = self.monotonic()
        if len(self.buckets) > 10_000:  # forget clients whose bucket has filled up again
            full_s = self.burst / self.rate_per_s
            self.buckets = {k: v for k, v in self.buckets.items() if now - v[1] < full_s}
        tokens, last = self.buckets.get(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate_per_s)
        if tokens < 1:
            self.buckets[client] = (tokens, now)
            return (1 - tokens) / self.rate_per_s
        self.buckets[client] = (tokens - 1, now)
        return 0.0


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
        self.data_age, self.replayed = freshness_gauges(self.registry)

    def record(self, fresh: Freshness, before: Freshness | None) -> None:
        """The freshness gauges for ``fresh``'s zone; a source no longer used is removed."""
        if before is not None and before.source != fresh.source:
            self.data_age.remove(fresh.zone, before.source)
        self.data_age.labels(fresh.zone, fresh.source).set(fresh.data_age_s)
        self.replayed.labels(fresh.zone).set(1.0 if fresh.replayed else 0.0)


_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": Problem, "description": "a bad value; detail says which and the fix"},
    401: {"model": Problem, "description": "a bearer token is needed (server started with one)"},
    413: {"model": Problem, "description": "the request body is too large"},
    422: {"model": Problem, "description": "the request does not match the schema"},
    429: {"model": Problem, "description": "too many requests or solves; see Retry-After"},
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
    except DurationTooLongError:
        raise InputError(f"{what} {text[:40]!r} is too long; give at most {most_hours} h") from None
    if duration > timedelta(hours=most_hours):
        raise InputError(f"{what} {text!r} is longer than {most_hours} h; give a shorter {what}")
    return duration


def create_app(
    chains: ChainSet,
    *,
    settings: ApiSettings | None = None,
    clock: Clock | None = None,
    solves: SolveRunner | None = None,
    regions: RegionTable | None = None,
) -> FastAPI:
    """The advice API over ``chains`` (one fall-back chain per signal kind); ``solves`` runs
    ``/v1/plan`` solves (its ``stop_all`` is called when the app shuts down); ``regions``
    maps cloud region names to zones for the Carbon Aware SDK routes (default: built-in)."""
    cfg = settings or ApiSettings()
    clk = clock or SystemClock()
    metrics = _Metrics()
    runner = solves or SolveRunner(max_solves=cfg.max_solves, memory_mb=cfg.max_solve_memory_mb)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        runner.stop_all()

    board = FreshnessBoard(_LOG)
    app = FastAPI(
        lifespan=lifespan,
        title="carbonshift advice API",
        version="1",
        description=(
            "When and where should a batch job run? Carbon Aware SDK compatible emissions "
            "endpoints, advice and planning (file formats version 1, docs/formats.md). Every "
            "carbon answer states its signal kind, unit, source and staleness."
        ),
        docs_url=None,  # served offline by carbonshift.api.sdk.install_docs
        redoc_url=None,
    )
    app.add_middleware(_BodyLimit, limit=cfg.max_body_bytes, timeout_s=cfg.body_timeout_s)
    app.add_middleware(_Guard, token=cfg.token, rate_per_minute=cfg.rate_per_minute)
    app.add_middleware(_Measure, metrics=metrics)

    @app.exception_handler(CarbonshiftError)
    async def _carbonshift_error(request: Request, exc: CarbonshiftError) -> JSONResponse:
        if isinstance(exc, InputError):
            return _problem(400, str(exc))
        if isinstance(exc, BusyError):
            return _problem(429, str(exc), {"Retry-After": str(max(1, math.ceil(exc.delay_s)))})
        if isinstance(exc, ClientGoneError):
            return _problem(499, str(exc))
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
        # the offending inputs are left out: they may be huge, or NaN (not JSON)
        listed = [
            {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type")}
            for e in errors[:20]
        ]
        body = {
            "title": "Unprocessable Entity",
            "status": 422,
            "detail": " ".join(("; ".join(parts) + more).split())[:1000],
            "errors": jsonable_encoder(listed),
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
        fresh = answer.freshness
        metrics.record(fresh, board.record(fresh))
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
            "outliers": answer.outliers,
            "suspect": [{"timestamp": at, "value": value} for at, value in answer.suspect],
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
        """Liveness (always 200): the chains by kind; ``degraded`` with the reasons when
        answers come from replayed, stale or fall-back data, or no live source is set up."""
        reasons = [
            f"chain {kind.value}: no live source configured; answers come from the "
            "embedded 2021-2023 data, replayed past 2023"
            for kind, chain in chains.chains.items()
            if not chain.sources and chain.floor is not None
        ]
        reasons += board.reasons()
        return {
            "status": "degraded" if reasons else "ok",
            "reasons": reasons,
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

    @app.post(
        "/v1/plan",
        tags=["planning"],
        responses=_ERRORS,
        openapi_extra={
            "requestBody": {
                "required": True,
                "description": "a format version 1 (docs/formats.md) planning instance",
                "content": {
                    "application/json": {
                        "schema": {"type": "object"},
                        "example": {"version": 1},
                    }
                },
            }
        },
    )
    async def plan(
        request: Request,
        policy: Annotated[
            str, Query(description="a policy name, see /v1/policies")
        ] = "carbonshift",
        param: Annotated[
            list[str] | None, Query(description="policy parameter key=value, repeatable")
        ] = None,
    ) -> dict[str, Any]:
        """A docs/formats.md plan (with ``scores``, ``status`` and ``feasible``) for an instance.

        The solve runs in a worker process with a wall-time budget; it is stopped when the
        client disconnects, when the budget is spent and when the server stops."""
        from carbonshift.formats import instance_from_dict, loads_json
        from carbonshift.planning import policy_spec
        from carbonshift.planning.limits import PlanLimits

        policy_spec(policy, import_modules=False)  # never a module named in a request
        params = _plan_params(policy, param or [])
        try:
            data = loads_json(await request.body(), "the request body")
        except InputError as exc:
            raise RequestValidationError(
                [{"loc": ("body",), "msg": str(exc), "type": "json_invalid"}]
            ) from None
        if not isinstance(data, dict):
            raise InputError("the request body must be a JSON object (a planning instance)")
        jobs = data.get("jobs")
        if isinstance(jobs, list) and len(jobs) > cfg.max_jobs:
            raise InputError(
                f"the instance has {len(jobs)} jobs; this server plans at most {cfg.max_jobs} "
                "per request"
            )
        parsed = instance_from_dict(data, what="instance")
        PlanLimits(max_cells=cfg.max_plan_cells).check(
            parsed,
            policy,
            what="the instance",
            per="per request on this server",
            fix="shorten the horizon, send fewer jobs, or use a cheaper policy (asap, fluidos)",
        )
        return await runner.solve(
            parsed,
            policy,
            params,
            budget_s=cfg.max_solve_s,
            is_disconnected=request.is_disconnected,
        )

    def _plan_params(policy: str, items: list[str]) -> dict[str, str]:
        from carbonshift.planning import parse_params

        params: dict[str, str] = {}
        for item in items:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise InputError(f"param {item!r} is not key=value; write it like omega1=0.5")
            params[key.strip()] = value.strip()
        checked = parse_params(policy, params).as_dict()
        samples = checked.get("samples")
        if isinstance(samples, int) and samples > cfg.max_samples:
            raise InputError(
                f"param samples={samples} of policy {policy!r} is above this server's limit of "
                f"{cfg.max_samples}; ask fewer samples"
            )
        for name in _TIME_LIMIT_PARAMS:
            limit = checked.get(name)
            if isinstance(limit, int | float) and limit > cfg.max_solve_s:
                if name in params:
                    raise InputError(
                        f"param {name}={params[name]} of policy {policy!r} is above this "
                        f"server's budget of {cfg.max_solve_s:g} s per request; ask at most that"
                    )
                params[name] = f"{cfg.max_solve_s:g}"
        for name, share in _STEP_CPU_PARAMS.items():
            limit = checked.get(name)
            if name not in params and isinstance(limit, int | float):
                params[name] = f"{min(limit, share * cfg.max_solve_s):g}"
        return params

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
