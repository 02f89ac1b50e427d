"""Bytes that arrive in chunks, gathered up to a limit: the one way carbonshift reads a body
it did not size itself.

Every reader of a body from the network goes through here: the API's request bodies
(:mod:`carbonshift.api.app`), the controller's webhook and extender bodies
(:mod:`carbonshift.k8s.bodies`), the API server's answers (:mod:`carbonshift.k8s.wire`,
:mod:`carbonshift.k8s.client`) and the carbon-data providers' answers
(:mod:`carbonshift.carbon.providers._http`). A :class:`BoundedBuffer` refuses a declared
``Content-Length`` above its limit before a byte is read, and refuses the chunk that takes
it past the limit before keeping it, so that it never holds more than the limit and the
chunk in hand; a :class:`BoundedDecoder` expands gzip or deflate into one in pieces of at
most :data:`DECODE_PIECE_BYTES`, so that a "gzip bomb" (about 1000:1) costs at most the
limit and one piece, not what one network read expands to. Past the limit both raise
:class:`TooLargeError`; each caller maps it onto its own answer (a 413, a temporary error).
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterable

from carbonshift.errors import CarbonshiftError

__all__ = [
    "DECODE_PIECE_BYTES",
    "BoundedBuffer",
    "BoundedDecoder",
    "TooLargeError",
    "UndecodableError",
    "read_bounded",
    "shown_bytes",
]

#: the most bytes a :class:`BoundedDecoder` expands in one step (256 KiB, aiohttp's
#: ``DEFAULT_CHUNK_SIZE``): what a body may cost above its limit while it is decoded
DECODE_PIECE_BYTES = 256 << 10

_MIB = 1 << 20


def shown_bytes(n_bytes: int) -> str:
    """A size for a message: whole MiB as ``16 MiB``, anything else in bytes."""
    if n_bytes >= _MIB and n_bytes % _MIB == 0:
        return f"{n_bytes >> 20} MiB"
    return f"{n_bytes} bytes"


class TooLargeError(CarbonshiftError):
    """A body past its limit. ``size_bytes``: what had come when it was refused (the body is
    at least that long), or what its ``Content-Length`` declared (``declared``), refused
    before a byte was read; the message names both sizes, in bytes, and the fix."""

    def __init__(
        self, *, what: str, size_bytes: int, limit_bytes: int, declared: bool, fix: str
    ) -> None:
        self.what = what
        self.size_bytes = size_bytes
        self.limit_bytes = limit_bytes
        self.declared = declared
        self.fix = fix
        super().__init__(
            f"{what} is {self.size_text}, above the limit of {shown_bytes(limit_bytes)}; {fix}"
        )

    @property
    def size_text(self) -> str:
        """The size as a message says it: ``over N bytes``, or ``N bytes (its
        Content-Length)``."""
        if self.declared:
            return f"{self.size_bytes} bytes (its Content-Length)"
        return f"over {self.size_bytes} bytes"


class UndecodableError(CarbonshiftError, ValueError):
    """A gzip or deflate body that does not decode (broken, cut short, or another coding);
    ``reason`` says why, for a caller that words the message its own way."""

    def __init__(self, coding: str, reason: str) -> None:
        super().__init__(f"the {coding} body does not decode: {reason}")
        self.coding = coding
        self.reason = reason


class BoundedBuffer:
    """Chunks gathered up to ``limit_bytes``; :meth:`add` raises :class:`TooLargeError`
    (naming ``what`` and ``fix``) for the chunk that would pass it, and keeps nothing more.

    The chunks are kept as they came and joined once (:meth:`take`): each byte is copied
    once, and a body that came in one chunk not at all.
    """

    __slots__ = ("_parts", "fix", "limit_bytes", "size_bytes", "what")

    def __init__(self, limit_bytes: int, *, what: str, fix: str) -> None:
        if limit_bytes < 0:
            raise ValueError(f"limit_bytes is {limit_bytes}; a limit is 0 bytes or more")
        self.limit_bytes = limit_bytes
        self.what = what
        self.fix = fix
        self.size_bytes = 0
        """Bytes kept so far."""
        self._parts: list[bytes] = []

    @property
    def room_bytes(self) -> int:
        """Bytes that may still come."""
        return self.limit_bytes - self.size_bytes

    def refuse(self, size_bytes: int, *, declared: bool = False) -> TooLargeError:
        """The error for a body of ``size_bytes`` (``declared``: by its ``Content-Length``)
        past the limit; what was kept is let go."""
        self._parts = []  # a refused body is not kept
        self.size_bytes = 0
        return TooLargeError(
            what=self.what,
            size_bytes=size_bytes,
            limit_bytes=self.limit_bytes,
            declared=declared,
            fix=self.fix,
        )

    def expect(self, content_length: str | bytes | int | None) -> None:
        """Refuse a body whose declared length (a ``Content-Length`` as sent; anything but
        digits is left to the reading) passes the limit, before a byte is read."""
        if isinstance(content_length, (str, bytes)):
            if not content_length.isdigit():
                return
            content_length = int(content_length)
        if content_length is not None and content_length > self.limit_bytes:
            raise self.refuse(content_length, declared=True)

    def add(self, chunk: bytes) -> None:
        """Keep ``chunk``, or raise :class:`TooLargeError` when it takes the body past the
        limit (the chunk is not kept)."""
        size_bytes = self.size_bytes + len(chunk)
        if size_bytes > self.limit_bytes:
            raise self.refuse(size_bytes, declared=False)
        if chunk:
            self._parts.append(chunk)
        self.size_bytes = size_bytes

    def take(self) -> bytes:
        """The body so far, as one ``bytes``; the buffer starts again empty."""
        parts = self._parts
        body = parts[0] if len(parts) == 1 else b"".join(parts)
        self._parts = []
        self.size_bytes = 0
        return body


class BoundedDecoder:
    """A body in content-coding ``coding`` (``gzip``, ``x-gzip``, ``deflate``, ``identity`` or
    None), decoded into ``into`` as its raw chunks are fed: each step expands at most
    :data:`DECODE_PIECE_BYTES` and at most one byte past ``into``'s room, so that
    :class:`TooLargeError` comes before a bomb costs more than the limit and one piece.
    Another coding, or bytes that do not decode, raise :class:`UndecodableError`."""

    __slots__ = ("_inflate", "_into", "_sniff", "coding", "raw_bytes")

    def __init__(self, coding: str | None, into: BoundedBuffer) -> None:
        self.coding = (coding or "identity").strip().lower()
        self._into = into
        self._sniff = False
        self.raw_bytes = 0
        """Bytes fed so far, as sent: bounded by ``into``'s limit too."""
        self._inflate: zlib._Decompress | None
        if self.coding == "identity":
            self._inflate = None
        elif self.coding in ("gzip", "x-gzip"):
            self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif self.coding == "deflate":
            # zlib-wrapped as RFC 9110 says, or raw deflate as some servers send (decided on
            # the first byte, as aiohttp and httpx do)
            self._inflate = None
            self._sniff = True
        else:
            raise UndecodableError(
                self.coding, "it is not a content-encoding carbonshift decodes (gzip, deflate)"
            )

    def feed(self, raw: bytes) -> None:
        """Decode ``raw``, the next bytes of the body as sent (:class:`TooLargeError` when
        they pass the limit before or after decoding: bytes after the end of a gzip stream
        are not kept, but counted)."""
        self.raw_bytes += len(raw)
        if self.raw_bytes > self._into.limit_bytes:
            raise self._into.refuse(self.raw_bytes)
        if self._sniff and raw:
            self._sniff = False
            zlib_header = raw[0] & 0x0F == 8  # RFC 1950: compression method 8
            self._inflate = zlib.decompressobj(zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS)
        inflate = self._inflate
        if inflate is None:
            if not self._sniff:
                self._into.add(raw)
            return
        self._expand(inflate, raw)

    def _expand(self, inflate: zlib._Decompress, data: bytes) -> None:
        into = self._into
        while not inflate.eof:
            step = min(DECODE_PIECE_BYTES, into.room_bytes + 1)
            try:
                piece = inflate.decompress(data, step)
            except zlib.error as exc:
                raise UndecodableError(self.coding, str(exc)) from exc
            into.add(piece)  # past the room: TooLargeError
            data = inflate.unconsumed_tail
            if not data and len(piece) < step:
                return  # all of ``data`` decoded, and nothing held back

    def end(self) -> None:
        """The body ended: raise :class:`UndecodableError` when its coding is cut short."""
        inflate = self._inflate
        if inflate is None or not self.raw_bytes:  # identity, or an empty body
            return
        self._expand(inflate, b"")
        if not inflate.eof:
            raise UndecodableError(self.coding, "it is cut short")


async def read_bounded(
    chunks: AsyncIterable[bytes],
    limit_bytes: int,
    *,
    what: str,
    fix: str,
    content_length: str | bytes | int | None = None,
) -> bytes:
    """The whole of ``chunks``, at most ``limit_bytes`` (:class:`TooLargeError` past it, or
    before a byte is read when ``content_length`` declares more)."""
    buffer = BoundedBuffer(limit_bytes, what=what, fix=fix)
    buffer.expect(content_length)
    async for chunk in chunks:
        buffer.add(chunk)
    return buffer.take()
