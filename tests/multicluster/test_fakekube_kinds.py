"""The Kueue and MCAD emulations on their own: the state changes real Kueue v0.19
(``kueue.x-k8s.io/v1beta2``) and multi-cluster MCAD make in answer to an admission check
controller and a dispatcher, here played by hand."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from carbonshift.k8s.owned import owned_fields
from carbonshift.units import parse_utc
from fakekube import FakeKube, FakeKubeConfig, run_fakekube
from fakekube.faults import Fault
from fakekube.plugins import KUEUE_API, all_crds, upstream_crds
from fakekube.plugins._client import FakeClient, api_path
from fakekube.plugins.appwrapper import AppWrapperEmulator, LocalMcadEmulator
from fakekube.plugins.kueue import (
    WORKER_LOST_SINCE,
    KueueEmulator,
    local_queue,
    setup_objects,
)
from tests.multicluster.harness import appwrapper, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)
Obj = dict[str, Any]
WL = api_path(KUEUE_API, "workloads", "batch", "job-j")
AW = "workload.codeflare.dev/v1beta1"


@contextlib.asynccontextmanager
async def pair(
    workers: int = 1,
) -> AsyncIterator[tuple[FakeKube, list[FakeKube], FakeClient]]:
    with contextlib.ExitStack() as stack:
        hub = stack.enter_context(
            run_fakekube(FakeKubeConfig(nodes=0, start=START, custom_resources=all_crds()))
        )
        spokes = [
            stack.enter_context(run_fakekube(FakeKubeConfig(nodes=1, cpu="16", start=START)))
            for _ in range(workers)
        ]
        client = FakeClient(hub.base_url)
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "batch"}}
        await client.create("/api/v1/namespaces", namespace)
        try:
            yield hub, spokes, client
        finally:
            await client.close()


def mcad_appwrapper(name: str, *, cpu: int, runtime_h: float) -> Obj:
    """The harness's AppWrapper with MCAD's gate shape: a string (``DispatchingGate string``)."""
    body = appwrapper(name, cpu=cpu, runtime_h=runtime_h)
    body["spec"]["dispatchingGates"] = ["carbonshift.io/hold"]
    return body


def cond(obj: Obj, kind: str) -> str | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return str(c["status"])
    return None


def reason(obj: Obj, kind: str) -> str | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return str(c["reason"])
    return None


async def create_kueue(client: FakeClient, objs: list[Obj]) -> None:
    for obj in objs:
        namespace = obj["metadata"].get("namespace", "")
        plural = obj["kind"].lower() + "s"
        assert await client.create(api_path(KUEUE_API, plural, namespace), obj) is not None


async def activate_our_check(client: FakeClient) -> None:
    path = api_path(KUEUE_API, "admissionchecks", name="carbon")
    check = await client.get(path)
    assert check is not None
    check["status"] = {
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
    assert await client.replace_status(path, check)


async def workload(client: FakeClient, path: str = WL) -> Obj:
    wl = await client.get(path)
    assert wl is not None
    return wl


async def set_check(client: FakeClient, name: str, check: str = "carbon", **fields: Any) -> None:
    """Write one admission check state as its controller does (a state change moves
    lastTransitionTime to the hub's now)."""
    path = api_path(KUEUE_API, "workloads", "batch", name)
    wl = await workload(client, path)
    now = await client.now()
    for state in wl["status"]["admissionChecks"]:
        if state["name"] == check:
            if fields.get("state", state["state"]) != state["state"]:
                state["lastTransitionTime"] = now.strftime("%Y-%m-%dT%H:%M:%SZ")
            state.update(fields)
    assert await client.replace_status(path, wl)


def check_state(wl: Obj, name: str = "carbon") -> Obj:
    return next(c for c in wl["status"]["admissionChecks"] if c["name"] == name)


async def reserved_job(
    hub: FakeKube, client: FakeClient, kueue: KueueEmulator, workers: list[str], cpu: int = 2
) -> None:
    """Kueue objects, an active check and a queued Job ``j``, settled to QuotaReserved."""
    await create_kueue(client, setup_objects(workers, quota_cpu=8))
    await activate_our_check(client)
    await client.create(
        "/apis/batch/v1/namespaces/batch/jobs", hub_job("j", cpu=cpu, queue="batch")
    )
    await kueue.settle()
    assert cond(await workload(client), "QuotaReserved") == "True"


async def admit_on(client: FakeClient, kueue: KueueEmulator, cluster: str) -> None:
    """Our check Ready and the Workload nominated to ``cluster``, settled to Admitted."""
    update = {"name": "main", "annotations": {"carbonshift.io/planned-cluster": cluster}}
    await set_check(client, "job-j", state="Ready", podSetUpdates=[update], message="go")
    wl = await workload(client)
    # as an external dispatcher must (and the hub does): apply as kueue-admission, with every
    # field that manager owns, or the apply deletes Kueue's admission and conditions
    status = {
        **(owned_fields(wl, "kueue-admission", subresource="status").get("status") or {}),
        "nominatedClusterNames": [cluster],
    }
    meta = {k: wl["metadata"][k] for k in ("name", "namespace", "resourceVersion")}
    body = {"apiVersion": KUEUE_API, "kind": "Workload", "metadata": meta, "status": status}
    assert await client.apply(f"{WL}/status", body, "kueue-admission")
    await kueue.settle()
    wl = await workload(client)
    assert cond(wl, "Admitted") == "True"
    assert wl["status"]["clusterName"] == cluster


async def test_kueue_reserves_through_a_local_queue_admits_and_finishes_remotely() -> None:
    async with pair() as (hub, [worker], client):
        kueue = KueueEmulator(hub.base_url, {"w1": worker.base_url})
        await create_kueue(client, setup_objects(["w1"], quota_cpu=4))
        await client.create(
            "/apis/batch/v1/namespaces/batch/jobs", hub_job("j", cpu=2, queue="batch")
        )
        await kueue.settle()
        wl = await workload(client)
        assert "admission" not in (wl.get("status") or {}), "reserved while our check is inactive"
        assert reason(wl, "QuotaReserved") == "Inadmissible"
        cq = await client.get(api_path(KUEUE_API, "clusterqueues", name="batch"))
        assert cq is not None
        assert cond(cq, "Active") == "False"
        mk = await client.get(api_path(KUEUE_API, "admissionchecks", name="multikueue"))
        assert mk is not None
        assert cond(mk, "Active") == "True", "MultiKueue's check with its MultiKueueConfig"
        await activate_our_check(client)
        await kueue.settle()
        wl = await workload(client)
        assert cond(wl, "QuotaReserved") == "True"
        assert wl["status"]["admission"]["clusterQueue"] == "batch"
        assert [c["state"] for c in wl["status"]["admissionChecks"]] == ["Pending", "Pending"]
        assert wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] == {"cpu": "2"}

        await admit_on(client, kueue, "w1")
        await worker.settle_async()
        wl = await workload(client)
        assert "nominatedClusterNames" not in wl["status"]
        assert check_state(wl, "multikueue")["state"] == "Ready"
        remote = worker.get("Job", "j", "batch", "batch/v1")
        annotations = remote["spec"]["template"]["metadata"]["annotations"]
        assert annotations["carbonshift.io/planned-cluster"] == "w1"
        assert remote["spec"]["suspend"] is False

        await worker.advance_async(hours=2)
        await hub.advance_async(hours=2)
        await kueue.settle()
        wl = await workload(client)
        assert cond(wl, "Finished") == "True"
        job = hub.get("Job", "j", "batch", "batch/v1")
        assert job["status"]["succeeded"] == 1
        assert worker.list("Job", "batch", "batch/v1") == []
        assert kueue.remote_creates == 1
        assert kueue.evictions == 0
        await kueue.close()


