"""The scheduler extender looks zone intensities up off the event loop: while the carbon
source hangs (a provider waiting for its timeouts), ``/prioritize`` and ``/filter`` answer
after at most ``extender.carbon_wait_s`` as for a zone with no data, the loop keeps turning,
one lookup per zone and slot goes on in a worker thread, and the next request reads what it
found.

On code that looked up on the event loop each test fails at ``assert_still_blocked`` or at
the no-data answer: the request (and the loop) waited until the forecast gave up waiting
(``tests/k8s/stall.py``, BLOCK_S), then answered with the zone's intensity."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime
from typing import Any

import httpx

from carbonshift.carbon.embedded import load_series
from carbonshift.k8s.config import ControllerConfig, parse_config
from carbonshift.k8s.extender import extender_app
from carbonshift.k8s.planner import CarbonSource
from tests.builders import FrozenClock
from tests.k8s.objects import node, pod
from tests.k8s.stall import Gate, Ticker

NOW = datetime(2023, 6, 1, 12, tzinfo=UTC)
NODES = [
    node("de-hungry", labels={"carbonshift.io/watts-per-core": "20"}),  # the cluster's zone, DE
    node("de-lean", labels={"carbonshift.io/watts-per-core": "5"}),
    node(
        "ca-lean",
        labels={"carbonshift.io/watts-per-core": "5", "carbonshift.io/grid-zone": "CA-ON"},
    ),
]
DE_NODES = {"Pod": pod(), "Nodes": {"items": NODES[:2]}, "NodeNames": None}
ALL_NODES = {"Pod": pod(), "Nodes": {"items": NODES}, "NodeNames": None}


def intensity(zone: str) -> float:
    series = load_series(zone)
    return float(series.values_g_per_kwh[int((NOW - series.start).total_seconds() // 3600)])


def config(**extender: Any) -> ControllerConfig:
    limit = (intensity("CA-ON") + intensity("DE")) / 2  # DE is above it, CA-ON below
    return parse_config(
        {
            "cluster": {"zone": "DE"},
            "planning": {"forecast": "oracle"},
            "extender": {"max_g_per_kwh": limit} | extender,
        }
    )


def gated_extender(**extender: Any) -> tuple[httpx.AsyncClient, Gate, Any]:
    """A client of the real extender app whose DE lookups (the planning source) block."""
    cfg = config(**extender)
    planning = CarbonSource(cfg)
    gate = Gate(planning)
    app = extender_app(cfg, FrozenClock(NOW), source=planning)
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ext")
    return http, gate, app


def scores(answer: httpx.Response) -> dict[str, int]:
    return {entry["Host"]: entry["Score"] for entry in answer.json()}


async def test_requests_answer_with_no_data_while_the_lookup_hangs_then_read_it() -> None:
    http, gate, app = gated_extender()
    ticker = Ticker().start()
    try:
        before = ticker.ticks
        prioritized = await http.post("/prioritize", json=DE_NODES)
        assert ticker.ticks - before >= 5, "the loop stood still while the request waited"
        gate.assert_still_blocked("/prioritize answered")
        # no intensity for DE (nor for the cluster's zone, DE): the middle score, as for no data
        assert scores(prioritized) == {"de-hungry": 5, "de-lean": 5}

        filtered = (await http.post("/filter", json=ALL_NODES)).json()
        gate.assert_still_blocked("/filter answered")
        # DE's intensity is not known: its nodes are not filtered (CA-ON is clean anyway)
        assert filtered["FailedNodes"] == {}
        assert [n["metadata"]["name"] for n in filtered["Nodes"]["items"]] == [
            "de-hungry",
            "de-lean",
            "ca-lean",
        ]
        assert filtered["Error"] == ""

        # the source answers: the lookup fills the cache, the next requests read it
        gate.release.set()
        await app.state.carbon.settle()  # the lookup has ended
        assert gate.released_in_time is True
        assert gate.threads[0] != threading.get_ident(), "the forecast ran on the loop's thread"
        assert scores(await http.post("/prioritize", json=DE_NODES)) == {
            "de-hungry": 0,
            "de-lean": 10,
        }
        filtered = (await http.post("/filter", json=ALL_NODES)).json()
        assert set(filtered["FailedNodes"]) == {"de-hungry", "de-lean"}
        assert [n["metadata"]["name"] for n in filtered["Nodes"]["items"]] == ["ca-lean"]
        assert len(gate.threads) == 1, "the cached intensity was looked up again"
    finally:
        gate.release.set()
        await ticker.stop()


async def test_prioritize_falls_back_to_the_cluster_zone_for_a_zone_not_known_in_time() -> None:
    http, gate, app = gated_extender()
    try:
        # CA-ON answers at once, DE (the cluster's zone) hangs: CA-ON's node alone has a cost
        got = scores(await http.post("/prioritize", json=ALL_NODES))
        gate.assert_still_blocked("/prioritize answered")
        assert got == {"de-hungry": 5, "de-lean": 5, "ca-lean": 10}
        gate.release.set()
        await app.state.carbon.settle()  # the lookup has ended
        want = round(
            10
            * (20 * intensity("DE") - 5 * intensity("DE"))
            / (20 * intensity("DE") - 5 * intensity("CA-ON"))
        )
        assert scores(await http.post("/prioritize", json=ALL_NODES)) == {
            "de-hungry": 0,
            "de-lean": want,
            "ca-lean": 10,
        }
    finally:
        gate.release.set()


async def test_concurrent_requests_start_one_lookup_per_zone_and_slot() -> None:
    http, gate, app = gated_extender()
    try:
        answers = await asyncio.gather(
            *(http.post("/prioritize", json=DE_NODES) for _ in range(4)),
            *(http.post("/filter", json=ALL_NODES) for _ in range(4)),
        )
        gate.assert_still_blocked("eight requests answered")
        assert [scores(a) for a in answers[:4]] == [{"de-hungry": 5, "de-lean": 5}] * 4
        assert all(a.json()["FailedNodes"] == {} for a in answers[4:])
        # a request after the first one's wait ended answers at once: the lookup still runs
        assert scores(await http.post("/prioritize", json=DE_NODES)) == {
            "de-hungry": 5,
            "de-lean": 5,
        }
        gate.assert_still_blocked("a ninth request answered")
        assert len(gate.threads) == 1, f"{len(gate.threads)} lookups of DE, not one"
        gate.release.set()
        await app.state.carbon.settle()  # the lookup has ended
        assert scores(await http.post("/prioritize", json=DE_NODES)) == {
            "de-hungry": 0,
            "de-lean": 10,
        }
        assert len(gate.threads) == 1
    finally:
        gate.release.set()


async def test_a_wait_of_zero_answers_at_once_and_the_lookup_fills_the_cache() -> None:
    http, gate, app = gated_extender(carbon_wait_s=0)
    try:
        assert scores(await http.post("/prioritize", json=DE_NODES)) == {
            "de-hungry": 5,
            "de-lean": 5,
        }
        gate.assert_still_blocked("/prioritize answered")
        gate.release.set()
        await app.state.carbon.settle()
        assert scores(await http.post("/prioritize", json=DE_NODES)) == {
            "de-hungry": 0,
            "de-lean": 10,
        }
    finally:
        gate.release.set()
