"""A spoke kubeconfig can neither run commands in the hub nor read its files (issue 12, item 4).

Reproducer: ``users[].user.exec`` in a spoke's Secret ran when the hub connected, and
``tokenFile`` / key and CA paths read the hub's own files. The hub now refuses every plugin
and file reference before any client is built, with ``Misconfigured`` health, a Ready=False
condition and a ``KubeconfigRefused`` Event on the CarbonCluster; and
``insecure-skip-tls-verify`` only where the CarbonCluster allows it.
"""

from __future__ import annotations

import asyncio
import base64
import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from carbonshift.errors import InputError
from carbonshift.k8s.multicluster.api import connect_kubeconfig_text
from carbonshift.k8s.multicluster.inventory import check_spoke_kubeconfig, parse_spoke
from carbonshift.k8s.multicluster.observe import HubObserver
from tests.multicluster.harness import HUB_NS, Fleet, fleet

START = datetime(2023, 6, 1, tzinfo=UTC)
ONE_SPOKE = {"de": ("DE", 10.0)}
SERVER = {"server": "https://spoke.example:6443", "certificate-authority-data": "Q0E="}


def kubeconfig(user: dict[str, Any], cluster: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "spoke", "cluster": cluster or dict(SERVER)}],
        "users": [{"name": "hub", "user": user}],
        "contexts": [{"name": "spoke", "context": {"cluster": "spoke", "user": "hub"}}],
        "current-context": "spoke",
    }


EXEC = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/sh"}}


@pytest.mark.parametrize(
    ("config", "want_in_message"),
    [
        (kubeconfig(EXEC), "'exec', which runs a command"),
        (kubeconfig({"auth-provider": {"name": "oidc"}}), "'auth-provider'"),
        (kubeconfig({"tokenFile": "/var/run/secrets/token"}), "'tokenFile', which reads a file"),
        (kubeconfig({"client-certificate": "/etc/hub.crt"}), "'client-certificate'"),
        (kubeconfig({"client-key": "/etc/hub.key"}), "'client-key'"),
        (kubeconfig({"token": "t"}, {"server": "https://s", "certificate-authority": "/ca"}),
         "'certificate-authority'"),
        (kubeconfig({"token": "t"}, {"server": "https://s", "insecure-skip-tls-verify": True}),
         "insecure-skip-tls-verify"),
        ({"users": "not a list"}, "users is not a list"),
        ({"users": [{"name": "x"}]}, "without a user"),
        (["a", "list"], "not a mapping"),
    ],
    ids=["exec-plugin", "auth-provider", "token-file", "client-cert-path", "client-key-path",
         "ca-path", "insecure-not-allowed", "users-not-a-list", "user-without-body",
         "not-a-mapping"],
)  # fmt: skip
def test_plugins_and_file_references_are_refused(config: Any, want_in_message: str) -> None:
    with pytest.raises(InputError, match="spoke kubeconfig") as caught:
        check_spoke_kubeconfig(config)
    assert want_in_message in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("config", "allow_insecure"),
    [
        (kubeconfig({"token": "abc"}), False),
        (kubeconfig({"client-certificate-data": "Q0U=", "client-key-data": "S0VZ"}), False),
        (kubeconfig({}), False),
        (kubeconfig({"token": "t"}, {"server": "https://s", "insecure-skip-tls-verify": True}),
         True),
        (kubeconfig({"token": "t"}, {"server": "https://s", "insecure-skip-tls-verify": False}),
         False),
    ],
    ids=["inline-token", "inline-client-cert", "no-credentials", "insecure-allowed",
         "insecure-false"],
)  # fmt: skip
def test_inline_credentials_are_accepted(config: dict[str, Any], allow_insecure: bool) -> None:
    check_spoke_kubeconfig(config, allow_insecure_tls=allow_insecure)


def test_the_carbon_cluster_allows_insecure_tls_only_explicitly() -> None:
    base = {"zone": "DE", "kubeconfigSecretRef": {"name": "s"}}
    obj = {"metadata": {"name": "de"}, "spec": base}
    assert parse_spoke(obj).allow_insecure_tls is False
    obj["spec"] = {**base, "allowInsecureSkipTLSVerify": True}
    assert parse_spoke(obj).allow_insecure_tls is True
    obj["spec"] = {**base, "allowInsecureSkipTLSVerify": "yes"}
    with pytest.raises(InputError, match="allowInsecureSkipTLSVerify"):
        parse_spoke(obj)


def marker_script(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """An exec credential plugin that leaves a marker file when it runs."""
    marker = tmp_path / "exec-ran"
    script = tmp_path / "plugin.sh"
    script.write_text(
        f"#!/bin/sh\ntouch {marker}\n"
        'echo \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
        '"status":{"token":"stolen"}}\'\n'
    )
    script.chmod(0o755)
    plugin = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": str(script),
            "interactiveMode": "Never",
        }
    }
    return marker, plugin


