"""The client skips aiohttp's per-request proxy and netrc lookups only when there is nothing
to find: a proxy variable or a netrc file keeps them (they cost a worker-thread hop each)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from carbonshift.k8s.client import skip_env_lookups

CASES = [
    ("no proxy and no netrc", {}, False, True),
    ("an HTTPS proxy", {"HTTPS_PROXY": "http://proxy.example:3128"}, False, False),
    ("a lower-case proxy", {"http_proxy": "http://proxy.example:3128"}, False, False),
    ("a NETRC file named", {"NETRC": "/etc/netrc"}, False, False),
    ("a ~/.netrc file", {}, True, False),
]


@pytest.mark.parametrize(
    ("env", "netrc_file", "want_skipped"),
    [(e, n, w) for _, e, n, w in CASES],
    ids=[i for i, _, _, _ in CASES],
)
async def test_env_lookups_are_skipped_only_when_the_environment_has_nothing(
    env: dict[str, str],
    netrc_file: bool,
    want_skipped: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kubernetes_asyncio import client

    for name in list(os.environ):
        if name.lower().endswith("_proxy") or name == "NETRC":
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", str(tmp_path))
    if netrc_file:
        (tmp_path / ".netrc").write_text("machine example login a password b\n")
    api_client = client.ApiClient(client.Configuration())
    try:
        skipped = skip_env_lookups(api_client)
        trusts_env = api_client.rest_client.pool_manager.trust_env
    finally:
        await api_client.close()

    assert skipped is want_skipped
    assert trusts_env is not want_skipped
