"""``python -m carbonshift.cli.hub --once`` against a fake hub with one spoke."""

from __future__ import annotations

import base64
import json

import typer
from typer.testing import CliRunner

from carbonshift.cli.hub import command
from carbonshift.testing.fakekube import FakeKubeConfig, run_fakekube
from carbonshift.testing.fakekube_kinds import all_crds
from tests.multicluster.harness import HUB_NS, carbon_cluster, hub_job


def test_once_prints_the_spokes_and_the_plan_as_json() -> None:
    with (
        run_fakekube(FakeKubeConfig(nodes=0, custom_resources=all_crds())) as hub,
        run_fakekube(FakeKubeConfig(nodes=1, cpu="16")) as spoke,
    ):
        for ns in (HUB_NS, "batch"):
            hub.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        secret = base64.b64encode(spoke.kubeconfig.read_bytes()).decode()
        hub.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "spoke-de", "namespace": HUB_NS},
                "data": {"kubeconfig": secret},
            }
        )
        hub.create(carbon_cluster("de", "DE", 10.0))
        hub.create(hub_job("urgent", cpu=2, runtime_h=1, deadline_h=1))
        app = typer.Typer()
        app.command()(command)
        answer = CliRunner().invoke(
            app, ["--kubeconfig", str(hub.kubeconfig), "--once", "--format", "json"]
        )
        assert answer.exit_code == 0, answer.output
        printed = json.loads(answer.stdout)
        assert printed["spokes"]["de"]["health"] == "Healthy"
        assert printed["spokes"]["de"]["capacity"] == {"cpu": 16.0}
        decision = printed["decisions"]["Job/batch/urgent"]
        assert (decision["cluster"], decision["start_now"]) == ("de", True)
        assert [j["metadata"]["name"] for j in spoke.list("Job", "batch", "batch/v1")] == ["urgent"]
