"""Watches over the client's lean transport (:class:`carbonshift.k8s.wire.WatchStream`, issue 14
item 5): events read in bulk, with the informer's semantics kept (resume when the stream
ends, relist after 410 or a failure, a stalled stream ended, a malformed line contained to
its watch), against the fake API server over loopback and a scripted asyncio server; the
edge cases run over both transports (lean, and aiohttp as ``CARBONSHIFT_K8S_TRANSPORT=aiohttp``
keeps it) where both must behave alike."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from carbonshift.errors import TemporaryError
from carbonshift.k8s.client import (
    TRANSPORT_ENV,
    WATCH_BATCH_S,
    ApiKube,
    ForbiddenError,
    GoneError,
    connect,
)
from carbonshift.k8s.clock import ExternalClock, SystemClock
from carbonshift.k8s.informer import Informer
from carbonshift.k8s.wire import LeanPool, WatchStream
from fakekube import FakeKube, FakeKubeConfig, run_fakekube

START = datetime(2023, 6, 1, tzinfo=UTC)
PODS = "/api/v1/namespaces/default/pods"
Obj = dict[str, Any]


def _pod(name: str, rv: int | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": "default"}
    if rv is not None:
        meta["resourceVersion"] = str(rv)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def _line(kind: str, name: str, rv: int) -> bytes:
    return json.dumps({"type": kind, "object": _pod(name, rv)}).encode() + b"\n"


async def no_wait(_seconds: float) -> None:
    return None


# --- against the fake API server ------------------------------------------------------------


async def test_an_informer_over_the_fake_keeps_its_cache_through_the_lean_watch(
    fakekube: FakeKube,
) -> None:
    kube = await connect(str(fakekube.kubeconfig), ExternalClock(fakekube.now))
    direct = kube._direct
    assert direct is not None
    assert direct.lean is not None
    streams: list[WatchStream] = []
    real_watch = direct.lean.watch

    async def spy(*args: Any, **kwargs: Any) -> WatchStream:
        stream = await real_watch(*args, **kwargs)
        streams.append(stream)
        return stream

    direct.lean.watch = spy  # type: ignore[method-assign]
    informer = Informer(kube, PODS, kind="Pod", api_version="v1")
    try:
        await kube.create(PODS, _pod("before"))
        await informer.relist()
        changed: list[str] = []
        informer.start(no_wait, on_change=changed.append)
        await asyncio.gather(*(kube.create(PODS, _pod(f"p{i}")) for i in range(40)))
        await kube.patch(f"{PODS}/p3", {"metadata": {"labels": {"a": "1"}}})
        await kube.delete(f"{PODS}/before")
        for _ in range(500):
            if informer.items.get("default/p3", {}).get("metadata", {}).get("labels") and (
                "default/before" not in informer.items
            ):
                break
            await asyncio.sleep(0.01)
    finally:
        await informer.stop()
        await kube.close()
    want_names = sorted(f"default/p{i}" for i in range(40))
    assert sorted(informer.items) == want_names
    assert informer.items["default/p3"]["metadata"]["labels"] == {"a": "1"}
    assert len(streams) == 1, "the watch did not go over the lean transport"
    assert set(changed) == {*want_names, "default/before"}  # the fake's kubelet adds status


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the fake's TLS needs openssl")
async def test_a_watch_over_tls_with_the_librarys_context() -> None:
    with run_fakekube(FakeKubeConfig(nodes=1, start=START), tls=True) as cluster:
        kube = await connect(str(cluster.kubeconfig), SystemClock())
        try:
            assert kube._direct is not None
            assert kube._direct.lean is not None
            listed = await kube.list(PODS)
            events = kube.watch(PODS, listed["metadata"]["resourceVersion"])
            first = asyncio.ensure_future(anext(events))
            await kube.create(PODS, _pod("over-tls"))
            event = await asyncio.wait_for(first, timeout=10)
            await events.aclose()
        finally:
            await kube.close()
    assert event["type"] == "ADDED"
    assert event["object"]["metadata"]["name"] == "over-tls"


# --- against a scripted server --------------------------------------------------------------

Script = Callable[[asyncio.StreamWriter], Awaitable[None]]
"""Writes one watch's answer (head and body) and returns; the connection then closes."""


