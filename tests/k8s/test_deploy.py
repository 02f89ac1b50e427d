"""deploy/: the kustomize base renders, validates offline and is least-privilege."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from carbonshift.k8s.config import parse_config
from fakekube import FakeKube

REPO = Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

#: What the controller does with each resource, and nothing more (see reconciler, leader).
WANT_CLUSTER_RULES = {
    ("", "pods"): {"get", "list", "watch", "patch"},
    ("batch", "jobs"): {"get", "list", "watch", "patch"},
    ("", "nodes"): {"get", "list", "watch"},
    ("", "events"): {"create"},
}
WANT_LEASE_RULES = {("coordination.k8s.io", "leases"): {"get", "create", "update"}}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    assert KUBECTL is not None
    done = subprocess.run(
        [KUBECTL, "kustomize", str(REPO / "deploy" / "base")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    path = tmp_path_factory.mktemp("deploy") / "rendered.yaml"
    path.write_text(done.stdout)
    return path, [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def rules(doc: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in doc["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def test_the_base_has_every_piece(rendered: tuple[Path, list[dict[str, Any]]]) -> None:
    kinds = sorted(f"{d['kind']}/{d['metadata']['name']}" for d in rendered[1])
    for want in (
        "ClusterRole/carbonshift-controller",
        "ClusterRoleBinding/carbonshift-controller",
        "Deployment/carbonshift-controller",
        "MutatingWebhookConfiguration/carbonshift",
        "Namespace/carbonshift-system",
        "Role/carbonshift-leader-election",
        "RoleBinding/carbonshift-leader-election",
        "Service/carbonshift-extender",
        "Service/carbonshift-webhook",
        "ServiceAccount/carbonshift-controller",
    ):
        assert want in kinds


def test_rendered_objects_validate_against_the_kubernetes_schemas(
    rendered: tuple[Path, list[dict[str, Any]]],
) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for doc in rendered[1]:
        kubernetes_validate.validate(doc, "1.32", strict=True)


def test_rbac_is_least_privilege(rendered: tuple[Path, list[dict[str, Any]]]) -> None:
    by_kind = {d["kind"]: d for d in rendered[1]}
    assert rules(by_kind["ClusterRole"]) == WANT_CLUSTER_RULES
    role = by_kind["Role"]
    assert role["metadata"]["namespace"] == "carbonshift-system"
    assert rules(role) == WANT_LEASE_RULES
    for doc in (by_kind["ClusterRole"], role):
        for rule in doc["rules"]:
            assert "*" not in rule["verbs"]
            assert "*" not in rule["resources"]


def test_the_config_map_holds_a_valid_configuration(
    rendered: tuple[Path, list[dict[str, Any]]],
) -> None:
    config_map = next(d for d in rendered[1] if d["kind"] == "ConfigMap")
    config = parse_config(yaml.safe_load(config_map["data"]["config.yaml"]))
    assert config.webhook.cert_file == "/etc/carbonshift/tls/tls.crt"
    deployment = next(d for d in rendered[1] if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {
        "webhook": config.webhook.port,
        "extender": config.extender.port,
        "metrics": config.metrics.port,
    }
    webhook = next(d for d in rendered[1] if d["kind"] == "MutatingWebhookConfiguration")
    assert webhook["webhooks"][0]["failurePolicy"] == "Ignore"  # never blocks a workload


def test_the_scheduler_configuration_names_the_extender_verbs() -> None:
    doc = yaml.safe_load((REPO / "deploy" / "scheduler" / "kube-scheduler-config.yaml").read_text())
    extender = doc["extenders"][0]
    assert (extender["filterVerb"], extender["prioritizeVerb"]) == ("filter", "prioritize")
    assert extender["ignorable"] is True


def test_server_side_dry_run_against_the_fake_server(
    fakekube: FakeKube, rendered: tuple[Path, list[dict[str, Any]]]
) -> None:
    assert KUBECTL is not None
    # As on a real server, a dry run cannot place objects in a namespace it did not create.
    fakekube.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "carbonshift-system"}}
    )
    done = subprocess.run(
        [
            KUBECTL,
            "--kubeconfig",
            str(fakekube.kubeconfig),
            "apply",
            "--dry-run=server",
            "-f",
            str(rendered[0]),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "deployment.apps/carbonshift-controller created (server dry run)" in done.stdout
    assert fakekube.list("Deployment", "carbonshift-system", "apps/v1") == []
