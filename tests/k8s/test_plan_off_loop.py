"""The controller plans in a worker thread: while the carbon source hangs (a provider waiting
for its timeouts), the event loop keeps serving /metrics, the admission webhook, the
extender's scores and the webhook's health; the plan then completes and is acted on.

On code that planned on the event loop each test fails at ``assert_still_blocked``: the loop
could serve nothing until the forecast gave up waiting (``tests/k8s/stall.py``, BLOCK_S)."""

from __future__ import annotations

import asyncio
import ssl
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakekube import FakeKube
from tests.k8s.harness import controller_config, make_harness
from tests.k8s.objects import pod
from tests.k8s.stall import BLOCK_S, Gate, Ticker

START = datetime(2023, 6, 1, tzinfo=UTC)
pytestmark = pytest.mark.fakekube_config(start=START, nodes=2, cpu="8")
SPEC = {"carbonshift.io/deadline": "20h", "carbonshift.io/expected-runtime": "2h"}


def fresh(name: str) -> dict[str, Any]:
    obj = pod(name, created=None, annotations=SPEC)
    obj["metadata"].pop("uid", None)
    return obj


def gated(obj: dict[str, Any]) -> bool:
    return any(
        g.get("name") == "carbonshift.io/hold" for g in obj["spec"].get("schedulingGates", [])
    )


async def test_the_loop_serves_while_the_plan_waits_for_the_carbon_source(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    h = await make_harness(fakekube, tmp_path)
    app = await h.start(controller_config(h.certs))
    gate = Gate(h.controller.source)
    ticker = Ticker().start()
    try:
        await h.create(fresh("first"))  # its arrival starts a planning pass (plan_on_arrival)
        await gate.wait_entered()

        # the forecast hangs; the loop meanwhile: ticks, answers /metrics, admits a Pod
        assert await ticker.ticked(at_least=5) >= 5
        async with httpx.AsyncClient(timeout=10) as http:
            scraped = await http.get(f"{app.servers['metrics'].url}/metrics")
        assert scraped.status_code == 200
        assert "carbonshift_reconcile_duration_seconds" in scraped.text
        second = await h.create(fresh("second"))  # the API server calls the webhook
        assert gated(second), "the webhook did not answer in time: the Pod was admitted ungated"
        gate.assert_still_blocked("the loop served /metrics and the webhook")
        assert h.controller.outcomes == {}  # nothing planned yet

        gate.release.set()
        await h.step()  # the pass ends, acts; the second Pod's pass follows
        assert gate.released_in_time is True
        assert gate.threads[0] != threading.get_ident(), "the forecast ran on the loop's thread"
        for name in ("first", "second"):
            got = await h.get("Pod", name)
            notes = got["metadata"]["annotations"]
            assert notes["carbonshift.io/state"] == "held", (name, notes)
            assert "carbonshift.io/planned-start" in notes
            assert gated(got)
        assert {"Pod/batch/first", "Pod/batch/second"} <= set(h.controller.outcomes)
        assert h.controller.rounds >= 1
    finally:
        gate.release.set()
        await ticker.stop()
        await h.stop()


async def test_readers_of_the_source_answer_consistently_during_a_plan(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    """The webhook's health (the freshness board), the extender's scores (the same source's
    forecast, from the loop) and the source's error count, read while the plan's forecast
    hangs in the worker thread: they answer at once, without errors, and agree with what the
    plan then records."""
    h = await make_harness(fakekube, tmp_path)
    app = await h.start(controller_config(h.certs))
    source = h.controller.source
    gate = Gate(source)  # only the first forecast (the plan's) hangs
    webhook, extender = app.servers["webhook"].url, app.servers["extender"].url
    args = {"Pod": fresh("scored"), "Nodes": None, "NodeNames": ["node-0", "node-1"]}
    trust = ssl.create_default_context(cadata=h.certs.ca_pem.decode())
    try:
        await h.create(fresh("first"))
        await gate.wait_entered()
        async with httpx.AsyncClient(verify=trust, timeout=10) as http:
            for _ in range(20):
                health = (await http.get(f"{webhook}/healthz")).json()
                assert health == {"status": "ok", "reasons": []}
                scores = (await http.post(f"{extender}/prioritize", json=args)).json()
                assert sorted(s["Host"] for s in scores) == ["node-0", "node-1"]
                assert all(0 <= s["Score"] <= 10 for s in scores)
                assert source.errors == 0
            gate.assert_still_blocked("the readers answered")
            gate.release.set()
            await h.step()
            health = (await http.get(f"{webhook}/healthz")).json()
        assert health == {"status": "ok", "reasons": []}
        assert set(source.board.latest()) == {"DE"}
        assert source.errors == 0
        errors = h.controller.metrics.registry.get_sample_value(
            "carbonshift_errors_total", {"stage": "pass"}
        )
        assert not errors
        notes = (await h.get("Pod", "first"))["metadata"]["annotations"]
        assert notes["carbonshift.io/state"] == "held"
    finally:
        gate.release.set()
        await h.stop()


async def test_stopping_during_a_plan_gives_the_lease_up_and_acts_on_nothing(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    """The app stops while its plan waits in the worker thread: the pass is abandoned (its
    plan is not acted on), the Lease is given up at once; the thread ends by itself."""
    h = await make_harness(fakekube, tmp_path)
    await h.start(controller_config(h.certs))
    gate = Gate(h.controller.source)
    controller = h.controller
    try:
        await h.create(fresh("first"))
        await gate.wait_entered()
        await asyncio.wait_for(h.stop(), timeout=BLOCK_S / 2)
        gate.assert_still_blocked("the app stopped")
        lease = await asyncio.to_thread(
            fakekube.get,
            "Lease",
            "carbonshift-controller",
            "carbonshift-system",
            "coordination.k8s.io/v1",
        )
        assert not lease["spec"].get("holderIdentity")
    finally:
        gate.release.set()
    assert await asyncio.to_thread(gate.returned.wait, 10)
    await asyncio.sleep(0.1)
    notes = (await h.get("Pod", "first"))["metadata"].get("annotations") or {}
    assert "carbonshift.io/planned-start" not in notes  # the abandoned plan wrote nothing
    assert controller.outcomes == {}
    assert controller.rounds == 0
