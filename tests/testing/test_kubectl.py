"""kubectl 1.32 as an independent client of the fake server (the issue's acceptance flow)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fakekube import FakeKube

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

GATED_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: train
  annotations: {carbonshift.io/expected-runtime: 90m}
spec:
  schedulingGates: [{name: carbonshift.io/hold}]
  containers: [{name: main, image: busybox:1.36, resources: {requests: {cpu: 500m}}}]
"""

SUSPENDED_JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: backup}
spec:
  suspend: true
  template:
    metadata: {annotations: {carbonshift.io/expected-runtime: 2h}}
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox:1.36}]
"""

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: carbonplans.carbonshift.io}
spec:
  group: carbonshift.io
  scope: Namespaced
  names: {plural: carbonplans, singular: carbonplan, kind: CarbonPlan, shortNames: [cplan]}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    subresources: {status: {}}
"""


class Kubectl:
    def __init__(self, kube: FakeKube, tmp: Path) -> None:
        self.env = {
            "KUBECONFIG": str(kube.kubeconfig),
            "KUBECACHEDIR": str(tmp / "cache"),
            "HOME": str(tmp),
            "PATH": "/usr/bin:/bin",
        }
        self.tmp = tmp

    def __call__(
        self, *args: str, stdin: str | None = None, ok: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["kubectl", *args],
            input=stdin,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if ok:
            assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done

    def json(self, *args: str) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(self(*args, "-o", "json").stdout)
        return out


@pytest.fixture
def kubectl(fakekube: FakeKube, tmp_path: Path) -> Kubectl:
    return Kubectl(fakekube, tmp_path)


def test_gated_pod_lifecycle_through_kubectl(kubectl: Kubectl, fakekube: FakeKube) -> None:
    kubectl("create", "-f", "-", stdin=GATED_POD)
    table = kubectl("get", "pods").stdout
    assert "SchedulingGated" in table

    adding = kubectl(
        "patch",
        "pod",
        "train",
        "--type=json",
        "-p",
        '[{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"x.io/more"}}]',
        ok=False,
    )
    assert adding.returncode != 0
    assert "only deletion is allowed, but found new scheduling gate 'x.io/more'" in adding.stderr

    stale = kubectl.json("get", "pod", "train")
    kubectl("label", "pod", "train", "team=a")
    (kubectl.tmp / "stale.json").write_text(json.dumps(stale))
    replaced = kubectl("replace", "-f", str(kubectl.tmp / "stale.json"), ok=False)
    assert "Error from server (Conflict)" in replaced.stderr

    kubectl(
        "patch",
        "pod",
        "train",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/spec/schedulingGates"}]',
    )
    kubectl("wait", "--for=jsonpath={.status.phase}=Running", "pod/train", "--timeout=10s")
    assert (
        "Successfully assigned default/train to node-" in kubectl("describe", "pod", "train").stdout
    )
    running = kubectl.json("get", "pod", "train")
    assert running["spec"]["nodeName"].startswith("node-")
    assert running["status"]["phase"] == "Running"

    fakekube.advance(minutes=90)
    assert kubectl("get", "pod", "train", "-o", "jsonpath={.status.phase}").stdout == "Succeeded"
    assert "Completed" in kubectl("get", "pod", "train").stdout


def test_server_side_apply_dry_run_and_delete(kubectl: Kubectl, fakekube: FakeKube) -> None:
    kubectl("apply", "--server-side", "-f", "-", stdin=SUSPENDED_JOB)
    assert "Suspended" in kubectl("get", "jobs").stdout

    node_pin = SUSPENDED_JOB.replace(
        "restartPolicy: Never",
        "restartPolicy: Never\n      nodeSelector: {kubernetes.io/hostname: node-2}",
    )
    kubectl("apply", "--server-side", "-f", "-", stdin=node_pin)
    kubectl(
        "apply",
        "--server-side",
        "-f",
        "-",
        stdin=node_pin.replace("suspend: true", "suspend: false"),
    )
    fakekube.settle()
    pods = kubectl.json("get", "pods", "-l", "batch.kubernetes.io/job-name=backup")["items"]
    assert [p["spec"]["nodeName"] for p in pods] == ["node-2"]

    kubectl("create", "-f", "-", "--dry-run=server", stdin=GATED_POD)
    assert kubectl("get", "pods", "train", ok=False).returncode != 0

    kubectl("delete", "job", "backup")
    assert kubectl.json("get", "jobs")["items"] == []
    assert kubectl.json("get", "pods")["items"] == []


def test_client_side_apply_and_custom_resources(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=GATED_POD)
    assert "unchanged" in kubectl("apply", "-f", "-", stdin=GATED_POD).stdout

    kubectl("apply", "-f", "-", stdin=CRD)
    plan = "apiVersion: carbonshift.io/v1alpha1\nkind: CarbonPlan\nmetadata: {name: today}\nspec: {zone: DE}\n"  # noqa: E501
    kubectl("apply", "-f", "-", stdin=plan)
    got = kubectl.json("get", "cplan", "today")

    assert got["spec"] == {"zone": "DE"}
    assert "today" in kubectl("get", "carbonplans").stdout


def test_watch_prints_changes(kubectl: Kubectl, fakekube: FakeKube) -> None:
    kubectl("create", "-f", "-", stdin=GATED_POD)
    watcher = subprocess.Popen(
        ["kubectl", "get", "pods", "--watch", "--request-timeout=3s"],
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = watcher.stdout.readline() if watcher.stdout else ""
        second = watcher.stdout.readline() if watcher.stdout else ""
        kubectl("patch", "pod", "train", "--type=merge", "-p", '{"spec":{"schedulingGates":null}}')
        fakekube.settle()
        later = [watcher.stdout.readline() for _ in range(2)] if watcher.stdout else []
    finally:
        watcher.kill()
        watcher.wait()

    assert first.split()[:3] == ["NAME", "READY", "STATUS"]
    assert "SchedulingGated" in second
    assert any("Pending" in line or "Running" in line for line in later)


def test_generator_commands_send_protobuf_for_simple_kinds(kubectl: Kubectl) -> None:
    kubectl("create", "namespace", "carbonshift")
    kubectl("create", "configmap", "settings", "-n", "carbonshift", "--from-literal=zone=DE")
    kubectl("create", "secret", "generic", "key", "-n", "carbonshift", "--from-literal=token=abc")
    refused = kubectl("create", "job", "j", "--image=busybox", ok=False)

    assert kubectl.json("get", "configmap", "settings", "-n", "carbonshift")["data"] == {
        "zone": "DE"
    }
    secret = kubectl.json("get", "secret", "key", "-n", "carbonshift")
    assert secret["data"] == {"token": "YWJj"}
    assert secret["type"] == "Opaque"
    assert "use kubectl create -f or kubectl apply -f" in refused.stderr


PRINTED_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gauges.carbonshift.io}
spec:
  group: carbonshift.io
  scope: Cluster
  names: {plural: gauges, singular: gauge, kind: Gauge}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    additionalPrinterColumns:
    - {name: Zone, type: string, jsonPath: .spec.zone}
    - {name: Ready, type: string, jsonPath: ".status.conditions[?(@.type=='Ready')].status"}
    - {name: Cores, type: integer, jsonPath: .status.capacity.cpu}
    - {name: First, type: string, jsonPath: ".spec.zones[0]", priority: 1}
"""


def test_custom_resources_print_their_crd_printer_columns(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=PRINTED_CRD)
    gauge = (
        "apiVersion: carbonshift.io/v1\nkind: Gauge\nmetadata: {name: de}\n"
        "spec: {zone: DE, zones: [DE, FR]}\n"
        "status: {capacity: {cpu: 16}, conditions: [{type: Other, status: 'False'},"
        " {type: Ready, status: 'True'}]}\n"
    )
    kubectl("apply", "-f", "-", stdin=gauge)
    lines = kubectl("get", "gauges").stdout.splitlines()
    assert lines[0].split() == ["NAME", "ZONE", "READY", "CORES"]
    assert lines[1].split() == ["de", "DE", "True", "16"]
    wide = kubectl("get", "gauges", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[-1] == "FIRST"
    assert wide[1].split()[-1] == "DE"
