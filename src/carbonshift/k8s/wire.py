"""A lean HTTP/1.1 transport for the client's requests and watches.

One request costs the client 0.15-0.24 ms of CPU through aiohttp's session against
0.04-0.09 ms for the same bytes written on a kept-alive connection (bench/controller.md,
"Where the first pass's CPU goes"), and the controller's first pass and the hub's start send
10,000-12,000 of them. :class:`LeanPool` sends a request on an asyncio connection kept alive
in a small pool per API server and parses the answer with httptools (llhttp, the parser of
Node.js; 1.5-2.3 µs a Pod PATCH's answer against 17 µs for aiohttp's C parser with its
payload stream and 36-39 µs for h11: bench/bench_http_parsers.py, bench/controller.md,
"A lean transport"). What it sends is what
:class:`~carbonshift.k8s.client.DirectSend` built for aiohttp: the same headers, target, body
and time limit; TLS with the library's own ``ssl.SSLContext`` (its CA, client certificate,
verification settings) and server name.

What it answers is an :class:`Answer` (status, headers, body), read whole. Failures of the
connection, of TLS or of the answer's framing raise :class:`WireError` (an ``OSError``, as
a dropped connection through aiohttp raises one), the time limit ``TimeoutError``; the
client retries both as before.

Retry rule for a connection the server closed while it was kept alive: the request goes
once more, on a new connection, only when (1) the connection had carried an earlier request
(a new connection that fails is an outage, not a stale one), (2) not one byte of the answer
arrived, and (3) either the connection was seen closed before anything was written, or the
method is idempotent (GET, PUT, DELETE: aiohttp's own rule for a persistent connection). A
POST or PATCH that may have reached the server goes up as a failure, to the client's
backoff, as it does through aiohttp.

A watch (:meth:`LeanPool.watch`) gets a connection of its own, closed when the watch ends,
and hands its answer's body over as :class:`WatchStream`: whole lines, as many as have
arrived each time the reader wakes (through aiohttp the client read one line per turn of
the event loop: at the hub's start its 10,000 watch echoes cost about 1.5 s of CPU,
bench/hub.md, "The start by phase"). The stream ends when the answer ends, when the
server closes the connection (a line cut short by it is dropped: the watch resumes from
the last whole event), or when no byte arrives for its idle limit (a stalled stream).

Bounds, so that a broken or hostile server (or a proxy before it) cannot fill the memory of
the controller or the hub: an answer's head may hold :data:`MAX_HEAD_BYTES`, its body
:data:`MAX_ANSWER_BYTES` as sent and again once gzip or deflate is decoded (a "gzip bomb"
expands about 1000:1; both through :mod:`carbonshift.bounded`, the one bounded reader), one
watch event's line :data:`MAX_WATCH_LINE_BYTES`. Past a bound the connection is closed and
the request fails with :class:`AnswerTooLargeError` (a :class:`WireError`: the client
retries it, then gives its caller a temporary error); the process goes on
(docs/controller.md, "Limits on what the API server sends").
"""

from __future__ import annotations

import asyncio
import importlib
import ssl
import time
import urllib.parse
from collections.abc import AsyncGenerator
from typing import Any

from carbonshift.bounded import (
    BoundedBuffer,
    BoundedDecoder,
    TooLargeError,
    UndecodableError,
)

__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_HEAD_BYTES",
    "MAX_WATCH_LINE_BYTES",
    "Answer",
    "AnswerTooLargeError",
    "LeanPool",
    "WatchLines",
    "WatchStream",
    "WireError",
    "answer_too_large",
    "available",
]

try:  # the k8s extra's; without it every request keeps aiohttp
    _httptools: Any = importlib.import_module("httptools")
except ImportError:
    _httptools = None

