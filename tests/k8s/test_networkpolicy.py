"""deploy/: NetworkPolicies let in only the served ports and let out only DNS and HTTPS; the
metrics server binds loopback unless the manifests say otherwise (issue 12, item 13)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from carbonshift.k8s.config import ControllerConfig, load_config
from carbonshift.k8s.multicluster.config import HubConfig, load_hub_config

REPO = Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl")


def render(base: str) -> list[dict[str, Any]]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    done = subprocess.run(
        [KUBECTL, "kustomize", str(REPO / "deploy" / base)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def _matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, selector  # no expressions to evaluate
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


@pytest.mark.parametrize(
    ("base", "want_component", "want_ingress_ports"),
    [("base", "controller", {8443, 8444, 9090}), ("hub", "hub", {9090})],
    ids=["controller", "hub"],
)
def test_the_policy_selects_the_pods_and_opens_only_their_ports(
    base: str, want_component: str, want_ingress_ports: set[int]
) -> None:
    docs = render(base)
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    assert len(policies) == 1
    policy = policies[0]
    spec = policy["spec"]
    assert sorted(spec["policyTypes"]) == ["Egress", "Ingress"]
    selected = [
        d["metadata"]["name"]
        for d in deployments
        if _matches(spec["podSelector"], d["spec"]["template"]["metadata"]["labels"])
    ]
    assert selected == [f"carbonshift-{want_component}"]
    assert policy["metadata"]["namespace"] == deployments[0]["metadata"]["namespace"]
    container_ports = {
        p["containerPort"]
        for d in deployments
        for c in d["spec"]["template"]["spec"]["containers"]
        for p in c.get("ports") or []
    }
    ingress_ports = {p["port"] for rule in spec["ingress"] for p in rule["ports"]}
    assert ingress_ports == want_ingress_ports == container_ports
    egress = {(p["protocol"], p["port"]) for rule in spec["egress"] for p in rule["ports"]}
    assert egress == {("UDP", 53), ("TCP", 53), ("TCP", 443), ("TCP", 6443)}
    dns = [r for r in spec["egress"] if {p["port"] for p in r["ports"]} == {53}]
    assert dns[0]["to"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}
    ]
    validate = pytest.importorskip("kubernetes_validate")
    validate.validate(policy, "1.32", strict=True)


def test_metrics_bind_loopback_unless_the_manifests_say_otherwise() -> None:
    assert ControllerConfig().metrics.host == "127.0.0.1"
    assert HubConfig().metrics.host == "127.0.0.1"
    # the pods' probes and scrapes reach the pod IP, so the manifests bind every address
    assert load_config(REPO / "deploy/base/config.yaml").metrics.host == "0.0.0.0"
    assert load_hub_config(REPO / "deploy/hub/hub.yaml").metrics.host == "0.0.0.0"
