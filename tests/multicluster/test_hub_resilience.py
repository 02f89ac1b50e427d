"""Inventory status, a spoke outage, a controller restart and injected faults (fast tier)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from carbonshift.k8s.multicluster import HubConfig
from carbonshift.k8s.multicluster.workloads import (
    PLACED_CLUSTER,
    PLANNED_CLUSTER,
    REASON,
    RELEASED_AT,
)
from fakekube import Fault
from fakekube._errors import ApiError
from tests.multicluster.harness import HOLD_OFF, Fleet, carbon_cluster, fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)
FLUIDOS = HubConfig.model_validate(
    {"planning": {"policy": "fluidos", "forecast": "oracle", **HOLD_OFF}}
)
# work placed in a spoke that goes away stays there (no recall): exactly once
FLUIDOS_KEEP = FLUIDOS.model_copy(update={"spoke_lost_timeout_s": 0})


def complete(job: dict) -> bool:  # type: ignore[type-arg]
    return any(
        c["type"] == "Complete" and c["status"] == "True"
        for c in job.get("status", {}).get("conditions", [])
    )


async def run_until_done(f: Fleet, names: list[str], *, hours: float) -> dict[str, dict]:  # type: ignore[type-arg]
    jobs: dict[str, dict] = {}  # type: ignore[type-arg]
    for _ in range(int(hours * 4)):
        await f.step(15)
        jobs = {n: await f.get(f.hub, "Job", n, "batch", "batch/v1") for n in names}
        if all(complete(j) for j in jobs.values()):
            break
    return jobs


async def test_carbon_cluster_status_shows_capacity_health_and_forecast_age() -> None:
    async with fleet(START, nodes=3, cpu="8") as f:
        await f.create(f.hub, hub_job("a"))
        await f.start_controller()
        await f.step(0)
        for name in f.spokes:
            cc = await f.get(f.hub, "CarbonCluster", name, "", "carbonshift.io/v1alpha1")
            want_capacity = {"cpu": 24.0}
            assert cc["status"]["capacity"] == want_capacity
            assert cc["status"]["health"] == "Healthy"
            assert cc["status"]["forecastAgeSeconds"] >= 0
            assert cc["status"]["conditions"][0]["status"] == "True"


async def test_an_unreachable_spoke_gets_no_new_work_and_its_held_work_is_replanned() -> None:
    # FLUIDOS picks each job's cleanest (spoke, start): here CA-ON in the morning, so work
    # is held for the spoke that then breaks
    async with fleet(START, config=FLUIDOS_KEEP) as f:
        # 'now' must start at once (its deadline leaves no slack); the others may wait
        await f.create(f.hub, hub_job("now", cpu=2, runtime_h=3, deadline_h=3))
        for i in range(3):
            await f.create(f.hub, hub_job(f"later-{i}", cpu=2, runtime_h=2, deadline_h=20))
        controller = await f.start_controller()
        await f.step(0)
        first = {
            n: (await f.get(f.hub, "Job", n, "batch", "batch/v1"))["metadata"]["annotations"]
            for n in ("now", "later-0", "later-1", "later-2")
        }
        broken = first["now"][PLACED_CLUSTER]
        held_there = [
            n for n, a in first.items() if a.get(PLANNED_CLUSTER) == broken and n != "now"
        ]
        assert held_there, f"no held job was planned in {broken}: {first}"
        f.spokes[broken].add_fault(Fault(code=503))
        await f.step(15)
        cc = await f.get(f.hub, "CarbonCluster", broken, "", "carbonshift.io/v1alpha1")
        assert cc["status"]["health"] == "Unreachable"
        for name in held_there:
            notes = (await f.get(f.hub, "Job", name, "batch", "batch/v1"))["metadata"][
                "annotations"
            ]
            assert notes[PLANNED_CLUSTER] != broken, f"{name} still planned in the broken spoke"
        await run_until_done(f, ["later-0", "later-1", "later-2"], hours=5)
        back_at = f.now()
        f.spokes[broken].clear_faults()  # back: the job that ran there through the outage
        jobs = await run_until_done(f, ["now", "later-0", "later-1", "later-2"], hours=8)
        assert all(complete(j) for j in jobs.values()), {
            n: j.get("status") for n, j in jobs.items()
        }
        released = [e for e in controller.events if e.what == "released"]
        assert sorted(e.key for e in released) == sorted(f"Job/batch/{n}" for n in jobs)
        during = [e for e in released if e.key != "Job/batch/now" and e.at < back_at]
        assert all(e.cluster != broken for e in during), during


async def test_work_in_a_spoke_that_stays_away_is_planned_again_elsewhere() -> None:
    async with fleet(START, config=FLUIDOS) as f:
        # no slack: it starts at once, and after the recall it runs late (fail open)
        await f.create(f.hub, hub_job("now", cpu=2, runtime_h=3, deadline_h=3))
        controller = await f.start_controller()
        await f.step(0)
        job = await f.get(f.hub, "Job", "now", "batch", "batch/v1")
        lost = job["metadata"]["annotations"][PLACED_CLUSTER]
        assert [
            j["metadata"]["name"] for j in await f.list(f.spokes[lost], "Job", "batch", "batch/v1")
        ] == ["now"]
        f.spokes[lost].add_fault(Fault(code=503))
        await f.step(15)  # away, but not for long enough: still placed there
        job = await f.get(f.hub, "Job", "now", "batch", "batch/v1")
        assert job["metadata"]["annotations"][PLACED_CLUSTER] == lost
        await f.step(15)  # 30 min > spoke_lost_timeout_s (15 min): planned again elsewhere
        job = await f.get(f.hub, "Job", "now", "batch", "batch/v1")
        notes = job["metadata"]["annotations"]
        assert notes["carbonshift.io/lost-from"] == lost
        assert notes.get(PLACED_CLUSTER) not in (None, lost), notes
        moved_to = notes[PLACED_CLUSTER]
        recalled = [e for e in controller.events if e.what == "recalled"]
        assert [(e.key, e.cluster) for e in recalled] == [("Job/batch/now", lost)]
        f.spokes[lost].clear_faults()  # back: its stale copy is deleted, never mirrored
        await f.step(15)
        assert await f.list(f.spokes[lost], "Job", "batch", "batch/v1") == []
        jobs = await run_until_done(f, ["now"], hours=5)
        assert complete(jobs["now"])
        assert jobs["now"]["status"]["succeeded"] == 1
        released = [e.cluster for e in controller.events if e.what == "released"]
        assert released == [lost, moved_to]
        assert any(e.what == "cleaned" and e.cluster == lost for e in controller.events)


async def test_a_restarted_hub_never_creates_a_second_copy() -> None:
    async with fleet(START) as f:
        await f.create(f.hub, hub_job("urgent", cpu=2, runtime_h=2, deadline_h=2))
        # a release whose write-ahead landed but whose spoke copy was never made (a crash)
        crashed = hub_job("crashed", cpu=2, runtime_h=2, deadline_h=10)
        first = await f.start_controller()
        await f.step(0)
        urgent = await f.get(f.hub, "Job", "urgent", "batch", "batch/v1")
        where = urgent["metadata"]["annotations"][PLACED_CLUSTER]
        crashed["metadata"]["annotations"].update(
            {PLACED_CLUSTER: where, RELEASED_AT: "2023-06-01T00:00:00Z"}
        )
        await f.create(f.hub, crashed)
        assert first.counters.spoke_creates == 1
        await f.stop_controller()
        second = await f.start_controller()
        for _ in range(3):
            await f.step(15)
        copies = [
            j["metadata"]["name"] for j in await f.list(f.spokes[where], "Job", "batch", "batch/v1")
        ]
        assert sorted(copies) == ["crashed", "urgent"]
        assert second.counters.spoke_creates == 1  # the crashed one only; 'urgent' adopted
        jobs = await run_until_done(f, ["urgent", "crashed"], hours=4)
        assert all(complete(j) for j in jobs.values())


@pytest.mark.parametrize(
    "faults",
    [
        pytest.param(
            [Fault(code=409, verb="patch", probability=0.3), Fault(code=500, probability=0.1)],
            id="hub-conflicts-and-errors",
        ),
    ],
)
async def test_injected_faults_lose_and_duplicate_nothing(faults: list[Fault]) -> None:
    async with fleet(START) as f:
        names = [f"j{i}" for i in range(6)]
        for i, name in enumerate(names):
            await f.create(f.hub, hub_job(name, cpu=2, runtime_h=1 + i % 3, deadline_h=8 + i))
        controller = await f.start_controller()
        for fault in faults:
            f.hub.add_fault(fault)
        for spoke in f.spokes.values():
            spoke.add_fault(Fault(code=500, verb="create", probability=0.3))
        jobs = await run_until_done(f, names, hours=16)
        assert all(complete(j) for j in jobs.values()), {
            n: j.get("status") for n, j in jobs.items()
        }
        for name, job in jobs.items():
            assert job["status"]["succeeded"] == 1, name
        released = [e.key for e in controller.events if e.what == "released"]
        assert sorted(set(released)) == sorted(f"Job/batch/{n}" for n in names)
        assert f.hub.cluster.faults.fired > 0


@pytest.mark.parametrize(
    ("zone", "secret", "want_message"),
    [
        pytest.param("GB", "spoke-ghost", "spoke-ghost", id="secret-missing"),
        pytest.param(
            "FR", "spoke-de", "zone 'FR' is not in the embedded carbon data", id="no-data"
        ),
    ],
)
async def test_a_misconfigured_spoke_gets_no_work(
    zone: str, secret: str, want_message: str
) -> None:
    async with fleet(START) as f:
        ghost = carbon_cluster("ghost", zone, 1.0)  # the cheapest on paper
        ghost["spec"]["kubeconfigSecretRef"]["name"] = secret
        await f.create(f.hub, ghost)
        await f.create(f.hub, hub_job("now", cpu=2, runtime_h=1, deadline_h=1))
        controller = await f.start_controller()
        await f.step(0)
        cc = await f.get(f.hub, "CarbonCluster", "ghost", "", "carbonshift.io/v1alpha1")
        assert cc["status"]["health"] == "Misconfigured"
        assert want_message in cc["status"]["message"]
        released = [e.cluster for e in controller.events if e.what == "released"]
        assert released
        assert "ghost" not in released


async def test_a_carbon_cluster_without_a_zone_is_refused_by_its_crd() -> None:
    # the shipped CRD (deploy/hub, which the fake hub installs) requires spec.zone, so the
    # API server refuses it before the hub sees it (the hub's own check stays, unreached)
    async with fleet(START) as f:
        bad = carbon_cluster("nozone", "DE", 1.0)
        del bad["spec"]["zone"]
        with pytest.raises(ApiError) as refused:
            await f.create(f.hub, bad)
        want = 'CarbonCluster.carbonshift.io "nozone" is invalid: spec.zone: Required value'
        assert (refused.value.code, refused.value.message) == (422, want)


async def test_pods_the_hub_did_not_place_leave_less_room_in_their_spoke() -> None:
    async with fleet(START, config=FLUIDOS, nodes=1, cpu="16") as f:
        await f.create(f.hub, hub_job("probe", cpu=2, runtime_h=6, deadline_h=6))
        await f.start_controller()
        await f.step(0)
        probe = await f.get(f.hub, "Job", "probe", "batch", "batch/v1")
        cleanest = probe["metadata"]["annotations"][PLACED_CLUSTER]
        spoke = f.spokes[cleanest]
        # someone else's pod takes 12 of the 14 cores the probe leaves in the cleaner spoke
        other = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "someone-else", "namespace": "default"},
            "spec": {
                "nodeName": (await f.list(spoke, "Node", None, "v1"))[0]["metadata"]["name"],
                "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "12"}}}
                ],
            },
        }
        await f.create(spoke, other)
        await f.create(f.hub, hub_job("big", cpu=8, runtime_h=2, deadline_h=2))
        await f.step(0)
        big = await f.get(f.hub, "Job", "big", "batch", "batch/v1")
        assert big["metadata"]["annotations"][PLACED_CLUSTER] != cleanest
        cc = await f.get(f.hub, "CarbonCluster", cleanest, "", "carbonshift.io/v1alpha1")
        assert cc["status"]["othersRequests"] == {"cpu": 12.0}  # the probe's pod is ours
        jobs = await run_until_done(f, ["big"], hours=3)
        assert complete(jobs["big"])


async def test_work_in_a_spoke_removed_from_the_inventory_is_planned_again() -> None:
    async with fleet(START, config=FLUIDOS) as f:
        await f.create(f.hub, hub_job("now", cpu=2, runtime_h=3, deadline_h=3))
        controller = await f.start_controller()
        await f.step(0)
        job = await f.get(f.hub, "Job", "now", "batch", "batch/v1")
        gone = job["metadata"]["annotations"][PLACED_CLUSTER]
        await f.delete(f.hub, "CarbonCluster", gone, "", "carbonshift.io/v1alpha1")
        await f.step(15)
        notes = (await f.get(f.hub, "Job", "now", "batch", "batch/v1"))["metadata"]["annotations"]
        assert notes["carbonshift.io/lost-from"] == gone
        assert notes[PLACED_CLUSTER] != gone
        recalled = [e for e in controller.events if e.what == "recalled"]
        assert [e.detail for e in recalled] == [
            f"spoke {gone} is no longer in the inventory: planned again"
        ]


async def test_a_pod_bigger_than_every_node_is_held_not_sent() -> None:
    async with fleet(START, config=FLUIDOS, nodes=2, cpu="8") as f:  # 16 cpu a spoke, 8 a node
        await f.create(f.hub, hub_job("wide", cpu=10, runtime_h=1, deadline_h=2))
        await f.create(f.hub, hub_job("fits", cpu=6, runtime_h=1, deadline_h=1))
        controller = await f.start_controller()
        await f.step(0)
        wide = await f.get(f.hub, "Job", "wide", "batch", "batch/v1")
        notes = wide["metadata"]["annotations"]
        assert PLACED_CLUSTER not in notes
        assert "no healthy spoke has a node with room for one of its pods" in notes[REASON]
        released = [e.key for e in controller.events if e.what == "released"]
        assert released == ["Job/batch/fits"]
