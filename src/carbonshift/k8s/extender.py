"""The kube-scheduler extender: filter and prioritize nodes by power efficiency and zone carbon.

The JSON is exactly what kube-scheduler sends and expects (``k8s.io/kube-scheduler/extender/v1``,
Go field names without tags): ``ExtenderArgs`` ``{"Pod", "Nodes", "NodeNames"}`` in;
``ExtenderFilterResult`` ``{"Nodes", "NodeNames", "FailedNodes",
"FailedAndUnresolvableNodes", "Error"}`` and ``HostPriorityList`` ``[{"Host", "Score"}]``
out. With ``nodeCacheCapable: true`` the scheduler sends only ``NodeNames`` and the extender
looks the nodes up in the controller's cache.

A node's cost is its watts per core (label or annotation ``extender.node_watts_label``, else
the cluster's ``watts_per_unit.cpu``) times the current intensity of its grid zone (label
``extender.node_zone_label``, else the cluster's zone), read from the carbon source planning
uses (``planning.carbon_source``: the provider chain or the embedded data). Scores run from
0 (costliest) to 10 (``MaxExtenderPriority``, cheapest). The filter only acts when
``extender.max_g_per_kwh`` is set: shiftable pods then avoid nodes in zones dirtier than that;
critical and unmanaged pods are never filtered. An error never fails scheduling: filter passes
every node with ``Error`` empty and the problem logged.

The intensities are looked up off the event loop, in worker threads, once per zone and slot
(then cached); a request waits for a lookup at most ``extender.carbon_wait_s`` from its start,
then answers as for a zone with no data (no filtering; the cluster zone's intensity, else the
middle score) while the lookup goes on and fills the cache for the next requests.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from carbonshift.carbon.providers import FallbackChain, ProviderSettings, build_chains
from carbonshift.carbon.series import CiKind
from carbonshift.errors import CarbonshiftError
from carbonshift.k8s.bodies import (
    MAX_EXTENDER_ARGS_BYTES,
    BodyTooLargeError,
    read_json,
    too_large_answer,
)
from carbonshift.k8s.clock import Clock
from carbonshift.k8s.config import ControllerConfig
from carbonshift.k8s.intent import Intent, Obj, read_intent
from carbonshift.k8s.planner import CarbonSource, ProviderCarbonSource, slot_floor

__all__ = [
    "LOOKUP_THREADS",
    "MAX_EXTENDER_PRIORITY",
    "KnownIntensity",
    "ZoneCarbon",
    "ZoneIntensity",
    "extender_app",
    "filter_nodes",
    "prioritize",
]

_LOG = logging.getLogger("carbonshift.k8s")
MAX_EXTENDER_PRIORITY = 10
#: worker threads of an extender's carbon lookups: more lookups at once wait in its queue
LOOKUP_THREADS = 4

NodeLookup = Callable[[str], Obj | None]


class ZoneIntensity(Protocol):
    """What the filter and the scores read: a zone's intensity now, g/kWh (None: not known)."""

    def now_g_per_kwh(self, zone: str) -> float | None: ...


class KnownIntensity:
    """The intensities one request got in time, per zone (None: no data, or not in time)."""

    def __init__(self, g_per_kwh: dict[str, float | None]) -> None:
        self.g_per_kwh = g_per_kwh

    def now_g_per_kwh(self, zone: str) -> float | None:
        return self.g_per_kwh.get(zone)


