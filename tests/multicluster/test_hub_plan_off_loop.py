"""The hub plans in a worker thread: while a spoke's carbon source hangs (a provider waiting
for its timeouts), the event loop keeps serving /metrics and other coroutines; the plan then
completes and is acted on.

On code that planned on the event loop the test fails at ``assert_still_blocked``: the loop
could serve nothing until the forecast gave up waiting (``tests/k8s/stall.py``, BLOCK_S)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from datetime import UTC, datetime

import httpx
from prometheus_client import make_asgi_app

from carbonshift.k8s.app import serve
from carbonshift.k8s.multicluster.workloads import PLANNED_CLUSTER, PLANNED_START
from tests.k8s.stall import Gate, Ticker
from tests.multicluster.harness import fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)


async def test_the_hub_loop_serves_while_its_plan_waits_for_the_carbon_source() -> None:
    async with fleet(START) as f:
        controller = await f.start_controller()
        await f.step(0)  # the inventory makes each spoke's source; nothing to plan yet
        assert set(controller.sources) == set(f.spokes)
        gate = Gate(*controller.sources.values())
        section = f.config.metrics.model_copy(update={"host": "127.0.0.1", "port": 0})
        metrics = await serve(
            "metrics", make_asgi_app(controller.metrics.registry), section, tls=False
        )
        ticker = Ticker().start()
        task: asyncio.Task[object] | None = None
        try:
            await f.create(f.hub, hub_job("train", cpu=4, runtime_h=2, deadline_h=14))
            await f.caught_up()
            task = asyncio.create_task(controller.reconcile())
            await gate.wait_entered()

            assert await ticker.ticked(at_least=5) >= 5
            async with httpx.AsyncClient(timeout=10) as http:
                scraped = await http.get(f"{metrics.url}/metrics")
            assert scraped.status_code == 200
            assert "carbonshift_hub_phase_duration_seconds" in scraped.text
            gate.assert_still_blocked("the loop served /metrics")
            assert not task.done()

            gate.release.set()
            round_ = await task
            assert gate.released_in_time is True
            assert gate.threads[0] != threading.get_ident(), "the forecast ran on the loop's thread"
            assert round_ is not None
            decision = round_.decisions["Job/batch/train"]
            assert decision.cluster in f.spokes
            await f.settle()
            held = await f.get(f.hub, "Job", "train", "batch", "batch/v1")
            notes = held["metadata"]["annotations"]
            assert notes[PLANNED_CLUSTER] == decision.cluster
            assert notes[PLANNED_START]
            assert controller.counters.plans >= 1
        finally:
            gate.release.set()
            if task is not None:
                with contextlib.suppress(Exception):
                    await task
            await ticker.stop()
            metrics.server.should_exit = True
            await metrics.task
