"""The 422 rules: the messages a real API server gives for the changes carbonshift must avoid."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.testing.builders import JOBS, JSONPATCH, MERGE, PODS, STRATEGIC, job, pod

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}}
    }


ZONE_A = {"key": "zone", "operator": "In", "values": ["a"]}
GPU = {"key": "gpu", "operator": "Exists"}


def invalid_message(answer: httpx.Response) -> str:
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["reason"] == "Invalid"
    return str(body["message"])


def test_adding_a_scheduling_gate_after_creation_is_refused(http: httpx.Client) -> None:
    http.post(PODS, json=pod("p", gates=("carbonshift.io/hold",)))
    answer = http.patch(
        f"{PODS}/p",
        json=[{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": "extra.io/x"}}],
        headers=JSONPATCH,
    )

    assert invalid_message(answer) == (
        'Pod "p" is invalid: spec.schedulingGates[1].name: Forbidden: only deletion is allowed, '
        "but found new scheduling gate 'extra.io/x'"
    )
    assert answer.json()["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: only deletion is allowed, but found new scheduling gate 'extra.io/x'",  # noqa: E501
            "field": "spec.schedulingGates[1].name",
        }
    ]


def test_gating_an_ungated_pod_is_refused(http: httpx.Client) -> None:
    http.post(PODS, json=pod("p", gates=("g",), node_selector={"a": "b"}))
    http.patch(f"{PODS}/p", json={"spec": {"schedulingGates": None}}, headers=MERGE)
    answer = http.patch(
        f"{PODS}/p", json={"spec": {"schedulingGates": [{"name": "g"}]}}, headers=MERGE
    )

    assert "only deletion is allowed, but found new scheduling gate 'g'" in invalid_message(answer)


def test_node_name_together_with_gates_is_refused_at_creation(http: httpx.Client) -> None:
    answer = http.post(PODS, json=pod("p", gates=("g",), nodeName="node-0"))

    assert invalid_message(answer) == (
        'Pod "p" is invalid: spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared'  # noqa: E501
    )


def test_duplicate_gates_are_refused(http: httpx.Client) -> None:
    answer = http.post(PODS, json=pod("p", gates=("g", "g")))

    assert (
        invalid_message(answer)
        == 'Pod "p" is invalid: spec.schedulingGates[1]: Duplicate value: "g"'
    )


@pytest.mark.parametrize(
    ("before", "after", "want_error"),
    [
        pytest.param(
            {"nodeSelector": {"a": "b"}},
            {"nodeSelector": {"a": "b", "c": "d"}},
            None,
            id="selector-addition-allowed",
        ),
        pytest.param(
            {"nodeSelector": {"a": "b"}},
            {"nodeSelector": {"a": "z"}},
            'spec.nodeSelector: Invalid value: {"a":"z"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)',  # noqa: E501
            id="selector-mutation-refused",
        ),
        pytest.param(
            {}, {"affinity": affinity([ZONE_A])}, None, id="first-required-affinity-allowed"
        ),
        pytest.param(
            {"affinity": affinity([ZONE_A])},
            {"affinity": affinity([ZONE_A, GPU])},
            None,
            id="narrowing-term-allowed",
        ),
        pytest.param(
            {"affinity": affinity([ZONE_A])},
            {"affinity": affinity([GPU])},
            f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[0]: Invalid value: "
            '{"MatchExpressions":[{"Key":"gpu","Operator":"Exists","Values":null}],"MatchFields":null}: '  # noqa: E501
            "only additions are allowed (no mutations or deletions)",
            id="replacing-expression-refused",
        ),
        pytest.param(
            {"affinity": affinity([ZONE_A])},
            {"affinity": affinity([ZONE_A], [GPU])},
            "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
            id="widening-with-a-second-term-refused",
        ),
    ],
)
def test_gated_pods_may_only_narrow_node_selection(
    http: httpx.Client, before: dict[str, Any], after: dict[str, Any], want_error: str | None
) -> None:
    body = pod("p", gates=("g",))
    body["spec"].update(before)
    http.post(PODS, json=body).raise_for_status()

    answer = http.patch(f"{PODS}/p", json={"spec": after}, headers=STRATEGIC)

    if want_error is None:
        assert answer.status_code == 200, answer.text
    else:
        assert want_error in invalid_message(answer)


def test_ungated_pods_may_not_change_node_selection(http: httpx.Client) -> None:
    http.post(PODS, json=pod("p", node_selector={"a": "b"}))
    answer = http.patch(
        f"{PODS}/p", json={"spec": {"nodeSelector": {"a": "b", "c": "d"}}}, headers=MERGE
    )

    message = invalid_message(answer)
    assert (
        "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
        in message
    )
    assert "spec.nodeSelector" in message


def test_gate_removal_and_node_affinity_in_one_patch_is_allowed(http: httpx.Client) -> None:
    http.post(PODS, json=pod("p", gates=("carbonshift.io/hold",)))
    answer = http.patch(
        f"{PODS}/p",
        json={"spec": {"schedulingGates": None, "affinity": affinity([ZONE_A])}},
        headers=MERGE,
    )

    assert answer.status_code == 200, answer.text
    assert "schedulingGates" not in answer.json()["spec"]


def test_job_restart_policy_always_is_refused(http: httpx.Client) -> None:
    body = job("j")
    body["spec"]["template"]["spec"]["restartPolicy"] = "Always"

    answer = http.post(JOBS, json=body)

    assert invalid_message(answer) == (
        'Job.batch "j" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Always": '
        'supported values: "OnFailure", "Never"'
    )


@pytest.mark.parametrize(
    ("suspend", "change", "want_ok"),
    [
        pytest.param(True, {"nodeSelector": {"zone": "a"}}, True, id="suspended-node-selector"),
        pytest.param(True, {"affinity": affinity([ZONE_A])}, True, id="suspended-node-affinity"),
        pytest.param(
            True,
            {"tolerations": [{"key": "k", "operator": "Exists"}]},
            True,
            id="suspended-tolerations",
        ),
        pytest.param(True, {"schedulingGates": [{"name": "g"}]}, True, id="suspended-gates"),
        pytest.param(
            True,
            {"containers": [{"name": "main", "image": "busybox:2"}]},
            False,
            id="suspended-image",
        ),
        pytest.param(False, {"nodeSelector": {"zone": "a"}}, False, id="running-node-selector"),
    ],
)
def test_job_template_changes(
    http: httpx.Client, suspend: bool, change: dict[str, Any], want_ok: bool
) -> None:
    http.post(JOBS, json=job("j", suspend=suspend)).raise_for_status()

    answer = http.patch(
        f"{JOBS}/j", json={"spec": {"template": {"spec": change}}}, headers=STRATEGIC
    )

    if want_ok:
        assert answer.status_code == 200, answer.text
    else:
        assert "spec.template: Invalid value: " in invalid_message(answer)
        assert invalid_message(answer).endswith("field is immutable")


def test_job_template_labels_and_annotations_change_while_suspended(http: httpx.Client) -> None:
    http.post(JOBS, json=job("j", suspend=True))
    answer = http.patch(
        f"{JOBS}/j",
        json={
            "spec": {"template": {"metadata": {"labels": {"x": "y"}, "annotations": {"k": "v"}}}}
        },
        headers=MERGE,
    )

    assert answer.status_code == 200, answer.text
    assert answer.json()["metadata"]["generation"] == 2


@pytest.mark.parametrize(
    ("body", "want_field"),
    [
        pytest.param(
            {
                "metadata": {"name": "Bad_Name"},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
            "metadata.name",
            id="bad-name",
        ),
        pytest.param(
            {"metadata": {}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
            "metadata.name",
            id="no-name",
        ),
        pytest.param(
            {"metadata": {"name": "p"}, "spec": {}}, "spec.containers", id="no-containers"
        ),
        pytest.param(
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}},
            "spec.containers[0].image",
            id="no-image",
        ),
        pytest.param(
            {
                "metadata": {"name": "p"},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "i", "resources": {"requests": {"cpu": "lots"}}}
                    ]
                },
            },
            "spec.containers[0].resources.requests[cpu]",
            id="bad-quantity",
        ),
        pytest.param(
            {
                "metadata": {"name": "p", "labels": {"bad key!": "v"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
            "metadata.labels",
            id="bad-label",
        ),
    ],
)
def test_pod_creation_is_validated(
    http: httpx.Client, body: dict[str, Any], want_field: str
) -> None:
    answer = http.post(PODS, json={"apiVersion": "v1", "kind": "Pod", **body})

    invalid_message(answer)
    assert want_field in [c["field"] for c in answer.json()["details"]["causes"]]


def test_role_binding_role_ref_is_immutable(http: httpx.Client) -> None:
    url = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
    body = {
        "metadata": {"name": "rb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "a"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "default"}],
    }
    http.post(url, json=body).raise_for_status()

    answer = http.patch(f"{url}/rb", json={"roleRef": {"name": "b"}}, headers=MERGE)

    assert "roleRef: Invalid value" in invalid_message(answer)
    assert invalid_message(answer).endswith("cannot change roleRef")


def test_webhook_configuration_needs_side_effects_and_one_client(http: httpx.Client) -> None:
    url = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
    body = {
        "metadata": {"name": "w"},
        "webhooks": [
            {"name": "w.example.com", "clientConfig": {}, "admissionReviewVersions": ["v1"]}
        ],
    }

    answer = http.post(url, json=body)

    fields = [c["field"] for c in answer.json()["details"]["causes"]]
    assert answer.status_code == 422
    assert fields == ["webhooks[0].clientConfig", "webhooks[0].sideEffects"]


def test_a_node_field_selector_takes_one_value(http: httpx.Client) -> None:
    spec = {
        "containers": [{"name": "main", "image": "busybox"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["a", "b"]}
                            ]
                        }
                    ]
                }
            }
        },
    }
    pod_ = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    answer = http.post("/api/v1/namespaces/default/pods", json=pod_)
    want = (
        'Pod "p" is invalid: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring'
        "Execution.nodeSelectorTerms[0].matchFields[0].values: Required value: must be only one "
        "value when `operator` is 'In' or 'NotIn' for node field selector"
    )
    assert (answer.status_code, answer.json()["message"]) == (422, want)
