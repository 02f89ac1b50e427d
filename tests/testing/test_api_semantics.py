"""The fake API server's REST semantics, over real HTTP on loopback."""

from __future__ import annotations

import httpx
import pytest

from fakekube import FakeKube
from tests.testing.builders import JOBS, JSONPATCH, MERGE, PODS, STRATEGIC, job, pod


def test_create_get_list_carry_resource_versions(http: httpx.Client) -> None:
    created = http.post(PODS, json=pod("a", gates=("g",))).json()
    got = http.get(f"{PODS}/a").json()
    listed = http.get(PODS).json()

    assert created["metadata"]["resourceVersion"] == got["metadata"]["resourceVersion"]
    assert got["metadata"]["uid"]
    assert got["metadata"]["creationTimestamp"] == "2023-06-01T00:00:00Z"
    assert listed["kind"] == "PodList"
    assert int(listed["metadata"]["resourceVersion"]) >= int(got["metadata"]["resourceVersion"])
    assert [p["metadata"]["name"] for p in listed["items"]] == ["a"]


def test_missing_object_is_a_not_found_status(http: httpx.Client) -> None:
    answer = http.get(f"{PODS}/nope")

    assert answer.status_code == 404
    assert answer.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "kind": "pods"},
        "code": 404,
    }


def test_creating_twice_is_already_exists(http: httpx.Client) -> None:
    http.post(PODS, json=pod("a"))
    answer = http.post(PODS, json=pod("a"))

    assert answer.status_code == 409
    assert answer.json()["reason"] == "AlreadyExists"
    assert answer.json()["message"] == 'pods "a" already exists'


