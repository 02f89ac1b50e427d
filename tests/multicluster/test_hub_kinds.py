"""A Kueue workload and an MCAD AppWrapper on the hub: held, then placed where and when
the plan said (fast tier; Kueue and MCAD are the small emulations of fakekube_kinds)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from carbonshift.k8s.multicluster import HubConfig
from carbonshift.k8s.multicluster.workloads import (
    PLACED_CLUSTER,
    PLANNED_CLUSTER,
    PLANNED_START,
    REASON,
)
from carbonshift.units import parse_utc
from tests.multicluster.harness import HOLD_OFF, KUEUE, appwrapper, fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)
FLUIDOS = HubConfig.model_validate(
    {"planning": {"policy": "fluidos", "forecast": "oracle", **HOLD_OFF}}
)
AW = "workload.codeflare.dev/v1beta1"


def our_check(wl: dict) -> dict:  # type: ignore[type-arg]
    return next(c for c in wl["status"]["admissionChecks"] if c["name"] == "carbon")


async def test_kueue_workload_is_held_by_retry_then_admitted_to_the_planned_spoke() -> None:
    async with fleet(START, config=FLUIDOS) as f:
        await f.create(f.hub, hub_job("train", cpu=4, runtime_h=2, deadline_h=16, queue="batch"))
        controller = await f.start_controller()
        await f.step(0)  # our check becomes Active, so Kueue's ClusterQueue does
        await f.step(0)  # Kueue reserved quota: the hub plans and holds it
        check = await f.get(f.hub, "AdmissionCheck", "carbon", "", KUEUE)
        assert any(
            c["type"] == "Active" and c["status"] == "True" for c in check["status"]["conditions"]
        )
        wl = await f.get(f.hub, "Workload", "job-train", "batch", KUEUE)
        notes = wl["metadata"]["annotations"]
        want_cluster, want_start = notes[PLANNED_CLUSTER], parse_utc(notes[PLANNED_START])
        assert want_start > START, "the test needs a held workload; FLUIDOS started it at once"
        # held: our Retry evicted it; Kueue requeues it at the planned start, or after
        # max_requeue_s (1 h) for the next planning period, whichever comes first
        assert wl["status"].get("admission") is None
        want_requeue = min(want_start, START + timedelta(hours=1))
        assert parse_utc(wl["status"]["requeueState"]["requeueAt"]) == want_requeue
        assert any(
            c["type"] == "Evicted" and c["status"] == "True" for c in wl["status"]["conditions"]
        )
        assert notes[REASON].startswith("waiting for cleaner power")
        started = None
        for _ in range(4 * 16):
            await f.step(15)
            wl = await f.get(f.hub, "Workload", "job-train", "batch", KUEUE)
            if started is None:
                for name, spoke in f.spokes.items():
                    for job in await f.list(spoke, "Job", "batch", "batch/v1"):
                        started = (name, parse_utc(job["status"]["startTime"]))
            if any(c["type"] == "Finished" for c in wl["status"].get("conditions", [])):
                break
        assert started == (want_cluster, want_start)
        assert wl["status"]["clusterName"] == want_cluster
        assert wl["metadata"]["annotations"][PLACED_CLUSTER] == want_cluster
        ready = our_check(wl)
        assert ready["state"] == "Ready"
        assert ready["podSetUpdates"][0]["annotations"][PLANNED_CLUSTER] == want_cluster
        job = await f.get(f.hub, "Job", "train", "batch", "batch/v1")
        assert job["status"]["succeeded"] == 1
        assert f.kueue is not None
        assert f.kueue.remote_creates == 1
        mine = [e.what for e in controller.events if e.key == "Workload/batch/job-train"]
        assert mine[-1] == "released"
        assert mine.count("released") == 1
        assert set(mine[:-1]) <= {"planned"}


async def test_appwrapper_is_gated_then_dispatched_to_the_planned_spoke() -> None:
    async with fleet(START, config=FLUIDOS) as f:
        await f.create(f.hub, appwrapper("sim", cpu=4, runtime_h=2, deadline_h=16))
        await f.start_controller()
        await f.step(0)
        aw = await f.get(f.hub, "AppWrapper", "sim", "batch", AW)
        notes = aw["metadata"]["annotations"]
        want_cluster, want_start = notes[PLANNED_CLUSTER], parse_utc(notes[PLANNED_START])
        assert want_start > START
        assert aw["status"]["state"] == "Pending"
        assert aw["spec"]["dispatchingGates"]
        for _ in range(4 * 16):
            await f.step(15)
            aw = await f.get(f.hub, "AppWrapper", "sim", "batch", AW)
            if aw["status"]["state"] == "Completed":
                break
        assert aw["status"]["state"] == "Completed"
        assert aw["status"]["targetClusterName"] == want_cluster
        assert (
            aw["spec"]["schedulingSpec"]["clusterScheduling"]["policyResult"]["targetCluster"][
                "name"
            ]
            == want_cluster
        )
        assert aw["spec"]["dispatchingGates"] == []
        assert parse_utc(aw["status"]["startTime"]) == want_start
        assert f.mcad is not None
        assert f.mcad.dispatches == 1


async def test_the_nomination_keeps_kueues_quota_reservation() -> None:
    # issue 14: the hub applied only status.nominatedClusterNames as kueue-admission, the
    # manager that owns Kueue's status.admission and conditions, so the apply deleted them
    # and the workload lost its quota reservation
    async with fleet(START, config=FLUIDOS) as f:
        # no slack: FLUIDOS releases it at once, so the hub nominates on its first plan
        await f.create(f.hub, hub_job("now", cpu=2, runtime_h=2, deadline_h=2, queue="batch"))
        controller = await f.start_controller()
        nominated = None
        for _ in range(4):
            for kube in f.kubes:
                await kube.advance_async(minutes=1)
            await f.settle()
            await controller.reconcile()  # no Kueue pass between the nomination and the read
            wl = await f.get(f.hub, "Workload", "job-now", "batch", KUEUE)
            if wl["status"].get("nominatedClusterNames"):
                nominated = wl
                break
        assert nominated is not None, "the hub never nominated the workload"
        status = nominated["status"]
        assert status["admission"]["clusterQueue"] == "batch"
        assert any(
            c["type"] == "QuotaReserved" and c["status"] == "True" for c in status["conditions"]
        ), status["conditions"]
        await f.settle()
        wl = await f.get(f.hub, "Workload", "job-now", "batch", KUEUE)
        assert wl["status"]["clusterName"] == status["nominatedClusterNames"][0]
        assert f.kueue is not None
        assert f.kueue.evictions == 0
