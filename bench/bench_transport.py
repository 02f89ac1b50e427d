"""CPU per API request: our client (``ApiKube``) against a bare HTTP/1.1 exchange.

Measures the client-side CPU seconds (``time.process_time``) of a merge PATCH of one Pod
against the fake API server (``python -m fakekube``, its own process), one request at a
time, three ways, alternating in rounds so the machine's load falls on each alike:

- ``ApiKube``: ``carbonshift.k8s.client.ApiKube.patch``, as the controller and the hub send
  every write (kubernetes-asyncio's configuration and authentication; since 2026-11-27 over
  the lean transport, ``carbonshift.k8s.wire``, where the library's aiohttp session is
  installed);
- ``session``: the same through kubernetes-asyncio's aiohttp session (``DirectSend``
  without the lean transport, as ``CARBONSHIFT_K8S_TRANSPORT=aiohttp``: every write before);
- ``call_api``: the same, through kubernetes-asyncio's generic ``ApiClient.call_api`` (how
  every request went before ``DirectSend``, 2026-11-27);
- ``bare``: the same request bytes written on one kept-alive connection by a minimal
  ``asyncio.Protocol`` that reads a ``Content-Length`` answer, and ``json.loads`` of it.
  Not a client: no chunked answers, TLS, proxies, pools or retries. It bounds what a leaner
  transport could save per request (bench/controller.md, 2026-11-27).

Run: ``PYTHONPATH=src:packages/fakekube/src:. .venv/bin/python bench/bench_transport.py``
(``--requests 2000 --rounds 3``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

try:
    from bench import _fakekube
except ImportError:  # run as a script: bench/ is on the path, the checkout is not
    import _fakekube  # type: ignore[no-redef]
from carbonshift.k8s.client import ApiKube, connect
from carbonshift.k8s.clock import ExternalClock

START = datetime(2023, 6, 1, tzinfo=UTC)
PODS = "/api/v1/namespaces/b/pods"


class _Bare(asyncio.Protocol):
    """One request at a time on one connection; answers with a Content-Length only."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if self.waiter is None or self.waiter.done() or end < 0:
            return
        lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        fields = dict(line.lower().split(":", 1) for line in lines[1:])
        length = int(fields["content-length"])  # KeyError: a chunked answer, not handled
        if len(self.buffer) < end + 4 + length:
            return
        body = bytes(self.buffer[end + 4 : end + 4 + length])
        del self.buffer[: end + 4 + length]
        self.waiter.set_result((status, body))

    async def exchange(self, raw: bytes) -> tuple[int, bytes]:
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(raw)
        return await self.waiter


async def _measure(requests: int, rounds: int) -> dict[str, list[float]]:
    with (
        tempfile.TemporaryDirectory() as tmp,
        _fakekube.fake_server(Path(tmp), nodes=1, cpu="10", start=START) as (kubeconfig, _),
    ):
        kube = await connect(str(kubeconfig), ExternalClock(lambda: START))
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}}
        await kube.create("/api/v1/namespaces", namespace)
        for i in range(requests):
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p{i}", "namespace": "b"},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            }
            await kube.create(PODS, body)
        direct = kube._direct
        lean = getattr(direct, "lean", None)  # None: code before the lean transport
        out: dict[str, list[float]] = {"ApiKube": [], "session": [], "call_api": [], "bare": []}
        for n in range(rounds):
            for way in out:
                kube._direct = None if way == "call_api" else direct
                if direct is not None:
                    direct.lean = None if way == "session" else lean
                if way == "bare":
                    # a new connection each round: the fake (uvicorn) closes one idle for 5 s,
                    # and the bare exchange does not notice a closed connection
                    bare = await _bare_sender(kube)
                began = time.process_time()
                for i in range(requests):
                    patch = {"metadata": {"annotations": {"round": f"{way}-{n}-{i}"}}}
                    if way == "bare":
                        await bare(f"{PODS}/p{i}", patch)
                    else:
                        await kube.patch(f"{PODS}/p{i}", patch)
                out[way].append((time.process_time() - began) / requests * 1000)
        kube._direct = direct
        await kube.close()
    return out


async def _bare_sender(kube: ApiKube) -> Any:
    """A function sending a merge PATCH as the bare exchange (the headers ApiKube sends)."""
    api = kube._client
    headers = {"Accept": "application/json", "Content-Type": "application/merge-patch+json"}
    headers.update(api.default_headers)
    await api.update_params_for_auth(headers, [], ["BearerToken"])
    url = urlsplit(api.configuration.host)
    if url.scheme != "http":
        raise SystemExit("the bare exchange speaks plain HTTP only (the fake's default)")
    _, protocol = await asyncio.get_running_loop().create_connection(_Bare, url.hostname, url.port)
    fixed = f"Host: {url.netloc}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())

    async def send(path: str, patch: Any) -> Any:
        body = json.dumps(patch).encode()
        head = f"PATCH {path}?fieldManager=carbonshift HTTP/1.1\r\n{fixed}"
        raw = f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body
        status, answer = await protocol.exchange(raw)
        if status != 200:
            raise SystemExit(f"PATCH {path}: HTTP {status}: {answer[:200]!r}")
        return json.loads(answer)

    return send


def run() -> list[dict[str, Any]]:
    """``python -m bench transport``: 1,000 PATCHes each way, 2 rounds; the best round."""
    found = asyncio.run(_measure(1000, 2))
    return [
        {"name": f"PATCH {way} cpu per request", "value": round(min(ms), 3), "unit": "ms"}
        for way, ms in found.items()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    found = asyncio.run(_measure(args.requests, args.rounds))
    print(json.dumps({way: [round(ms, 3) for ms in v] for way, v in found.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