class ZoneCarbon:
    """Current intensity per zone (slot 0 of the configured carbon source), cached per slot.

    The source is the one planning uses (``planning.carbon_source``): the cluster's own zone
    reads the controller's source itself when given (``planning``), other zones a source of
    the same kind; with ``providers``, one provider chain serves every zone.

    :meth:`now_g_per_kwh` looks a zone up in the calling thread. The extender's routes use
    :meth:`known` instead: it looks zones up in worker threads (at most
    :data:`LOOKUP_THREADS` at once, one lookup per zone and slot however many requests ask)
    and waits at most ``wait_s`` seconds from a lookup's start, so a provider that hangs
    never holds the event loop, and a request answers as for a zone with no data while the
    lookup goes on to fill the cache.
    """

    def __init__(
        self, config: ControllerConfig, clock: Clock, planning: CarbonSource | None = None
    ) -> None:
        self._config = config
        self._clock = clock
        self._wait_s = config.extender.carbon_wait_s
        self._sources: dict[str, CarbonSource | None] = {}
        if planning is not None:
            self._sources[config.cluster.zone] = planning
        self._chain: FallbackChain | None = None
        #: guards ``_sources`` and ``_chain``: worker threads make sources
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, datetime], float] = {}
        #: lookups running in a worker, with the loop time their waiting ends (loop only)
        self._pending: dict[tuple[str, datetime], tuple[asyncio.Future[float | None], float]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def _make(self, zone: str) -> CarbonSource:
        cluster = self._config.cluster.model_copy(update={"zone": zone})
        config = self._config.model_copy(update={"cluster": cluster})
        if config.planning.carbon_source != "providers":
            return CarbonSource(config)
        if self._chain is None:
            self._chain = build_chains(ProviderSettings.from_env()).chain(CiKind.DIRECT)
        return ProviderCarbonSource(config, self._chain)

    def _source(self, zone: str) -> CarbonSource | None:
        with self._lock:
            if zone not in self._sources:
                try:
                    self._sources[zone] = self._make(zone)
                except CarbonshiftError as exc:
                    _LOG.info("no carbon data for zone %s: %s", zone, exc)
                    self._sources[zone] = None
            return self._sources[zone]

    def _slot0(self) -> datetime:
        return slot_floor(self._clock.now(), self._config.planning.slot_minutes)

    def _lookup(self, zone: str, slot0: datetime) -> float | None:
        """The zone's intensity in ``slot0`` from its source (None: no data), cached."""
        source = self._source(zone)
        if source is None:
            return None
        try:
            value = source.forecast(slot0, 1).values_g_per_kwh[0]
        except CarbonshiftError as exc:
            _LOG.info("no intensity for zone %s now: %s", zone, exc)
            return None
        self._cache[(zone, slot0)] = value
        return value

    def now_g_per_kwh(self, zone: str) -> float | None:
        """The zone's intensity now, g/kWh (None: no data), looked up in this thread."""
        slot0 = self._slot0()
        cached = self._cache.get((zone, slot0))
        return cached if cached is not None else self._lookup(zone, slot0)

    def _start(self, zone: str, slot0: datetime) -> tuple[asyncio.Future[float | None], float]:
        """The lookup of ``zone`` in ``slot0`` running in a worker, started if none is."""
        key = (zone, slot0)
        running = self._pending.get(key)
        if running is not None:
            return running
        if self._pool is None:
            self._pool = ThreadPoolExecutor(LOOKUP_THREADS, thread_name_prefix="carbonshift-ext")
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._pool, self._lookup, zone, slot0)
        self._pending[key] = running = (future, loop.time() + self._wait_s)
        future.add_done_callback(lambda done: self._ended(key, done))
        return running

    def _ended(self, key: tuple[str, datetime], done: asyncio.Future[float | None]) -> None:
        self._pending.pop(key, None)
        if not done.cancelled() and done.exception() is not None:
            _LOG.error("extender: looking up zone %s failed", key[0], exc_info=done.exception())

    async def _gather(
        self, zones: set[str], slot0: datetime, deadline: float
    ) -> dict[str, float | None]:
        """``zones``' intensities in ``slot0``, waiting for their lookups until each one's
        end of wait or ``deadline`` (loop time), whichever comes first."""
        running = [self._start(z, slot0) for z in zones if (z, slot0) not in self._cache]
        if running:
            loop = asyncio.get_running_loop()
            wait_s = min(deadline, max(until for _, until in running)) - loop.time()
            if wait_s > 0:
                await asyncio.wait([future for future, _ in running], timeout=wait_s)
        return {zone: self._cache.get((zone, slot0)) for zone in zones}

    async def known(self, zones: Iterable[str], fallback: str | None = None) -> KnownIntensity:
        """The intensities now of ``zones`` known within the wait, and of ``fallback`` too
        when one of them is not (as :func:`_cost` reads them); at most ``carbon_wait_s``."""
        slot0 = self._slot0()
        deadline = asyncio.get_running_loop().time() + self._wait_s
        got = await self._gather(set(zones), slot0, deadline)
        if fallback is not None and fallback not in got and None in got.values():
            got.update(await self._gather({fallback}, slot0, deadline))
        return KnownIntensity(got)

    async def settle(self) -> None:
        """Wait until the lookups running now have ended (tests; routes never wait so long)."""
        running = [future for future, _ in self._pending.values()]
        if running:
            await asyncio.wait(running)


