"""The one bounded reader (carbonshift.bounded): a body is kept up to its limit and refused
by the chunk that passes it, or by a ``Content-Length`` above it before a byte is read;
gzip and deflate expand in pieces, so that a bomb costs the limit and one piece."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import AsyncIterator, Iterable

import pytest

from carbonshift.bounded import (
    DECODE_PIECE_BYTES,
    BoundedBuffer,
    BoundedDecoder,
    TooLargeError,
    UndecodableError,
    read_bounded,
    shown_bytes,
)
from carbonshift.errors import CarbonshiftError

MIB = 1 << 20


class _Watched(BoundedBuffer):
    """A buffer that records the largest chunk offered and the most bytes it held."""

    def __init__(self, limit_bytes: int) -> None:
        super().__init__(limit_bytes, what="the test body", fix="send less")
        self.biggest_chunk = 0
        self.most_held = 0

    def add(self, chunk: bytes) -> None:
        self.biggest_chunk = max(self.biggest_chunk, len(chunk))
        super().add(chunk)
        self.most_held = max(self.most_held, self.size_bytes)


def _buffer(limit_bytes: int) -> BoundedBuffer:
    return BoundedBuffer(limit_bytes, what="the test body", fix="send less")


def _fed(buffer: BoundedBuffer, chunks: Iterable[bytes]) -> bytes:
    for chunk in chunks:
        buffer.add(chunk)
    return buffer.take()


@pytest.mark.parametrize(
    ("chunks", "limit_bytes", "want_body"),
    [
        pytest.param([b"abc", b"de"], 5, b"abcde", id="exactly-at-the-limit"),
        pytest.param([b"a" * 10] * 100_000, 1_000_000, b"a" * 1_000_000, id="many-small-chunks"),
        pytest.param([b"", b"ab", b"", b"c"], 3, b"abc", id="empty-chunks-cost-nothing"),
        pytest.param([], 0, b"", id="no-body-at-a-zero-limit"),
    ],
)
def test_a_body_within_its_limit_is_kept_whole(
    chunks: list[bytes], limit_bytes: int, want_body: bytes
) -> None:
    assert _fed(_buffer(limit_bytes), chunks) == want_body


def test_a_body_in_one_chunk_is_not_copied() -> None:
    chunk = b"x" * 1000
    assert _fed(_buffer(1000), [chunk]) is chunk


def test_one_byte_over_is_refused_naming_the_size_the_limit_and_the_fix() -> None:
    buffer = _buffer(5)
    buffer.add(b"abc")
    with pytest.raises(TooLargeError) as caught:
        buffer.add(b"def")
    error = caught.value
    assert isinstance(error, CarbonshiftError)
    assert (error.size_bytes, error.limit_bytes, error.declared) == (6, 5, False)
    assert str(error) == "the test body is over 6 bytes, above the limit of 5 bytes; send less"
    assert buffer.take() == b""  # the refused body is not kept


def test_a_stream_of_small_chunks_never_holds_more_than_the_limit() -> None:
    buffer = _Watched(10_000)
    with pytest.raises(TooLargeError) as caught:
        _fed(buffer, [b"z" * 7] * 10_000)
    assert buffer.most_held <= 10_000
    assert caught.value.size_bytes == 10_003  # the chunk that passed it: 1429 x 7


@pytest.mark.parametrize(
    ("declared", "want_refused"),
    [
        pytest.param("1048577", True, id="a-length-past-the-limit-as-a-header-string"),
        pytest.param(b"1048577", True, id="as-header-bytes"),
        pytest.param(MIB + 1, True, id="as-an-int"),
        pytest.param("1048576", False, id="a-length-at-the-limit"),
        pytest.param("-5", False, id="not-digits-left-to-the-reading"),
        pytest.param("abc", False, id="not-a-number"),
        pytest.param(None, False, id="no-length"),
    ],
)
def test_a_declared_length_past_the_limit_is_refused_before_a_byte(
    declared: str | bytes | int | None, want_refused: bool
) -> None:
    buffer = _buffer(MIB)
    if not want_refused:
        buffer.expect(declared)
        return
    with pytest.raises(TooLargeError) as caught:
        buffer.expect(declared)
    assert caught.value.declared
    assert str(caught.value) == (
        "the test body is 1048577 bytes (its Content-Length), above the limit of 1 MiB; send less"
    )


def test_a_content_length_lying_low_is_caught_by_the_count() -> None:
    buffer = _buffer(100)
    buffer.expect("10")
    with pytest.raises(TooLargeError) as caught:
        _fed(buffer, [b"x" * 60, b"x" * 60])
    assert not caught.value.declared
    assert caught.value.size_bytes == 120


def test_a_content_length_lying_high_is_refused_though_the_body_is_small() -> None:
    buffer = _buffer(100)
    with pytest.raises(TooLargeError, match="1000 bytes \\(its Content-Length\\)"):
        buffer.expect("1000")


def test_a_negative_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="limit_bytes is -1"):
        _buffer(-1)


@pytest.mark.parametrize(
    ("n_bytes", "want"),
    [(16 * MIB, "16 MiB"), (MIB, "1 MiB"), (200_000, "200000 bytes"), (MIB + 1, "1048577 bytes")],
)
def test_sizes_are_shown_with_their_unit(n_bytes: int, want: str) -> None:
    assert shown_bytes(n_bytes) == want


# -- decoding ---------------------------------------------------------------------------------


def _gzip_bomb(n_mib: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b"0" * MIB
    return b"".join([*(packer.compress(zeros) for _ in range(n_mib)), packer.flush()])


def _decoded(coding: str | None, raws: Iterable[bytes], limit_bytes: int = 16 * MIB) -> bytes:
    buffer = _buffer(limit_bytes)
    decoder = BoundedDecoder(coding, buffer)
    for raw in raws:
        decoder.feed(raw)
    decoder.end()
    return buffer.take()


def _bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


_TEXT = b'{"zone": "DE", "values": [' + b", ".join(b"%d" % i for i in range(20_000)) + b"]}"


@pytest.mark.parametrize(
    ("coding", "raw"),
    [
        pytest.param("gzip", gzip.compress(_TEXT), id="gzip"),
        pytest.param("x-gzip", gzip.compress(_TEXT), id="x-gzip"),
        pytest.param("deflate", zlib.compress(_TEXT), id="deflate-zlib-wrapped"),
        pytest.param("identity", _TEXT, id="identity"),
        pytest.param(None, _TEXT, id="no-coding"),
        pytest.param(" GZIP ", gzip.compress(_TEXT), id="coding-named-loosely"),
    ],
)
@pytest.mark.parametrize("bytewise", [False, True], ids=["whole", "byte-by-byte"])
def test_a_coded_body_decodes_to_what_was_sent(
    coding: str | None, raw: bytes, bytewise: bool
) -> None:
    assert _decoded(coding, _bytewise(raw) if bytewise else [raw]) == _TEXT


def test_raw_deflate_without_the_zlib_wrapper_decodes() -> None:
    packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    raw = packer.compress(_TEXT) + packer.flush()
    assert _decoded("deflate", [raw[:7], raw[7:]]) == _TEXT


@pytest.mark.parametrize("coding", ["gzip", "deflate", "identity"])
def test_an_empty_body_is_empty_in_any_coding(coding: str) -> None:
    assert _decoded(coding, [b""]) == b""


def test_a_gzip_bomb_is_refused_one_byte_past_the_limit_in_pieces() -> None:
    bomb = _gzip_bomb(64)  # 64 MiB in about 64 KiB: one network read
    assert len(bomb) < 100_000
    buffer = _Watched(MIB)
    decoder = BoundedDecoder("gzip", buffer)
    with pytest.raises(TooLargeError) as caught:
        decoder.feed(bomb)
    assert caught.value.size_bytes == MIB + 1
    assert buffer.biggest_chunk <= DECODE_PIECE_BYTES
    assert buffer.most_held <= MIB


def test_bytes_after_the_end_of_a_gzip_stream_are_counted_not_kept() -> None:
    buffer = _Watched(MIB)
    decoder = BoundedDecoder("gzip", buffer)
    decoder.feed(gzip.compress(b"{}"))
    trailing = [b"\0" * 1024] * 1024  # what a broken server sends on and on

    def feed_all() -> None:
        for raw in trailing:
            decoder.feed(raw)

    with pytest.raises(TooLargeError) as caught:
        feed_all()
    assert MIB < caught.value.size_bytes == decoder.raw_bytes <= MIB + 1024
    assert buffer.most_held == 2  # b"{}": what came after the stream was not kept


def test_a_body_decoding_to_exactly_the_limit_is_kept() -> None:
    assert _decoded("gzip", [gzip.compress(b"y" * MIB)], limit_bytes=MIB) == b"y" * MIB


@pytest.mark.parametrize(
    ("coding", "raws", "want_message"),
    [
        pytest.param("gzip", [b"not gzip at all"], "does not decode", id="not-gzip"),
        pytest.param("gzip", [gzip.compress(_TEXT)[:-20]], "cut short", id="cut-short"),
        pytest.param("deflate", [b"\x78\x9c" + b"\xff" * 20], "does not decode", id="bad-deflate"),
        pytest.param("br", [b"anything"], "not a content-encoding carbonshift", id="brotli"),
        pytest.param("gzip, gzip", [b""], "not a content-encoding carbonshift", id="two-codings"),
    ],
)
def test_a_body_that_does_not_decode_is_refused(
    coding: str, raws: list[bytes], want_message: str
) -> None:
    with pytest.raises(UndecodableError, match=want_message):
        _decoded(coding, raws)


# -- read_bounded ----------------------------------------------------------------------------


async def _stream(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def test_read_bounded_gathers_a_stream_within_its_limit() -> None:
    body = await read_bounded(_stream([b"ab"] * 500), 1000, what="the body", fix="less")
    assert body == b"ab" * 500


async def test_read_bounded_stops_at_the_chunk_past_the_limit() -> None:
    taken: list[bytes] = []

    async def counted() -> AsyncIterator[bytes]:
        for _ in range(1000):
            taken.append(b"x" * 100)
            yield taken[-1]

    with pytest.raises(TooLargeError, match="over 1100 bytes, above the limit of 1000 bytes"):
        await read_bounded(counted(), 1000, what="the body", fix="less")
    assert len(taken) == 11  # nothing read past the refusal


async def test_read_bounded_refuses_a_declared_length_before_reading() -> None:
    taken: list[bytes] = []

    async def counted() -> AsyncIterator[bytes]:
        taken.append(b"x")
        yield b"x"

    with pytest.raises(TooLargeError, match="2000 bytes \\(its Content-Length\\)"):
        await read_bounded(counted(), 1000, what="the body", fix="less", content_length="2000")
    assert taken == []
