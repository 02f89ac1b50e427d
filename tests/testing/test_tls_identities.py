"""The fake over TLS: its own CA, client-certificate identities (CN the user, O the groups),
and kubectl sending credentials, as against a real API server."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from carbonshift.k8s.client import ForbiddenError, connect
from carbonshift.k8s.clock import SystemClock
from fakekube import FakeKube, FakeKubeConfig, run_fakekube
from fakekube._errors import ApiError
from fakekube.auth import certificate_identity
from fakekube.errors import ConfigError
from fakekube.tls import cluster_ca

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl")
needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl")
pytestmark = needs_openssl

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC = f"{RBAC_GROUP}/v1"


@pytest.fixture(scope="module")
def tls_kube() -> Iterator[FakeKube]:
    with run_fakekube(FakeKubeConfig(rbac=True, nodes=1), tls=True) as kube:
        _bind_group_to_pod_reading(kube, "readers")
        yield kube


def _bind_group_to_pod_reading(kube: FakeKube, group: str) -> None:
    admin = {"Authorization": f"Bearer {kube.admin_token}"}
    with httpx.Client(base_url=kube.base_url, verify=_ca_context(kube), timeout=10) as client:
        for path, obj in (
            (
                "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                {
                    "apiVersion": RBAC,
                    "kind": "ClusterRole",
                    "metadata": {"name": "pod-reader"},
                    "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
                },
            ),
            (
                "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
                {
                    "apiVersion": RBAC,
                    "kind": "RoleBinding",
                    "metadata": {"name": "readers", "namespace": "default"},
                    "roleRef": {
                        "apiGroup": RBAC.split("/")[0],
                        "kind": "ClusterRole",
                        "name": "pod-reader",
                    },
                    "subjects": [{"kind": "Group", "name": group, "apiGroup": RBAC.split("/")[0]}],
                },
            ),
        ):
            answer = client.post(path, json=obj, headers=admin)
            assert answer.status_code == 201, answer.text


def _ca_context(kube: FakeKube) -> ssl.SSLContext:
    assert kube.ca is not None
    return ssl.create_default_context(cafile=str(kube.ca.cert))


def _kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "--request-timeout=20s", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_kubeconfig_trusts_the_clusters_ca_and_inlines_everything(tls_kube: FakeKube) -> None:
    assert tls_kube.base_url.startswith("https://127.0.0.1:")
    config = json.loads(tls_kube.client_certificate_kubeconfig("carol", ("readers",)).read_text())
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    assert set(cluster) == {"server", "certificate-authority-data"}
    assert set(user) == {"client-certificate-data", "client-key-data"}


@needs_kubectl
def test_a_client_certificate_is_its_cn_in_its_o_groups(tls_kube: FakeKube) -> None:
    outsider = _kubectl(tls_kube.client_certificate_kubeconfig("alice", ("team",)), "get", "pods")
    assert outsider.returncode == 1
    assert (
        'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the '
        'namespace "default"'
    ) in outsider.stderr
    reader = _kubectl(
        tls_kube.client_certificate_kubeconfig("bob", ("x", "readers")), "get", "pods"
    )
    assert reader.returncode == 0, reader.stderr


@needs_kubectl
def test_kubectl_sends_its_token_and_impersonates_over_tls(tls_kube: FakeKube) -> None:
    """Over plain HTTP kubectl sends no credentials (system:anonymous); over TLS the admin
    token authenticates, and ``--as`` / ``--as-group`` impersonate as the API server reads them."""
    admin = _kubectl(tls_kube.kubeconfig, "get", "nodes", "-o", "name")
    assert admin.returncode == 0, admin.stderr
    assert admin.stdout.strip() == "node/node-0"
    as_dave = _kubectl(tls_kube.kubeconfig, "get", "pods", "--as", "dave")
    assert 'User "dave" cannot list resource "pods"' in as_dave.stderr
    as_reader = _kubectl(
        tls_kube.kubeconfig, "get", "pods", "--as", "dave", "--as-group", "readers"
    )
    assert as_reader.returncode == 0, as_reader.stderr


@needs_kubectl
def test_a_certificate_from_another_ca_gets_no_access(tls_kube: FakeKube, tmp_path: Path) -> None:
    stranger = cluster_ca(tmp_path / "other").client("mallory", ("system:masters",))
    assert tls_kube.ca is not None
    config = json.loads(tls_kube.client_certificate_kubeconfig("x").read_text())
    user = config["users"][0]["user"]
    user["client-certificate-data"] = base64.b64encode(stranger.cert.read_bytes()).decode()
    user["client-key-data"] = base64.b64encode(stranger.key.read_bytes()).decode()
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    refused = _kubectl(path, "get", "nodes")
    assert refused.returncode == 1
    assert "node-0" not in refused.stdout


async def test_carbonshifts_client_authenticates_with_a_client_certificate(
    tls_kube: FakeKube,
) -> None:
    kube = await connect(
        str(tls_kube.client_certificate_kubeconfig("erin", ("readers",))), SystemClock()
    )
    try:
        pods = await kube.list("/api/v1/namespaces/default/pods")
        assert pods["items"] == []
        with pytest.raises(ForbiddenError) as caught:
            await kube.list("/api/v1/nodes")
        assert 'User "erin" cannot list resource "nodes"' in str(caught.value)
    finally:
        await kube.close()


def test_a_certificate_without_a_common_name_is_401() -> None:
    with pytest.raises(ApiError) as caught:
        certificate_identity(((("organizationName", "readers"),),))
    assert caught.value.code == 401
    who = certificate_identity(
        ((("organizationName", "a"),), (("organizationName", "b"),), (("commonName", "u"),))
    )
    assert (who.user, who.groups) == ("u", ("a", "b", "system:authenticated"))


def test_client_certificates_need_tls() -> None:
    with run_fakekube(FakeKubeConfig(nodes=1)) as kube, pytest.raises(ConfigError, match="TLS"):
        kube.client_certificate_kubeconfig("alice")