@pytest.mark.parametrize(
    ("objects", "want_message"),
    [
        pytest.param(
            lambda: [o for o in setup_objects(["w1"]) if o["kind"] != "LocalQueue"],
            "LocalQueue batch doesn't exist",
            id="no-local-queue",
        ),
        pytest.param(
            lambda: [
                *(o for o in setup_objects(["w1"]) if o["kind"] != "LocalQueue"),
                local_queue("batch", "batch", "elsewhere"),
            ],
            "ClusterQueue elsewhere doesn't exist",
            id="local-queue-names-a-missing-cluster-queue",
        ),
        pytest.param(
            lambda: [o for o in setup_objects(["w1"]) if o["kind"] != "MultiKueueConfig"],
            "ClusterQueue batch is inactive",
            id="multikueue-config-missing-so-cluster-queue-inactive",
        ),
    ],
)
async def test_kueue_leaves_a_workload_inadmissible_without_its_queues(
    objects: Any, want_message: str
) -> None:
    async with pair() as (hub, [worker], client):
        kueue = KueueEmulator(hub.base_url, {"w1": worker.base_url})
        await create_kueue(client, objects())
        await activate_our_check(client)
        await client.create(
            "/apis/batch/v1/namespaces/batch/jobs", hub_job("j", cpu=2, queue="batch")
        )
        await kueue.settle()
        wl = await workload(client)
        assert "admission" not in wl["status"]
        qr = next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")
        assert (qr["status"], qr["reason"], qr["message"]) == (
            "False",
            "Inadmissible",
            want_message,
        )
        await kueue.close()


