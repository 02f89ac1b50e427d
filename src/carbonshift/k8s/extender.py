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
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

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

__all__ = ["MAX_EXTENDER_PRIORITY", "ZoneCarbon", "extender_app", "filter_nodes", "prioritize"]

_LOG = logging.getLogger("carbonshift.k8s")
MAX_EXTENDER_PRIORITY = 10

NodeLookup = Callable[[str], Obj | None]


class ZoneCarbon:
    """Current intensity per zone (slot 0 of the configured carbon source), cached per slot.

    The source is the one planning uses (``planning.carbon_source``): the cluster's own zone
    reads the controller's source itself when given (``planning``), other zones a source of
    the same kind; with ``providers``, one provider chain serves every zone.
    """

    def __init__(
        self, config: ControllerConfig, clock: Clock, planning: CarbonSource | None = None
    ) -> None:
        self._config = config
        self._clock = clock
        self._sources: dict[str, CarbonSource | None] = {}
        if planning is not None:
            self._sources[config.cluster.zone] = planning
        self._chain: FallbackChain | None = None
        self._cache: dict[tuple[str, object], float] = {}

    def _make(self, zone: str) -> CarbonSource:
        cluster = self._config.cluster.model_copy(update={"zone": zone})
        config = self._config.model_copy(update={"cluster": cluster})
        if config.planning.carbon_source != "providers":
            return CarbonSource(config)
        if self._chain is None:
            self._chain = build_chains(ProviderSettings.from_env()).chain(CiKind.DIRECT)
        return ProviderCarbonSource(config, self._chain)

    def _source(self, zone: str) -> CarbonSource | None:
        if zone not in self._sources:
            try:
                self._sources[zone] = self._make(zone)
            except CarbonshiftError as exc:
                _LOG.info("no carbon data for zone %s: %s", zone, exc)
                self._sources[zone] = None
        return self._sources[zone]

    def now_g_per_kwh(self, zone: str) -> float | None:
        slot0 = slot_floor(self._clock.now(), self._config.planning.slot_minutes)
        key = (zone, slot0)
        if key not in self._cache:
            source = self._source(zone)
            if source is None:
                return None
            try:
                self._cache[key] = source.forecast(slot0, 1).values_g_per_kwh[0]
            except CarbonshiftError as exc:
                _LOG.info("no intensity for zone %s now: %s", zone, exc)
                return None
        return self._cache[key]


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


def _cost(node: Obj, config: ControllerConfig, carbon: ZoneCarbon) -> tuple[float | None, str]:
    raw_watts = _node_meta(node, config.extender.node_watts_label)
    try:
        watts = float(raw_watts) if raw_watts is not None else None
    except ValueError:
        watts = None
    if watts is None:
        watts = config.cluster.watts_per_unit.get("cpu", 1.0)
    zone = _node_meta(node, config.extender.node_zone_label) or config.cluster.zone
    ci = carbon.now_g_per_kwh(zone)
    if ci is None:
        ci = carbon.now_g_per_kwh(config.cluster.zone)
    return (None if ci is None else watts * ci), zone


def filter_nodes(
    args: Obj, config: ControllerConfig, clock: Clock, carbon: ZoneCarbon, lookup: NodeLookup
) -> Obj:
    """The ExtenderFilterResult for ``args``."""
    pod = args.get("Pod") or {}
    pod.setdefault("kind", "Pod")
    nodes = _nodes_of(args, lookup)
    failed: dict[str, str] = {}
    limit = config.extender.max_g_per_kwh
    if limit is not None and isinstance(read_intent(pod, config, clock.now()), Intent):
        for node in nodes:
            zone = _node_meta(node, config.extender.node_zone_label) or config.cluster.zone
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
    args: Obj, config: ControllerConfig, carbon: ZoneCarbon, lookup: NodeLookup
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
            return JSONResponse(filter_nodes(args, config, clock, carbon, find))
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
            return JSONResponse(prioritize(args, config, carbon, find))
        except Exception:  # no preference rather than a failed scheduling cycle
            _LOG.exception("extender prioritize failed")
            return JSONResponse(
                [{"Host": n["metadata"]["name"], "Score": 0} for n in _nodes_of(args, find)]
            )

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
