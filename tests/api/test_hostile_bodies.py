"""Hostile request bodies against a real server on loopback (issue 13).

Each body must get a 4xx with a one-line JSON problem, and the server must answer the next
request. Before the fix a body sent slowly held its connection open for good (no answer
after 120 s); now it gets 408 once ``body_timeout_s`` has passed.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from carbonshift.api import ApiSettings, create_app
from carbonshift.carbon.providers import ChainSet
from tests.formats.test_formats import contract_example
from tests.providers.loopback import LoopbackServer

_GOOD = json.dumps(contract_example())


def _bodies() -> list[object]:
    deep = b"[" * 100_000 + b"]" * 100_000
    assert '"runtime_slots": 2' in _GOOD
    assert '"pue": 1.0' in _GOOD
    cases = {
        "huge-integer": _GOOD.replace('"runtime_slots": 2', '"runtime_slots": ' + "9" * 5000),
        "huge-float": _GOOD.replace('"pue": 1.0', '"pue": 1e308'),
        "nan-literal": _GOOD.replace('"pue": 1.0', '"pue": NaN'),
        "infinity-literal": _GOOD.replace('"pue": 1.0', '"pue": Infinity'),
        "string-for-number": _GOOD.replace('"runtime_slots": 2', '"runtime_slots": "4"'),
        "bool-for-number": _GOOD.replace('"runtime_slots": 2', '"runtime_slots": true'),
        "huge-array": '{"version": 1, "jobs": [' + ",".join(["1"] * 300_000) + "]}",
        "wrong-top-type": "[1, 2, 3]",
        "not-utf8": b"\xff\xfe{}",
        "empty": b"",
        "deep-nesting": deep,
        "above-the-body-limit": b'{"x": "' + b"a" * 300_000 + b'"}',
    }
    return [
        pytest.param(body.encode() if isinstance(body, str) else body, id=name)
        for name, body in cases.items()
    ]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackServer]:
    settings = ApiSettings(max_body_bytes=200_000, max_jobs=50, body_timeout_s=1.0)
    with LoopbackServer(create_app(ChainSet({}, {}), settings=settings)) as running:
        yield running


@pytest.mark.parametrize("path", ["/v1/plan", "/v1/advise", "/emissions/forecasts/batch"])
@pytest.mark.parametrize("body", _bodies())
def test_hostile_bodies_get_a_4xx_and_the_server_stays_up(
    server: LoopbackServer, path: str, body: bytes
) -> None:
    answer = httpx.post(
        server.url + path,
        content=body,
        headers={"content-type": "application/json"},
        timeout=60,
    )
    assert 400 <= answer.status_code < 500, answer.text[:300]
    problem = answer.json()
    detail = problem.get("detail") or problem.get("title")
    assert detail
    assert "Traceback" not in answer.text
    assert httpx.get(server.url + "/healthz", timeout=10).status_code == 200


def test_a_slow_body_gets_408_and_frees_the_connection(server: LoopbackServer) -> None:
    body = _GOOD.encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as conn:
        conn.sendall(
            b"POST /v1/plan HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        conn.sendall(body[:10])  # ... and never the rest
        started = time.monotonic()
        answer = b""
        while chunk := conn.recv(4096):  # the server closes the connection after its answer
            answer += chunk
        waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"did not arrive within 1 s" in answer
    assert waited < 15
    assert httpx.get(server.url + "/healthz", timeout=10).status_code == 200