#: seconds an idle connection is kept (aiohttp's ``keepalive_timeout``, 15 s; Go's API
#: server closes idle ones after 90 s or more, so ours close first)
KEEPALIVE_S = 15.0
#: idle connections kept per API server (more may be open while requests run in parallel)
IDLE_KEPT = 8
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
#: bytes a watch buffers before it stops reading from its socket until the reader catches up
WATCH_BUFFERED_MAX = 4 << 20
#: the most bytes of one answer's body, as sent and once decoded (64 MiB): a page of 500 Jobs
#: is 0.4 MiB (bench/hub.md), and parsed JSON takes several times its size in memory, so that
#: 64 MiB stays well inside the 1 GiB the deployments give the process (deploy/base)
MAX_ANSWER_BYTES = 64 << 20
#: the most bytes of one answer's head (1 MiB; an API server's is under 1 KiB)
MAX_HEAD_BYTES = 1 << 20
#: the most bytes of one watch event's line (16 MiB): an object is at most 1.5 MiB in etcd
#: (its default ``--max-request-bytes``), the API server takes request bodies of 3 MiB
MAX_WATCH_LINE_BYTES = 16 << 20


def available() -> bool:
    """Whether httptools is installed (the ``k8s`` extra has it)."""
    return _httptools is not None


class WireError(ConnectionError):
    """The connection failed, or the answer broke HTTP/1.1's framing (the client retries it
    as a dropped connection)."""


class AnswerTooLargeError(WireError):
    """An answer's head, body or watch line passed its bound (:data:`MAX_ANSWER_BYTES`,
    :data:`MAX_HEAD_BYTES`, :data:`MAX_WATCH_LINE_BYTES`); its connection was closed."""


def _too_large(fact: str) -> AnswerTooLargeError:
    """The error for an answer past a bound; ``fact`` names the size and the limit."""
    return AnswerTooLargeError(
        f"{fact}; closed the connection: check that the address is an API server (not a "
        "proxy or another service answering there)"
    )


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / (1 << 20):g} MiB"


def _head_too_large(n_bytes: int) -> AnswerTooLargeError:
    return _too_large(
        f"the API server's answer has a head of over {n_bytes} bytes, above the limit of "
        f"{_mib(MAX_HEAD_BYTES)}"
    )


def answer_too_large(n_bytes: int, how: str = "over ") -> AnswerTooLargeError:
    """The error for an answer's body of ``n_bytes`` past :data:`MAX_ANSWER_BYTES`."""
    return _too_large(
        f"the API server's answer is {how}{n_bytes} bytes, above the limit of "
        f"{_mib(MAX_ANSWER_BYTES)} for one answer"
    )


def answer_buffer() -> BoundedBuffer:
    """An empty buffer for one answer's body, bounded at :data:`MAX_ANSWER_BYTES` (read when
    it is made); map its :class:`~carbonshift.bounded.TooLargeError` with
    :func:`answer_refused`."""
    return BoundedBuffer(
        MAX_ANSWER_BYTES,
        what="the API server's answer",
        fix="check that the address is an API server",
    )


def answer_refused(error: TooLargeError) -> AnswerTooLargeError:
    """The transport's error for an answer's body its buffer refused."""
    how = "declared (Content-Length) as " if error.declared else "over "
    return answer_too_large(error.size_bytes, how)


class Fields(dict[str, str]):
    """Answer headers by lower-case name; :meth:`get` takes any case (as aiohttp's)."""

    def get(self, name: str, default: Any = None) -> Any:
        return dict.get(self, name.lower(), default)


