"""The Kueue and MCAD emulations on their own: the state changes real Kueue v0.19 and
multi-cluster MCAD make in answer to an admission check controller and a dispatcher, here
played by hand."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

from carbonshift.testing.fakekube import FakeKube, FakeKubeConfig, run_fakekube
from carbonshift.testing.fakekube_kinds import KUEUE_API, all_crds
from carbonshift.testing.fakekube_kinds._client import FakeClient, api_path
from carbonshift.testing.fakekube_kinds.appwrapper import AppWrapperEmulator
from carbonshift.testing.fakekube_kinds.kueue import KueueEmulator
from carbonshift.units import parse_utc
from tests.multicluster.harness import appwrapper, hub_job, kueue_setup

START = datetime(2023, 6, 1, tzinfo=UTC)
Obj = dict[str, Any]
ACTIVE = {
    "conditions": [
        {
            "type": "Active",
            "status": "True",
            "reason": "Active",
            "message": "",
            "lastTransitionTime": "2023-06-01T00:00:00Z",
        }
    ]
}


@contextlib.asynccontextmanager
async def pair() -> AsyncIterator[tuple[FakeKube, FakeKube, FakeClient]]:
    with (
        run_fakekube(FakeKubeConfig(nodes=0, start=START, custom_resources=all_crds())) as hub,
        run_fakekube(FakeKubeConfig(nodes=1, cpu="16", start=START)) as worker,
    ):
        client = FakeClient(hub.base_url)
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "batch"}}
        await client.create("/api/v1/namespaces", namespace)
        try:
            yield hub, worker, client
        finally:
            await client.close()


def cond(obj: Obj, kind: str) -> str | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return str(c["status"])
    return None


async def set_check(client: FakeClient, name: str, **fields: Any) -> None:
    path = api_path(KUEUE_API, "workloads", "batch", name)
    wl = await client.get(path)
    assert wl is not None
    for check in wl["status"]["admissionChecks"]:
        if check["name"] == "carbon":
            check.update(fields)
    assert await client.replace_status(path, wl)


async def test_kueue_reserves_evicts_on_retry_requeues_admits_and_finishes_remotely() -> None:
    async with pair() as (hub, worker, client):
        kueue = KueueEmulator(hub.base_url, {"w1": worker.base_url})
        for obj in kueue_setup(["w1"], quota_cpu=4):
            await client.create(api_path(KUEUE_API, obj["kind"].lower() + "s"), obj)
        await client.create(
            "/apis/batch/v1/namespaces/batch/jobs", hub_job("j", cpu=2, queue="batch")
        )
        await kueue.settle()
        wl_path = api_path(KUEUE_API, "workloads", "batch", "job-j")
        wl = await client.get(wl_path)
        assert wl is not None
        assert "admission" not in (wl.get("status") or {}), "reserved while our check is inactive"
        cq = await client.get(api_path(KUEUE_API, "clusterqueues", name="batch"))
        assert cq is not None
        assert cond(cq, "Active") == "False"
        check = await client.get(api_path(KUEUE_API, "admissionchecks", name="carbon"))
        assert check is not None
        check["status"] = ACTIVE
        assert await client.replace_status(
            api_path(KUEUE_API, "admissionchecks", name="carbon"), check
        )
        await kueue.settle()
        wl = await client.get(wl_path)
        assert wl is not None
        assert cond(wl, "QuotaReserved") == "True"
        assert [c["state"] for c in wl["status"]["admissionChecks"]] == ["Pending", "Pending"]
        assert wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] == {"cpu": "2"}

        await set_check(client, "job-j", state="Retry", requeueAfterSeconds=600, message="later")
        await kueue.settle()
        wl = await client.get(wl_path)
        assert wl is not None
        assert "admission" not in wl["status"]
        assert cond(wl, "Evicted") == "True"
        assert parse_utc(wl["status"]["requeueState"]["requeueAt"]) == START + timedelta(
            seconds=600
        )
        assert {c["state"] for c in wl["status"]["admissionChecks"]} == {"Pending"}
        await hub.advance_async(seconds=599)
        await kueue.settle()
        wl = await client.get(wl_path)
        assert wl is not None
        assert "admission" not in wl["status"], "requeued before requeueAfterSeconds"
        await hub.advance_async(seconds=1)
        await worker.advance_async(seconds=600)
        await kueue.settle()
        wl = await client.get(wl_path)
        assert wl is not None
        assert cond(wl, "QuotaReserved") == "True"

        update = {"name": "main", "annotations": {"carbonshift.io/planned-cluster": "w1"}}
        await set_check(client, "job-j", state="Ready", podSetUpdates=[update], message="go")
        wl = await client.get(wl_path)
        assert wl is not None
        wl["status"]["nominatedClusterNames"] = ["w1"]
        assert await client.replace_status(wl_path, wl)
        await kueue.settle()
        await worker.settle_async()
        wl = await client.get(wl_path)
        assert wl is not None
        assert wl["status"]["clusterName"] == "w1"
        assert "nominatedClusterNames" not in wl["status"]
        assert cond(wl, "Admitted") == "True"
        remote = worker.get("Job", "j", "batch", "batch/v1")
        annotations = remote["spec"]["template"]["metadata"]["annotations"]
        assert annotations["carbonshift.io/planned-cluster"] == "w1"
        assert remote["spec"]["suspend"] is False

        await worker.advance_async(hours=2)
        await hub.advance_async(hours=2)
        await kueue.settle()
        wl = await client.get(wl_path)
        assert wl is not None
        assert cond(wl, "Finished") == "True"
        job = hub.get("Job", "j", "batch", "batch/v1")
        assert job["status"]["succeeded"] == 1
        assert worker.list("Job", "batch", "batch/v1") == []
        assert kueue.remote_creates == 1
        await kueue.close()


async def test_kueue_leaves_a_workload_unreserved_without_quota() -> None:
    async with pair() as (hub, worker, client):
        kueue = KueueEmulator(hub.base_url, {"w1": worker.base_url})
        for obj in kueue_setup(["w1"], quota_cpu=3):
            await client.create(api_path(KUEUE_API, obj["kind"].lower() + "s"), obj)
        check = await client.get(api_path(KUEUE_API, "admissionchecks", name="carbon"))
        assert check is not None
        check["status"] = ACTIVE
        assert await client.replace_status(
            api_path(KUEUE_API, "admissionchecks", name="carbon"), check
        )
        for name in ("a", "b"):
            await client.create(
                "/apis/batch/v1/namespaces/batch/jobs", hub_job(name, cpu=2, queue="batch")
            )
        await kueue.settle()
        a = await client.get(api_path(KUEUE_API, "workloads", "batch", "job-a"))
        b = await client.get(api_path(KUEUE_API, "workloads", "batch", "job-b"))
        assert a is not None
        assert b is not None
        assert cond(a, "QuotaReserved") == "True"
        assert cond(b, "QuotaReserved") == "False"
        await kueue.close()


async def test_appwrapper_waits_behind_gates_then_runs_in_its_target_cluster() -> None:
    async with pair() as (hub, worker, client):
        mcad = AppWrapperEmulator(hub.base_url, {"w1": worker.base_url})
        path = api_path("workload.codeflare.dev/v1beta1", "appwrappers", "batch")
        await client.create(path, appwrapper("aw", cpu=2, runtime_h=1))
        await mcad.settle()
        aw = await client.get(f"{path}/aw")
        assert aw is not None
        assert aw["status"]["state"] == "Pending"
        assert "gated" in aw["status"]["message"]
        aw["spec"]["dispatchingGates"] = []
        answer = await client.http.put(f"{path}/aw", json=aw)
        assert answer.status_code == 200
        await mcad.settle()
        aw = await client.get(f"{path}/aw")
        assert aw is not None
        assert aw["status"]["state"] == "Pending", "dispatched without a target cluster"
        aw["spec"]["schedulingSpec"] = {
            "clusterScheduling": {"policyResult": {"targetCluster": {"name": "w1"}}}
        }
        assert (await client.http.put(f"{path}/aw", json=aw)).status_code == 200
        await mcad.settle()
        await worker.settle_async()
        aw = await client.get(f"{path}/aw")
        assert aw is not None
        assert aw["status"]["state"] == "Running"
        assert [j["metadata"]["name"] for j in worker.list("Job", "batch", "batch/v1")] == ["aw"]
        await worker.advance_async(hours=1)
        await mcad.settle()
        aw = await client.get(f"{path}/aw")
        assert aw is not None
        assert aw["status"]["state"] == "Completed"
        assert parse_utc(aw["status"]["completionTime"]) == START + timedelta(hours=1)
        assert worker.list("Job", "batch", "batch/v1") == []
        assert mcad.dispatches == 1
        await mcad.close()
