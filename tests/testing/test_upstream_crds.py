"""The real Kueue and MCAD CRDs, shipped unchanged in fakekube.plugins.upstream, install."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from fakekube import FakeKube
from fakekube.plugins import upstream_crds

UPSTREAM = Path(__file__).resolve().parents[2] / "packages/fakekube/src/fakekube/plugins/upstream"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "k8s-crds"


def test_every_upstream_crd_installs_and_serves_its_versions(fakekube: FakeKube) -> None:
    crds = upstream_crds()
    assert len(crds) == 13
    for crd in crds:
        fakekube.create(crd)
    for crd in crds:
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if version["served"]:
                assert fakekube.list(kind, None, f"{group}/{version['name']}") == []


@pytest.mark.parametrize("folder", ["kueue", "mcad"])
def test_the_copies_are_unchanged(folder: str) -> None:
    if not (SHARED / folder).is_dir():
        pytest.skip("../shared/k8s-crds is not beside this checkout")
    names = sorted(p.name for p in (SHARED / folder).iterdir())
    assert sorted(p.name for p in (UPSTREAM / folder).iterdir()) == names
    _, mismatch, errors = filecmp.cmpfiles(SHARED / folder, UPSTREAM / folder, names, shallow=False)
    assert (mismatch, errors) == ([], [])