class Answer:
    """A whole answer, shaped as the part of aiohttp's response the client reads."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: Fields, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    async def read(self) -> bytes:
        return self.body

    def release(self) -> None:
        """Nothing to give back: the connection went back to its pool when the answer ended."""


def _feed(parser: Any, data: bytes) -> WireError | None:
    """Feed ``data`` to an httptools response parser; the error if the bytes are no HTTP/1.1
    answer (the connection's and the watch's protocols both read through it)."""
    try:
        parser.feed_data(data)
    except _httptools.HttpParserUpgrade:
        return WireError("the API server switched protocols")
    except _httptools.HttpParserError as exc:
        return WireError(f"the API server's answer is not HTTP/1.1: {exc}")
    return None


def _informational(status: int) -> WireError | None:
    """The error of an answer's head with a 1xx status (None for any other): no request of
    ours asks for one (none sends ``Expect`` or asks to upgrade), and a 1xx head is followed
    by another answer that this transport does not wait for: whatever answers so is not
    serving the API as an API server does (a temporary error, as any answer that is no
    HTTP/1.1: :func:`_feed`)."""
    if status >= 200:
        return None
    return WireError(
        f"the API server sent an informational answer {status} (1xx), which no request of "
        "carbonshift asks for: is this address an API server, or a proxy that upgrades?"
    )


class _Connection(asyncio.Protocol):
    """One kept-alive connection: one request at a time, its answer parsed as it arrives."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = _httptools.HttpResponseParser(self)
        self.closed = False
        self.requests = 0
        self.idle_since_s = 0.0
        self.deadline_s = 0.0
        """When the answer being awaited is due (the loop's clock)."""
        self._waiter: asyncio.Future[None] | None = None
        self._fields = Fields()
        self._body = answer_buffer()
        self._got_bytes = False
        self._done = False
        self._keep_alive = False
        self._headers_done = False
        self._extra = False
        self._status = 0
        self._head_n = 0  # bytes of the answer's head so far (MAX_HEAD_BYTES)

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._done:  # bytes nobody asked for: not reusable
            self._close()
            return
        self._got_bytes = True
        error = _feed(self.parser, data)
        if error is not None:
            self._fail(error)
        elif not self._headers_done:  # httptools keeps a head whole, however long: count it
            self._head_n += len(data)
            if self._head_n > MAX_HEAD_BYTES:
                self._fail(_head_too_large(self._head_n))

    def eof_received(self) -> bool:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        fields = self._fields
        if (
            exc is None
            and self._headers_done
            and not self._done
            and "content-length" not in fields
            and "transfer-encoding" not in fields
        ):
            self.on_message_complete()  # an answer sized by closing (HTTP/1.0's way)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(
                WireError(f"the API server closed the connection: {exc or 'end of stream'}")
            )

    # httptools callbacks
    # bytes past the answer in the same read start another message: kept out of this one,
    # and the connection is not used again (``_extra``)
    def on_header(self, name: bytes, value: bytes) -> None:
        if self._done:
            self._extra = True
            return
        self._fields[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        if self._done:
            self._extra = True
            return
        # llhttp's keep-alive flag is read here: once the message ends it is reset
        self._keep_alive = self.parser.should_keep_alive()
        self._status = self.parser.get_status_code()
        self._headers_done = True
        error = _informational(self._status)
        if error is not None:
            self._fail(error)
            return
        try:
            self._body.expect(self._fields.get("content-length"))
        except TooLargeError as exc:
            self._fail(answer_refused(exc))

    def on_body(self, body: bytes) -> None:
        if self._done:
            self._extra = True
            return
        try:
            self._body.add(body)
        except TooLargeError as exc:
            self._fail(answer_refused(exc))

    def on_message_complete(self) -> None:
        if self._done:
            self._extra = True
            return
        self._done = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _fail(self, exc: Exception) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)
        self._close()

    def _close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    @property
    def waiting(self) -> bool:
        """Whether a request on this connection awaits its answer."""
        return self._waiter is not None and not self._waiter.done()

    def time_out(self) -> None:
        """Fail the request awaiting its answer: its time limit passed (:meth:`exchange`
        closes the connection: what the server still sends is unknown)."""
        if self.waiting:
            assert self._waiter is not None
            self._waiter.set_exception(TimeoutError("no whole answer within the time limit"))

    async def exchange(self, raw: bytes, deadline_s: float) -> Answer | None:
        """Write ``raw``, wait for the whole answer and answer it; None when the connection
        closed before one byte of the answer arrived (a failure after that raises).
        ``deadline_s`` (the loop's clock): the pool's alarm (:meth:`LeanPool._alarm`) fails
        the wait with ``TimeoutError`` once it has passed."""
        transport = self.transport
        if transport is None or self.closed or transport.is_closing():
            return None
        self.deadline_s = deadline_s
        self._waiter = waiter = asyncio.get_running_loop().create_future()
        self._fields = Fields()
        self._body = answer_buffer()
        self._got_bytes = self._done = self._keep_alive = self._headers_done = False
        self._extra = False
        self._head_n = 0
        self.requests += 1
        try:
            transport.write(raw)
            await waiter
        except WireError:
            self._close()
            if self._got_bytes:
                raise
            return None
        except BaseException:  # timeout or cancellation mid-answer: the stream is unknown
            self._close()
            raise
        finally:
            self._waiter = None
        body = self._body.take()
        if not self._keep_alive or self._extra:
            self._close()
        coding = self._fields.get("content-encoding")
        if coding is not None and coding != "identity":
            body = _decoded(body, coding)
        return Answer(self._status, self._fields, body)


