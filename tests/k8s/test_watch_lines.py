"""A watch body is cut into lines in work linear in its bytes (k8s/wire.py ``WatchLines``):
a 16 MiB event in 4 KiB chunks is copied a few times, not once per chunk, and the same
lines come out however the body is chunked; past ``MAX_WATCH_LINE_BYTES`` without a line
feed, ``AnswerTooLargeError``."""

from __future__ import annotations

import random

import pytest

from carbonshift.k8s import wire
from carbonshift.k8s.wire import MAX_WATCH_LINE_BYTES, AnswerTooLargeError, WatchLines


def _chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_a_16_mib_event_in_4_kib_chunks_is_copied_a_few_times_not_per_chunk() -> None:
    line = b"x" * (MAX_WATCH_LINE_BYTES - 1)
    split = WatchLines()
    got: list[bytes] = []
    for chunk in _chunks(line + b"\n" + b'{"b":1}\n', 4096):
        got.extend(split.feed(chunk))
    assert got == [line, b'{"b":1}']
    assert split.end() == []
    # each byte copied into the line, once out of it and once by the split: about 3x the
    # body; joining the line so far to each chunk (the old way) copied about 4,096 / 2 =
    # 2,048 times the line
    want_most = 4 * (len(line) + 10)
    assert split.copied_bytes <= want_most, split.copied_bytes


def test_past_the_limit_without_a_line_feed_is_too_large() -> None:
    split = WatchLines()
    chunk = b"y" * 4096
    for _ in range(MAX_WATCH_LINE_BYTES // len(chunk)):  # exactly the limit: still a line
        assert split.feed(chunk) == []
    with pytest.raises(AnswerTooLargeError, match="without a line end, above the limit of 16"):
        split.feed(b"y")


def test_the_module_limit_is_read_when_the_watch_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "MAX_WATCH_LINE_BYTES", 10)
    split = WatchLines()
    assert split.feed(b"0123456789") == []
    with pytest.raises(AnswerTooLargeError):
        split.feed(b"a")


@pytest.mark.parametrize("seed", range(20))
def test_the_same_lines_however_the_body_is_chunked(seed: int) -> None:
    rng = random.Random(seed)
    lines = [bytes(rng.choice(b"ab{}") for _ in range(rng.randrange(0, 40))) for _ in range(30)]
    body = b"\n".join(lines) + (b"\n" if seed % 2 else b"")
    split = WatchLines()
    got: list[bytes] = []
    at = 0
    while at < len(body):
        size = rng.choice([1, 2, 3, 7, 64, 1000])
        got.extend(split.feed(body[at : at + size]))
        at += size
    got.extend(split.end())
    want = body.split(b"\n")
    if want[-1] == b"":  # a body ending in a line feed has no empty last line
        want.pop()
    assert got == want
