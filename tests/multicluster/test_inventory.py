"""CarbonCluster parsing and node capacity (tables of cases)."""

from __future__ import annotations

from typing import Any

import pytest

from carbonshift.errors import InputError
from carbonshift.k8s.multicluster.inventory import (
    others_requests,
    parse_spoke,
    pod_requests,
)
from carbonshift.k8s.nodes import capacity


def carbon_cluster(**spec: Any) -> dict[str, Any]:
    base = {"zone": "DE", "kubeconfigSecretRef": {"name": "spoke-de"}}
    return {"metadata": {"name": "de"}, "spec": {**base, **spec}}


def test_a_minimal_carbon_cluster_gets_defaults() -> None:
    spoke = parse_spoke(carbon_cluster())
    assert (spoke.name, spoke.zone, spoke.secret_key, spoke.pue) == ("de", "DE", "kubeconfig", 1.0)
    assert dict(spoke.watts_per_unit) == {}


@pytest.mark.parametrize(
    ("spec", "want_message"),
    [
        pytest.param({"zone": None}, "spec.zone is missing", id="no-zone"),
        pytest.param({"kubeconfigSecretRef": {}}, "kubeconfigSecretRef.name", id="no-secret"),
        pytest.param({"pue": 0.8}, "pue 0.8 must be >= 1", id="pue-below-one"),
        pytest.param({"pue": "high"}, "pue 'high'", id="pue-not-a-number"),
        pytest.param({"wattsPerUnit": {"cpu": -1}}, "wattsPerUnit.cpu is -1", id="negative-watts"),
        pytest.param({"wattsPerUnit": [10]}, "write a mapping", id="watts-not-a-mapping"),
    ],
)
def test_a_bad_carbon_cluster_names_the_field(spec: dict[str, Any], want_message: str) -> None:
    with pytest.raises(InputError, match=want_message.replace("(", r"\(")):
        parse_spoke(carbon_cluster(**spec))


def node(
    cpu: str, *, ready: bool = True, unschedulable: bool = False, memory: str = "32Gi"
) -> dict[str, Any]:
    return {
        "spec": {"unschedulable": unschedulable},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


@pytest.mark.parametrize(
    ("nodes", "want_capacity"),
    [
        pytest.param([node("8"), node("7500m")], {"cpu": 15.5, "memory": 64.0}, id="two-ready"),
        pytest.param(
            [node("8"), node("8", ready=False)], {"cpu": 8.0, "memory": 32.0}, id="not-ready"
        ),
        pytest.param([node("8", unschedulable=True)], {"cpu": 0.0, "memory": 0.0}, id="cordoned"),
    ],
)
def test_capacity_counts_ready_schedulable_nodes(
    nodes: list[dict[str, Any]], want_capacity: dict[str, float]
) -> None:
    assert capacity(nodes, ("cpu", "memory")) == want_capacity


def _pod(
    name: str, cpu: str, *, job: str = "", node: str = "n1", phase: str = "Running", init: str = ""
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "batch"}
    if job:
        meta["ownerReferences"] = [{"kind": "Job", "name": job, "apiVersion": "batch/v1"}]
    spec: dict[str, Any] = {
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "500m"}}},
        ]
    }
    if init:
        spec["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": init}}}]
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def test_pod_requests_sum_containers_or_take_the_largest_init_container() -> None:
    assert pod_requests(_pod("p", "2"), ("cpu", "memory")) == {"cpu": 2.5, "memory": 1.0}
    assert pod_requests(_pod("p", "2", init="4"), ("cpu",)) == {"cpu": 4.0}


def test_others_requests_count_bound_unfinished_pods_the_hub_did_not_place() -> None:
    pods = [
        _pod("mine", "4", job="train"),  # the hub's copy: already in the plan
        _pod("other", "3", job="nightly"),
        _pod("bare", "1"),
        _pod("done", "8", phase="Succeeded"),
        _pod("unbound", "8", node=""),
    ]
    used = others_requests(pods, {("batch", "train")}, ("cpu",))
    assert used == {"cpu": 3.5 + 1.5}
