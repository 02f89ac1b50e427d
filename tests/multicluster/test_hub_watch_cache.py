"""The hub reads its objects and the spoke copies from watch-fed caches, not lists per pass.

Requests are counted at ``ApiKube._send`` (the one transport seam), never timed: a pass on
warm caches lists no hub objects and GETs no copy one by one; a pass with nothing new writes
nothing; a watch answered 410 relists; a copy deleted in a spoke is seen and made again.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from carbonshift.k8s.client import ApiKube
from carbonshift.k8s.keys import PLACED_CLUSTER, PLANNED_START
from carbonshift.k8s.multicluster import HubConfig, workloads
from carbonshift.k8s.multicluster.workloads import APPWRAPPERS, JOBS, WORKLOADS
from fakekube import FakeKube
from tests.multicluster.harness import HOLD_OFF, Fleet, fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)
FLUIDOS = HubConfig.model_validate(
    {"planning": {"policy": "fluidos", "forecast": "oracle", **HOLD_OFF}}
)
WRITES = ("POST", "PUT", "PATCH", "DELETE")

Sent = list[tuple[str, str, str, dict[str, str]]]


def count_requests(monkeypatch: pytest.MonkeyPatch) -> Sent:
    """(host, method, path, query) of every request any ApiKube sends from now on."""
    sent: Sent = []
    original = ApiKube._send

    async def counting(kube: ApiKube, method: str, path: str, **kwargs: Any) -> Any:
        host = str(kube._client.configuration.host)
        sent.append((host, method, path, dict(kwargs.get("query") or {})))
        return await original(kube, method, path, **kwargs)

    monkeypatch.setattr(ApiKube, "_send", counting)
    return sent


def hub_lists(sent: Sent) -> list[str]:
    return [
        p
        for _, m, p, q in sent
        if m == "GET" and p in (JOBS, WORKLOADS, APPWRAPPERS) and q.get("watch") != "true"
    ]


async def started(f: Fleet) -> None:
    """Two jobs that start at once (deadline = runtime) and two that can wait, one pass to
    place them and one more so that the spoke copies' status has been mirrored back."""
    await f.create(f.hub, hub_job("now-0", cpu=2, runtime_h=2, deadline_h=2))
    await f.create(f.hub, hub_job("now-1", cpu=2, runtime_h=2, deadline_h=2))
    await f.create(f.hub, hub_job("later-0", cpu=2, runtime_h=1, deadline_h=20))
    await f.create(f.hub, hub_job("later-1", cpu=2, runtime_h=1, deadline_h=20))
    await f.start_controller()
    await f.step(0)
    await f.step(0)


async def test_a_pass_on_warm_caches_lists_nothing_and_a_quiet_pass_writes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with fleet(START, config=FLUIDOS) as f:
        await started(f)
        controller = f.controller
        assert controller is not None
        placed = (await f.get(f.hub, "Job", "now-0", "batch", "batch/v1"))["metadata"]
        assert placed["annotations"].get(PLACED_CLUSTER)  # the copies exist in a spoke
        held = (await f.get(f.hub, "Job", "later-0", "batch", "batch/v1"))["metadata"]
        assert held["annotations"].get(PLANNED_START)
        await f.caught_up()
        sent = count_requests(monkeypatch)

        await controller.reconcile()

        assert hub_lists(sent) == [], "\n".join(str(x) for x in sent if x[1] == "GET")
        copy_reads = [p for _, m, p, _ in sent if m == "GET" and "/jobs/" in p]
        assert copy_reads == []  # no GET of a spoke copy (or a hub Job) one by one
        writes = [(h, m, p) for h, m, p, _ in sent if m in WRITES]
        assert writes == []


async def test_a_watch_answered_410_relists_and_sees_what_it_missed() -> None:
    async with fleet(START, config=FLUIDOS) as f:
        await started(f)
        controller = f.controller
        assert controller is not None
        jobs = controller._caches[JOBS]
        lists_before = jobs.lists
        await f.create(  # not watched: it moves the store's version past the watch's
            f.hub,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "x", "namespace": "batch"},
            },
        )
        f.hub.compact()  # the watch's version is now too old: 410 on its next start
        f.hub.drop_watches()
        await f.create(f.hub, hub_job("late", cpu=2, runtime_h=1, deadline_h=20))
        await f.caught_up()
        assert jobs.lists == lists_before + 1
        assert "batch/late" in jobs.items
        await f.step(0)
        late = (await f.get(f.hub, "Job", "late", "batch", "batch/v1"))["metadata"]
        assert late["annotations"].get(PLANNED_START)  # planned from the relisted cache


