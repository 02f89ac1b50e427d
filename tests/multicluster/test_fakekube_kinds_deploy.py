"""deploy/hub/kueue.yaml against the emulated Kueue v1beta2 CRDs (schemas enforced by the
fake server), and the emulation admitting through exactly those objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from fakekube import FakeKubeConfig, run_fakekube
from fakekube.plugins import KUEUE_API, all_crds
from fakekube.plugins.kueue import setup_objects
from tests.multicluster.harness import carboncluster_crd

KUEUE_YAML = Path(__file__).parents[2] / "deploy" / "hub" / "kueue.yaml"


def _shape(obj: dict[str, Any]) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace", "")


def test_the_deployed_kueue_objects_are_v1beta2_and_accepted_by_a_fake_hub() -> None:
    docs = [d for d in yaml.safe_load_all(KUEUE_YAML.read_text()) if d]
    assert {d["apiVersion"] for d in docs} == {KUEUE_API}
    with run_fakekube(
        FakeKubeConfig(nodes=0, custom_resources=(*all_crds(), carboncluster_crd()))
    ) as hub:
        hub.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "batch"}})
        created = [hub.create(doc)["kind"] for doc in docs]
    assert sorted(created) == sorted(
        [
            "AdmissionCheck",
            "AdmissionCheck",
            "MultiKueueConfig",
            "MultiKueueCluster",
            "MultiKueueCluster",
            "ClusterQueue",
            "LocalQueue",
        ]
    )


def test_the_emulation_builders_make_the_deployed_objects() -> None:
    docs = [d for d in yaml.safe_load_all(KUEUE_YAML.read_text()) if d]
    built = setup_objects(["ca-on", "de"], quota_cpu=32)
    assert sorted(map(_shape, built)) == sorted(map(_shape, docs))
    by_shape = {_shape(d): d for d in docs}
    for obj in built:
        assert obj["spec"] == by_shape[_shape(obj)]["spec"], _shape(obj)
