"""Every deployment path plans on live carbon data by default, keys from an optional Secret."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from carbonshift.k8s.config import load_config
from carbonshift.k8s.multicluster.config import load_hub_config

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def test_the_controller_and_hub_configs_use_the_provider_chain() -> None:
    assert load_config(DEPLOY / "base/config.yaml").planning.carbon_source == "providers"
    assert load_hub_config(DEPLOY / "hub/hub.yaml").planning.carbon_source == "providers"


def container_env(path: Path) -> dict[str, Any]:
    (deployment,) = [d for d in yaml.safe_load_all(path.read_text()) if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    env = {e["name"]: e for e in container["env"]}
    env["_mounts"] = mounts
    return env


@pytest.mark.parametrize(
    "manifest",
    [
        pytest.param("base/deployment.yaml", id="controller"),
        pytest.param("hub/deployment.yaml", id="hub"),
    ],
)
def test_keys_come_from_an_optional_secret_and_timeouts_are_short(manifest: str) -> None:
    env = container_env(DEPLOY / manifest)
    for name, key in [
        ("CARBONSHIFT_ELECTRICITYMAPS_TOKEN", "electricitymaps-token"),
        ("CARBONSHIFT_WATTTIME_USERNAME", "watttime-username"),
        ("CARBONSHIFT_WATTTIME_PASSWORD", "watttime-password"),
    ]:
        ref = env[name]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": "carbonshift-provider-keys", "key": key, "optional": True}
    assert float(env["CARBONSHIFT_HTTP_TIMEOUT_S"]["value"]) <= 3
    assert int(env["CARBONSHIFT_HTTP_ATTEMPTS"]["value"]) <= 2
    cache = env["CARBONSHIFT_CACHE_DIR"]["value"]
    assert any(cache.startswith(m + "/") for m in env["_mounts"])  # the root is read-only