def test_stale_update_is_a_conflict(http: httpx.Client) -> None:
    first = http.post(PODS, json=pod("a")).json()
    http.patch(
        f"{PODS}/a", json={"metadata": {"labels": {"x": "1"}}}, headers=MERGE
    ).raise_for_status()
    first["metadata"]["labels"] = {"x": "2"}

    answer = http.put(f"{PODS}/a", json=first)

    assert answer.status_code == 409
    assert answer.json()["reason"] == "Conflict"
    assert answer.json()["message"] == (
        'Operation cannot be fulfilled on pods "a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def test_generate_name_gives_a_fresh_name(http: httpx.Client) -> None:
    body = pod("")
    body["metadata"] = {"generateName": "work-"}

    names = {http.post(PODS, json=body).json()["metadata"]["name"] for _ in range(3)}

    assert len(names) == 3
    assert all(n.startswith("work-") and len(n) == len("work-") + 5 for n in names)


def test_unknown_namespace_is_not_found(http: httpx.Client) -> None:
    answer = http.post("/api/v1/namespaces/ghost/pods", json=pod("a"))

    assert answer.status_code == 404
    assert answer.json()["message"] == 'namespaces "ghost" not found'


def test_status_changes_only_through_the_status_subresource(http: httpx.Client) -> None:
    http.post(PODS, json=pod("a", gates=("g",)))
    through_main = http.patch(
        f"{PODS}/a", json={"status": {"phase": "Running"}}, headers=MERGE
    ).json()
    through_status = http.patch(
        f"{PODS}/a/status", json={"status": {"phase": "Running"}}, headers=MERGE
    ).json()

    assert through_main["status"]["phase"] == "Pending"
    assert through_status["status"]["phase"] == "Running"


def test_status_subresource_ignores_spec_changes(http: httpx.Client) -> None:
    http.post(PODS, json=pod("a", gates=("g",)))
    answer = http.patch(
        f"{PODS}/a/status", json={"spec": {"schedulingGates": None}}, headers=MERGE
    ).json()

    assert answer["spec"]["schedulingGates"] == [{"name": "g"}]


@pytest.mark.parametrize(
    ("selector", "want_names"),
    [
        pytest.param("labelSelector=tier=batch", ["a", "b"], id="equality"),
        pytest.param("labelSelector=tier!=batch", ["c"], id="inequality-includes-unlabelled"),
        pytest.param("labelSelector=tier in (batch,web)", ["a", "b"], id="set-in"),
        pytest.param("labelSelector=team", ["a"], id="exists"),
        pytest.param("labelSelector=!team", ["b", "c"], id="does-not-exist"),
        pytest.param("fieldSelector=metadata.name=b", ["b"], id="field-name"),
        pytest.param("fieldSelector=status.phase=Pending", ["a", "b", "c"], id="field-phase"),
        pytest.param("fieldSelector=spec.nodeName=", ["a", "b", "c"], id="field-unbound"),
    ],
)
def test_selectors_filter_lists(http: httpx.Client, selector: str, want_names: list[str]) -> None:
    http.post(PODS, json=pod("a", gates=("g",), labels={"tier": "batch", "team": "x"}))
    http.post(PODS, json=pod("b", gates=("g",), labels={"tier": "batch"}))
    http.post(PODS, json=pod("c", gates=("g",)))

    items = http.get(f"{PODS}?{selector}").json()["items"]

    assert [p["metadata"]["name"] for p in items] == want_names


def test_unknown_field_selector_is_a_bad_request(http: httpx.Client) -> None:
    answer = http.get(f"{PODS}?fieldSelector=spec.image=x")

    assert answer.status_code == 400
    assert answer.json()["message"] == "field label not supported: spec.image"


def test_finalizers_hold_deletion_until_removed(http: httpx.Client) -> None:
    body = pod("a", gates=("g",))
    body["metadata"]["finalizers"] = ["example.com/keep"]
    http.post(PODS, json=body)

    deleting = http.delete(f"{PODS}/a")
    still_there = http.get(f"{PODS}/a").json()
    added = http.patch(
        f"{PODS}/a",
        json={"metadata": {"finalizers": ["example.com/keep", "x.io/y"]}},
        headers=MERGE,
    )
    released = http.patch(f"{PODS}/a", json={"metadata": {"finalizers": None}}, headers=MERGE)

    assert deleting.status_code == 202
    assert still_there["metadata"]["deletionTimestamp"] == "2023-06-01T00:00:00Z"
    assert added.status_code == 422
    assert released.status_code == 200
    assert http.get(f"{PODS}/a").status_code == 404


def test_delete_preconditions_are_checked(http: httpx.Client) -> None:
    http.post(PODS, json=pod("a"))
    answer = http.request("DELETE", f"{PODS}/a", json={"preconditions": {"resourceVersion": "1"}})

    assert answer.status_code == 409
    assert "Precondition failed" in answer.json()["message"]


def test_dry_run_stores_nothing(http: httpx.Client, fakekube: FakeKube) -> None:
    before = fakekube.resource_version
    created = http.post(f"{PODS}?dryRun=All", json=pod("a"))
    deleted_missing = http.request("DELETE", f"{PODS}/a", json={"dryRun": ["All"]})

    assert created.status_code == 201
    assert created.json()["metadata"]["name"] == "a"
    assert deleted_missing.status_code == 404
    assert fakekube.resource_version == before


def test_patch_formats_edit_labels_and_gates(http: httpx.Client) -> None:
    http.post(PODS, json=pod("a", gates=("one", "two")))

    http.patch(
        f"{PODS}/a",
        json=[{"op": "add", "path": "/metadata/labels/x", "value": "1"}],
        headers=JSONPATCH,
    )
    strategic = http.patch(
        f"{PODS}/a",
        json={
            "metadata": {"annotations": {"k": "v"}},
            "spec": {"schedulingGates": [{"name": "one", "$patch": "delete"}]},
        },
        headers=STRATEGIC,
    ).json()

    assert strategic["metadata"]["labels"] == {"x": "1"}
    assert strategic["metadata"]["annotations"] == {"k": "v"}
    assert strategic["spec"]["schedulingGates"] == [{"name": "two"}]


def test_unsupported_patch_type_is_415(http: httpx.Client) -> None:
    http.post(PODS, json=pod("a"))
    answer = http.patch(f"{PODS}/a", content=b"{}", headers={"content-type": "text/plain"})

    assert answer.status_code == 415
    assert answer.json()["reason"] == "UnsupportedMediaType"


def test_server_side_apply_creates_then_merges(http: httpx.Client) -> None:
    body = job("j", suspend=True)
    url = f"{JOBS}/j?fieldManager=test"
    created = http.patch(url, json=body, headers={"content-type": "application/apply-patch+yaml"})
    body["metadata"]["labels"] = {"team": "a"}
    merged = http.patch(url, json=body, headers={"content-type": "application/apply-patch+yaml"})
    no_manager = http.patch(
        f"{JOBS}/j", json=body, headers={"content-type": "application/apply-patch+yaml"}
    )

    assert created.status_code == 201
    assert merged.status_code == 200
    # The Job took its template's generated labels at creation; the apply adds its own.
    assert merged.json()["metadata"]["labels"] == {
        **created.json()["metadata"]["labels"],
        "team": "a",
    }
    assert merged.json()["spec"]["selector"] == created.json()["spec"]["selector"]
    assert no_manager.status_code == 422  # ValidatePatchOptions: fieldManager required


def test_job_defaults_selector_and_template_labels(http: httpx.Client) -> None:
    created = http.post(JOBS, json=job("j", suspend=True)).json()
    uid = created["metadata"]["uid"]

    assert created["spec"]["selector"] == {
        "matchLabels": {"batch.kubernetes.io/controller-uid": uid}
    }
    assert created["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "j"
    assert created["spec"]["backoffLimit"] == 6
    assert created["metadata"]["generation"] == 1


def test_discovery_lists_our_resources(http: httpx.Client) -> None:
    core = {r["name"] for r in http.get("/api/v1").json()["resources"]}
    groups = {g["name"] for g in http.get("/apis").json()["groups"]}
    batch = {r["name"] for r in http.get("/apis/batch/v1").json()["resources"]}

    assert {
        "pods",
        "pods/status",
        "pods/binding",
        "nodes",
        "namespaces",
        "events",
        "configmaps",
        "secrets",
    } <= core
    assert {
        "batch",
        "apps",
        "coordination.k8s.io",
        "rbac.authorization.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
    } <= groups
    assert batch == {"jobs", "jobs/status"}


def test_binding_assigns_a_node_once(http: httpx.Client) -> None:
    http.post(PODS, json=pod("a", gates=("g",)))
    gated = http.post(f"{PODS}/a/binding", json={"target": {"kind": "Node", "name": "node-1"}})
    http.patch(f"{PODS}/a", json={"spec": {"schedulingGates": None}}, headers=MERGE)
    # The emulated scheduler may bind first; either way a second binding is refused.
    http.post(f"{PODS}/a/binding", json={"target": {"kind": "Node", "name": "node-1"}})
    again = http.post(f"{PODS}/a/binding", json={"target": {"kind": "Node", "name": "node-2"}})

    assert gated.status_code == 409
    assert again.status_code == 409
    assert "is already assigned to node" in again.json()["message"]


def test_namespace_deletion_removes_its_content(http: httpx.Client, fakekube: FakeKube) -> None:
    http.post("/api/v1/namespaces", json={"metadata": {"name": "tmp"}})
    http.post(
        "/api/v1/namespaces/tmp/configmaps", json={"metadata": {"name": "c"}, "data": {"a": "b"}}
    )

    http.delete("/api/v1/namespaces/tmp")
    fakekube.settle()

    assert http.get("/api/v1/namespaces/tmp").status_code == 404
    assert http.get("/api/v1/namespaces/tmp/configmaps/c").status_code == 404


def test_deleting_a_job_in_background_deletes_its_pods(
    http: httpx.Client, fakekube: FakeKube
) -> None:
    http.post(JOBS, json=job("j"))
    fakekube.settle()
    assert len(http.get(PODS).json()["items"]) == 1

    http.delete(f"{JOBS}/j?propagationPolicy=Background")

    assert http.get(PODS).json()["items"] == []


def test_cluster_scoped_resources_have_no_namespaced_path(http: httpx.Client) -> None:
    assert http.get("/api/v1/namespaces/default/nodes").status_code == 404
    assert http.get("/api/v1/nodes/node-0").status_code == 200
