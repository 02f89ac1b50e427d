"""deploy/hub: the CRD (the one the fake hub installs) is accepted, the example objects are
accepted by a fake hub, the configuration loads, kustomize renders the bundle (with its
Namespace) and the bundle applies to a fresh hub."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from carbonshift.errors import InputError
from carbonshift.k8s.multicluster.config import load_hub_config
from fakekube import FakeKubeConfig, run_fakekube
from fakekube.plugins import all_crds
from tests.multicluster.harness import carboncluster_crd

HUB = Path(__file__).resolve().parents[2] / "deploy" / "hub"


def test_the_deployed_crd_installs_in_a_fake_hub() -> None:
    deployed = carboncluster_crd()
    spec = deployed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["zone", "kubeconfigSecretRef"]
    with run_fakekube(FakeKubeConfig(nodes=0, custom_resources=(deployed,))) as hub:
        assert hub.list("CarbonCluster", None, "carbonshift.io/v1alpha1") == []


def test_the_example_objects_are_accepted_by_a_fake_hub() -> None:
    docs = [d for d in yaml.safe_load_all((HUB / "example.yaml").read_text()) if d]
    with run_fakekube(
        FakeKubeConfig(nodes=0, custom_resources=(*all_crds(), carboncluster_crd()))
    ) as hub:
        hub.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "batch"}})
        created = [hub.create(doc)["kind"] for doc in docs]
    assert created == ["CarbonCluster", "Job", "AppWrapper"]


def test_the_hub_configuration_loads(tmp_path: Path) -> None:
    config = load_hub_config(HUB / "hub.yaml")
    assert config.field_manager == "kueue-admission"
    bad = tmp_path / "bad.yaml"
    bad.write_text("planning: {policy: caspian}\nresoures: [cpu]\n")
    with pytest.raises(InputError, match="resoures"):
        load_hub_config(bad)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kustomize_renders_the_hub_bundle() -> None:
    out = subprocess.run(
        ["kubectl", "kustomize", str(HUB)], check=True, capture_output=True, text=True
    ).stdout
    kinds = sorted(d["kind"] for d in yaml.safe_load_all(out) if d)
    assert kinds == sorted(
        ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "CustomResourceDefinition",
         "Deployment", "Namespace", "NetworkPolicy", "Role", "RoleBinding", "ServiceAccount"]
    )  # fmt: skip


def _rendered(bundle: Path) -> list[dict[str, Any]]:
    out = subprocess.run(
        ["kubectl", "kustomize", str(bundle)], check=True, capture_output=True, text=True
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def _namespaces_used(docs: list[dict[str, Any]]) -> set[str]:
    """Every namespace an object lives in or a RoleBinding's subject names."""
    used = {d["metadata"]["namespace"] for d in docs if d["metadata"].get("namespace")}
    for doc in docs:
        used |= {s["namespace"] for s in doc.get("subjects", ()) if s.get("namespace")}
    return used


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
@pytest.mark.parametrize(
    "bundle",
    [
        pytest.param(HUB, id="the hub bundle brings the namespace its objects live in"),
        pytest.param(HUB.parent / "base", id="the controller bundle does too"),
    ],
)
def test_every_namespace_the_bundle_uses_is_created_by_it(bundle: Path) -> None:
    docs = _rendered(bundle)
    want_namespaces = _namespaces_used(docs)
    created = {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"}
    assert want_namespaces == {"carbonshift-system"}
    assert want_namespaces <= created


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_apply_k_deploy_hub_works_on_a_fresh_hub(tmp_path: Path) -> None:
    # The reproducer of issue 16: `namespaces "carbonshift-system" not found` on a fresh hub.
    with run_fakekube(FakeKubeConfig(nodes=0)) as hub:
        done = subprocess.run(
            ["kubectl", "--kubeconfig", str(hub.kubeconfig), "apply", "-k", str(HUB)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
            env={**os.environ, "KUBECACHEDIR": str(tmp_path / "cache")},
        )
        assert done.returncode == 0, done.stderr
        assert "namespace/carbonshift-system created" in done.stdout
        deployments = hub.list("Deployment", "carbonshift-system", "apps/v1")
    assert [d["metadata"]["name"] for d in deployments] == ["carbonshift-hub"]
