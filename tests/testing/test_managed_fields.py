"""Server-side apply records managedFields, refuses conflicting applies, and honours force."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.testing.builders import APPLY, MERGE
from tests.testing.test_schema_validation import CRD, WIDGETS, widget

Obj = dict[str, Any]

pytestmark = pytest.mark.fakekube_config(custom_resources=(CRD,))


def apply(
    http: httpx.Client, body: Obj, manager: str, *, sub: str = "", force: bool = False
) -> httpx.Response:
    path = f"{WIDGETS}/{body['metadata']['name']}{'/' + sub if sub else ''}"
    params = {"fieldManager": manager, **({"force": "true"} if force else {})}
    return http.patch(path, json=body, headers=APPLY, params=params)


def entries(obj: Obj) -> dict[tuple[str, str, str], Obj]:
    return {
        (e["manager"], e["operation"], e.get("subresource", "")): e
        for e in obj["metadata"].get("managedFields") or []
    }


def test_apply_records_the_fields_it_names(http: httpx.Client) -> None:
    created = apply(http, widget(replicas=2), "alice").json()

    entry = entries(created)[("alice", "Apply", "")]
    assert entry["apiVersion"] == "tests.fakekube.io/v1"
    assert entry["fieldsType"] == "FieldsV1"
    assert entry["fieldsV1"] == {"f:spec": {"f:queue": {}, "f:replicas": {}}}
    assert entry["time"]


def test_updates_record_an_update_entry_from_the_user_agent(http: httpx.Client) -> None:
    http.post(WIDGETS, json=widget(), params={"fieldManager": "creator"}).raise_for_status()

    patched = http.patch(
        f"{WIDGETS}/w", json={"spec": {"replicas": 3}}, headers={**MERGE, "user-agent": "tool/1.0"}
    ).json()

    found = entries(patched)
    assert found[("tool", "Update", "")]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in found[("creator", "Update", "")]["fieldsV1"]["f:spec"]


def test_two_managers_applying_one_field_conflict_until_forced(http: httpx.Client) -> None:
    apply(http, widget(replicas=2), "alice").raise_for_status()

    conflict = apply(http, widget(replicas=3), "bob")
    same_value = apply(http, widget(replicas=2), "carol")
    forced = apply(http, widget(replicas=3), "bob", force=True)
    alice_again = apply(http, widget(replicas=2), "alice")

    assert conflict.status_code == 409
    body = conflict.json()
    assert body["reason"] == "Conflict"
    want = 'Apply failed with 1 conflict: conflict with "alice": .spec.replicas'
    assert body["message"] == want
    assert body["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "alice"',
            "field": ".spec.replicas",
        }
    ]
    assert same_value.status_code == 200, same_value.text
    assert forced.status_code == 200, forced.text
    assert forced.json()["spec"]["replicas"] == 3
    owners = entries(forced.json())
    assert "f:replicas" in owners[("bob", "Apply", "")]["fieldsV1"]["f:spec"]
    assert "f:replicas" not in owners[("alice", "Apply", "")]["fieldsV1"]["f:spec"]
    assert alice_again.status_code == 409
    assert 'conflict with "bob"' in alice_again.json()["message"]


def test_an_update_manager_conflicts_too(http: httpx.Client) -> None:
    apply(http, widget(), "alice").raise_for_status()
    http.patch(
        f"{WIDGETS}/w",
        json={"spec": {"mode": "Slow"}},
        headers=MERGE,
        params={"fieldManager": "ed"},
    ).raise_for_status()

    conflict = apply(http, widget(mode="Fast"), "alice")

    assert conflict.status_code == 409
    body = conflict.json()
    # The manager identifier the real server prints never carries the time.
    assert body["message"] == (
        'Apply failed with 1 conflict: conflict with "ed" using tests.fakekube.io/v1: .spec.mode'
    )
    assert (
        body["details"]["causes"][0]["message"] == 'conflict with "ed" using tests.fakekube.io/v1'
    )


def test_dropping_a_field_from_the_apply_removes_it_unless_shared(http: httpx.Client) -> None:
    apply(http, widget(replicas=2, suspend=True, tags=["a"]), "alice").raise_for_status()
    apply(http, widget(tags=["a"]), "bob").raise_for_status()

    after = apply(http, widget(), "alice").json()

    assert "suspend" not in after["spec"]
    assert after["spec"]["replicas"] == 1  # removed, then defaulted again by the schema
    assert after["spec"]["tags"] == ["a"]  # bob owns it too


def test_status_applies_are_recorded_with_their_subresource(http: httpx.Client) -> None:
    apply(http, widget(), "alice").raise_for_status()
    status_body = {**widget(), "status": {"phase": "Ready"}}

    first = apply(http, status_body, "controller", sub="status")
    other = apply(http, {**widget(), "status": {"phase": "Failed"}}, "intruder", sub="status")

    assert first.status_code == 200, first.text
    entry = entries(first.json())[("controller", "Apply", "status")]
    assert entry["fieldsV1"] == {"f:status": {"f:phase": {}}}
    assert other.status_code == 409
    assert other.json()["message"] == (
        'Apply failed with 1 conflict: conflict with "controller" with subresource "status": '
        ".status.phase"
    )
