"""deploy/hub: the CRD (the one the fake hub installs) is accepted, the example objects are
accepted by a fake hub, the configuration loads, and kustomize renders the bundle."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

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
         "Deployment", "Role", "RoleBinding", "ServiceAccount"]
    )  # fmt: skip
