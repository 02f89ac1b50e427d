"""Bounds on what an API server (or a proxy before it) may send the client
(:mod:`carbonshift.k8s.wire`, "Bounds"): a gzip bomb, an endless body, a huge declared
``Content-Length``, an endless head, a watch line without an end. Each fails its request with
a temporary error naming the size and the limit, and the next request goes on; against a tiny
scripted loopback server (tests/k8s/test_client_wire.py's)."""

from __future__ import annotations

import asyncio
import json
import re
import tracemalloc
import zlib

import pytest

from carbonshift.errors import TemporaryError
from carbonshift.k8s import wire
from carbonshift.k8s.client import TRANSPORT_ENV, ApiKube
from tests.k8s.test_client_wire import Handler, _answer, _api_kube, tiny_server

#: a small bound in the tests that need not send 64 MiB to pass one
SMALL = 1 << 16


def _gzip_bomb(n_bytes: int) -> bytes:
    """A JSON object whose gzip is about ``n_bytes / 1000`` bytes: a string of ``n_bytes``."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b"0" * (1 << 20)
    parts = [packer.compress(b'{"a": "')]
    parts += [packer.compress(zeros) for _ in range(n_bytes >> 20)]
    parts.append(packer.compress(b'"}') + packer.flush())
    return b"".join(parts)


async def _then_fine(kube: ApiKube) -> None:
    """The process goes on: the next request on the same client is answered."""
    assert await kube.get("/fine") == {"fine": True}


def _fine_or(bad: bytes) -> Handler:
    async def handler(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        if line.startswith("GET /fine "):
            writer.write(_answer(200, b'{"fine": true}'))
            return True
        writer.write(bad)
        await writer.drain()
        return True

    return handler


async def test_a_gzip_bomb_stops_at_the_answer_limit_and_the_next_request_goes_on() -> None:
    # the real bound: 80 MiB of JSON in about 80 KiB of gzip (1000:1)
    bomb = _gzip_bomb(80 << 20)
    assert len(bomb) < 200_000
    async with tiny_server(_fine_or(_answer(200, bomb, "Content-Encoding: gzip"))) as (url, _):
        kube = await _api_kube(url)
        try:
            with pytest.raises(TemporaryError) as caught:
                await kube.list("/api/v1/pods")
            await _then_fine(kube)
        finally:
            await kube.close()
    message = str(caught.value)
    assert f"gzip answer of {len(bomb)} bytes expands to more than 64 MiB" in message
    assert "is an API server" in message


@pytest.mark.parametrize(
    ("answer", "want_message"),
    [
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"".join(b"4000\r\n" + b" " * 0x4000 + b"\r\n" for _ in range(8))
            + b"0\r\n\r\n",
            "bytes, above the limit of 0.0625 MiB for one answer",
            id="a-chunked-body-past-the-limit",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n{",
            "answer is declared (Content-Length) as 99999999999 bytes, above the limit",
            id="a-content-length-past-the-limit-refused-before-its-body",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"a" * (SMALL * 2) + b"\r\n\r\n{}",
            "has a head of over",
            id="an-endless-head",
        ),
    ],
)
async def test_an_answer_past_a_bound_is_a_temporary_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, answer: bytes, want_message: str
) -> None:
    monkeypatch.setattr(wire, "MAX_ANSWER_BYTES", SMALL)
    monkeypatch.setattr(wire, "MAX_HEAD_BYTES", SMALL)
    await _refused_then_fine(answer, want_message)


async def _refused_then_fine(answer: bytes, want_message: str) -> None:
    """A GET answered ``answer`` fails with a temporary error saying ``want_message``; the
    next request on the same client is answered."""
    async with tiny_server(_fine_or(answer)) as (url, _):
        kube = await _api_kube(url)
        try:
            with pytest.raises(TemporaryError, match=re.escape(want_message)):
                await asyncio.wait_for(kube.get("/big"), 10)
            await _then_fine(kube)
        finally:
            await kube.close()


async def test_through_aiohttp_an_answer_past_the_bound_is_a_temporary_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the session's path (a proxy, or no httptools): the client decodes and counts (the
    # bomb's Content-Length is under the bound; the chunked test below sends none)
    monkeypatch.setenv(TRANSPORT_ENV, "aiohttp")
    monkeypatch.setattr(wire, "MAX_ANSWER_BYTES", SMALL)
    bomb = _gzip_bomb(4 << 20)
    async with tiny_server(_fine_or(_answer(200, bomb, "Content-Encoding: gzip"))) as (url, _):
        kube = await _api_kube(url)
        assert kube._direct is not None
        assert kube._direct.lean is None
        try:
            with pytest.raises(TemporaryError, match=r"above the limit of 0\.0625 MiB"):
                await kube.get("/big")
            await _then_fine(kube)
        finally:
            await kube.close()


async def test_a_watch_line_without_an_end_past_its_bound_ends_the_watch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wire, "MAX_WATCH_LINE_BYTES", SMALL)
    event = json.dumps({"type": "ADDED", "object": {"metadata": {"resourceVersion": "2"}}})

    async def endless(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        first = event.encode() + b"\n"
        writer.write(f"{len(first):x}\r\n".encode() + first + b"\r\n")
        for _ in range(8):  # then 128 KiB of one line, no line feed
            writer.write(b"4000\r\n" + b"x" * 0x4000 + b"\r\n")
            await writer.drain()
        await asyncio.sleep(5)
        return False

    seen: list[str] = []

    async def collect(kube: ApiKube) -> None:
        async with asyncio.timeout(10):
            async for got in kube.watch("/api/v1/pods", "1"):
                seen.append(got["object"]["metadata"]["resourceVersion"])

    async with tiny_server(endless) as (url, _):
        kube = await _api_kube(url)
        try:
            with pytest.raises(TemporaryError, match="without a line end, above the limit"):
                await collect(kube)
        finally:
            await kube.close()
    assert seen == ["2"]


def _chunked(status_line: bytes, body: bytes, *fields: bytes) -> bytes:
    """An answer with ``body`` in chunks of 16 KiB, without a Content-Length."""
    head = status_line + b"\r\n" + b"".join(f + b"\r\n" for f in fields)
    pieces = [body[i : i + 0x4000] for i in range(0, len(body), 0x4000)]
    framed = b"".join(b"%x\r\n" % len(p) + p + b"\r\n" for p in pieces)
    return head + b"Transfer-Encoding: chunked\r\n\r\n" + framed + b"0\r\n\r\n"


async def test_through_aiohttp_a_streamed_gzip_bomb_costs_the_bound_not_a_network_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # no Content-Length to refuse it by, and under the bound as sent: the body is decoded
    # here, in bounded pieces, where aiohttp decoded what each network read held before the
    # bound applied (bench/safety.md, "One bounded reader")
    monkeypatch.setenv(TRANSPORT_ENV, "aiohttp")
    monkeypatch.setattr(wire, "MAX_ANSWER_BYTES", SMALL)
    packed = _gzip_bomb(32 << 20)
    assert len(packed) < SMALL
    bomb = _chunked(b"HTTP/1.1 200 OK", packed, b"Content-Encoding: gzip")
    async with tiny_server(_fine_or(bomb)) as (url, _):
        kube = await _api_kube(url)
        tracemalloc.start()
        try:
            with pytest.raises(TemporaryError, match=r"over 65537 bytes, above the limit of 0\.06"):
                await kube.get("/big")
            _, peak_bytes = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            await _then_fine(kube)
        finally:
            tracemalloc.stop()
            await kube.close()
    assert peak_bytes < 4 << 20


@pytest.mark.parametrize(
    ("answer", "want_message"),
    [
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n{",
            "answer is declared (Content-Length) as 99999999999 bytes, above the limit",
            id="a-content-length-past-the-limit-refused-before-its-body",
        ),
        pytest.param(
            _answer(200, b"not gzip at all", "Content-Encoding: gzip"),
            "gzip answer does not decode: Error -3",
            id="a-body-that-does-not-decode",
        ),
    ],
)
async def test_through_aiohttp_a_bad_answer_is_a_temporary_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, answer: bytes, want_message: str
) -> None:
    monkeypatch.setenv(TRANSPORT_ENV, "aiohttp")
    monkeypatch.setattr(wire, "MAX_ANSWER_BYTES", SMALL)
    await _refused_then_fine(answer, want_message)


async def test_a_watch_refused_with_a_content_length_past_the_limit_is_a_temporary_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wire, "MAX_ANSWER_BYTES", SMALL)

    async def refused(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 500 X\r\nContent-Length: 99999999999\r\n\r\n{")
        await writer.drain()
        await asyncio.sleep(5)
        return False

    async def drain(kube: ApiKube) -> None:
        async with asyncio.timeout(10):
            async for _ in kube.watch("/api/v1/pods", "1"):
                pass

    async with tiny_server(refused) as (url, _):
        kube = await _api_kube(url)
        try:
            with pytest.raises(TemporaryError, match=r"declared \(Content-Length\) as 9999999"):
                await drain(kube)
        finally:
            await kube.close()


async def test_through_aiohttp_a_request_asks_only_for_the_codings_the_client_decodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from aiohttp.client_reqrep import ClientRequest

    monkeypatch.setenv(TRANSPORT_ENV, "aiohttp")
    # as aiohttp asks where brotli and zstandard are installed
    wider = {**ClientRequest.DEFAULT_HEADERS, "Accept-Encoding": "gzip, deflate, br, zstd"}
    monkeypatch.setattr(ClientRequest, "DEFAULT_HEADERS", wider)
    asked: list[str] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
        asked.extend(line for line in head.split("\r\n") if line.startswith("accept-encoding"))
        writer.write(_answer(200, b'{"fine": true}'))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        kube = await _api_kube(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        try:
            assert await kube.get("/fine") == {"fine": True}
        finally:
            await kube.close()
    finally:
        server.close()
        await server.wait_closed()
    assert asked == ["accept-encoding: gzip, deflate"]
