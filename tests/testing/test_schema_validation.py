"""Custom resources are pruned, defaulted and validated against their CRD's structural schema."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from tests.testing.builders import APPLY, MERGE

Obj = dict[str, Any]

_CHECK: Obj = {
    "type": "object",
    "required": ["name", "message"],
    "properties": {
        "name": {"type": "string", "maxLength": 5},
        "message": {"type": "string"},
        "state": {"type": "string", "enum": ["Pending", "Ready"], "default": "Pending"},
        "lastTransitionTime": {"type": "string", "format": "date-time"},
    },
}
SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["queue"],
            "properties": {
                "queue": {"type": "string", "minLength": 1, "pattern": "^[a-z-]*$"},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                "weight": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                "suspend": {"type": "boolean"},
                "port": {"x-kubernetes-int-or-string": True},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "zones": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "limits": {"type": "object", "additionalProperties": {"type": "integer"}},
                "note": {"type": "string", "nullable": True},
                "mode": {"type": "string", "default": "Fast"},
                "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "phase": {"type": "string"},
                "checks": {"type": "array", "items": _CHECK},
            },
        },
    },
}
CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.tests.fakekube.io"},
    "spec": {
        "group": "tests.fakekube.io",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": SCHEMA},
            }
        ],
    },
}
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/tests.fakekube.io/v1/namespaces/default/widgets"


def widget(name: str = "w", **spec: Any) -> Obj:
    """A valid Widget manifest; ``spec`` keys override the defaults."""
    return {
        "apiVersion": "tests.fakekube.io/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"queue": "batch", **spec},
    }


pytestmark = pytest.mark.fakekube_config(custom_resources=(CRD,))


def test_unknown_fields_are_pruned_and_defaults_applied(http: httpx.Client) -> None:
    body = widget(unknown="dropped", note=None, mode=None, template={"anything": {"goes": 1}})
    body["spec"]["limits"] = {"cpu": 4}
    body["extra"] = {"top": "level"}

    created = http.post(WIDGETS, json=body)

    assert created.status_code == 201, created.text
    want_spec = {
        "queue": "batch",
        "replicas": 1,
        "mode": "Fast",
        "note": None,
        "template": {"anything": {"goes": 1}},
        "limits": {"cpu": 4},
    }
    assert created.json()["spec"] == want_spec
    assert "extra" not in created.json()
    assert "status" not in created.json()


def test_a_non_nullable_null_without_default_is_dropped(http: httpx.Client) -> None:
    created = http.post(WIDGETS, json=widget(suspend=None)).json()

    assert "suspend" not in created["spec"]


@pytest.mark.parametrize(
    ("spec", "want_field", "want_reason", "want_message"),
    [
        pytest.param(
            {"replicas": "two"},
            "spec.replicas",
            "FieldValueTypeInvalid",
            'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
            id="wrong-type",
        ),
        pytest.param(
            {"queue": None},
            "spec.queue",
            "FieldValueRequired",
            "Required value",
            id="required-null-is-pruned-then-missing",
        ),
        pytest.param(
            {"replicas": 11},
            "spec.replicas",
            "FieldValueInvalid",
            "Invalid value: 11: spec.replicas in body should be less than or equal to 10",
            id="maximum",
        ),
        pytest.param(
            {"replicas": -1},
            "spec.replicas",
            "FieldValueInvalid",
            "Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
            id="minimum",
        ),
        pytest.param(
            {"weight": 0},
            "spec.weight",
            "FieldValueInvalid",
            "Invalid value: 0: spec.weight in body should be greater than 0",
            id="exclusive-minimum",
        ),
        pytest.param(
            {"queue": ""},
            "spec.queue",
            "FieldValueInvalid",
            'Invalid value: "": spec.queue in body should be at least 1 chars long',
            id="min-length",
        ),
        pytest.param(
            {"queue": "Batch"},
            "spec.queue",
            "FieldValueInvalid",
            "Invalid value: \"Batch\": spec.queue in body should match '^[a-z-]*$'",
            id="pattern",
        ),
        pytest.param(
            {"tags": ["a", "b", "c"]},
            "spec.tags",
            "FieldValueTooMany",
            "Too many: 3: must have at most 2 items",
            id="max-items",
        ),
        pytest.param(
            {"zones": []},
            "spec.zones",
            "FieldValueInvalid",
            "Invalid value: 0: spec.zones in body should have at least 1 items",
            id="min-items",
        ),
        pytest.param(
            {"tags": ["a", 1]},
            "spec.tags[1]",
            "FieldValueTypeInvalid",
            'Invalid value: "integer": spec.tags[1] in body must be of type string: "integer"',
            id="array-item-type",
        ),
        pytest.param(
            {"tags": [None]},
            "spec.tags[0]",
            "FieldValueTypeInvalid",
            'Invalid value: "null": spec.tags[0] in body must be of type string: "null"',
            id="null-array-item",
        ),
        pytest.param(
            {"limits": {"cpu": "4"}},
            "spec.limits.cpu",
            "FieldValueTypeInvalid",
            'Invalid value: "string": spec.limits.cpu in body must be of type integer: "string"',
            id="additional-properties-schema",
        ),
        pytest.param(
            {"suspend": "yes"},
            "spec.suspend",
            "FieldValueTypeInvalid",
            'Invalid value: "string": spec.suspend in body must be of type boolean: "string"',
            id="boolean",
        ),
        pytest.param(
            {"port": 1.5},
            "spec.port",
            "FieldValueTypeInvalid",
            'Invalid value: "number": spec.port in body must be of type integer,string: "number"',
            id="int-or-string",
        ),
    ],
)
def test_schema_violations_are_422_with_causes(
    http: httpx.Client, spec: Obj, want_field: str, want_reason: str, want_message: str
) -> None:
    answer = http.post(WIDGETS, json=widget(**spec))

    body = answer.json()
    assert answer.status_code == 422
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"] == [
        {"reason": want_reason, "field": want_field, "message": want_message}
    ]
    assert (
        body["message"] == f'Widget.tests.fakekube.io "w" is invalid: {want_field}: {want_message}'
    )


def test_int_or_string_takes_both(http: httpx.Client) -> None:
    assert http.post(WIDGETS, json=widget("a", port=80)).status_code == 201
    assert http.post(WIDGETS, json=widget("b", port="http")).status_code == 201


def test_status_writes_are_validated_and_keep_only_status(http: httpx.Client) -> None:
    http.post(WIDGETS, json=widget()).raise_for_status()
    bad = {"status": {"checks": [{"name": "c1"}]}}
    too_long = {"status": {"checks": [{"name": "carbon-aware", "message": "m"}]}}
    bad_time = {"status": {"checks": [{"name": "c", "message": "m", "lastTransitionTime": "noon"}]}}
    good = {
        "spec": {"queue": "ignored-here"},
        "status": {"phase": "Ready", "checks": [{"name": "c", "message": "", "junk": 1}]},
    }

    missing = http.patch(f"{WIDGETS}/w/status", json=bad, headers=MERGE)
    longer = http.patch(f"{WIDGETS}/w/status", json=too_long, headers=MERGE)
    timed = http.patch(f"{WIDGETS}/w/status", json=bad_time, headers=MERGE)
    written = http.patch(f"{WIDGETS}/w/status", json=good, headers=MERGE)

    assert missing.status_code == 422
    assert (
        missing.json()["message"]
        == 'Widget.tests.fakekube.io "w" is invalid: status.checks[0].message: Required value'
    )
    assert longer.json()["details"]["causes"] == [
        {
            "reason": "FieldValueTooLong",
            "field": "status.checks[0].name",
            "message": "Too long: may not be more than 5 bytes",
        }
    ]
    assert timed.json()["details"]["causes"][0]["message"] == (
        'Invalid value: "noon": status.checks[0].lastTransitionTime in body must be of type '
        'date-time: "noon"'
    )
    assert written.status_code == 200, written.text
    assert written.json()["spec"]["queue"] == "batch"
    assert written.json()["status"] == {
        "phase": "Ready",
        "checks": [{"name": "c", "message": "", "state": "Pending"}],
    }


def test_spec_writes_ignore_status(http: httpx.Client) -> None:
    http.post(WIDGETS, json=widget()).raise_for_status()

    patched = http.patch(
        f"{WIDGETS}/w", json={"status": {"phase": 3}, "spec": {"replicas": 2}}, headers=MERGE
    )

    assert patched.status_code == 200, patched.text
    assert "status" not in patched.json()
    assert patched.json()["spec"]["replicas"] == 2


def test_server_side_apply_is_validated(http: httpx.Client) -> None:
    applied = http.patch(f"{WIDGETS}/w?fieldManager=t", json=widget(replicas="many"), headers=APPLY)

    assert applied.status_code == 422
    assert applied.json()["details"]["causes"][0]["field"] == "spec.replicas"


def test_unchanged_invalid_fields_ratchet_on_update(http: httpx.Client) -> None:
    http.post(WIDGETS, json=widget(tags=["a", "b"], replicas=5)).raise_for_status()
    stricter = copy.deepcopy(CRD)
    spec_schema = stricter["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    spec_schema["spec"]["properties"]["tags"]["maxItems"] = 1
    current = http.get(f"{CRDS}/widgets.tests.fakekube.io").json()
    stricter["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    http.put(f"{CRDS}/widgets.tests.fakekube.io", json=stricter).raise_for_status()

    other_field = http.patch(f"{WIDGETS}/w", json={"spec": {"replicas": 6}}, headers=MERGE)
    same_field = http.patch(f"{WIDGETS}/w", json={"spec": {"tags": ["c", "d"]}}, headers=MERGE)

    assert other_field.status_code == 200, other_field.text
    assert same_field.status_code == 422
    assert same_field.json()["details"]["causes"][0]["field"] == "spec.tags"