async def test_a_copy_deleted_in_its_spoke_is_seen_and_made_again() -> None:
    async with fleet(START, config=FLUIDOS) as f:
        await started(f)
        controller = f.controller
        assert controller is not None
        hub_meta = (await f.get(f.hub, "Job", "now-0", "batch", "batch/v1"))["metadata"]
        cluster = hub_meta["annotations"][PLACED_CLUSTER]
        spoke = f.spokes[cluster]
        old = await f.get(spoke, "Job", "now-0", "batch", "batch/v1")
        creates = controller.counters.spoke_creates

        await f.delete(spoke, "Job", "now-0", "batch", "batch/v1")
        await f.settle()  # its pods go first (background propagation), then the Job
        await f.caught_up()
        copies = controller.spokes[cluster].copies
        assert copies is not None
        assert "batch/now-0" not in copies.items
        await f.step(0)

        again = await f.get(spoke, "Job", "now-0", "batch", "batch/v1")
        assert again["metadata"]["uid"] != old["metadata"]["uid"]
        assert controller.counters.spoke_creates == creates + 1


async def test_after_list_runs_once_per_kind_when_its_first_list_is_stored() -> None:
    # ``carbonshift hub`` settles the heap there (carbonshift.k8s.heap.settle); a relist
    # after a failed watch is no first list
    async with fleet(START, config=FLUIDOS) as f:
        await f.create(f.hub, hub_job("later-0", cpu=2, runtime_h=1, deadline_h=20))
        await f.create(f.hub, hub_job("later-1", cpu=2, runtime_h=1, deadline_h=20))
        controller = await f.start_controller()
        stored: list[tuple[str, int]] = []
        controller.after_list = lambda: stored.extend(
            (path, len(c.items)) for path, c in controller._caches.items() if c.listed
        )
        await f.step(0)
        assert stored[0] == (JOBS, 2)  # the hub Jobs: listed and stored before the call
        kinds = len(stored)
        assert sorted(p for p, _ in stored[-len(controller._caches) :]) == sorted(
            controller._caches
        )
        f.hub.compact()
        f.hub.drop_watches()
        await f.create(f.hub, hub_job("late", cpu=2, runtime_h=1, deadline_h=20))
        await f.caught_up()
        await f.step(0)
        assert len(stored) == kinds  # no call after the first pass's lists


async def admin_patch(kube: FakeKube, kind: str, name: str, patch: dict[str, Any]) -> None:
    """A merge patch by the cluster's admin (a user's change, not the hub's)."""

    def write() -> None:
        api = kube.cluster.api
        raw = json.dumps(patch).encode()
        rt = api.kind(kind, "batch/v1")
        kube._call(api.patch(rt, "batch", name, "application/merge-patch+json", raw))

    await asyncio.to_thread(write)


def count_intent_reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each hub object's intent is parsed (``read_intent_from``), by name."""
    reads: Counter[str] = Counter()
    read = workloads.read_intent_from

    def counting(source: Any, *args: Any, **kwargs: Any) -> Any:
        reads[str(source.metadata.get("name"))] += 1
        return read(source, *args, **kwargs)

    monkeypatch.setattr(workloads, "read_intent_from", counting)
    return reads


async def test_the_hubs_own_annotation_write_carries_the_read_intent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The act phase writes the plan on every held object; the cleanup phase's collect and
    the passes after it find those new versions read (the intent carried across the hub's
    own write), not parsed again; a change by anyone else is read afresh."""
    reads = count_intent_reads(monkeypatch)
    async with fleet(START, config=FLUIDOS) as f:
        await started(f)  # two passes: the first writes the plan (and releases two)
        names = ["now-0", "now-1", "later-0", "later-1"]
        for name in names:  # each was written by the hub after its one read
            notes = (await f.get(f.hub, "Job", name, "batch", "batch/v1"))["metadata"]
            assert notes["annotations"].get(PLANNED_START), name
        want_reads = dict.fromkeys(names, 1)
        assert {name: reads[name] for name in names} == want_reads
        controller = f.controller
        assert controller is not None
        await f.caught_up()
        await controller.reconcile()
        assert {name: reads[name] for name in names} == want_reads

        # the intent changed by someone else: read again
        await admin_patch(
            f.hub,
            "Job",
            "later-0",
            {"metadata": {"annotations": {"carbonshift.io/deadline": "2023-06-02T06:00:00Z"}}},
        )
        await f.caught_up()
        await controller.reconcile()
        assert reads["later-0"] == 2
        assert {name: reads[name] for name in names if name != "later-0"} == dict.fromkeys(
            ["now-0", "now-1", "later-1"], 1
        )
