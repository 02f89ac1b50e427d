"""The emulated scheduler, kubelet and Job controller, driven in virtual time."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from fakekube import EXIT_CODE_ANNOTATION, FakeKube
from tests.testing.builders import JOBS, MERGE, PODS, job, pod


def phase_and_node(fakekube: FakeKube, name: str) -> tuple[str, str | None]:
    obj = fakekube.get("Pod", name, "default")
    return obj["status"]["phase"], obj["spec"].get("nodeName")


def test_gated_pod_waits_then_runs_and_succeeds_after_its_runtime(
    http: httpx.Client, fakekube: FakeKube
) -> None:
    http.post(PODS, json=pod("p", gates=("carbonshift.io/hold",), runtime="90m"))
    fakekube.advance(hours=3)
    assert phase_and_node(fakekube, "p") == ("Pending", None)

    http.patch(f"{PODS}/p", json={"spec": {"schedulingGates": None}}, headers=MERGE)
    fakekube.settle()
    phase, node = phase_and_node(fakekube, "p")
    assert phase == "Running"
    assert node is not None

    fakekube.advance(minutes=89)
    assert phase_and_node(fakekube, "p")[0] == "Running"
    fakekube.advance(minutes=1)
    final = fakekube.get("Pod", "p", "default")
    assert final["status"]["phase"] == "Succeeded"
    assert final["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0


def test_pod_without_runtime_keeps_running(http: httpx.Client, fakekube: FakeKube) -> None:
    http.post(PODS, json=pod("p"))
    fakekube.advance(hours=48)

    assert phase_and_node(fakekube, "p")[0] == "Running"


def test_exit_code_annotation_fails_the_pod(http: httpx.Client, fakekube: FakeKube) -> None:
    body = pod("p", runtime="10m")
    body["metadata"]["annotations"][EXIT_CODE_ANNOTATION] = "3"
    http.post(PODS, json=body)
    fakekube.advance(minutes=10)

    assert phase_and_node(fakekube, "p")[0] == "Failed"


@pytest.mark.fakekube_config(nodes=2, node_labels={"pool": "batch"})
def test_scheduler_honours_node_selector_and_affinity(
    http: httpx.Client, fakekube: FakeKube
) -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
                        ]
                    }
                ]
            }
        }
    }
    http.post(PODS, json=pod("pinned", node_selector={"pool": "batch"}, affinity=affinity))
    http.post(PODS, json=pod("nowhere", node_selector={"pool": "gpu"}))
    fakekube.settle()

    assert phase_and_node(fakekube, "pinned") == ("Running", "node-1")
    nowhere = fakekube.get("Pod", "nowhere", "default")
    condition = next(c for c in nowhere["status"]["conditions"] if c["type"] == "PodScheduled")
    assert nowhere["spec"].get("nodeName") is None
    assert condition["reason"] == "Unschedulable"
    assert (
        condition["message"]
        == "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    )


@pytest.mark.fakekube_config(nodes=2, cpu="1")
def test_scheduler_respects_capacity_until_pods_finish(
    http: httpx.Client, fakekube: FakeKube
) -> None:
    for name in ("a", "b", "c"):
        http.post(PODS, json=pod(name, cpu="800m", runtime="1h"))
    fakekube.settle()
    bound = {n: phase_and_node(fakekube, n) for n in ("a", "b", "c")}
    assert sorted(node for _, node in bound.values() if node) == ["node-0", "node-1"]
    assert ("Pending", None) in bound.values()

    fakekube.advance(hours=1)  # a and b finish; c gets a node and starts
    fakekube.advance(hours=1)

    assert {phase_and_node(fakekube, n)[0] for n in ("a", "b", "c")} == {"Succeeded"}


def test_events_record_scheduling(http: httpx.Client, fakekube: FakeKube) -> None:
    http.post(PODS, json=pod("p"))
    fakekube.settle()

    reasons = [
        e["reason"]
        for e in http.get(
            "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name=p"
        ).json()["items"]
    ]

    assert reasons == ["Scheduled", "Started"]


def job_status(fakekube: FakeKube, name: str = "j") -> dict[str, Any]:
    status: dict[str, Any] = fakekube.get("Job", name, "default", "batch/v1").get("status") or {}
    return status


def conditions(status: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status.get("conditions") or []}


def test_suspended_job_creates_no_pods_until_resumed_then_completes(
    http: httpx.Client, fakekube: FakeKube
) -> None:
    http.post(JOBS, json=job("j", suspend=True, runtime="2h", completions=2, parallelism=2))
    fakekube.advance(hours=5)
    assert fakekube.list("Pod", "default") == []
    assert conditions(job_status(fakekube)) == {"Suspended": "True"}

    http.patch(f"{JOBS}/j", json={"spec": {"suspend": False}}, headers=MERGE)
    fakekube.settle()
    running = job_status(fakekube)
    assert running["active"] == 2
    assert running["startTime"] == fakekube.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    pods = fakekube.list("Pod", "default")
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "Job" for p in pods)
    assert all(p["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "j" for p in pods)

    fakekube.advance(hours=2)
    done = job_status(fakekube)
    assert done["succeeded"] == 2
    assert "active" not in done  # a zero counter is omitted (omitempty)
    assert conditions(done)["Complete"] == "True"
    assert done["completionTime"] == fakekube.now().strftime("%Y-%m-%dT%H:%M:%SZ")


def test_suspending_a_running_job_deletes_its_pods_and_resets_start_time(
    http: httpx.Client, fakekube: FakeKube
) -> None:
    http.post(JOBS, json=job("j"))
    fakekube.settle()
    assert job_status(fakekube)["active"] == 1

    http.patch(f"{JOBS}/j", json={"spec": {"suspend": True}}, headers=MERGE)
    fakekube.settle()

    status = job_status(fakekube)
    assert fakekube.list("Pod", "default") == []
    assert "active" not in status  # a zero counter is omitted (omitempty)
    assert "startTime" not in status
    assert conditions(status)["Suspended"] == "True"


def test_job_fails_past_its_backoff_limit(http: httpx.Client, fakekube: FakeKube) -> None:
    body = job("j", runtime="1m")
    body["spec"]["backoffLimit"] = 1
    body["spec"]["template"]["metadata"]["annotations"][EXIT_CODE_ANNOTATION] = "1"
    http.post(JOBS, json=body)

    for _ in range(3):
        fakekube.advance(minutes=1)

    status = job_status(fakekube)
    assert status["failed"] == 2
    assert conditions(status)["Failed"] == "True"


def _scan(fakekube: FakeKube) -> dict[str, Any]:
    """What the pod index should hold, by a look at every stored Pod."""
    from fakekube.podindex import requests, schedulable

    store, rt = fakekube.cluster.store, fakekube.cluster.api.kind("Pod")
    unbound, starting, used = set(), set(), {}
    for obj in store.items(rt):
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        node = obj["spec"].get("nodeName")
        phase = (obj.get("status") or {}).get("phase", "Pending")
        if schedulable(obj):
            unbound.add(key)
        if node and phase not in ("Succeeded", "Failed"):
            if phase == "Pending":
                starting.add(key)
            held = used.setdefault(node, {"cpu": 0, "pods": 0})
            held["cpu"] += requests(obj)["cpu"]
            held["pods"] += 1
    return {"unbound": unbound, "starting": starting, "used": used}


def _indexed(fakekube: FakeKube) -> dict[str, Any]:
    index = fakekube.cluster.api.pods
    used = {
        node: {"cpu": index.used[node]["cpu"], "pods": count}
        for node, count in index.count.items()
        if count
    }
    return {"unbound": set(index.unbound), "starting": set(index.starting), "used": used}


@pytest.mark.fakekube_config(nodes=2, cpu="2")
def test_pod_index_agrees_with_a_scan_of_every_pod_through_a_pods_life(
    http: httpx.Client, fakekube: FakeKube
) -> None:
    for i in range(6):
        http.post(PODS, json=pod(f"p{i}", cpu="1", runtime=f"{i + 1}h", gates=("g",)))
    fakekube.settle()
    want_states = [_scan(fakekube)]
    got_states = [_indexed(fakekube)]
    for i in range(6):  # ungate one by one: 4 fit, 2 wait for room
        http.patch(f"{PODS}/p{i}", json={"spec": {"schedulingGates": None}}, headers=MERGE)
        fakekube.settle()
        want_states.append(_scan(fakekube))
        got_states.append(_indexed(fakekube))
    http.delete(f"{PODS}/p3")
    for _ in range(8):  # pods end one an hour and the waiting ones take their room
        fakekube.advance(hours=1)
        want_states.append(_scan(fakekube))
        got_states.append(_indexed(fakekube))

    assert got_states == want_states
    assert {phase_and_node(fakekube, f"p{i}")[0] for i in (0, 1, 2, 4, 5)} == {"Succeeded"}


def test_a_settle_after_a_write_to_one_pod_does_not_visit_every_pod(
    http: httpx.Client, fakekube: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(30):
        http.post(PODS, json=pod(f"p{i}", gates=("g",)))
    http.post(PODS, json=pod("running", runtime="5h"))
    fakekube.settle()
    store = fakekube.cluster.store
    scans: list[str] = []
    items = store.items

    def counting(rt: Any, namespace: str | None = None) -> Any:
        scans.append(rt.plural)
        return items(rt, namespace)

    monkeypatch.setattr(store, "items", counting)
    http.patch(f"{PODS}/p7", json={"metadata": {"annotations": {"a": "b"}}}, headers=MERGE)
    fakekube.advance(hours=1)

    assert "pods" not in scans
    assert phase_and_node(fakekube, "running")[0] == "Running"


@pytest.mark.fakekube_config(nodes=1, cpu="1")
def test_a_new_pod_does_not_make_the_scheduler_retry_the_pods_that_did_not_fit(
    http: httpx.Client, fakekube: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fakekube.controllers as controllers

    http.post(PODS, json=pod("big", cpu="1", runtime="2h"))
    for i in range(10):
        http.post(PODS, json=pod(f"wait{i}", cpu="1", runtime="1h"))
    fakekube.settle()
    tried: list[str] = []
    matches = controllers.node_matches_pod

    def counting(spec: Any, node: Any) -> bool:
        tried.append(spec["containers"][0]["name"])
        return matches(spec, node)

    monkeypatch.setattr(controllers, "node_matches_pod", counting)
    http.post(PODS, json=pod("late", cpu="1", runtime="1h"))
    fakekube.settle()
    want_tried_on_arrival = 1  # the new Pod on the one node; the waiting ten not again
    tried_on_arrival = len(tried)
    fakekube.advance(hours=2)  # "big" ends: room freed, the waiting Pods are tried again

    assert tried_on_arrival == want_tried_on_arrival
    assert phase_and_node(fakekube, "wait0") == ("Running", "node-0")
    assert phase_and_node(fakekube, "late")[0] == "Pending"


def test_the_job_controller_looks_only_at_the_jobs_written_since_it_last_ran(
    http: httpx.Client, fakekube: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fakekube.controllers as controllers

    for i in range(20):
        http.post(JOBS, json=job(f"j{i}", suspend=True))
    http.post(JOBS, json=job("runs", runtime="2h"))
    fakekube.settle()
    synced: list[str] = []
    sync = controllers._sync_job

    async def counting(api: Any, stored: Any, *args: Any) -> None:
        synced.append(stored["metadata"]["name"])
        await sync(api, stored, *args)

    monkeypatch.setattr(controllers, "_sync_job", counting)
    http.patch(f"{JOBS}/j7", json={"metadata": {"annotations": {"a": "b"}}}, headers=MERGE)
    fakekube.settle()
    want_synced_after_one_write = {"j7"}
    synced_after_one_write = set(synced)
    fakekube.advance(hours=2)  # the running Job's pod ends: its Job is looked at, completes

    assert synced_after_one_write == want_synced_after_one_write
    assert "runs" in synced
    assert conditions(job_status(fakekube, "runs")).get("Complete") == "True"