def _nodes_of(args: Obj, lookup: NodeLookup) -> list[Obj]:
    nodes = args.get("Nodes")
    if isinstance(nodes, dict) and nodes.get("items") is not None:
        return list(nodes["items"])
    out = []
    for name in args.get("NodeNames") or []:
        node = lookup(name)
        out.append(node if node is not None else {"metadata": {"name": name}})
    return out


def _node_meta(node: Obj, key: str) -> str | None:
    meta = node.get("metadata") or {}
    value = (meta.get("labels") or {}).get(key) or (meta.get("annotations") or {}).get(key)
    return None if value is None else str(value)


def _zone_of(node: Obj, config: ControllerConfig) -> str:
    return _node_meta(node, config.extender.node_zone_label) or config.cluster.zone


def _cost(node: Obj, config: ControllerConfig, carbon: ZoneIntensity) -> tuple[float | None, str]:
    raw_watts = _node_meta(node, config.extender.node_watts_label)
    try:
        watts = float(raw_watts) if raw_watts is not None else None
    except ValueError:
        watts = None
    if watts is None:
        watts = config.cluster.watts_per_unit.get("cpu", 1.0)
    zone = _zone_of(node, config)
    ci = carbon.now_g_per_kwh(zone)
    if ci is None:
        ci = carbon.now_g_per_kwh(config.cluster.zone)
    return (None if ci is None else watts * ci), zone


def _filter_acts(args: Obj, config: ControllerConfig, clock: Clock) -> bool:
    """Whether the filter looks at zones for ``args``: a limit is set and the pod is shiftable."""
    pod = args.get("Pod") or {}
    pod.setdefault("kind", "Pod")
    if config.extender.max_g_per_kwh is None:
        return False
    return isinstance(read_intent(pod, config, clock.now()), Intent)


def filter_nodes(
    args: Obj, config: ControllerConfig, clock: Clock, carbon: ZoneIntensity, lookup: NodeLookup
) -> Obj:
    """The ExtenderFilterResult for ``args``."""
    nodes = _nodes_of(args, lookup)
    failed: dict[str, str] = {}
    limit = config.extender.max_g_per_kwh
    if limit is not None and _filter_acts(args, config, clock):
        for node in nodes:
            zone = _zone_of(node, config)
            ci = carbon.now_g_per_kwh(zone)
            if ci is not None and ci > limit:
                failed[node["metadata"]["name"]] = (
                    f"carbonshift: zone {zone} is at {ci:.0f} g/kWh, above {limit:.0f}"
                )
        if len(failed) == len(nodes):
            failed = {}  # never leave a shiftable pod nowhere to go: the controller held it already
    kept = [n for n in nodes if n["metadata"]["name"] not in failed]
    by_names = args.get("Nodes") is None
    return {
        "Nodes": None if by_names else {"items": kept},
        "NodeNames": [n["metadata"]["name"] for n in kept] if by_names else None,
        "FailedNodes": failed,
        "FailedAndUnresolvableNodes": {},
        "Error": "",
    }


