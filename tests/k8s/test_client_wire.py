"""The client's lean transport (:mod:`carbonshift.k8s.wire`, issue 14 item 5): kept-alive
connections, chunked and sized answers, TLS with the library's context and client
certificate, the retry rule for a connection the server closed, the time limit, and error
answers raising what they raised through aiohttp; against the fake API server over loopback
HTTP and TLS, and a tiny asyncio server scripted per test."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from carbonshift.errors import InputError, TemporaryError
from carbonshift.k8s.client import (
    TRANSPORT_ENV,
    ApiKube,
    ConflictError,
    ForbiddenError,
    InvalidError,
    KubeError,
    NotFoundError,
    connect,
)
from carbonshift.k8s.clock import ExternalClock, SystemClock
from carbonshift.k8s.wire import LeanPool, WireError
from fakekube import FakeKube, FakeKubeConfig, run_fakekube

START = datetime(2023, 6, 1, tzinfo=UTC)
PODS = "/api/v1/namespaces/default/pods"


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def _lean_of(kube: ApiKube) -> LeanPool:
    direct = kube._direct
    assert direct is not None
    assert direct.lean is not None, "the lean transport is not in use"
    return direct.lean


# --- against the fake API server ------------------------------------------------------------


async def test_every_verb_goes_over_one_kept_alive_connection(fakekube: FakeKube) -> None:
    kube = await connect(str(fakekube.kubeconfig), ExternalClock(fakekube.now))
    try:
        lean = _lean_of(kube)
        opened: list[int] = []
        real_open = lean._open

        async def counted_open() -> Any:
            opened.append(1)
            return await real_open()

        lean._open = counted_open  # type: ignore[method-assign]
        created = await kube.create(PODS, _pod("p1"))
        patched = await kube.patch(f"{PODS}/p1", {"metadata": {"labels": {"a": "1"}}})
        replaced = await kube.replace(
            f"{PODS}/p1", {**patched, "metadata": {**patched["metadata"], "labels": {"a": "2"}}}
        )
        got = await kube.get(f"{PODS}/p1")
        listed = await kube.list(PODS, labelSelector="a=2")
        deleted = await kube.delete(f"{PODS}/p1")
        want_fields = {"fieldManager": "carbonshift"}
        assert created["metadata"]["managedFields"][0]["manager"] == want_fields["fieldManager"]
        assert got["metadata"]["labels"] == {"a": "2"} == replaced["metadata"]["labels"]
        assert [item["metadata"]["name"] for item in listed["items"]] == ["p1"]
        assert deleted["metadata"]["name"] == "p1"
        assert len(opened) == 1, "each request opened its own connection"
    finally:
        await kube.close()


async def _error_of(kube: ApiKube, call: Callable[[ApiKube], Awaitable[Any]]) -> KubeError:
    with pytest.raises(KubeError) as caught:
        await call(kube)
    return caught.value


ERROR_CASES = [
    pytest.param(lambda k: k.get(f"{PODS}/nobody"), NotFoundError, 404, id="get-a-missing-pod"),
    pytest.param(lambda k: k.create(PODS, _pod("twice")), ConflictError, 409, id="create-twice"),
    pytest.param(
        lambda k: k.replace(
            f"{PODS}/twice",
            {**_pod("twice"), "metadata": {**_pod("twice")["metadata"], "resourceVersion": "1"}},
        ),
        ConflictError,
        409,
        id="replace-a-stale-version",
    ),
    pytest.param(
        lambda k: k.create(PODS, _pod("Not_A_Name")), InvalidError, 422, id="an-invalid-name"
    ),
]


@pytest.mark.parametrize(("call", "want_type", "want_status"), ERROR_CASES)
async def test_an_error_answer_raises_what_it_raised_through_aiohttp(
    fakekube: FakeKube,
    monkeypatch: pytest.MonkeyPatch,
    call: Callable[[ApiKube], Awaitable[Any]],
    want_type: type[KubeError],
    want_status: int,
) -> None:
    lean = await connect(str(fakekube.kubeconfig), ExternalClock(fakekube.now))
    monkeypatch.setenv(TRANSPORT_ENV, "aiohttp")
    session = await connect(str(fakekube.kubeconfig), ExternalClock(fakekube.now))
    try:
        _lean_of(lean)
        assert session._direct is not None
        assert session._direct.lean is None
        with contextlib.suppress(ConflictError):
            await lean.create(PODS, _pod("twice"))
        got = await _error_of(lean, call)
        want = await _error_of(session, call)
        assert type(got) is want_type is type(want)
        assert (got.status, got.reason, str(got)) == (want_status, want.reason, str(want))
    finally:
        await lean.close()
        await session.close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the fake's TLS needs openssl")
async def test_tls_with_the_librarys_context_and_client_certificate() -> None:
    with run_fakekube(FakeKubeConfig(rbac=True, nodes=1, start=START), tls=True) as cluster:
        kubeconfig = cluster.client_certificate_kubeconfig("erin", ("readers",))
        kube = await connect(str(kubeconfig), SystemClock())
        try:
            lean = _lean_of(kube)
            assert lean._ssl is not None
            # the identity is the certificate's (no certificate: anonymous, not "erin")
            with pytest.raises(ForbiddenError) as caught:
                await kube.list("/api/v1/nodes")
            assert 'User "erin" cannot list resource "nodes"' in str(caught.value)
            assert caught.value.status == 403
            with pytest.raises(ForbiddenError):
                await kube.get("/api/v1/namespaces/default")
            assert len(lean._idle) == 1  # the TLS connection was kept alive between them
        finally:
            await kube.close()


SERVER_NAME_CASES = [
    # the fake's serving certificate names 127.0.0.1 and localhost
    pytest.param("localhost", True, id="a-name-the-certificate-has"),
    pytest.param("elsewhere.example", False, id="a-name-it-has-not"),
]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the fake's TLS needs openssl")
@pytest.mark.parametrize(("server_name", "want_ok"), SERVER_NAME_CASES)
async def test_tls_checks_the_kubeconfigs_server_name(
    tmp_path: Path, server_name: str, want_ok: bool
) -> None:
    with run_fakekube(FakeKubeConfig(nodes=1, start=START), tls=True) as cluster:
        config = yaml.safe_load(cluster.kubeconfig.read_text())
        config["clusters"][0]["cluster"]["tls-server-name"] = server_name
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(config))
        kube = await connect(str(kubeconfig), SystemClock())
        kube._retries = 0
        try:
            assert _lean_of(kube)._server_hostname == server_name
            if want_ok:
                assert (await kube.get("/api/v1/namespaces/default"))["kind"] == "Namespace"
            else:
                with pytest.raises(TemporaryError, match="certificate"):
                    await kube.get("/api/v1/namespaces/default")
        finally:
            await kube.close()


# --- against a tiny scripted server ---------------------------------------------------------


@dataclass
class Seen:
    """What the tiny server received: per connection, the request lines."""

    connections: list[list[str]] = field(default_factory=list)


Handler = Callable[[str, int, asyncio.StreamWriter], Awaitable[bool]]
"""Answers one request (its request line, its number on the connection from 0, the
writer); returns whether to keep the connection."""


async def _read_request(reader: asyncio.StreamReader) -> str | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.lower() == "content-length":
            length = int(value)
    if length:
        await reader.readexactly(length)
    return lines[0]


@contextlib.asynccontextmanager
async def tiny_server(handler: Handler) -> AsyncIterator[tuple[str, Seen]]:
    seen = Seen()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        requests: list[str] = []
        seen.connections.append(requests)
        try:
            while True:
                line = await _read_request(reader)
                if line is None:
                    return
                requests.append(line)
                if not await handler(line, len(requests) - 1, writer):
                    return
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        server.close()
        await server.wait_closed()


def _answer(status: int, body: bytes, *extra: str) -> bytes:
    head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n" + "".join(
        f"{line}\r\n" for line in extra
    )
    return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


async def _sized(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
    writer.write(_answer(200, b'{"n": %d}' % n))
    return True


async def _api_kube(url: str, *, retries: int = 0) -> ApiKube:
    from kubernetes_asyncio import client

    configuration = client.Configuration(host=url)
    return ApiKube(client.ApiClient(configuration), ExternalClock(lambda: START), retries=retries)


async def test_a_chunked_answer_split_across_packets() -> None:
    body = b'{"kind": "Pod", "metadata": {"name": "' + b"x" * 5000 + b'"}}'

    async def chunked(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        writer.write(head + b"Transfer-Encoding: chunked\r\n\r\n")
        for i in range(0, len(body), 1000):
            piece = body[i : i + 1000]
            writer.write(f"{len(piece):x}\r\n".encode() + piece[:300])
            await writer.drain()
            await asyncio.sleep(0)
            writer.write(piece[300:] + b"\r\n")
        writer.write(b"0\r\n\r\n")
        return True

    async with tiny_server(chunked) as (url, seen):
        kube = await _api_kube(url)
        try:
            first = await kube.get("/api/v1/namespaces/a/pods/x")
            second = await kube.get("/api/v1/namespaces/a/pods/x")
        finally:
            await kube.close()
    assert first["metadata"]["name"] == "x" * 5000 == second["metadata"]["name"]
    assert [len(c) for c in seen.connections] == [2]  # the connection was kept


async def test_an_answer_sized_by_closing_the_connection() -> None:
    async def closing(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        writer.write(b'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"a": ')
        await writer.drain()
        await asyncio.sleep(0.01)
        writer.write(b"[1, 2]}")
        return False

    async with tiny_server(closing) as (url, seen):
        kube = await _api_kube(url)
        try:
            assert await kube.get("/x") == {"a": [1, 2]}
            assert await kube.get("/x") == {"a": [1, 2]}
        finally:
            await kube.close()
    assert [len(c) for c in seen.connections] == [1, 1]


async def test_bytes_past_the_answer_are_not_taken_as_the_next_answer() -> None:
    async def extra(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        writer.write(_answer(200, b'{"n": %d}' % n) + _answer(500, b'{"stray": true}'))
        return True

    async with tiny_server(extra) as (url, seen):
        kube = await _api_kube(url)
        try:
            assert await kube.get("/x") == {"n": 0}
            assert await kube.get("/x") == {"n": 0}  # on a new connection
        finally:
            await kube.close()
    assert [len(c) for c in seen.connections] == [1, 1]


async def test_a_gzip_answer_is_decoded() -> None:
    async def zipped(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        writer.write(_answer(200, gzip.compress(b'{"a": 1}'), "Content-Encoding: gzip"))
        return True

    async with tiny_server(zipped) as (url, _):
        kube = await _api_kube(url)
        try:
            assert await kube.get("/x") == {"a": 1}
        finally:
            await kube.close()


async def test_a_body_that_does_not_decode_is_a_temporary_error() -> None:
    async def broken(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        writer.write(_answer(200, b"not gzip at all", "Content-Encoding: gzip"))
        return True

    async with tiny_server(broken) as (url, _):
        kube = await _api_kube(url)
        try:
            with pytest.raises(TemporaryError, match="does not decode"):
                await kube.get("/x")
        finally:
            await kube.close()


async def test_an_answer_that_is_no_http_1_1_is_a_temporary_error() -> None:
    async def alien(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")  # another service on the port
        return False

    async with tiny_server(alien) as (url, _):
        kube = await _api_kube(url)
        try:
            with pytest.raises(TemporaryError, match=r"not HTTP/1\.1"):
                await kube.get("/x")
        finally:
            await kube.close()


async def test_a_connection_the_server_closed_while_idle_is_not_used() -> None:
    async def once(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        writer.write(_answer(200, b'{"n": 0}'))
        return False  # close after each answer, without saying so

    async with tiny_server(once) as (url, seen):
        kube = await _api_kube(url)
        try:
            await kube.patch("/x", {"a": 1})
            await asyncio.sleep(0.05)  # the close reaches us while the connection is idle
            await kube.patch("/x", {"a": 2})
        finally:
            await kube.close()
    assert [len(c) for c in seen.connections] == [1, 1]


def _closing_after(n_answered: int) -> Handler:
    """Answers the first ``n_answered`` requests of each connection, then reads the next one
    and closes without answering (a server closing a kept-alive connection as we write)."""

    async def handler(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        if n < n_answered:
            writer.write(_answer(200, b'{"n": %d}' % n))
            return True
        return False

    return handler


RETRY_CASES = [
    # method, answered on the first connection, whether the transport sends it again
    pytest.param("GET", 1, True, id="get-on-a-reused-connection-is-sent-again"),
    pytest.param("DELETE", 1, True, id="delete-on-a-reused-connection-is-sent-again"),
    pytest.param("PATCH", 1, False, id="patch-on-a-reused-connection-is-not"),
    pytest.param("POST", 1, False, id="post-on-a-reused-connection-is-not"),
    pytest.param("GET", 0, False, id="get-on-a-new-connection-is-not"),
]


@pytest.mark.parametrize(("method", "answered", "want_again"), RETRY_CASES)
async def test_the_retry_rule_for_a_connection_closed_unanswered(
    method: str, answered: int, want_again: bool
) -> None:
    async with tiny_server(_closing_after(answered)) as (url, seen):
        pool = LeanPool(url, ssl_context=None, server_hostname=None, limit=4)
        body = None if method in ("GET", "DELETE") else b"{}"
        try:
            if answered:
                await pool.request("GET", "/warm", "", None, 5.0)
            if want_again:
                # the new connection answers its first request
                answer = await pool.request(method, "/x", "", body, 5.0)
                assert answer.status == 200
            else:
                with pytest.raises(WireError):
                    await pool.request(method, "/x", "", body, 5.0)
        finally:
            pool.close()
    sent = [line for requests in seen.connections for line in requests if "/x" in line]
    assert len(sent) == (2 if want_again else 1)


async def test_an_unanswered_write_is_a_temporary_error_to_the_caller() -> None:
    async with tiny_server(_closing_after(0)) as (url, seen):
        kube = await _api_kube(url, retries=0)
        try:
            with pytest.raises(TemporaryError, match="connection error"):
                await kube.patch("/x", {"a": 1})
        finally:
            await kube.close()
    assert [len(c) for c in seen.connections] == [1]


async def test_a_stalled_server_times_out_within_the_limit() -> None:
    async def stall(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")  # then nothing
        await asyncio.sleep(30)
        return False

    async with tiny_server(stall) as (url, _):
        pool = LeanPool(url, ssl_context=None, server_hostname=None, limit=4)
        began = time.monotonic()
        try:
            with pytest.raises(TimeoutError):
                await pool.request("GET", "/x", "", None, 0.3)
        finally:
            pool.close()
        assert time.monotonic() - began < 2.0
        assert not pool._idle  # a half-read connection is never reused


async def test_the_client_passes_its_time_limit_to_the_transport() -> None:
    async with tiny_server(_sized) as (url, _):
        kube = await _api_kube(url)
        lean = _lean_of(kube)
        limits: list[float] = []
        real = lean.request

        async def spy(method: str, target: str, fields: str, body: Any, timeout_s: float) -> Any:
            limits.append(timeout_s)
            return await real(method, target, fields, body, timeout_s)

        lean.request = spy  # type: ignore[method-assign]
        try:
            await kube.get("/x")
        finally:
            await kube.close()
    assert limits == [30.0]


async def test_answers_keep_their_status_headers_and_retry_after() -> None:
    async def busy(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        writer.write(_answer(429, b'{"kind": "Status", "code": 429}', "Retry-After: 7"))
        return True

    async with tiny_server(busy) as (url, _):
        pool = LeanPool(url, ssl_context=None, server_hostname=None, limit=4)
        try:
            answer = await pool.request("GET", "/x", "", None, 5.0)
        finally:
            pool.close()
    assert answer.status == 429
    assert answer.headers.get("Retry-After") == "7"
    assert await answer.read() == b'{"kind": "Status", "code": 429}'


# --- where the session still sends ----------------------------------------------------------


async def test_a_proxy_keeps_the_session() -> None:
    from kubernetes_asyncio import client

    configuration = client.Configuration(host="http://127.0.0.1:1")
    configuration.proxy = "http://127.0.0.1:2"
    kube = ApiKube(client.ApiClient(configuration), ExternalClock(lambda: START))
    try:
        assert kube._direct is not None
        assert kube._direct.lean is None
    finally:
        await kube.close()


async def test_the_switch_keeps_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRANSPORT_ENV, "aiohttp")
    async with tiny_server(_sized) as (url, _):
        kube = await _api_kube(url)
        try:
            assert kube._direct is not None
            assert kube._direct.lean is None
            assert await kube.get("/x") == {"n": 0}
        finally:
            await kube.close()


async def test_a_misspelt_switch_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes_asyncio import client

    monkeypatch.setenv(TRANSPORT_ENV, "aiohtp")
    api = client.ApiClient(client.Configuration(host="http://127.0.0.1:1"))
    try:
        with pytest.raises(InputError, match=r"CARBONSHIFT_K8S_TRANSPORT='aiohtp'.*'aiohttp'"):
            ApiKube(api, ExternalClock(lambda: START))
    finally:
        await api.close()


@pytest.mark.parametrize("value", ["a\r\nInjected: yes", "a\nInjected: yes", "a\rInjected: yes"])
async def test_a_header_with_a_line_break_is_not_written_by_the_lean_transport(value: str) -> None:
    async with tiny_server(_sized) as (url, seen):
        kube = await _api_kube(url)
        lean = _lean_of(kube)
        used: list[str] = []
        real = lean.request

        async def spy(*args: Any) -> Any:
            used.append(args[1])
            return await real(*args)

        lean.request = spy  # type: ignore[method-assign]
        kube._client.default_headers["X-Bad"] = value
        try:
            with contextlib.suppress(Exception):  # aiohttp refuses the header
                await kube.get("/x")
        finally:
            await kube.close()
    assert used == []
    assert all("Injected" not in line for c in seen.connections for line in c)


# --- gzip on lists --------------------------------------------------------------------------


async def test_a_list_asks_for_gzip_and_other_requests_do_not() -> None:
    """A real API server compresses answers over 128 KB only when asked; a list asks (its
    decoding costs about 3 % of parsing it, bench/hub.md), a GET of one object does not."""
    listed = b'{"kind": "PodList", "metadata": {"resourceVersion": "7"}, "items": []}'
    asked: list[tuple[str, bool]] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                wants = "\r\naccept-encoding: gzip\r\n" in head.lower()
                asked.append((head.split(" ")[1].split("?")[0], wants))
                if wants:
                    writer.write(_answer(200, gzip.compress(listed), "Content-Encoding: gzip"))
                else:
                    writer.write(_answer(200, listed))
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        kube = await _api_kube(url)
        try:
            _lean_of(kube)
            got_list = await kube.list(PODS, limit="500")
            got_one = await kube.get(f"{PODS}/p")
        finally:
            await kube.close()
    finally:
        server.close()
        await server.wait_closed()
    assert got_list["metadata"]["resourceVersion"] == "7" == got_one["metadata"]["resourceVersion"]
    assert asked == [(PODS, True), (f"{PODS}/p", False)]


@pytest.mark.parametrize(
    "head",
    [
        pytest.param(
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
            id="101-upgrade",
        ),
        pytest.param(b"HTTP/1.1 101 Switching Protocols\r\n\r\n", id="101-bare"),
        pytest.param(b"HTTP/1.1 100 Continue\r\n\r\n", id="100-then-nothing"),
        pytest.param(b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n", id="103-then-nothing"),
    ],
)
async def test_an_informational_answer_is_a_temporary_error_naming_it(head: bytes) -> None:
    """A 1xx is no answer to a request of ours (we send no ``Expect`` and ask no upgrade): a
    temporary error naming the status, never a KubeError (which reads as the API's refusal)."""

    async def informational(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        writer.write(head)
        await writer.drain()
        return False  # and close

    async with tiny_server(informational) as (url, _):
        kube = await _api_kube(url)
        try:
            with pytest.raises(TemporaryError, match=r"informational answer 1\d\d") as caught:
                await kube.get("/x")
        finally:
            await kube.close()
    assert not isinstance(caught.value, KubeError)


async def test_an_informational_answer_to_a_watch_is_a_temporary_error_naming_it() -> None:
    async def upgrade(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n")
        await writer.drain()
        return False

    async with tiny_server(upgrade) as (url, _):
        kube = await _api_kube(url)
        try:
            with pytest.raises(TemporaryError, match=r"informational answer 101") as caught:
                async for _ in kube.watch("/api/v1/pods", "1"):
                    pass
        finally:
            await kube.close()
    assert not isinstance(caught.value, KubeError)


async def test_requests_share_one_alarm_for_their_time_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a timer per request (asyncio.timeout) was pushed on the loop's heap and cancelled each
    # time: the hub's start sends 12,000 requests (bench/hub.md, "branch hubstart2")
    loop = asyncio.get_running_loop()
    timers: list[float] = []
    real_call_at = loop.call_at

    def counting_call_at(when: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
        timers.append(when)
        return real_call_at(when, callback, *args, **kwargs)

    async with tiny_server(_sized) as (url, _):
        pool = LeanPool(url, ssl_context=None, server_hostname=None, limit=4)
        await pool.request("GET", "/x", "", None, 30.0)  # the connection is open
        monkeypatch.setattr(loop, "call_at", counting_call_at)
        try:
            for _ in range(20):
                answer = await pool.request("GET", "/x", "", None, 30.0)
                assert answer.status == 200
        finally:
            monkeypatch.undo()
            pool.close()
    want_timers_at_most = 1
    assert len(timers) <= want_timers_at_most


async def test_a_shorter_time_limit_holds_while_a_longer_one_is_in_flight() -> None:
    async def stall(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(30)  # no answer
        return False

    async with tiny_server(stall) as (url, _):
        pool = LeanPool(url, ssl_context=None, server_hostname=None, limit=4)
        long_one = asyncio.ensure_future(pool.request("GET", "/long", "", None, 30.0))
        await asyncio.sleep(0.05)  # its deadline arms the alarm first
        began = time.monotonic()
        try:
            with pytest.raises(TimeoutError):
                await pool.request("GET", "/short", "", None, 0.3)
            assert time.monotonic() - began < 2.0
            assert not long_one.done()  # its own limit has not passed
        finally:
            long_one.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await long_one
            pool.close()