def _decoded(body: bytes, coding: str) -> bytes:
    """A gzip or deflate body decoded (lists ask for gzip; a server may send either anyway),
    to at most :data:`MAX_ANSWER_BYTES`: decoding stops one byte past it."""
    decoded = answer_buffer()
    try:
        decoder = BoundedDecoder(coding, decoded)
        decoder.feed(body)
        decoder.end()
    except UndecodableError as exc:
        raise WireError(f"the API server's {coding} answer does not decode: {exc.reason}") from exc
    except TooLargeError as exc:
        raise _too_large(
            f"the API server's {coding} answer of {len(body)} bytes expands to more than "
            f"{_mib(MAX_ANSWER_BYTES)}, the limit for one answer (a gzip bomb?)"
        ) from exc
    return decoded.take()


class WatchStream(asyncio.Protocol):
    """One watch's connection: its answer's head, then its body as lists of whole lines
    (:meth:`lines`); ``idle_s``: seconds without a byte after which the stream ends;
    ``batch_s``: after each list of lines the connection is not read for that long, so the
    events that arrive meanwhile wait in the socket and come as one list (0: read at once).

    Why batch: the echo of each of one's own writes otherwise arrives alone, between the
    writes' answers, and wakes the event loop once more a write; a loop's wake-up costs this
    process 50-150 us of CPU on a shared machine (cold caches; bench/hub.md, "Echoes read
    in batches"), more than the event's parsing. An event waits at most ``batch_s`` more; the
    first after a quiet spell waits not at all.
    """

    def __init__(self, idle_s: float, batch_s: float = 0.0) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = _httptools.HttpResponseParser(self)
        self.status = 0
        self.headers = Fields()
        self.stalled = False
        """Whether the stream ended because no byte came for ``idle_s``."""
        self._idle_s = idle_s
        self._batch_s = batch_s
        self._loop = asyncio.get_running_loop()
        self._head: asyncio.Future[None] = self._loop.create_future()
        self._waiter: asyncio.Future[None] | None = None
        self._pending: list[bytes] = []
        self._pending_n = 0
        # one alarm for the idle limit, armed again as it rings (not a timer per wait)
        self._last_byte_s = self._loop.time()
        self._idle_alarm: asyncio.TimerHandle | None = None
        self._idle_out = False
        self._paused = False  # not read: the reader has WATCH_BUFFERED_MAX bytes to take
        self._held = False  # not read: batching (``batch_s``)
        self._done = False  # the answer ended as HTTP frames it
        self._lost = False  # the connection closed
        self._error: Exception | None = None
        self._head_n = 0  # bytes of the answer's head so far (MAX_HEAD_BYTES)

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._last_byte_s = self._loop.time()
        error = _feed(self.parser, data)
        if error is not None:
            self._fail(error)
        elif not self._head.done():
            self._head_n += len(data)
            if self._head_n > MAX_HEAD_BYTES:
                self._fail(_head_too_large(self._head_n))

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._disarm()
        if not self._head.done():
            self._head.set_exception(
                WireError(f"the API server closed the connection: {exc or 'end of stream'}")
            )
        self._wake()

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        error = _informational(self.status)
        if error is not None:
            self._fail(error)
            return
        if not self._head.done():
            self._head.set_result(None)

    def on_body(self, body: bytes) -> None:
        self._pending.append(body)
        self._pending_n += len(body)
        if self._pending_n > WATCH_BUFFERED_MAX and not self._paused:
            self._paused = True
            self._set_reading()
        self._wake()

    def on_message_complete(self) -> None:
        self._done = True
        self._wake()
        self.close()  # one answer per watch connection

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, exc: Exception) -> None:
        self._error = exc
        if not self._head.done():
            self._head.set_exception(exc)
        self._wake()
        self.close()

    def close(self) -> None:
        """Close the connection (the server sees the watch end)."""
        self._disarm()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()

    def release(self) -> None:
        self.close()

    def _disarm(self) -> None:
        if self._idle_alarm is not None:
            self._idle_alarm.cancel()
            self._idle_alarm = None

    def _idle_check(self) -> None:
        """The idle alarm: the stream is idle out when no byte came for ``idle_s`` (a byte
        since: ring again ``idle_s`` after it)."""
        self._idle_alarm = None
        due_s = self._last_byte_s + self._idle_s
        if self._held or self._loop.time() < due_s:  # not read meanwhile, or bytes came
            self._idle_alarm = self._loop.call_at(
                max(due_s, self._loop.time() + self._batch_s), self._idle_check
            )
            return
        self._idle_out = True
        self._wake()

    def _set_reading(self) -> None:
        """Read the socket unless the reader is behind or a batch is being gathered."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if self._paused or self._held:
            transport.pause_reading()
        else:
            transport.resume_reading()

    def _release_batch(self) -> None:
        self._held = False
        self._set_reading()

    async def _more(self) -> bool:
        """Wait for bytes, the answer's end or the connection's; False after ``idle_s``
        without any."""
        if self._idle_alarm is None and not self._idle_out:
            self._idle_alarm = self._loop.call_at(
                self._last_byte_s + self._idle_s, self._idle_check
            )
        if self._idle_out:
            return False
        self._waiter = waiter = self._loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None
        return not self._idle_out

    def _take(self) -> bytes:
        pending = self._pending
        data = pending[0] if len(pending) == 1 else b"".join(pending)
        self._pending = []
        self._pending_n = 0
        if self._paused:
            self._paused = False
            self._set_reading()
        return data

    def _gather(self) -> None:
        """Leave the socket unread for ``batch_s`` (see the class doc)."""
        if self._batch_s <= 0 or self._held or self._done or self._lost:
            return
        self._held = True
        self._set_reading()
        self._loop.call_later(self._batch_s, self._release_batch)

    async def read(self) -> bytes:
        """The whole body (an error answer's), within ``idle_s`` of each byte; at most
        :data:`MAX_ANSWER_BYTES` (:class:`AnswerTooLargeError` past it)."""
        body = answer_buffer()
        try:
            body.expect(self.headers.get("content-length"))
        except TooLargeError as exc:
            self.close()
            raise answer_refused(exc) from exc
        while True:
            if self._pending:
                try:
                    body.add(self._take())
                except TooLargeError as exc:
                    self.close()
                    raise answer_refused(exc) from exc
            elif self._error is not None:
                raise self._error
            elif self._done or self._lost:
                self.close()
                return body.take()
            elif not await self._more():
                self.close()
                raise TimeoutError(f"no byte of the answer for {self._idle_s} s")

    async def lines(self) -> AsyncGenerator[list[bytes], None]:
        """The body's whole lines (without their line feeds), in lists of as many as have
        arrived; a last line without a line feed only when the answer ended as framed.
        Raises :class:`WireError` when the answer breaks HTTP's framing, and
        :class:`AnswerTooLargeError` when a line passes :data:`MAX_WATCH_LINE_BYTES`
        without its line feed."""
        coding = self.headers.get("content-encoding")
        if coding is not None and coding != "identity":
            self.close()
            raise WireError(f"the API server's watch came in content-encoding {coding!r}")
        split = WatchLines()
        try:
            while True:
                if self._pending:
                    lines = split.feed(self._take())
                    if lines:
                        self._gather()
                        yield lines
                elif self._error is not None:
                    raise self._error
                elif self._done:
                    last = split.end()
                    if last:
                        yield last
                    return
                elif self._lost:
                    return  # cut short by the server: a partial line is no event
                elif not await self._more():
                    self.stalled = True
                    return
        finally:
            self.close()


class WatchLines:
    """A watch body cut into whole lines, chunk by chunk, in time linear in its bytes.

    A line that comes in many chunks is gathered in one ``bytearray`` (appends amortised)
    and each chunk is searched once for a line feed; joining the line so far to every new
    chunk, as before, copied a 16 MiB event sent in 4 KiB chunks 4,096 times (32 GiB of
    copies; bench/safety.md, "Watch lines"). ``copied_bytes`` counts the bytes this class
    copies (what a test holds it to)."""

    def __init__(self, max_line_bytes: int | None = None) -> None:
        self._max = MAX_WATCH_LINE_BYTES if max_line_bytes is None else max_line_bytes
        self._rest = bytearray()  # the start of a line whose line feed has not come: no b"\n"
        self.copied_bytes = 0

    def feed(self, data: bytes) -> list[bytes]:
        """The lines that ``data`` completes (without their line feeds; maybe none).
        :class:`AnswerTooLargeError` when the line being gathered passes the limit."""
        rest = self._rest
        cut = data.rfind(b"\n")
        if cut < 0:
            if len(rest) + len(data) > self._max:
                raise _too_large(
                    f"the API server's watch sent over {len(rest) + len(data)} bytes without "
                    f"a line end, above the limit of {_mib(self._max)} for one event"
                )
            rest += data
            self.copied_bytes += len(data)
            return []
        lines = data.split(b"\n")  # one copy of the chunk; its last piece has no line feed
        self.copied_bytes += len(data)
        tail = lines.pop()
        if rest:
            rest += lines[0]
            lines[0] = bytes(rest)
            self.copied_bytes += 2 * len(rest)
            rest.clear()
        if tail:
            rest += tail
            self.copied_bytes += len(tail)
        return lines

    def end(self) -> list[bytes]:
        """The last line, when the body ended without a line feed after it."""
        if not self._rest:
            return []
        last = bytes(self._rest)
        self._rest.clear()
        return [last]


class LeanPool:
    """Kept-alive connections to one API server (``base_url``: scheme, host, port and an
    optional path prefix), at most ``limit`` at a time (the library's
    ``connection_pool_maxsize``), up to :data:`IDLE_KEPT` kept idle."""

    def __init__(
        self,
        base_url: str,
        *,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None,
        limit: int,
    ) -> None:
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname or url.username:
            raise ValueError(f"the lean transport does not speak to {base_url!r}")
        if url.scheme == "https" and ssl_context is None:
            raise ValueError(f"no TLS context for {base_url!r}")
        self.host = url.hostname
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.prefix = url.path.rstrip("/")
        self._ssl = ssl_context if url.scheme == "https" else None
        self._server_hostname = (server_hostname or self.host) if self._ssl else None
        self._host_field = f"Host: {url.netloc}\r\n"
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(max(1, limit))
        self._closed = False
        self._busy: set[_Connection] = set()  # connections the alarm looks after
        self._alarm_handle: asyncio.TimerHandle | None = None

    async def request(
        self, method: str, target: str, fields: str, body: bytes | None, timeout_s: float
    ) -> Answer:
        """Send ``method target`` (the path and query, without the prefix) with header lines
        ``fields`` (each ending in CRLF) and ``body``; the whole answer within ``timeout_s``
        (waiting for a free connection and connecting included, as aiohttp's ``total``)."""
        head = f"{method} {self.prefix}{target} HTTP/1.1\r\n{self._host_field}{fields}"
        if body is not None:
            raw = f"{head}Content-Length: {len(body)}\r\n\r\n".encode("latin-1") + body
        elif method == "GET":
            raw = f"{head}\r\n".encode("latin-1")
        else:
            raw = f"{head}Content-Length: 0\r\n\r\n".encode("latin-1")
        # The time limit without a timer of its own per request (asyncio.timeout: a timer
        # handle pushed on the loop's heap and cancelled, about 5 us of CPU each; two timers
        # a write at the hub's start, with its watch's wait): the rare waits (a free
        # connection, a new one) under asyncio.timeout_at, the answer under the pool's one
        # alarm (:meth:`_alarm`).
        loop = asyncio.get_running_loop()
        deadline_s = loop.time() + timeout_s
        if self._slots.locked():
            async with asyncio.timeout_at(deadline_s):
                await self._slots.acquire()
        else:
            await self._slots.acquire()  # free: it does not yield
        try:
            while True:
                conn = self._take()
                reused = conn is not None
                if conn is None:
                    async with asyncio.timeout_at(deadline_s):
                        conn = await self._open()
                written_before = conn.requests
                self._watch_deadline(conn, deadline_s)
                try:
                    answer = await conn.exchange(raw, deadline_s)
                finally:
                    self._busy.discard(conn)
                if answer is not None:
                    self._give_back(conn)
                    return answer
                # nothing of the answer arrived (exchange raises otherwise)
                stale_before_write = written_before == conn.requests
                if reused and (stale_before_write or method in _IDEMPOTENT):
                    continue  # a kept-alive connection the server had closed: a new one
                raise WireError(
                    f"{method} {self.prefix}{target}: the API server closed the connection "
                    "before answering"
                )
        finally:
            self._slots.release()

    def _watch_deadline(self, conn: _Connection, deadline_s: float) -> None:
        """Have the pool's alarm ring by ``deadline_s`` for ``conn``'s answer (armed again
        only when it would ring later: requests of one time limit leave it as it is)."""
        self._busy.add(conn)
        alarm = self._alarm_handle
        if alarm is None or alarm.when() > deadline_s:
            if alarm is not None:
                alarm.cancel()
            loop = asyncio.get_running_loop()
            self._alarm_handle = loop.call_at(deadline_s, self._alarm)

    def _alarm(self) -> None:
        """Fail the answers whose deadline has passed; ring again at the next one due."""
        self._alarm_handle = None
        now_s = asyncio.get_running_loop().time()
        due: float | None = None
        for conn in list(self._busy):
            if not conn.waiting:
                self._busy.discard(conn)
            elif conn.deadline_s <= now_s:
                self._busy.discard(conn)
                conn.time_out()
            elif due is None or conn.deadline_s < due:
                due = conn.deadline_s
        if due is not None:
            self._alarm_handle = asyncio.get_running_loop().call_at(due, self._alarm)

    async def watch(
        self,
        target: str,
        fields: str,
        *,
        start_timeout_s: float,
        idle_s: float,
        batch_s: float = 0.0,
    ) -> WatchStream:
        """Send a watch's ``GET target`` on a connection of its own; the stream once its
        answer's head is in (within ``start_timeout_s``, connecting included); ``idle_s``,
        ``batch_s``: :class:`WatchStream`'s."""
        raw = f"GET {self.prefix}{target} HTTP/1.1\r\n{self._host_field}{fields}\r\n"
        loop = asyncio.get_running_loop()
        stream: WatchStream | None = None
        try:
            async with asyncio.timeout(start_timeout_s):
                _, stream = await loop.create_connection(
                    lambda: WatchStream(idle_s, batch_s),
                    self.host,
                    self.port,
                    ssl=self._ssl,
                    server_hostname=self._server_hostname,
                )
                assert stream.transport is not None
                stream.transport.write(raw.encode("latin-1"))
                await stream._head
        except BaseException:
            if stream is not None:
                stream.close()
            raise
        return stream

    def _take(self) -> _Connection | None:
        now_s = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            transport = conn.transport
            if conn.closed or transport is None or transport.is_closing():
                continue
            if now_s - conn.idle_since_s > KEEPALIVE_S:
                conn._close()
                continue
            return conn
        return None

    def _give_back(self, conn: _Connection) -> None:
        if conn.closed or self._closed or len(self._idle) >= IDLE_KEPT:
            conn._close()
            return
        conn.idle_since_s = time.monotonic()
        self._idle.append(conn)

    async def _open(self) -> _Connection:
        # a refused connection or a failed handshake raises an OSError (ssl.SSLError is one)
        _, conn = await asyncio.get_running_loop().create_connection(
            _Connection, self.host, self.port, ssl=self._ssl, server_hostname=self._server_hostname
        )
        return conn

    def close(self) -> None:
        """Close every idle connection; those in use close when their answer ends."""
        self._closed = True
        while self._idle:
            self._idle.pop()._close()
        if self._alarm_handle is not None and not self._busy:
            self._alarm_handle.cancel()
            self._alarm_handle = None
