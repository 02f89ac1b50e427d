"""Job ``spec.managedBy`` (JobManagedBy, on in 1.32) and the Job status rules that came with it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from fakekube import FakeKube
from tests.testing.builders import JOBS, MERGE, PODS, job

Obj = dict[str, Any]

START = "2023-06-01T00:00:00Z"
LATER = "2023-06-01T01:00:00Z"


def managed_job(name: str = "j", managed_by: str | None = "kueue.x-k8s.io/multikueue") -> Obj:
    body = job(name)
    if managed_by is not None:
        body["spec"]["managedBy"] = managed_by
    return body


def cond(kind: str, status: str = "True") -> Obj:
    return {"type": kind, "status": status, "reason": "R", "message": "m"}


def test_a_job_managed_elsewhere_is_left_alone(fakekube: FakeKube, http: httpx.Client) -> None:
    http.post(JOBS, json=managed_job("ext")).raise_for_status()
    http.post(JOBS, json=managed_job("own", "kubernetes.io/job-controller")).raise_for_status()

    fakekube.advance(hours=2)

    pods = http.get(PODS).json()["items"]
    owners = {p["metadata"]["ownerReferences"][0]["name"] for p in pods}
    assert owners == {"own"}
    assert http.get(f"{JOBS}/ext").json()["status"] == {}
    assert http.get(f"{JOBS}/own").json()["status"]["succeeded"] == 1


@pytest.mark.parametrize(
    ("managed_by", "want_cause"),
    [
        pytest.param(
            "acme",
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "acme": must be a domain-prefixed path (such as '
                '"acme.io/foo")',
            },
            id="no-slash",
        ),
        pytest.param(
            "acme.io/a b",
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "a b": must be a valid path (regex used for '
                "validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
            },
            id="bad-path",
        ),
        pytest.param(
            "acme.io/" + "x" * 56,
            {"reason": "FieldValueTooLong", "message": "Too long: may not be more than 63 bytes"},
            id="too-long",
        ),
        pytest.param("", {"reason": "FieldValueRequired", "message": "Required value"}, id="empty"),
    ],
)
def test_managed_by_must_be_a_short_domain_prefixed_path(
    http: httpx.Client, managed_by: str, want_cause: Obj
) -> None:
    answer = http.post(JOBS, json=managed_job(managed_by=managed_by))

    assert answer.status_code == 422
    assert answer.json()["details"]["causes"] == [{**want_cause, "field": "spec.managedBy"}]


def test_managed_by_is_immutable(http: httpx.Client) -> None:
    http.post(JOBS, json=managed_job("a")).raise_for_status()
    http.post(JOBS, json=managed_job("b", None)).raise_for_status()

    changed = http.patch(f"{JOBS}/a", json={"spec": {"managedBy": "other.io/x"}}, headers=MERGE)
    added = http.patch(f"{JOBS}/b", json={"spec": {"managedBy": "other.io/x"}}, headers=MERGE)
    removed = http.patch(f"{JOBS}/a", json={"spec": {"managedBy": None}}, headers=MERGE)

    assert changed.status_code == 422
    assert changed.json()["message"] == (
        'Job.batch "a" is invalid: spec.managedBy: Invalid value: "other.io/x": field is immutable'
    )
    assert added.status_code == 422
    assert removed.json()["details"]["causes"][0]["message"] == (
        "Invalid value: null: field is immutable"
    )


@pytest.mark.parametrize(
    ("before", "after", "want"),
    [
        pytest.param(
            {"startTime": START},
            {
                "conditions": [cond("Complete"), cond("Failed")],
                "completionTime": LATER,
            },
            [
                "status.conditions: Invalid value: cannot set Complete=True and Failed=true "
                "conditions"
            ],
            id="complete-and-failed",
        ),
        pytest.param(
            {"startTime": START},
            {"completionTime": LATER},
            [
                "status.completionTime: Invalid value: 2023-06-01 01:00:00 +0000 UTC: cannot set "
                "completionTime when there is no Complete=True condition"
            ],
            id="completion-time-without-complete",
        ),
        pytest.param(
            {"startTime": START},
            {"conditions": [cond("Complete")]},
            ["status.completionTime: Required value: completionTime is required for Complete jobs"],
            id="complete-without-completion-time",
        ),
        pytest.param(
            {"startTime": LATER},
            {"conditions": [cond("Complete")], "completionTime": START},
            [
                "status.completionTime: Invalid value: 2023-06-01 00:00:00 +0000 UTC: "
                "completionTime cannot be set before startTime"
            ],
            id="completion-before-start",
        ),
        pytest.param(
            {},
            {"conditions": [cond("FailureTarget"), cond("Failed")]},
            ["status.startTime: Required value: startTime is required for finished job"],
            id="finished-without-start-time",
        ),
        pytest.param(
            {"startTime": START},
            {"conditions": [cond("FailureTarget"), cond("Failed")], "active": 1},
            ["status.active: Invalid value: 1: active>0 is invalid for finished job"],
            id="finished-with-active-pods",
        ),
        pytest.param(
            {},
            {"ready": -1},
            ["status.ready: Invalid value: -1: must be greater than or equal to 0"],
            id="negative-count",
        ),
        pytest.param(
            {"startTime": START, "conditions": [cond("FailureTarget"), cond("Failed")]},
            {"conditions": [cond("FailureTarget")]},
            ["status.conditions: Invalid value: cannot disable the terminal Failed=True condition"],
            id="terminal-condition-removed",
        ),
        pytest.param(
            {"succeeded": 2},
            {"succeeded": 1},
            ["status.succeeded: Invalid value: 1: cannot decrease the succeeded counter"],
            id="succeeded-decreased",
        ),
        pytest.param(
            {"startTime": START},
            {"startTime": LATER},
            ["status.startTime: Required value: startTime cannot be removed for unsuspended job"],
            id="start-time-changed-while-running",
        ),
        pytest.param(
            {
                "startTime": START,
                "conditions": [cond("SuccessCriteriaMet"), cond("Complete")],
                "completionTime": LATER,
            },
            {"completionTime": "2023-06-01T02:00:00Z"},
            [
                "status.completionTime: Invalid value: 2023-06-01 02:00:00 +0000 UTC: "
                "completionTime cannot be mutated"
            ],
            id="completion-time-mutated",
        ),
    ],
)
def test_status_writes_follow_the_job_status_rules(
    http: httpx.Client, before: Obj, after: Obj, want: list[str]
) -> None:
    http.post(JOBS, json=managed_job()).raise_for_status()
    if before:
        first = http.patch(f"{JOBS}/j/status", json={"status": before}, headers=MERGE)
        assert first.status_code == 200, first.text

    answer = http.patch(f"{JOBS}/j/status", json={"status": after}, headers=MERGE)

    assert answer.status_code == 422, answer.text
    texts = [f"{c['field']}: {c['message']}" for c in answer.json()["details"]["causes"]]
    assert texts == want


def test_an_external_controller_can_finish_a_job(http: httpx.Client) -> None:
    http.post(JOBS, json=managed_job()).raise_for_status()
    running = {"status": {"startTime": START, "active": 1}}
    done = {
        "status": {
            "active": 0,
            "succeeded": 1,
            "conditions": [cond("SuccessCriteriaMet"), cond("Complete")],
            "completionTime": LATER,
        }
    }

    first = http.patch(f"{JOBS}/j/status", json=running, headers=MERGE)
    second = http.patch(f"{JOBS}/j/status", json=done, headers=MERGE)

    assert first.status_code == 200, first.text
    assert second.status_code == 200, second.text
    assert second.json()["status"]["completionTime"] == LATER


def test_the_built_in_controller_passes_the_status_rules(
    fakekube: FakeKube, http: httpx.Client
) -> None:
    http.post(JOBS, json=job("ok", runtime="30m")).raise_for_status()
    http.post(JOBS, json=job("s", suspend=True)).raise_for_status()

    fakekube.advance(hours=1)
    http.patch(f"{JOBS}/s", json={"spec": {"suspend": False}}, headers=MERGE).raise_for_status()
    fakekube.advance(hours=2)

    for name in ("ok", "s"):
        status = http.get(f"{JOBS}/{name}").json()["status"]
        assert {c["type"] for c in status["conditions"]} >= {"Complete", "SuccessCriteriaMet"}
        assert status["completionTime"] >= status["startTime"]
