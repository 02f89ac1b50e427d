"""The issue's acceptance flow: a Job, a Kueue workload and an AppWrapper created with
``kubectl`` on a fake hub are each held with the reason visible, then run in the spoke and
at the time the plan chose."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from carbonshift.k8s.multicluster import HubConfig, HubObserver
from carbonshift.k8s.multicluster.workloads import PLANNED_CLUSTER, PLANNED_START, REASON
from carbonshift.units import parse_utc
from tests.multicluster.harness import HOLD_OFF, Fleet, fleet, hub_job

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

START = datetime(2023, 6, 1, tzinfo=UTC)
FLUIDOS = HubConfig.model_validate(
    {"planning": {"policy": "fluidos", "forecast": "oracle", **HOLD_OFF}}
)
EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "hub" / "example.yaml"


async def kubectl(f: Fleet, tmp: Path, *args: str, stdin: str = "") -> str:
    env = {**os.environ, "KUBECONFIG": str(f.hub.kubeconfig), "KUBECACHEDIR": str(tmp / "cache")}
    done = await asyncio.to_thread(
        subprocess.run, ["kubectl", *args], input=stdin, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def anonymous_admin() -> list[dict[str, Any]]:
    """A ClusterRole of every verb on every resource, bound to ``system:anonymous``."""
    rbac = "rbac.authorization.k8s.io/v1"
    return [
        {
            "apiVersion": rbac,
            "kind": "ClusterRole",
            "metadata": {"name": "test-anonymous-admin"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        },
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "test-anonymous-admin"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "test-anonymous-admin",
            },
            "subjects": [{"kind": "User", "name": "system:anonymous"}],
        },
    ]


async def test_job_kueue_workload_and_appwrapper_created_with_kubectl(tmp_path: Path) -> None:
    example = [
        d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d and d["kind"] != "CarbonCluster"
    ]
    queued = hub_job("queued", cpu=2, runtime_h=2, deadline_h=16, queue="batch")
    manifests = yaml.safe_dump_all([*example, queued])
    async with fleet(START, config=FLUIDOS) as f:
        # kubectl sends no credentials over plain HTTP (clientcmd reads auth info only for
        # TLS), so the fake hub, which enforces RBAC, lets the anonymous user act as the
        # cluster's administrator would here; the hub itself keeps its shipped RBAC
        for obj in anonymous_admin():
            await f.create(f.hub, obj)
        await kubectl(f, tmp_path, "create", "-f", "-", stdin=manifests)
        observer = HubObserver(await f.start_controller())
        await f.step(0)
        await f.step(0)
        await observer.observe()  # the hub's Events, as `carbonshift hub` writes them
        held: dict[str, tuple[str, datetime]] = {}
        for kind, name in (("job", "train"), ("workload", "job-queued"), ("appwrapper", "sim")):
            out = await kubectl(f, tmp_path, "-n", "batch", "get", kind, name, "-o", "yaml")
            notes: dict[str, Any] = yaml.safe_load(out)["metadata"]["annotations"]
            assert notes[REASON].startswith("waiting for cleaner power"), notes[REASON]
            held[name] = (notes[PLANNED_CLUSTER], parse_utc(notes[PLANNED_START]))
            described = await kubectl(f, tmp_path, "-n", "batch", "describe", kind, name)
            assert "CarbonPlanned" in described, described
            assert "waiting for cleaner power" in described
        listed = await kubectl(
            f, tmp_path, "-n", "batch", "get", "jobs,workloads,appwrappers",
            "-l", "carbonshift.io/state=held", "-o", "name",
        )  # fmt: skip
        assert sorted(listed.split()) == [
            "appwrapper.workload.codeflare.dev/sim",
            "job.batch/train",
            "workload.kueue.x-k8s.io/job-queued",
        ]
        ran: dict[str, tuple[str, datetime]] = {}
        for _ in range(16 * 4):
            await f.step(15)
            for name, spoke in f.spokes.items():
                for job in await f.list(spoke, "Job", "batch", "batch/v1"):
                    key = {"queued": "job-queued"}.get(
                        job["metadata"]["name"], job["metadata"]["name"]
                    )
                    ran.setdefault(key, (name, parse_utc(job["status"]["startTime"])))
            if len(ran) == 3:
                break
        assert ran == held
