"""A provider's answer is read up to ``MAX_REPLY_BYTES`` once decoded (carbonshift.carbon.
providers._http): a gzip bomb or an endless body is an ``UpstreamFormatError`` naming the
size and the limit, not a full memory; the next request goes on."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib
from collections.abc import Callable, Iterator

import httpx
import pytest

from carbonshift.bounded import DECODE_PIECE_BYTES
from carbonshift.carbon.providers import ManualClock, RetryPolicy, _http
from carbonshift.carbon.providers._http import HttpSource, UpstreamFormatError
from tests.providers.fakes import T0


def _gzip_of_a_long_json_string(n_bytes: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(b'{"a": "')]
    parts += [packer.compress(b"0" * (1 << 20)) for _ in range(n_bytes >> 20)]
    return b"".join([*parts, packer.compress(b'"}'), packer.flush()])


def _source(body: bytes, *extra: tuple[str, str]) -> HttpSource:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/fine":
            return httpx.Response(200, json={"fine": True})
        # a stream: the client, not the mock, decodes it
        headers = [("content-type", "application/json"), *extra]
        return httpx.Response(200, headers=headers, stream=httpx.ByteStream(body))

    return _source_of(handler)


def _source_of(handler: Callable[[httpx.Request], httpx.Response]) -> HttpSource:
    return HttpSource(
        "fake",
        "http://provider.test",
        retry=RetryPolicy(attempts=1),
        clock=ManualClock(T0),
        transport=httpx.MockTransport(handler),
    )


def test_a_gzip_bomb_stops_at_the_reply_limit_and_the_next_request_goes_on() -> None:
    bomb = _gzip_of_a_long_json_string(20 << 20)  # 20 MiB of JSON in about 20 KiB
    assert len(bomb) < 100_000
    source = _source(bomb, ("content-encoding", "gzip"))
    with pytest.raises(UpstreamFormatError, match=r"above the limit of 16 MiB for one answer"):
        source.get_json("/v3/historical")
    assert source.get_json("/fine") == {"fine": True}


def test_a_plain_body_above_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_http, "MAX_REPLY_BYTES", 1 << 16)
    source = _source(b'{"a": "' + b"0" * (1 << 17) + b'"}')
    with pytest.raises(UpstreamFormatError, match=r"/big answered over \d+ bytes"):
        source.get_json("/big")
    assert source.get_json("/fine") == {"fine": True}


def test_a_body_that_does_not_decode_is_an_upstream_format_error() -> None:
    source = _source(b"not gzip at all", ("content-encoding", "gzip"))
    with pytest.raises(UpstreamFormatError, match="does not decode"):
        source.get_json("/broken")


def test_a_gzip_bomb_costs_the_limit_and_a_piece_not_what_one_read_expands_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 64 MiB in about 64 KiB: what one network read of httpcore holds; httpx's own decoding
    # expanded it whole before the limit applied (141 MiB traced at 731eedf)
    monkeypatch.setattr(_http, "MAX_REPLY_BYTES", 1 << 20)
    source = _source(_gzip_of_a_long_json_string(64 << 20), ("content-encoding", "gzip"))
    tracemalloc.start()
    try:
        with pytest.raises(UpstreamFormatError, match=r"over 1048577 bytes, above the limit"):
            source.get_json("/bomb")
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak_bytes < (1 << 20) + 4 * DECODE_PIECE_BYTES


class _Untouched(httpx.SyncByteStream):
    """A body that records whether it was read."""

    def __init__(self) -> None:
        self.read = False

    def __iter__(self) -> Iterator[bytes]:
        self.read = True
        yield b"{}"


def test_a_content_length_above_the_limit_is_refused_before_the_body_is_read() -> None:
    body = _Untouched()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-length": str(17 << 20)}, stream=body)

    source = _source_of(handler)
    with pytest.raises(UpstreamFormatError, match=r"17825792 bytes \(its Content-Length\)"):
        source.get_json("/declared")
    assert not body.read


@pytest.mark.parametrize(
    ("coding", "packed"),
    [
        pytest.param("gzip", gzip.compress(b'{"a": 1}'), id="gzip"),
        pytest.param("deflate", zlib.compress(b'{"a": 1}'), id="deflate"),
        pytest.param(
            "deflate",
            (lambda p: p.compress(b'{"a": 1}') + p.flush())(
                zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
            ),
            id="raw-deflate",
        ),
        pytest.param("identity", b'{"a": 1}', id="identity"),
    ],
)
def test_coded_answers_decode_and_only_codings_we_decode_are_asked_for(
    coding: str, packed: bytes
) -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.headers["accept-encoding"])
        return httpx.Response(
            200, headers={"content-encoding": coding}, stream=httpx.ByteStream(packed)
        )

    source = _source_of(handler)
    assert source.get_json("/coded") == {"a": 1}
    assert asked == ["gzip, deflate"]


@pytest.mark.parametrize(
    ("body", "coding"),
    [
        pytest.param(gzip.compress(b'{"a": 1}')[:-12], "gzip", id="gzip-cut-short"),
        pytest.param(b"anything", "br", id="a-coding-not-asked-for"),
    ],
)
def test_an_answer_cut_short_or_in_another_coding_does_not_decode(body: bytes, coding: str) -> None:
    source = _source(body, ("content-encoding", coding))
    with pytest.raises(UpstreamFormatError, match=f"does not decode \\({coding}\\)"):
        source.get_json("/odd")
