"""GitHub Actions: CI runs the gate, a version tag publishes what CI builds (docs/install.md)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = REPO / ".github" / "workflows"


def _workflow(name: str) -> dict[Any, Any]:
    loaded = yaml.safe_load((WORKFLOWS / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


def _triggers(workflow: dict[Any, Any]) -> Any:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true


def _scripts(job: dict[str, Any]) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def _built_image() -> str:
    build = (REPO / "image" / "build.sh").read_text()
    match = re.search(r'^IMAGE_NAME="\$\{IMAGE_NAME:-([^}]+)\}"', build, re.MULTILINE)
    assert match is not None
    return match.group(1)


def test_the_workflows_validate_against_the_github_workflow_schema() -> None:
    if importlib.util.find_spec("check_jsonschema") is None:
        if os.environ.get("CI"):
            pytest.fail("check-jsonschema is missing under CI (.ci/workflows-check installs it)")
        pytest.skip("check-jsonschema is not installed")
    files = sorted(str(p) for p in WORKFLOWS.glob("*.yml"))
    assert [Path(f).name for f in files] == ["ci.yml", "release.yml"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.github-workflows",
            *files,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_ci_runs_the_gate_and_the_gate_checks_the_workflows() -> None:
    ci = _workflow("ci.yml")
    assert set(_triggers(ci)) == {"push", "pull_request"}
    assert ".ci/run" in _scripts(ci["jobs"]["gate"]).splitlines()
    gate = [line.split("#")[0].strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    assert "bash .ci/workflows-check" in gate


def test_a_version_tag_publishes_the_image_the_manifests_and_the_chart_name() -> None:
    release = _workflow("release.yml")
    assert _triggers(release) == {"push": {"tags": ["v*"]}}
    want_image = _built_image()
    assert release["env"]["IMAGE"] == want_image
    values = yaml.safe_load((REPO / "charts" / "carbonshift" / "values.yaml").read_text())
    assert values["image"]["repository"] == want_image
    for bundle in ("base", "hub"):
        kustomization = yaml.safe_load(
            (REPO / "deploy" / bundle / "kustomization.yaml").read_text()
        )
        assert {i["newName"] for i in kustomization["images"]} == {want_image}, bundle

    jobs = release["jobs"]
    image = _scripts(jobs["image"])
    assert 'IMAGE_NAME="$IMAGE" image/build.sh' in image  # the build CI exercises, not another
    assert '"docker://$IMAGE:$VERSION"' in image
    chart = _scripts(jobs["chart"])
    assert "helm package charts/carbonshift --destination dist" in chart
    assert 'helm push "dist/carbonshift-$VERSION.tgz" "$CHART_REPOSITORY"' in chart
    assert release["env"]["CHART_REPOSITORY"].startswith("oci://")
    chart_meta = yaml.safe_load((REPO / "charts" / "carbonshift" / "Chart.yaml").read_text())
    assert chart_meta["name"] == "carbonshift"
    # the tag check runs first; only the image and chart jobs may write packages
    for name in ("image", "chart", "python"):
        assert jobs[name]["needs"] == "version", name
    writers = {
        name for name, job in jobs.items() if job.get("permissions", {}).get("packages") == "write"
    }
    assert writers == {"image", "chart"}
    assert release["permissions"] == {"contents": "read"}