async def test_kueue_leaves_a_workload_unreserved_without_quota() -> None:
    async with pair() as (hub, [worker], client):
        kueue = KueueEmulator(hub.base_url, {"w1": worker.base_url})
        await create_kueue(client, setup_objects(["w1"], quota_cpu=3))
        await activate_our_check(client)
        for name in ("a", "b"):
            await client.create(
                "/apis/batch/v1/namespaces/batch/jobs", hub_job(name, cpu=2, queue="batch")
            )
        await kueue.settle()
        a = await workload(client, api_path(KUEUE_API, "workloads", "batch", "job-a"))
        b = await workload(client, api_path(KUEUE_API, "workloads", "batch", "job-b"))
        assert cond(a, "QuotaReserved") == "True"
        assert cond(b, "QuotaReserved") == "False"
        assert reason(b, "QuotaReserved") == "Pending"
        await kueue.close()


async def test_retry_evicts_at_once_and_requeues_after_the_longest_check_delay() -> None:
    """KEP-3258: quota is freed at once; the checks stay Retry (a later, longer delay counts)
    until max(lastTransitionTime + requeueAfterSeconds); then Pending, retryCount + 1."""
    async with pair() as (hub, [worker], client):
        kueue = KueueEmulator(hub.base_url, {"w1": worker.base_url})
        await reserved_job(hub, client, kueue, ["w1"])
        await set_check(client, "job-j", state="Retry", requeueAfterSeconds=60, message="later")
        await kueue.settle()
        wl = await workload(client)
        assert "admission" not in wl["status"], "quota kept after Retry"
        assert (cond(wl, "Evicted"), reason(wl, "Evicted")) == ("True", "AdmissionCheck")
        assert check_state(wl)["state"] == "Retry", "checks reset before the delay is over"
        assert cond(wl, "Requeued") == "False"

        await hub.advance_async(seconds=30)  # a second check answers late, with a longer delay
        await set_check(client, "job-j", check="multikueue", state="Retry", requeueAfterSeconds=300)
        await kueue.settle()
        wl = await workload(client)
        want_at = START + timedelta(seconds=30 + 300)
        assert parse_utc(wl["status"]["requeueState"]["requeueAt"]) == want_at
        await hub.advance_async(seconds=299)
        await kueue.settle()
        wl = await workload(client)
        assert "admission" not in wl["status"], "requeued before the longest delay"
        assert check_state(wl)["state"] == "Retry"

        await hub.advance_async(seconds=1)
        await kueue.settle()
        wl = await workload(client)
        assert cond(wl, "Requeued") == "True"
        assert cond(wl, "QuotaReserved") == "True"
        assert {c["state"] for c in wl["status"]["admissionChecks"]} == {"Pending"}
        assert [c.get("retryCount") for c in wl["status"]["admissionChecks"]] == [1, 1]
        assert "requeueAfterSeconds" not in check_state(wl)
        assert kueue.evictions == 1
        assert kueue.requeues == 1
        await kueue.close()


