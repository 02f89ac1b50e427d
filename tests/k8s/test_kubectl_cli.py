"""kubectl as an independent client, and the ``carbonshift controller`` command itself.

kubectl creates a Pod and a Job against the fake API server; the controller (in process, in
virtual time) holds them, writes why and until when, and releases each at its planned time.
Then the real CLI verb runs as a subprocess against the same kind of server and holds a
kubectl-created Pod with its reason on it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from carbonshift.cli.app import main
from carbonshift.units import parse_utc
from fakekube import FakeKube
from tests.k8s.harness import WEBHOOK_NS, WEBHOOK_SERVICE, controller_config, make_harness

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
START = datetime(2023, 6, 1, tzinfo=UTC)

MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: train
  namespace: batch
  labels: {carbonshift.io/managed: "true"}
  annotations:
    carbonshift.io/deadline: 20h
    carbonshift.io/expected-runtime: 2h
spec:
  containers:
  - name: main
    image: busybox
    resources: {requests: {cpu: "2"}}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: backup
  namespace: batch
  labels: {carbonshift.io/managed: "true"}
  annotations:
    fluidos-intent-deadline: "12"
    carbonshift.io/expected-runtime: 1h
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        resources: {requests: {cpu: "1"}}
---
apiVersion: v1
kind: Pod
metadata:
  name: broken
  namespace: batch
  labels: {carbonshift.io/managed: "true"}
  annotations: {carbonshift.io/deadline: "whenever"}
spec:
  containers:
  - name: main
    image: busybox
    resources: {requests: {cpu: "1"}}
"""