def prioritize(
    args: Obj, config: ControllerConfig, carbon: ZoneIntensity, lookup: NodeLookup
) -> list[Obj]:
    """The HostPriorityList for ``args``: 10 for the cheapest watts x g/kWh, 0 the costliest."""
    nodes = _nodes_of(args, lookup)
    costs = {n["metadata"]["name"]: _cost(n, config, carbon)[0] for n in nodes}
    known = [c for c in costs.values() if c is not None]
    low, high = (min(known), max(known)) if known else (0.0, 0.0)
    out = []
    for name, cost in costs.items():
        if cost is None or high - low <= 1e-12:
            score = MAX_EXTENDER_PRIORITY // 2 if cost is None else MAX_EXTENDER_PRIORITY
        else:
            score = round(MAX_EXTENDER_PRIORITY * (high - cost) / (high - low))
        out.append({"Host": name, "Score": int(score)})
    return out


def extender_app(
    config: ControllerConfig,
    clock: Clock,
    lookup: NodeLookup | None = None,
    source: CarbonSource | None = None,
) -> FastAPI:
    """The extender's HTTP app: ``POST /filter`` and ``POST /prioritize``.

    ``source`` is the controller's planning source, so scores and plans read the same data."""
    app = FastAPI(title="carbonshift scheduler extender", docs_url=None, redoc_url=None)
    carbon = ZoneCarbon(config, clock, source)
    app.state.carbon = carbon  # the intensity cache and its lookups (tests, tools)
    find: NodeLookup = lookup or (lambda name: None)

    async def _args(request: Request) -> Any:
        """The ExtenderArgs (None when the body is no JSON); too large: the 413 answer."""
        try:
            return await read_json(request, MAX_EXTENDER_ARGS_BYTES, "the ExtenderArgs")
        except BodyTooLargeError as exc:
            _LOG.warning("extender: %s", exc)
            return too_large_answer(exc)

    @app.post("/filter")
    async def filter_route(request: Request) -> JSONResponse:
        args = await _args(request)
        if isinstance(args, JSONResponse):
            return args
        if not isinstance(args, dict):
            return JSONResponse(
                {
                    "Nodes": None,
                    "NodeNames": None,
                    "FailedNodes": {},
                    "FailedAndUnresolvableNodes": {},
                    "Error": "carbonshift: the body is not ExtenderArgs JSON",
                }
            )
        try:
            acts = _filter_acts(args, config, clock)
            zones = [_zone_of(n, config) for n in _nodes_of(args, find)] if acts else []
            known = await carbon.known(zones)
            return JSONResponse(filter_nodes(args, config, clock, known, find))
        except Exception as exc:  # fail open: pass every node
            _LOG.exception("extender filter failed")
            names = [n["metadata"]["name"] for n in _nodes_of(args, find)]
            return JSONResponse(
                {
                    "Nodes": args.get("Nodes"),
                    "NodeNames": None if args.get("Nodes") else names,
                    "FailedNodes": {},
                    "FailedAndUnresolvableNodes": {},
                    "Error": "" if names else repr(exc),
                }
            )

    @app.post("/prioritize")
    async def prioritize_route(request: Request) -> JSONResponse:
        args = await _args(request)
        if isinstance(args, JSONResponse):
            return args
        if not isinstance(args, dict):
            return JSONResponse([])
        try:
            zones = [_zone_of(n, config) for n in _nodes_of(args, find)]
            known = await carbon.known(zones, fallback=config.cluster.zone)
            return JSONResponse(prioritize(args, config, known, find))
        except Exception:  # no preference rather than a failed scheduling cycle
            _LOG.exception("extender prioritize failed")
            return JSONResponse(
                [{"Host": n["metadata"]["name"], "Score": 0} for n in _nodes_of(args, find)]
            )

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