async def test_retry_on_an_admitted_workload_evicts_it_from_its_worker_and_it_runs_elsewhere() -> (
    None
):
    async with pair(workers=2) as (hub, [w1, w2], client):
        kueue = KueueEmulator(hub.base_url, {"w1": w1.base_url, "w2": w2.base_url})
        await reserved_job(hub, client, kueue, ["w1", "w2"])
        await admit_on(client, kueue, "w1")
        assert [j["metadata"]["name"] for j in w1.list("Job", "batch", "batch/v1")] == ["j"]

        await hub.advance_async(minutes=30)
        await set_check(client, "job-j", state="Retry", requeueAfterSeconds=600, message="stop")
        await kueue.settle()
        wl = await workload(client)
        assert "clusterName" not in wl["status"]
        assert "admission" not in wl["status"]
        assert (cond(wl, "Evicted"), reason(wl, "Evicted")) == ("True", "AdmissionCheck")
        assert cond(wl, "Admitted") == "False"
        assert wl["status"]["accumulatedPastExecutionTimeSeconds"] == 30 * 60
        assert w1.list("Job", "batch", "batch/v1") == [], "the remote copy outlived eviction"
        assert hub.get("Job", "j", "batch", "batch/v1")["spec"]["suspend"] is True
        assert kueue.evicted == {"batch/job-j": 1}

        await hub.advance_async(seconds=600)
        await kueue.settle()
        assert cond(await workload(client), "QuotaReserved") == "True"
        await admit_on(client, kueue, "w2")
        assert [j["metadata"]["name"] for j in w2.list("Job", "batch", "batch/v1")] == ["j"]
        assert w1.list("Job", "batch", "batch/v1") == []
        assert kueue.remote_creates == 2
        await kueue.close()


async def test_a_worker_lost_past_worker_lost_timeout_evicts_and_its_stale_copy_goes_later() -> (
    None
):
    async with pair() as (hub, [worker], client):
        kueue = KueueEmulator(hub.base_url, {"w1": worker.base_url}, worker_lost_timeout_s=900)
        await reserved_job(hub, client, kueue, ["w1"])
        await admit_on(client, kueue, "w1")
        assert len(worker.list("Job", "batch", "batch/v1")) == 1

        worker.add_fault(Fault(code=503))
        await hub.advance_async(minutes=5)
        await kueue.settle()
        wl = await workload(client)
        assert wl["metadata"]["annotations"][WORKER_LOST_SINCE] == "2023-06-01T00:05:00Z"
        await hub.advance_async(minutes=14)
        await kueue.settle()
        wl = await workload(client)
        assert cond(wl, "Admitted") == "True", "evicted before workerLostTimeout"

        await hub.advance_async(minutes=1)
        await kueue.reconcile()  # MultiKueue's check goes Retry, as real Kueue's does
        await kueue.reconcile()  # and the core evicts
        wl = await workload(client)
        assert (cond(wl, "Evicted"), reason(wl, "Evicted")) == ("True", "AdmissionCheck")
        evicted = next(c for c in wl["status"]["conditions"] if c["type"] == "Evicted")
        assert "Reserving remote lost" in evicted["message"]
        assert "clusterName" not in wl["status"]
        assert WORKER_LOST_SINCE not in (wl["metadata"].get("annotations") or {})
        await kueue.settle()
        wl = await workload(client)
        assert cond(wl, "QuotaReserved") == "True", "not requeued (no delay was asked)"
        assert check_state(wl, "multikueue")["retryCount"] == 1
        assert kueue.evictions == 1

        worker.clear_faults()
        assert len(worker.list("Job", "batch", "batch/v1")) == 1
        await kueue.settle()
        assert worker.list("Job", "batch", "batch/v1") == [], "stale remote copy kept"
        await kueue.close()


async def test_kueue_is_served_as_the_real_crds_serve_it() -> None:
    async with pair() as (_hub, _workers, client):
        for version in ("v1beta1", "v1beta2"):
            served = await client.http.get(f"/apis/kueue.x-k8s.io/{version}/workloads")
            assert served.status_code == 200, version
        served = await client.http.get(api_path(KUEUE_API, "localqueues", "batch"))
        assert served.status_code == 200
        gone = await client.http.get("/apis/kueue.x-k8s.io/v1alpha1/workloads")
        assert gone.status_code == 404


