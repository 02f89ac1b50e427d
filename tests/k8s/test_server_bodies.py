"""The controller's own servers bound what they read (carbonshift.k8s.bodies): an
AdmissionReview above 16 MiB or an ExtenderArgs above 64 MiB, declared or streamed, is
answered 413 naming the size and the limit, and the next request is served."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest
from fastapi import FastAPI

from carbonshift.k8s.config import parse_config
from carbonshift.k8s.extender import extender_app
from carbonshift.k8s.webhook import webhook_app
from tests.builders import FrozenClock

NOW = datetime(2023, 11, 14, tzinfo=UTC)
MIB = 1 << 20


def _client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://server")


async def _streamed(n_mib: int) -> AsyncIterator[bytes]:
    """A body without a Content-Length (chunked), ``n_mib`` MiB of spaces."""
    for _ in range(n_mib):
        yield b" " * MIB


CONFIG = parse_config({"cluster": {"zone": "DE"}})


@pytest.mark.parametrize("streamed", [False, True], ids=["declared", "streamed"])
@pytest.mark.parametrize(
    ("app", "path", "limit_mib", "want_ok"),
    [
        pytest.param(webhook_app(CONFIG, FrozenClock(NOW)), "/mutate", 16, 200, id="webhook"),
        pytest.param(extender_app(CONFIG, FrozenClock(NOW)), "/prioritize", 64, 200, id="extender"),
    ],
)
async def test_a_body_above_its_limit_is_413_and_the_server_goes_on(
    app: FastAPI, path: str, limit_mib: int, want_ok: int, streamed: bool
) -> None:
    async with _client(app) as client:
        if streamed:
            answer = await client.post(path, content=_streamed(limit_mib + 1))
        else:
            answer = await client.post(path, content=b" " * (limit_mib * MIB + 1))
        assert answer.status_code == 413
        message = answer.json()["error"]
        assert f"above the limit of {limit_mib} MiB" in message
        assert "(its Content-Length)" in message or streamed
        assert "only the API server and kube-scheduler" in message
        after = await client.post(path, json={})
        assert after.status_code == want_ok
