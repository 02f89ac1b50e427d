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
