"""Issue 12 item 13 (serve) and item 2 (SIGTERM): bearer token, refusal to bind a
non-loopback address without one, a per-client rate limit, and a graceful stop that ends
running solves."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from carbonshift.api import ApiSettings, create_app
from carbonshift.carbon.providers import ChainSet, EmbeddedReplay, FallbackChain, Secret
from carbonshift.carbon.series import CiKind
from carbonshift.cli.app import main
from tests.api.test_plan_limits import instance
from tests.api.test_serve_e2e import free_port

TOKEN = "s3cret-token-for-tests"


def _client(**settings: Any) -> TestClient:
    chains = ChainSet(
        chains={CiKind.DIRECT: FallbackChain(CiKind.DIRECT, [], floor=EmbeddedReplay())},
        providers={},
    )
    return TestClient(create_app(chains, settings=ApiSettings(**settings)))


# a past point in time (the SDK route answers emissions data, never the future)
FORECAST = "/emissions/bylocation?location=DE&time=2023-06-01T00:00:00Z"


@pytest.mark.parametrize(
    ("path", "headers", "want_status"),
    [
        pytest.param(FORECAST, {}, 401, id="no-token"),
        pytest.param(FORECAST, {"Authorization": "Bearer wrong"}, 401, id="wrong-token"),
        pytest.param(FORECAST, {"Authorization": TOKEN}, 401, id="token-without-bearer"),
        pytest.param(FORECAST, {"Authorization": f"Bearer {TOKEN}"}, 200, id="right-token"),
        pytest.param("/v1/policies", {}, 401, id="policies-need-it"),
        pytest.param("/openapi.json", {}, 401, id="openapi-needs-it"),
        pytest.param("/healthz", {}, 200, id="healthz-is-open-for-probes"),
        pytest.param("/metrics", {}, 200, id="metrics-is-open-for-scrapes"),
    ],
)
def test_the_token_guards_every_route_but_probes(
    path: str, headers: dict[str, str], want_status: int
) -> None:
    response = _client(token=Secret(TOKEN)).get(path, headers=headers)
    assert response.status_code == want_status, response.text
    if want_status == 401:
        assert response.headers["www-authenticate"] == "Bearer"
        assert TOKEN not in response.text


def test_a_plan_needs_the_token_too() -> None:
    client = _client(token=Secret(TOKEN))
    assert client.post("/v1/plan", params={"policy": "asap"}, json=instance()).status_code == 401
    ok = client.post(
        "/v1/plan",
        params={"policy": "asap"},
        json=instance(),
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert ok.status_code == 200, ok.text


def test_the_rate_limit_answers_429_with_retry_after_and_spares_probes() -> None:
    client = _client(rate_per_minute=3)
    statuses = [client.get("/v1/policies").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = client.get("/v1/policies")
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) >= 1
    assert "more than 3 requests per minute" in limited.json()["detail"]
    assert client.get("/healthz").status_code == 200
    assert client.get("/metrics").status_code == 200


@pytest.mark.parametrize(
    ("host", "env", "args", "want_message"),
    [
        pytest.param("0.0.0.0", {}, [], "is not a loopback address", id="all-interfaces"),
        pytest.param("::", {}, [], "is not a loopback address", id="ipv6-all"),
        pytest.param("192.0.2.10", {}, [], "is not a loopback address", id="a-lan-address"),
    ],
)
def test_serve_refuses_an_open_bind_without_a_token(
    host: str,
    env: dict[str, str],
    args: list[str],
    want_message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CARBONSHIFT_API_TOKEN", raising=False)
    monkeypatch.delenv("CARBONSHIFT_API_TOKEN_FILE", raising=False)
    assert main(["serve", "--offline", "--host", host, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert want_message in err
    assert "--allow-unauthenticated" in err
    assert err.count("\n") == 0


def _start(
    tmp_path: Path, args: list[str], env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "carbonshift.cli",
            "serve",
            "--offline",
            "--port",
            str(port),
            "--log-level",
            "warning",
            *args,
        ],
        env={**os.environ, **env},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url + "/healthz", timeout=2)
            return process, url
        except httpx.TransportError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise
            time.sleep(0.2)


@pytest.mark.e2e
def test_a_token_file_guards_a_served_api(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    process, url = _start(tmp_path, [], {"CARBONSHIFT_API_TOKEN_FILE": str(token_file)})
    try:
        refused = httpx.get(url + "/v1/policies", timeout=10)
        allowed = httpx.get(
            url + "/v1/policies", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
        )
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert refused.status_code == 401
    assert allowed.status_code == 200


@pytest.mark.e2e
def test_sigterm_stops_a_server_in_the_middle_of_a_long_solve(tmp_path: Path) -> None:
    """Issue 12 item 2: SIGTERM used to leave the server running a 233 s solve."""
    process, url = _start(tmp_path, ["--max-solve-seconds", "600"], {})
    answers: list[int] = []

    def ask() -> None:
        try:
            response = httpx.post(
                url + "/v1/plan",
                params={"policy": "exact", "param": "time_limit_s=600"},
                json=instance(jobs=200, horizon=48, clusters=3),
                timeout=120,
            )
            answers.append(response.status_code)
        except httpx.HTTPError:
            answers.append(-1)

    asker = threading.Thread(target=ask)
    asker.start()
    time.sleep(3)  # let the solve start
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    asker.join(timeout=60)
    # uvicorn shuts down gracefully, then re-raises the captured SIGTERM as its exit status
    assert code in (0, -signal.SIGTERM)
    assert answers == [503], (tmp_path / "serve.log").read_text()
