"""CRD CEL rules (``x-kubernetes-validations``) are evaluated as a real API server evaluates
them, with its message format: ``<Kind>.<group> "<name>" is invalid: <path>: Invalid value:
"object": <message>`` (issue 14, item 2)."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from fakekube import cel
from fakekube.plugins import upstream_crds
from tests.testing.builders import MERGE

Obj = dict[str, Any]

SCHEMA: Obj = {
    "type": "object",
    "x-kubernetes-validations": [
        {"rule": "self.metadata.name.startsWith('g-')", "message": "name must start with g-"},
    ],
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "!has(self.min) || self.min <= self.max",
                 "message": "min must not exceed max"},
                {"rule": "!has(oldSelf.owner) || self.owner == oldSelf.owner",
                 "message": "owner is immutable once set"},
                {"rule": "self.max < 100", "fieldPath": ".max",
                 "reason": "FieldValueForbidden", "message": "max is at most 99"},
                {"rule": "self.max != 13"},
                {"rule": "quantity(self.size).isGreaterThan(quantity('1'))",
                 "message": "skipped: cel-python has no Kubernetes quantity library"},
            ],
            "properties": {
                "min": {"type": "integer"},
                "max": {"type": "integer"},
                "owner": {"type": "string"},
                "size": {"type": "string"},
                "slots": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "x-kubernetes-validations": [
                            {"rule": "self.count >= oldSelf.count",
                             "message": "count may only grow"},
                        ],
                        "properties": {"name": {"type": "string"}, "count": {"type": "integer"}},
                    },
                },
            },
        },
    },
}  # fmt: skip
CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.tests.fakekube.io"},
    "spec": {
        "group": "tests.fakekube.io",
        "scope": "Namespaced",
        "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget"},
        "versions": [
            {"name": "v1", "served": True, "storage": True,
             "schema": {"openAPIV3Schema": SCHEMA}},
        ],
    },
}  # fmt: skip
GADGETS = "/apis/tests.fakekube.io/v1/namespaces/default/gadgets"
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"

pytestmark = pytest.mark.fakekube_config(custom_resources=(CRD,))
with_kueue = pytest.mark.fakekube_config(custom_resources=upstream_crds("kueue"))


def gadget(name: str = "g-1", **spec: Any) -> Obj:
    return {
        "apiVersion": "tests.fakekube.io/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": {"max": 10, **spec},
    }


@pytest.mark.parametrize(
    ("body", "want_code", "want_message"),
    [
        (gadget(min=1), 201, None),
        (gadget(min=11), 422,
         'Gadget.tests.fakekube.io "g-1" is invalid: spec: Invalid value: "object": min must '
         "not exceed max"),
        (gadget("other"), 422,
         'Gadget.tests.fakekube.io "other" is invalid: <nil>: Invalid value: "object": name '
         "must start with g-"),
        (gadget(max=100), 422,
         'Gadget.tests.fakekube.io "g-1" is invalid: spec.max: Forbidden: max is at most 99'),
        (gadget(max=13), 422,
         'Gadget.tests.fakekube.io "g-1" is invalid: spec: Invalid value: "object": failed '
         "rule: self.max != 13"),
        ({**gadget(), "spec": {"min": 1}}, 422,
         'spec: Invalid value: "object": no such key: max evaluating rule: max is at most 99'),
    ],
    ids=["valid", "rule-false", "root-rule-prints-nil-path", "field-path-and-reason",
         "no-message-prints-the-rule", "evaluation-error"],
)  # fmt: skip
def test_cel_rules_refuse_creates_with_the_real_message(
    http: httpx.Client, body: Obj, want_code: int, want_message: str | None
) -> None:
    answer = http.post(GADGETS, json=body)

    assert answer.status_code == want_code, answer.text
    if want_message is not None:
        assert want_message in answer.json()["message"]


def test_a_rule_calling_a_missing_cel_function_is_skipped_and_recorded(
    http: httpx.Client,
) -> None:
    answer = http.post(GADGETS, json=gadget(size="1Gi"))

    assert answer.status_code == 201, answer.text
    assert "quantity(self.size).isGreaterThan(quantity('1'))" in cel.SKIPPED


@pytest.mark.parametrize(
    ("first", "patch", "want_code", "want_fragment"),
    [
        ({"owner": "a"}, {"spec": {"owner": "b"}}, 422,
         'spec: Invalid value: "object": owner is immutable once set'),
        ({}, {"spec": {"owner": "b"}}, 200, None),
        ({"slots": [{"name": "x", "count": 2}]},
         {"spec": {"slots": [{"name": "x", "count": 1}]}}, 422,
         'spec.slots[0]: Invalid value: "object": count may only grow'),
        ({"slots": [{"name": "x", "count": 2}]},
         {"spec": {"slots": [{"name": "y", "count": 1}]}}, 200, None),
    ],
    ids=["transition-rule-refuses", "transition-rule-without-old-value-passes",
         "list-map-item-correlated-by-key", "new-list-map-item-has-no-old-self"],
)  # fmt: skip
def test_transition_rules_compare_with_the_correlated_old_value(
    http: httpx.Client, first: Obj, patch: Obj, want_code: int, want_fragment: str | None
) -> None:
    http.post(GADGETS, json=gadget(**first)).raise_for_status()

    answer = http.patch(f"{GADGETS}/g-1", json=patch, headers=MERGE)

    assert answer.status_code == want_code, answer.text
    if want_fragment is not None:
        assert answer.json()["message"] == (
            f'Gadget.tests.fakekube.io "g-1" is invalid: {want_fragment}'
        )


def test_an_unchanged_invalid_node_is_ratcheted(http: httpx.Client) -> None:
    # Written before the rule applied (as after a CRD upgrade): stored without checks.
    fake_old = gadget(max=13)
    http.post(GADGETS, json=gadget()).raise_for_status()
    stored = http.get(f"{GADGETS}/g-1").json()
    assert cel.validate({**stored, "spec": fake_old["spec"]}, SCHEMA, {**stored, **fake_old}) == []


# -- the real Kueue Workload CRD ---------------------------------------------------------------


def workload(name: str = "w", **spec: Any) -> Obj:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "queueName": "q",
            "podSets": [
                {"name": "main", "count": 2,
                 "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
            ],
            **spec,
        },
    }  # fmt: skip


@pytest.mark.parametrize(
    ("change", "want_code", "want_fragment"),
    [
        ({}, 201, None),
        ({"minCount": 3}, 422,
         'spec.podSets[0]: Invalid value: "object": minCount should be positive and less or '
         "equal to count"),
        ({"priorityClassRef": {"group": "scheduling.k8s.io", "kind": "WorkloadPriorityClass",
                               "name": "p"}, "priority": 1}, 422,
         'spec.priorityClassRef: Invalid value: "object": only the PriorityClass kind is '
         "allowed for the scheduling.k8s.io group"),
        ({"priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                               "name": "p"}}, 422,
         'spec: Invalid value: "object": priority should not be nil when priorityClassRef is '
         "set"),
    ],
    ids=["valid", "min-count-above-count", "priority-class-kind", "priority-missing"],
)  # fmt: skip
@with_kueue
def test_the_real_workload_rules_refuse_creates(
    http: httpx.Client, change: Obj, want_code: int, want_fragment: str | None
) -> None:
    body = workload()
    if "minCount" in change:
        body["spec"]["podSets"][0]["minCount"] = change.pop("minCount")
    body["spec"].update(change)

    answer = http.post(WORKLOADS, json=body)

    assert answer.status_code == want_code, answer.text
    if want_fragment is not None:
        assert (
            answer.json()["message"] == f'Workload.kueue.x-k8s.io "w" is invalid: {want_fragment}'
        )


@with_kueue
def test_the_real_workload_status_rules_hold_for_status_writes(http: httpx.Client) -> None:
    http.post(WORKLOADS, json=workload()).raise_for_status()
    stored = http.get(f"{WORKLOADS}/w").json()
    placed = copy.deepcopy(stored)
    placed["status"] = {"clusterName": "a", "nominatedClusterNames": ["a", "b"]}

    both = http.put(f"{WORKLOADS}/w/status", json=placed)
    placed["status"] = {"clusterName": "a"}
    first = http.put(f"{WORKLOADS}/w/status", json=placed)
    placed = first.json()
    placed["status"]["clusterName"] = "b"
    moved = http.put(f"{WORKLOADS}/w/status", json=placed)

    assert both.status_code == 422
    assert both.json()["message"] == (
        'Workload.kueue.x-k8s.io "w" is invalid: status: Invalid value: "object": clusterName '
        "and nominatedClusterNames are mutually exclusive"
    )
    assert first.status_code == 200, first.text
    assert moved.status_code == 422
    assert "clusterName is immutable once set" in moved.json()["message"]
