"""The collector tuned at the start and the heap settled once the first lists are stored,
by the process's entry points only
(``carbonshift controller`` through ``ControllerApp.connect``, ``carbonshift hub``), never by
a controller that a test builds (bench/controller.md, 2026-11-27, has what it saves)."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import pytest

from carbonshift.k8s import heap
from carbonshift.k8s.app import ControllerApp
from carbonshift.k8s.client import connect
from fakekube import FakeKube
from tests.k8s.harness import WEBHOOK_NS, controller_config, make_harness


def test_settle_collects_then_freezes_what_is_alive() -> None:
    garbage: list[object] = []
    garbage.append(garbage)  # a cycle only the collector frees
    del garbage
    gc.unfreeze()
    try:
        heap.settle()
        assert gc.get_freeze_count() > 0
        assert gc.get_count()[0] < 100  # the collection ran just before the freeze
    finally:
        gc.unfreeze()


def test_prepare_raises_only_the_young_threshold() -> None:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        heap.prepare()
        assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, 10, 10)
        gc.set_threshold(50_000, 20, 30)
        heap.prepare()  # never lowers what the process set higher
        assert gc.get_threshold() == (50_000, 20, 30)
    finally:
        gc.set_threshold(*before)


def _recording(controller_nodes: list[int], app: list[ControllerApp]) -> object:
    def settle() -> None:  # what the cache holds when the heap is settled
        assert app[0].controller is not None
        controller_nodes.append(len(app[0].controller.nodes))

    return settle


@pytest.mark.parametrize(
    ("entry", "want_calls"),
    [
        pytest.param("connect", 1, id="the process's entry settles once, after the first list"),
        pytest.param("built", 0, id="an app a test builds leaves the heap alone"),
    ],
)
async def test_the_controller_entry_tunes_the_collector_and_settles_after_its_first_list(
    fakekube: FakeKube,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    entry: str,
    want_calls: int,
) -> None:
    h = await make_harness(fakekube, tmp_path)
    kubeconfig = await asyncio.to_thread(
        fakekube.service_account_kubeconfig, WEBHOOK_NS, "carbonshift-controller"
    )
    config = controller_config(h.certs, leader_election={"enabled": False})
    want_nodes = len(await asyncio.to_thread(fakekube.list, "Node", None))
    if entry == "connect":
        app = await ControllerApp.connect(config, str(kubeconfig), h.clock)
    else:
        app = ControllerApp(config, await connect(str(kubeconfig), h.clock), h.clock)
    seen: list[int] = []
    prepared: list[int] = []
    monkeypatch.setattr(heap, "settle", _recording(seen, [app]))
    monkeypatch.setattr(heap, "prepare", lambda: prepared.append(len(seen)))
    await app.start()
    try:
        assert app.controller is not None
        await app.controller.until_idle()
        assert prepared == [0] * want_calls  # at the start, before the first list
        assert seen == [want_nodes] * want_calls
        assert want_nodes > 0
    finally:
        await app.stop()