@dataclass
class Served:
    """What the scripted server received: the request lines, lists and watches."""

    requests: list[str] = field(default_factory=list)

    def watches(self) -> list[str]:
        return [r for r in self.requests if "watch=true" in r]


LIST = json.dumps(
    {"kind": "PodList", "metadata": {"resourceVersion": "100"}, "items": [_pod("a", 100)]}
).encode()


@contextlib.asynccontextmanager
async def watch_server(scripts: list[Script]) -> AsyncIterator[tuple[str, Served]]:
    """Lists answer one Pod at resourceVersion 100; each watch takes the next script (none
    left: a quiet open stream)."""
    served = Served()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                line = head.decode("latin-1").split("\r\n")[0]
                served.requests.append(line)
                if "watch=true" not in line:
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        + f"Content-Length: {len(LIST)}\r\n\r\n".encode()
                        + LIST
                    )
                    continue
                if not scripts:
                    writer.write(_CHUNKED_HEAD)
                    await asyncio.sleep(60)
                    return
                await scripts.pop(0)(writer)
                await writer.drain()
                return
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", served
    finally:
        server.close()
        await server.wait_closed()


_CHUNKED_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
)


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _events(*lines: bytes, cut_every: int = 0, end: bool = True) -> Script:
    """A chunked answer of ``lines``, in chunks of ``cut_every`` bytes (0: one chunk per
    line), each chunk written and flushed on its own; ``end``: the terminating chunk."""

    async def script(writer: asyncio.StreamWriter) -> None:
        writer.write(_CHUNKED_HEAD)
        body = b"".join(lines)
        if cut_every:
            pieces = [body[i : i + cut_every] for i in range(0, len(body), cut_every)]
        else:
            pieces = list(lines)
        for piece in pieces:
            writer.write(_chunk(piece))
            await writer.drain()
            await asyncio.sleep(0.001)
        if end:
            writer.write(b"0\r\n\r\n")

    return script


def _stalling(*lines: bytes) -> Script:
    async def script(writer: asyncio.StreamWriter) -> None:
        await _events(*lines, end=False)(writer)
        await asyncio.sleep(60)

    return script


def _status(code: int, reason: str) -> Script:
    body = json.dumps({"kind": "Status", "code": code, "reason": reason, "message": "no"})

    async def script(writer: asyncio.StreamWriter) -> None:
        writer.write(
            f"HTTP/1.1 {code} X\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
        )

    return script


async def _kube(url: str, transport: str, monkeypatch: pytest.MonkeyPatch) -> ApiKube:
    from kubernetes_asyncio import client

    monkeypatch.setenv(TRANSPORT_ENV, transport)
    kube = ApiKube(
        client.ApiClient(client.Configuration(host=url)), ExternalClock(lambda: START), retries=0
    )
    assert kube._direct is not None
    assert (kube._direct.lean is not None) == (transport == "lean")
    return kube