async def test_the_exec_plugin_would_run_without_the_check(tmp_path: Path) -> None:
    """The control: kubernetes-asyncio runs the plugin as soon as a client is built."""
    from kubernetes_asyncio import config

    marker, plugin = marker_script(tmp_path)
    client = await config.new_client_from_config_dict(
        config_dict=kubeconfig(plugin, {"server": "http://127.0.0.1:1"})
    )
    await client.close()
    assert marker.exists()


async def test_the_connector_refuses_before_building_a_client(tmp_path: Path) -> None:
    marker, plugin = marker_script(tmp_path)
    text = yaml.safe_dump(kubeconfig(plugin, {"server": "http://127.0.0.1:1"}))
    with pytest.raises(InputError, match="'exec'"):
        await connect_kubeconfig_text(text, clock=None)  # type: ignore[arg-type]
    assert not marker.exists()


CCL = "carbonshift.io/v1alpha1"


async def put_secret(f: Fleet, config: dict[str, Any]) -> None:
    """Replace the spoke's kubeconfig Secret on the hub, as its administrator would."""
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "spoke-de", "namespace": HUB_NS},
        "data": {"kubeconfig": base64.b64encode(yaml.safe_dump(config).encode()).decode()},
    }
    admin = {"Authorization": f"Bearer {f.hub.admin_token}"}  # the fake enforces RBAC
    async with httpx.AsyncClient(base_url=f.hub.base_url, headers=admin) as http:
        answer = await http.put(f"/api/v1/namespaces/{HUB_NS}/secrets/spoke-de", json=body)
        answer.raise_for_status()


async def status_of(f: Fleet) -> dict[str, Any]:
    status: dict[str, Any] = (await f.get(f.hub, "CarbonCluster", "de", "", CCL))["status"]
    return status


async def test_a_spoke_secret_with_an_exec_plugin_never_runs_it(tmp_path: Path) -> None:
    marker, plugin = marker_script(tmp_path)
    async with fleet(START, spokes=ONE_SPOKE) as f:
        real = yaml.safe_load(f.spokes["de"].kubeconfig.read_text())
        hostile = copy.deepcopy(real)
        for user in hostile["users"]:
            user["user"] = dict(plugin)
        await put_secret(f, hostile)
        controller = await f.start_controller()
        observer = HubObserver(controller, identity="test")
        await observer.reconcile()

        assert not marker.exists()
        assert controller.spokes["de"].api is None
        status = await status_of(f)
        assert status["health"] == "Misconfigured"
        assert "'exec', which runs a command in the hub" in status["message"]
        ready = status["conditions"][0]
        assert (ready["type"], ready["status"], ready["reason"]) == (
            "Ready",
            "False",
            "Misconfigured",
        )
        events = await asyncio.to_thread(f.hub.list, "Event", "default")
        assert [e["reason"] for e in events if e["involvedObject"]["name"] == "de"] == [
            "KubeconfigRefused"
        ]
        await observer.reconcile()  # said once, not at every pass
        events = await asyncio.to_thread(f.hub.list, "Event", "default")
        refused = [e for e in events if e["reason"] == "KubeconfigRefused"]
        assert len(refused) == 1
        assert refused[0].get("count", 1) == 1

        # the administrator fixes the Secret: the spoke is healthy again
        await put_secret(f, real)
        await observer.reconcile()
        assert (await status_of(f))["health"] == "Healthy"
        assert not marker.exists()


async def test_insecure_tls_needs_the_carbon_clusters_consent() -> None:
    async with fleet(START, spokes=ONE_SPOKE) as f:
        insecure = yaml.safe_load(f.spokes["de"].kubeconfig.read_text())
        for cluster in insecure["clusters"]:
            cluster["cluster"]["insecure-skip-tls-verify"] = True
        await put_secret(f, insecure)
        controller = await f.start_controller()
        await controller.reconcile()
        status = await status_of(f)
        assert status["health"] == "Misconfigured"
        assert "allowInsecureSkipTLSVerify" in status["message"]

        admin = {"Authorization": f"Bearer {f.hub.admin_token}"}
        async with httpx.AsyncClient(base_url=f.hub.base_url, headers=admin) as http:
            answer = await http.patch(
                "/apis/carbonshift.io/v1alpha1/carbonclusters/de",
                json={"spec": {"allowInsecureSkipTLSVerify": True}},
                headers={"content-type": "application/merge-patch+json"},
            )
            answer.raise_for_status()
        await controller.reconcile()
        assert (await status_of(f))["health"] == "Healthy"


def test_the_deployed_crd_declares_the_consent_field() -> None:
    crd = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "deploy/hub/crd-carboncluster.yaml").read_text()
    )
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    field = spec["properties"]["allowInsecureSkipTLSVerify"]
    assert (field["type"], field["default"]) == ("boolean", False)
