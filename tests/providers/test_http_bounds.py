"""A provider's answer is read up to ``MAX_REPLY_BYTES`` once decoded (carbonshift.carbon.
providers._http): a gzip bomb or an endless body is an ``UpstreamFormatError`` naming the
size and the limit, not a full memory; the next request goes on."""

from __future__ import annotations

import zlib

import httpx
import pytest

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
