"""Custom resources, PriorityClass admission, stored-only kinds, and the clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from fakekube import FakeKube, run_fakekube
from fakekube.clock import Clock
from fakekube.errors import ConfigError
from tests.testing.builders import MERGE, PODS, STRATEGIC, pod

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "appwrappers.workload.codeflare.dev"},
    "spec": {
        "group": "workload.codeflare.dev",
        "scope": "Namespaced",
        "names": {"plural": "appwrappers", "singular": "appwrapper", "kind": "AppWrapper"},
        "versions": [
            {
                "name": "v1beta2",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}
AW = "/apis/workload.codeflare.dev/v1beta2/namespaces/default/appwrappers"


@pytest.mark.fakekube_config(custom_resources=(CRD,))
def test_custom_resource_from_start_up_has_a_status_subresource(http: httpx.Client) -> None:
    body = {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {"name": "aw"},
        "spec": {"suspend": True},
        "status": {"phase": "x"},
    }

    created = http.post(AW, json=body)
    spec_change = http.patch(f"{AW}/aw", json={"spec": {"suspend": False}}, headers=MERGE).json()
    status_change = http.patch(
        f"{AW}/aw/status", json={"status": {"phase": "Running"}}, headers=MERGE
    ).json()
    strategic = http.patch(f"{AW}/aw", json={"spec": {}}, headers=STRATEGIC)

    assert created.status_code == 201
    assert "status" not in created.json()  # customResourceStrategy.PrepareForCreate drops it
    assert spec_change["metadata"]["generation"] == 2
    assert status_change["status"] == {"phase": "Running"}
    assert status_change["metadata"]["generation"] == 2
    assert strategic.status_code == 415


def test_crd_created_at_run_time_is_served_then_removed(http: httpx.Client) -> None:
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    http.post(crds, json=CRD).raise_for_status()
    established = http.get(f"{crds}/appwrappers.workload.codeflare.dev").json()
    http.post(AW, json={"metadata": {"name": "aw"}, "spec": {}}).raise_for_status()
    groups = [g["name"] for g in http.get("/apis").json()["groups"]]

    http.delete(f"{crds}/appwrappers.workload.codeflare.dev")

    assert {c["type"]: c["status"] for c in established["status"]["conditions"]} == {
        "NamesAccepted": "True",
        "Established": "True",
    }
    assert "workload.codeflare.dev" in groups
    assert http.get(AW).status_code == 404


def test_crd_name_must_be_plural_dot_group(http: httpx.Client) -> None:
    bad = {**CRD, "metadata": {"name": "wrong.example.com"}}

    answer = http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=bad)

    assert answer.status_code == 422
    assert (
        'metadata.name: Invalid value: "wrong.example.com": must be spec.names.plural+"."+spec.group'  # noqa: E501
        in answer.json()["message"]
    )


def test_priority_class_name_sets_the_priority(http: httpx.Client) -> None:
    http.post(
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        json={"metadata": {"name": "not-critical"}, "value": -10, "preemptionPolicy": "Never"},
    ).raise_for_status()

    created = http.post(PODS, json=pod("p", gates=("g",), priorityClassName="not-critical")).json()
    unknown = http.post(PODS, json=pod("q", priorityClassName="missing"))
    plain = http.post(PODS, json=pod("r", gates=("g",))).json()

    assert created["spec"]["priority"] == -10
    assert created["spec"]["preemptionPolicy"] == "Never"
    assert unknown.status_code == 403
    assert (
        unknown.json()["message"]
        == 'pods "q" is forbidden: no PriorityClass with name missing was found'
    )
    assert plain["spec"]["priority"] == 0


@pytest.mark.parametrize(
    ("path", "body"),
    [
        pytest.param(
            "/apis/apps/v1/namespaces/default/deployments",
            {
                "metadata": {"name": "d"},
                "spec": {
                    "selector": {"matchLabels": {"app": "d"}},
                    "template": {
                        "metadata": {"labels": {"app": "d"}},
                        "spec": {"containers": [{"name": "c", "image": "i"}]},
                    },
                },
            },
            id="deployment",
        ),
        pytest.param(
            "/api/v1/namespaces/default/services",
            {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 443}]}},
            id="service",
        ),
        pytest.param(
            "/api/v1/namespaces/default/serviceaccounts",
            {"metadata": {"name": "sa"}},
            id="serviceaccount",
        ),
        pytest.param(
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            {
                "metadata": {"name": "r"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
            },
            id="clusterrole",
        ),
        pytest.param(
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            {"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}},
            id="lease",
        ),
    ],
)
def test_stored_kinds_round_trip(
    http: httpx.Client, fakekube: FakeKube, path: str, body: dict[str, Any]
) -> None:
    created = http.post(path, json=body)
    fakekube.settle()

    assert created.status_code == 201, created.text
    assert (
        http.get(f"{path}/{body['metadata']['name']}").json()["metadata"]["uid"]
        == created.json()["metadata"]["uid"]
    )


def test_deployment_selector_must_match_its_template(http: httpx.Client) -> None:
    body = {
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "y"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }

    answer = http.post("/apis/apps/v1/namespaces/default/deployments", json=body)

    assert answer.status_code == 422
    assert "`selector` does not match template `labels`" in answer.json()["message"]


def test_virtual_clock_moves_only_forward_on_request() -> None:
    start = datetime(2023, 6, 1, tzinfo=UTC)
    clock = Clock(start)

    assert clock.now() == start
    assert clock.advance(timedelta(hours=2)) == start + timedelta(hours=2)
    with pytest.raises(ConfigError, match="cannot move the clock back"):
        clock.advance(timedelta(seconds=-1))


def test_real_time_clock_runs_from_its_start() -> None:
    start = datetime(2023, 6, 1, tzinfo=UTC)
    clock = Clock(start, virtual=False, speed=60.0)

    first = clock.now()
    later = clock.advance(timedelta(hours=1))

    assert first >= start
    assert later >= first + timedelta(hours=1)
    with pytest.raises(ConfigError, match="not positive"):
        Clock(start, virtual=False, speed=0)


def test_a_busy_port_is_an_input_error(fakekube: FakeKube) -> None:
    busy = int(fakekube.base_url.rsplit(":", 1)[1])

    with (
        pytest.raises(ConfigError, match=f"port {busy} on 127.0.0.1 is not free"),
        run_fakekube(port=busy),
    ):
        pass