TRANSPORTS = ["lean", "aiohttp"]
GONE = (
    json.dumps(
        {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
    ).encode()
    + b"\n"
)
THREE = [_line("ADDED", "b", 101), _line("MODIFIED", "a", 102), _line("DELETED", "b", 103)]

STREAM_CASES = [
    # (id, script, want events as (type, name, rv), want raised)
    ("one-chunk-per-event-then-the-end", _events(*THREE), ["b101", "a102", "b103"], None),
    (
        "chunks-cut-mid-event",
        _events(*THREE, cut_every=37),
        ["b101", "a102", "b103"],
        None,
    ),
    (
        "a-bookmark-among-events",
        _events(
            THREE[0],
            b'{"type": "BOOKMARK", "object": '
            b'{"kind": "Pod", "metadata": {"resourceVersion": "150"}}}\n',
        ),
        ["b101", "150"],
        None,
    ),
    ("410-as-an-error-event", _events(THREE[0], GONE), ["b101"], GoneError),
    ("a-malformed-line", _events(THREE[0], b"{not json\n", THREE[1]), ["b101"], TemporaryError),
    ("a-line-that-is-no-object", _events(THREE[0], b"[1, 2]\n"), ["b101"], TemporaryError),
    ("a-403-answer", _status(403, "Forbidden"), [], ForbiddenError),
    ("a-500-answer", _status(500, "InternalError"), [], TemporaryError),
]


def _seen(event: Obj) -> str:
    meta = event["object"]["metadata"]
    return f"{meta.get('name', '')}{meta['resourceVersion']}"


async def _collect(kube: ApiKube, seen: list[str]) -> None:
    async for event in kube.watch(PODS, "100"):
        seen.append(_seen(event))


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("script", "want_seen", "want_raised"),
    [(s, w, r) for _, s, w, r in STREAM_CASES],
    ids=[i for i, _, _, _ in STREAM_CASES],
)
async def test_a_watch_stream_gives_its_events_and_raises_what_the_informer_handles(
    monkeypatch: pytest.MonkeyPatch,
    transport: str,
    script: Script,
    want_seen: list[str],
    want_raised: type[Exception] | None,
) -> None:
    seen: list[str] = []
    async with watch_server([script]) as (url, _):
        kube = await _kube(url, transport, monkeypatch)
        try:
            async with asyncio.timeout(10):
                if want_raised is None:
                    await _collect(kube, seen)
                else:
                    with pytest.raises(want_raised):
                        await _collect(kube, seen)
        finally:
            await kube.close()
    assert seen == want_seen


async def test_events_that_arrive_together_are_read_in_one_batch() -> None:
    async def together(writer: asyncio.StreamWriter) -> None:
        writer.write(_CHUNKED_HEAD + _chunk(b"".join(THREE)) + b"0\r\n\r\n")

    async with watch_server([together]) as (url, _):
        pool = LeanPool(url, ssl_context=None, server_hostname=None, limit=4)
        stream = await pool.watch("/w?watch=true", "", start_timeout_s=5, idle_s=5)
        batches = [batch async for batch in stream.lines()]
    assert batches == [[line.rstrip(b"\n") for line in THREE]]


async def test_a_line_cut_short_by_the_server_closing_is_dropped() -> None:
    async def cut(writer: asyncio.StreamWriter) -> None:
        writer.write(_CHUNKED_HEAD + _chunk(THREE[0] + THREE[1][:20]))

    async with watch_server([cut]) as (url, _):
        pool = LeanPool(url, ssl_context=None, server_hostname=None, limit=4)
        stream = await pool.watch("/w?watch=true", "", start_timeout_s=5, idle_s=5)
        batches = [batch async for batch in stream.lines()]
    assert batches == [[THREE[0].rstrip(b"\n")]]
    assert not stream.stalled


async def test_a_stalled_watch_ends_after_its_idle_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with watch_server([_stalling(THREE[0])]) as (url, _):
        kube = await _kube(url, "lean", monkeypatch)
        kube.watch_idle_s = 0.3
        began = time.monotonic()
        try:
            seen = [_seen(event) async for event in kube.watch(PODS, "100")]
        finally:
            await kube.close()
    assert seen == ["b101"]
    assert time.monotonic() - began < 5.0


RUN_CASES = [
    # (id, first watch's script, want on_restart reasons, want lists, want next watch from)
    ("the-server-ends-the-stream", _events(*THREE), ["closed"], 1, "103"),
    (
        "the-server-closes-mid-event",
        _events(THREE[0], THREE[1][:25], end=False),
        ["closed"],
        1,
        "101",
    ),
    ("a-stalled-stream", _stalling(THREE[0]), ["closed"], 1, "101"),
    ("410-gone", _events(THREE[0], GONE), ["gone"], 2, "100"),
    ("a-malformed-line", _events(THREE[0], b"\x00garbage\n"), ["error"], 2, "100"),
]


