"""``python -m fakekube`` as a process."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.e2e


def test_module_serves_until_terminated(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fakekube",
            "--kubeconfig-out",
            str(kubeconfig),
            "--nodes",
            "2",
            "--gpu",
            "4",
            "--virtual-time",
            "--start",
            "2023-06-01T00:00Z",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = process.stdout.readline() if process.stdout else ""
        server = json.loads(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        nodes = httpx.get(f"{server}/api/v1/nodes").json()["items"]
        advanced = httpx.post(f"{server}/fakekube/clock/advance?seconds=3600").json()
    finally:
        process.terminate()
        code = process.wait(20)

    assert banner.startswith(f"fakekube serving {server}")
    assert [n["status"]["allocatable"]["nvidia.com/gpu"] for n in nodes] == ["4", "4"]
    assert advanced == {"now": "2023-06-01T01:00:00+00:00", "virtual": True}
    assert code == 0


def test_bad_quantity_is_one_line_and_exit_1(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "fakekube",
            "--kubeconfig-out",
            str(tmp_path / "k"),
            "--cpu",
            "lots",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert done.returncode == 1
    assert (
        done.stderr.strip()
        == "error: cpu 'lots' is not a Kubernetes quantity; write it like 8, 500m or 32Gi"
    )


def test_rbac_flag_enforces_rbac_and_hands_out_the_admin_token(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [sys.executable, "-m", "fakekube", "--kubeconfig-out", str(kubeconfig), "--rbac",
         "--virtual-time"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        process.stdout.readline() if process.stdout else ""
        announced = process.stdout.readline() if process.stdout else ""
        config = json.loads(kubeconfig.read_text())
        server = config["clusters"][0]["cluster"]["server"]
        token = (tmp_path / "kubeconfig.token").read_text().strip()
        anonymous = httpx.get(f"{server}/api/v1/namespaces/default/pods")
        admin = httpx.get(
            f"{server}/api/v1/namespaces/default/pods",
            headers={"Authorization": f"Bearer {token}"},
        )
    finally:
        process.terminate()
        code = process.wait(20)

    assert announced.startswith(f"RBAC enforced; admin token {token}")
    assert config["users"][0]["user"]["token"] == token
    assert anonymous.status_code == 403
    assert anonymous.json()["message"] == (
        'pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" '
        'in the namespace "default"'
    )
    assert admin.status_code == 200
    assert code == 0


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_tls_flag_serves_https_that_kubectl_trusts_and_writes_the_ca(tmp_path: Path) -> None:
    """With --tls kubectl verifies the server against the kubeconfig's CA and sends its token,
    so RBAC sees the admin, not system:anonymous; the CA is written for client certificates."""
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [sys.executable, "-m", "fakekube", "--kubeconfig-out", str(kubeconfig), "--rbac",
         "--tls", "--nodes", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        lines = [process.stdout.readline() if process.stdout else "" for _ in range(3)]
        server = json.loads(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        nodes = subprocess.run(
            ["kubectl", "--kubeconfig", str(kubeconfig), "get", "nodes", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        ca = (tmp_path / "kubeconfig.ca.crt").read_text()
    finally:
        process.terminate()
        code = process.wait(20)

    assert server.startswith("https://127.0.0.1:")
    assert any(line.startswith("TLS on; cluster CA in") for line in lines), lines
    assert nodes.returncode == 0, nodes.stderr
    assert nodes.stdout.split() == ["node/node-0"]
    assert ca.startswith("-----BEGIN CERTIFICATE-----")
    assert code == 0
