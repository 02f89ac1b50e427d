"""Bounds on what an API server (or a proxy before it) may send the client
(:mod:`carbonshift.k8s.wire`, "Bounds"): a gzip bomb, an endless body, a huge declared
``Content-Length``, an endless head, a watch line without an end. Each fails its request with
a temporary error naming the size and the limit, and the next request goes on; against a tiny
scripted loopback server (tests/k8s/test_client_wire.py's)."""

from __future__ import annotations

import asyncio
import json
import re
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
    # the session's path (a proxy, or no httptools): aiohttp decodes, the client counts
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
