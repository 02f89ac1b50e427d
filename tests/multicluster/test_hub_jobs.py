"""Hub/spoke batch/v1 Jobs on a fake hub and two fake spokes, in virtual time (fast tier)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from datetime import UTC, datetime

from carbonshift.k8s.multicluster import HubConfig, HubController
from carbonshift.k8s.multicluster.hub import MAX_EVENTS
from carbonshift.k8s.multicluster.workloads import (
    HUB_UID_LABEL,
    PLACED_CLUSTER,
    PLANNED_CLUSTER,
    PLANNED_START,
    REASON,
    SPOKE_STATUS,
    STATE_LABEL,
)
from carbonshift.units import parse_utc
from tests.multicluster.harness import fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)


async def test_a_hub_job_is_held_then_runs_once_in_the_planned_spoke_at_the_planned_time() -> None:
    async with fleet(START) as f:
        await f.create(f.hub, hub_job("train", cpu=4, runtime_h=2, deadline_h=14))
        controller = await f.start_controller()
        await f.step(0)
        held = await f.get(f.hub, "Job", "train", "batch", "batch/v1")
        notes = held["metadata"]["annotations"]
        want_cluster, want_start = notes[PLANNED_CLUSTER], parse_utc(notes[PLANNED_START])
        assert held["spec"]["suspend"] is True
        assert notes[REASON]
        seen_running = None
        for _ in range(4 * 14):
            await f.step(15)
            for name, spoke in f.spokes.items():
                for job in await f.list(spoke, "Job", "batch", "batch/v1"):
                    seen_running = seen_running or (name, job)
            hub = await f.get(f.hub, "Job", "train", "batch", "batch/v1")
            if any(c["type"] == "Complete" for c in hub.get("status", {}).get("conditions", [])):
                break
        assert seen_running is not None, "the job never reached a spoke"
        ran_in, copy_ = seen_running
        assert ran_in == want_cluster
        assert parse_utc(copy_["status"]["startTime"]) == want_start
        assert copy_["metadata"]["labels"][HUB_UID_LABEL] == held["metadata"]["uid"]
        hub = await f.get(f.hub, "Job", "train", "batch", "batch/v1")
        assert hub["metadata"]["annotations"][PLACED_CLUSTER] == want_cluster
        assert hub["status"]["succeeded"] == 1
        assert parse_utc(hub["status"]["startTime"]) == want_start
        assert json.loads(hub["metadata"]["annotations"][SPOKE_STATUS])["cluster"] == want_cluster
        for spoke in f.spokes.values():  # cleaned up
            assert await f.list(spoke, "Job", "batch", "batch/v1") == []
        assert controller.counters.spoke_creates == 1


async def test_run_reconciles_every_resync_period_of_the_clock() -> None:
    async with fleet(START) as f:
        controller = await f.start_controller()
        task = asyncio.create_task(controller.run(resync_s=600))

        async def wait_for(done: Callable[[], bool]) -> bool:
            for _ in range(300):  # real time, for the background task
                if done():
                    return True
                await asyncio.sleep(0.01)
            return False

        def released() -> bool:
            return any(e.what == "released" for e in controller.events)

        try:
            assert await wait_for(lambda: controller.counters.plans >= 1)  # the first pass
            await f.create(f.hub, hub_job("urgent", cpu=2, runtime_h=1, deadline_h=1))
            assert not await wait_for(released), "reconciled before the resync period"
            for kube in f.kubes:
                await kube.advance_async(minutes=10)
            f.clock.poke()
            assert await wait_for(released)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        assert [e.key for e in controller.events if e.what == "released"] == ["Job/batch/urgent"]


def test_the_event_history_is_bounded() -> None:
    controller = HubController(HubConfig(), None, None)  # type: ignore[arg-type]
    for i in range(MAX_EVENTS + 1):
        controller._event(START, f"Job/batch/j{i}", "planned")
    assert len(controller.events) == MAX_EVENTS // 2
    assert controller.events_dropped == MAX_EVENTS + 1 - MAX_EVENTS // 2
    assert controller.events[-1].key == f"Job/batch/j{MAX_EVENTS}"


async def test_the_hub_leaves_one_cluster_jobs_alone() -> None:
    # issue 14: the hub also copied Jobs opted in for a one-cluster controller on the same
    # cluster; it acts only on Jobs labelled carbonshift.io/hub: "true"
    async with fleet(START) as f:
        local = hub_job("local", cpu=1, runtime_h=1, deadline_h=1)
        local["metadata"]["labels"] = {"carbonshift.io/managed": "true"}
        await f.create(f.hub, local)
        await f.create(f.hub, hub_job("placed", cpu=1, runtime_h=1, deadline_h=1))
        controller = await f.start_controller()
        await f.step(0)
        left = await f.get(f.hub, "Job", "local", "batch", "batch/v1")
        assert not [k for k in left["metadata"].get("annotations") or {} if "planned" in k]
        copies = [
            j["metadata"]["name"]
            for spoke in f.spokes.values()
            for j in await f.list(spoke, "Job", "batch", "batch/v1")
        ]
        assert copies == ["placed"]
        assert {e.key for e in controller.events if e.key.startswith("Job/")} == {
            "Job/batch/placed"
        }


async def _selected(controller: HubController, selector: str) -> list[str]:
    """Job names a label selector lists over HTTP, as ``kubectl get jobs -l SELECTOR``."""
    items = await controller.hub.list_items("/apis/batch/v1/jobs", labelSelector=selector)
    return sorted(item["metadata"]["name"] for item in items)


async def test_hub_held_jobs_are_listed_by_the_state_label_until_released() -> None:
    # issue 16: `kubectl get jobs -l carbonshift.io/state=held` lists what the hub holds
    async with fleet(START) as f:
        await f.create(f.hub, hub_job("train", cpu=4, runtime_h=2, deadline_h=14))
        await f.create(f.hub, hub_job("urgent", cpu=1, runtime_h=1, deadline_h=1))
        controller = await f.start_controller()
        await f.step(0)
        want_held = ["train"]
        assert await _selected(controller, f"{STATE_LABEL}=held") == want_held
        assert await _selected(controller, f"{STATE_LABEL}=released") == ["urgent"]
        train = await f.get(f.hub, "Job", "train", "batch", "batch/v1")
        want_start = parse_utc(train["metadata"]["annotations"][PLANNED_START])
        while f.now() < want_start:
            await f.step(15)
        await f.step(0)
        assert await _selected(controller, f"{STATE_LABEL}=held") == []
        assert await _selected(controller, f"{STATE_LABEL}=released") == ["train", "urgent"]