def _structural_problems(schema: Obj, where: str = "") -> list[str]:
    """Places where a schema is not structural: a node without ``type`` (unless it is
    int-or-string or preserves unknown fields)."""
    problems = []
    if "type" not in schema and not (
        schema.get("x-kubernetes-int-or-string")
        or schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        problems.append(where or "<root>")
    for name, sub in (schema.get("properties") or {}).items():
        problems += _structural_problems(sub, f"{where}.{name}")
    if isinstance(schema.get("items"), dict):
        problems += _structural_problems(schema["items"], f"{where}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        problems += _structural_problems(schema["additionalProperties"], f"{where}{{}}")
    return problems


def _at(schema: Obj, *path: str) -> Obj:
    for part in path:
        schema = schema["items"] if part == "[]" else schema["properties"][part]
    return schema


def _stored(crd: Obj) -> Obj:
    """The stored version of a CRD."""
    return dict(next(v for v in crd["spec"]["versions"] if v["storage"]))


def test_crd_schemas_are_structural_and_state_the_fields_we_touch() -> None:
    crds = {c["spec"]["names"]["kind"]: c for c in all_crds()}
    for kind, crd in crds.items():
        for version in crd["spec"]["versions"]:
            assert _structural_problems(version["schema"]["openAPIV3Schema"]) == [], kind
    kueue = [c for c in crds.values() if c["spec"]["group"] == "kueue.x-k8s.io"]
    kinds = {c["spec"]["names"]["kind"] for c in kueue}
    assert {"Workload", "LocalQueue", "ClusterQueue", "AdmissionCheck"} <= kinds
    assert {"MultiKueueConfig", "MultiKueueCluster"} <= kinds
    for kind in ("Workload", "ClusterQueue", "AdmissionCheck", "AppWrapper"):
        stored = _stored(crds[kind])
        assert stored["subresources"]["status"] == {}, kind

    def schema_of(kind: str) -> Obj:
        return dict(_stored(crds[kind])["schema"]["openAPIV3Schema"])

    assert _stored(crds["Workload"])["name"] == "v1beta2"
    wl = schema_of("Workload")
    state = _at(wl, "status", "admissionChecks", "[]")
    assert sorted(state["required"]) == ["lastTransitionTime", "message", "name", "state"]
    assert state["properties"]["state"]["enum"] == ["Pending", "Ready", "Retry", "Rejected"]
    assert state["properties"]["requeueAfterSeconds"]["type"] == "integer"
    assert _at(wl, "status", "nominatedClusterNames")["maxItems"] == 20
    assert _at(wl, "status", "admissionChecks")["x-kubernetes-list-map-keys"] == ["name"]
    cq = schema_of("ClusterQueue")
    assert "admissionChecks" not in _at(cq, "spec")["properties"]
    assert _at(cq, "spec", "admissionChecksStrategy", "admissionChecks", "[]", "name")
    mkc = schema_of("MultiKueueCluster")
    kubeconfig = _at(mkc, "spec", "clusterSource", "kubeConfig")
    assert kubeconfig["properties"]["locationType"]["enum"] == ["Secret", "Path"]
    assert crds["LocalQueue"]["spec"]["scope"] == "Namespaced"
    aw = schema_of("AppWrapper")
    assert _at(aw, "spec", "dispatchingGates", "[]")["type"] == "string"
    assert _at(aw, "spec", "dispatcherStatus", "dispatchedNanos")["type"] == "integer"


async def test_appwrapper_waits_behind_gates_then_runs_in_its_target_cluster() -> None:
    async with pair() as (hub, [worker], client):
        mcad = AppWrapperEmulator(hub.base_url, {"w1": worker.base_url})
        path = api_path(AW, "appwrappers", "batch")
        await client.create(path, mcad_appwrapper("aw", cpu=2, runtime_h=1))
        await mcad.settle()
        aw = await workload(client, f"{path}/aw")
        assert aw["spec"]["dispatcherStatus"]["phase"] == "Queued"
        assert aw["status"]["state"] == "Pending"
        assert "gated" in aw["status"]["message"]
        aw["spec"]["dispatchingGates"] = []
        answer = await client.http.put(f"{path}/aw", json=aw)
        assert answer.status_code == 200
        await mcad.settle()
        aw = await workload(client, f"{path}/aw")
        assert aw["status"]["state"] == "Pending", "dispatched without a target cluster"
        aw["spec"]["schedulingSpec"] = {
            "clusterScheduling": {"policyResult": {"targetCluster": {"name": "w1"}}}
        }
        assert (await client.http.put(f"{path}/aw", json=aw)).status_code == 200
        await mcad.settle()
        await worker.settle_async()
        aw = await workload(client, f"{path}/aw")
        assert aw["spec"]["dispatcherStatus"]["phase"] == "Running"
        assert aw["status"]["state"] == "Running"
        assert [j["metadata"]["name"] for j in worker.list("Job", "batch", "batch/v1")] == ["aw"]
        await worker.advance_async(hours=1)
        await hub.advance_async(hours=1)
        await mcad.settle()
        aw = await workload(client, f"{path}/aw")
        assert aw["spec"]["dispatcherStatus"]["phase"] == "Succeeded"
        assert aw["status"]["state"] == "Completed"
        assert aw["spec"]["dispatcherStatus"]["dispatchedNanos"] == 3600 * 10**9
        assert parse_utc(aw["status"]["completionTime"]) == START + timedelta(hours=1)
        assert worker.list("Job", "batch", "batch/v1") == []
        assert mcad.dispatches == 1
        await mcad.close()


async def test_a_gate_put_back_takes_an_appwrapper_back_and_a_release_redispatches_it() -> None:
    async with pair(workers=2) as (hub, [w1, w2], client):
        mcad = AppWrapperEmulator(hub.base_url, {"w1": w1.base_url, "w2": w2.base_url})
        path = api_path(AW, "appwrappers", "batch")
        body = mcad_appwrapper("aw", cpu=2, runtime_h=2)
        body["spec"]["dispatchingGates"] = []
        body["spec"]["schedulingSpec"] = {
            "clusterScheduling": {"policyResult": {"targetCluster": {"name": "w1"}}}
        }
        await client.create(path, body)
        await mcad.settle()
        assert len(w1.list("Job", "batch", "batch/v1")) == 1

        await hub.advance_async(minutes=40)
        aw = await workload(client, f"{path}/aw")
        aw["spec"]["dispatchingGates"] = ["carbonshift.io/hold"]
        assert (await client.http.put(f"{path}/aw", json=aw)).status_code == 200
        await mcad.settle()
        aw = await workload(client, f"{path}/aw")
        dispatcher = aw["spec"]["dispatcherStatus"]
        assert dispatcher["phase"] == "Queued"
        assert [t["phase"] for t in dispatcher["transitions"]][-2:] == ["Requeuing", "Queued"]
        assert dispatcher["dispatchedNanos"] == 40 * 60 * 10**9
        assert aw["status"]["state"] == "Pending"
        assert w1.list("Job", "batch", "batch/v1") == [], "wrapped Job left running"
        assert mcad.requeues == 1

        aw["spec"]["dispatchingGates"] = []
        aw["spec"]["schedulingSpec"]["clusterScheduling"]["policyResult"]["targetCluster"] = {
            "name": "w2"
        }
        assert (await client.http.put(f"{path}/aw", json=aw)).status_code == 200
        await mcad.settle()
        aw = await workload(client, f"{path}/aw")
        assert aw["spec"]["dispatcherStatus"]["phase"] == "Running"
        assert aw["status"]["targetClusterName"] == "w2"
        assert [j["metadata"]["name"] for j in w2.list("Job", "batch", "batch/v1")] == ["aw"]
        assert mcad.dispatches == 2
        await mcad.close()


async def test_mcad_in_a_spoke_runs_its_own_appwrappers_under_the_real_crd() -> None:
    mcad_crds = tuple(
        c for c in upstream_crds("mcad") if c["spec"]["names"]["kind"] == "AppWrapper"
    )
    config = FakeKubeConfig(nodes=1, cpu="16", start=START, custom_resources=mcad_crds)
    with run_fakekube(config) as spoke:
        client = FakeClient(spoke.base_url)
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "batch"}}
        await client.create("/api/v1/namespaces", namespace)
        mcad = LocalMcadEmulator(spoke.base_url, {"s1": spoke.base_url})
        path = api_path(AW, "appwrappers", "batch")
        await client.create(path, appwrapper("aw", cpu=2, runtime_h=1, copied=True))
        await mcad.settle()
        await spoke.settle_async()
        aw = await workload(client, f"{path}/aw")
        assert (aw["status"]["state"], aw["status"]["step"]) == ("Running", "created")
        assert aw["status"]["restarts"] == 0
        jobs = spoke.list("Job", "batch", "batch/v1")
        assert [j["metadata"]["name"] for j in jobs] == ["aw"]
        assert jobs[0]["metadata"]["ownerReferences"][0]["uid"] == aw["metadata"]["uid"]
        await spoke.advance_async(hours=1)
        await mcad.settle()
        aw = await workload(client, f"{path}/aw")
        assert aw["status"]["state"] == "Completed"
        assert "step" not in aw["status"]  # Idle
        assert [t["state"] for t in aw["status"]["transitions"]] == ["Running", "Completed"]
        assert mcad.dispatches == 1
        assert await client.delete(f"{path}/aw")
        await spoke.settle_async()
        assert spoke.list("Job", "batch", "batch/v1") == []  # deleted with their AppWrapper
        await mcad.close()
        await client.close()