@pytest.mark.parametrize(
    ("script", "want_reasons", "want_lists", "want_from"),
    [(s, r, n, f) for _, s, r, n, f in RUN_CASES],
    ids=[i for i, _, _, _, _ in RUN_CASES],
)
async def test_the_informer_resumes_or_relists_over_the_lean_watch(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    script: Script,
    want_reasons: list[str],
    want_lists: int,
    want_from: str,
) -> None:
    async with watch_server([script]) as (url, served):
        kube = await _kube(url, "lean", monkeypatch)
        kube.watch_idle_s = 0.3
        informer = Informer(kube, PODS, kind="Pod", api_version="v1")
        reasons: list[str] = []
        try:
            await informer.relist()
            with caplog.at_level(logging.INFO, logger="carbonshift.k8s"):
                informer.start(no_wait, on_restart=reasons.append)
                for _ in range(500):
                    if len(served.watches()) >= 2:
                        break
                    await asyncio.sleep(0.01)
                assert informer.running, "the informer's task ended"
        finally:
            await informer.stop()
            await kube.close()
    assert reasons == want_reasons
    assert informer.lists == want_lists
    assert f"resourceVersion={want_from}&" in served.watches()[1]
    if want_reasons == ["error"]:
        assert "no event" in caplog.text


def _spaced(*lines: bytes, gap_s: float) -> Script:
    """A chunked answer of ``lines``, one chunk each, ``gap_s`` apart; then the end."""

    async def script(writer: asyncio.StreamWriter) -> None:
        writer.write(_CHUNKED_HEAD)
        for line in lines:
            writer.write(_chunk(line))
            await writer.drain()
            await asyncio.sleep(gap_s)
        writer.write(b"0\r\n\r\n")

    return script


BATCH_CASES = [
    # (id, batch_s, gap between events s, want batch sizes)
    ("no-batching-one-event-a-batch", 0.0, 0.1, [1, 1, 1]),
    ("events-within-the-batch-time-come-together", 0.4, 0.1, [1, 2]),
]


@pytest.mark.parametrize(
    ("batch_s", "gap_s", "want_sizes"),
    [(b, g, w) for _, b, g, w in BATCH_CASES],
    ids=[i for i, _, _, _ in BATCH_CASES],
)
async def test_events_arriving_while_a_batch_is_gathered_come_as_one(
    batch_s: float, gap_s: float, want_sizes: list[int]
) -> None:
    async with watch_server([_spaced(*THREE, gap_s=gap_s)]) as (url, _):
        pool = LeanPool(url, ssl_context=None, server_hostname=None, limit=4)
        stream = await pool.watch("/w?watch=true", "", start_timeout_s=5, idle_s=5, batch_s=batch_s)
        batches = [batch async for batch in stream.lines()]
    assert [len(b) for b in batches] == want_sizes
    assert [line for b in batches for line in b] == [line.rstrip(b"\n") for line in THREE]


async def test_the_first_event_after_a_quiet_spell_is_not_held_back() -> None:
    got: list[float] = []
    async with watch_server([_spaced(*THREE, gap_s=0.6)]) as (url, _):
        pool = LeanPool(url, ssl_context=None, server_hostname=None, limit=4)
        stream = await pool.watch("/w?watch=true", "", start_timeout_s=5, idle_s=5, batch_s=0.3)
        began = time.monotonic()
        async for _batch in stream.lines():
            got.append(time.monotonic() - began)
    # each event comes 0.6 s after the one before, after the 0.3 s batch has ended
    assert len(got) == 3
    assert got[0] < 0.3
    assert all(0.35 < later - earlier < 0.95 for earlier, later in itertools.pairwise(got))


async def test_a_client_watch_passes_its_batch_time_to_the_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with watch_server([_spaced(*THREE, gap_s=0.03)]) as (url, _):
        kube = await _kube(url, "lean", monkeypatch)
        assert kube.watch_batch_s == WATCH_BATCH_S == 0.02  # the default (client.py)
        kube.watch_batch_s = 0.05
        lean = kube._direct.lean if kube._direct is not None else None
        assert lean is not None
        asked: list[float] = []
        real = lean.watch

        async def spy(target: str, fields: str, **limits: float) -> Any:
            asked.append(limits["batch_s"])
            return await real(target, fields, **limits)

        monkeypatch.setattr(lean, "watch", spy)
        try:
            seen: list[str] = []
            await _collect(kube, seen)
        finally:
            await kube.close()
    assert asked == [0.05]
    assert seen == ["b101", "a102", "b103"]