def kubectl(kube: FakeKube, *args: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    return subprocess.run(
        [KUBECTL, "--kubeconfig", str(kube.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def jsonpath(kube: FakeKube, kind: str, name: str, path: str) -> str:
    done = kubectl(kube, "get", kind, name, "-n", "batch", "-o", f"jsonpath={path}")
    assert done.returncode == 0, done.stderr
    return done.stdout


@needs_kubectl
@pytest.mark.fakekube_config(start=START, nodes=2, cpu="8")
async def test_kubectl_workloads_are_held_with_reasons_and_released_on_plan(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    h = await make_harness(fakekube, tmp_path, rbac_on=False)  # kubectl: no creds over HTTP
    await h.start(controller_config(h.certs))
    try:
        manifest = tmp_path / "work.yaml"
        manifest.write_text(MANIFEST)
        created = await asyncio.to_thread(kubectl, fakekube, "create", "-f", str(manifest))
        assert created.returncode == 0, created.stderr
        # (a real API server also shows the webhook's warning here; the fake drops warnings)
        await h.step()
        gates = await asyncio.to_thread(
            jsonpath, fakekube, "pod", "train", "{.spec.schedulingGates[*].name}"
        )
        assert gates == "carbonshift.io/hold"
        note = "{.metadata.annotations.carbonshift\\.io/planned-start}"
        pod_start = parse_utc(await asyncio.to_thread(jsonpath, fakekube, "pod", "train", note))
        job_start = parse_utc(await asyncio.to_thread(jsonpath, fakekube, "job", "backup", note))
        why = "{.metadata.annotations.carbonshift\\.io/reason}"
        assert "cleaner power" in await asyncio.to_thread(jsonpath, fakekube, "pod", "train", why)
        assert pod_start <= START + timedelta(hours=18)
        assert job_start <= START + timedelta(hours=12)
        broken = await asyncio.to_thread(jsonpath, fakekube, "pod", "broken", "{.status.phase}")
        assert broken == "Running"
        state = "{.metadata.annotations.carbonshift\\.io/state}"
        assert await asyncio.to_thread(jsonpath, fakekube, "pod", "broken", state) == "not-held"
        events = await asyncio.to_thread(kubectl, fakekube, "get", "events", "-n", "batch")
        assert "Held" in events.stdout
        # the state is a label too, so kubectl can select held work
        held = await asyncio.to_thread(
            kubectl, fakekube, "get", "pods,jobs", "-n", "batch", "-l",
            "carbonshift.io/state=held", "-o", "name",
        )  # fmt: skip
        assert sorted(held.stdout.split()) == ["job.batch/backup", "pod/train"], held.stderr
        not_held = await asyncio.to_thread(
            kubectl, fakekube, "get", "pods", "-n", "batch", "-l",
            "carbonshift.io/state=not-held", "-o", "name",
        )  # fmt: skip
        assert not_held.stdout.split() == ["pod/broken"], not_held.stderr

        seen: dict[str, datetime] = {}
        while fakekube.now() < START + timedelta(hours=20):
            await h.step(hours=1)
            for kind, name in (("pod", "train"), ("job", "backup")):
                stamp = await asyncio.to_thread(
                    jsonpath,
                    fakekube,
                    kind,
                    name,
                    "{.metadata.annotations.carbonshift\\.io/released-at}",
                )
                if stamp and name not in seen:
                    seen[name] = parse_utc(stamp)
        assert seen == {"train": pod_start, "backup": job_start}
        phase = await asyncio.to_thread(jsonpath, fakekube, "pod", "train", "{.status.phase}")
        assert phase == "Succeeded"
        released = await asyncio.to_thread(
            kubectl, fakekube, "get", "pods,jobs", "-n", "batch", "-l",
            "carbonshift.io/state=released", "-o", "name",
        )  # fmt: skip
        assert sorted(released.stdout.split()) == ["job.batch/backup", "pod/train"]
    finally:
        await h.stop()


def test_check_prints_the_configuration(capsys: pytest.CaptureFixture[str]) -> None:
    repo = Path(__file__).resolve().parents[2]
    code = main(
        [
            "controller",
            "--config",
            str(repo / "deploy/base/config.yaml"),
            "--check",
            "--format",
            "json",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["zone"] == "DE"
    assert summary["policy"] == "carbonshift"  # the shipped default


def test_a_bad_configuration_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("planning: {polcy: caspian}\n")
    assert main(["controller", "--config", str(bad), "--check"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'policy'" in err
    assert err.count("\n") == 1


@needs_kubectl
@pytest.mark.fakekube_config(start=None, nodes=1, cpu="8")
async def test_the_cli_verb_plans_a_kubectl_pod(fakekube: FakeKube, tmp_path: Path) -> None:
    """The controller as a process, on the real clock: it holds the Pod kubectl created
    until its planned start, or starts it now and says so (which one depends on the day)."""
    h = await make_harness(fakekube, tmp_path, rbac_on=False)  # kubectl: no creds over HTTP
    config = tmp_path / "controller.yaml"
    tls = {"port": 0, "cert_file": str(h.certs.cert_file), "key_file": str(h.certs.key_file)}
    config.write_text(
        json.dumps(
            {
                "cluster": {"zone": "DE"},
                "planning": {"policy": "fluidos", "forecast": "seasonal-day"},
                "webhook": tls,
                "extender": tls,
                "metrics": {"port": 0},
                "leader_election": {"namespace": WEBHOOK_NS},
            }
        )
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "carbonshift.cli",
        "controller",
        "--config",
        str(config),
        "--kubeconfig",
        str(fakekube.kubeconfig),
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stderr is not None
        line = await asyncio.wait_for(process.stderr.readline(), timeout=60)
        assert b"running" in line, line
        ports = json.loads(line.decode().split("(", 1)[1].split(")", 1)[0])
        await asyncio.to_thread(
            fakekube.register_service_endpoint,
            WEBHOOK_NS,
            WEBHOOK_SERVICE,
            f"https://127.0.0.1:{ports['webhook']}",
        )
        manifest = tmp_path / "work.yaml"
        manifest.write_text(MANIFEST.split("---")[0])
        created = await asyncio.to_thread(kubectl, fakekube, "create", "-f", str(manifest))
        assert created.returncode == 0, created.stderr
        reason = ""
        for _ in range(600):
            reason = await asyncio.to_thread(
                jsonpath,
                fakekube,
                "pod",
                "train",
                "{.metadata.annotations.carbonshift\\.io/reason}",
            )
            if "policy" in reason:
                break
            await asyncio.sleep(0.05)
        assert "policy fluidos" in reason
        gates = await asyncio.to_thread(
            jsonpath, fakekube, "pod", "train", "{.spec.schedulingGates[*].name}"
        )
        planned = await asyncio.to_thread(
            jsonpath,
            fakekube,
            "pod",
            "train",
            "{.metadata.annotations.carbonshift\\.io/planned-start}",
        )
        if gates == "carbonshift.io/hold":
            assert "started now" not in reason
            assert "starts it now" not in reason
            assert parse_utc(planned) <= fakekube.now() + timedelta(hours=18)
        else:  # real time: on some days the replayed data make now the best start, or the
            # saving too small to hold for ("started now", "starts it now")
            assert gates == ""
            assert "now" in reason
            assert planned == ""
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), timeout=30)
