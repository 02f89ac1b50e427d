"""CPU to parse one API-server answer: httptools against aiohttp's C parser and h11.

Why the lean transport (``carbonshift.k8s.wire``) parses with httptools (bench/controller.md,
"A lean transport"). The answer is a Pod PATCH's as kube-apiserver sends it: 7 header lines
(Audit-Id, Cache-Control, Content-Type, the two priority-and-fairness uids, Date,
Content-Length) and a 1,550-byte JSON body, 1,885 bytes in all, parsed N times each way:

- httptools, a new parser per answer, and one parser per connection (as the transport);
- aiohttp's ``HttpResponseParser`` (its C build), which also makes the payload stream;
- h11, a connection per answer (pure Python).

Run: ``.venv/bin/python bench/bench_http_parsers.py`` (``--answers 20000``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any
from unittest import mock

BODY = json.dumps(
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p1",
            "namespace": "b",
            "annotations": {f"k{i}": "v" * 40 for i in range(20)},
            "managedFields": [
                {
                    "manager": "carbonshift",
                    "fieldsV1": {
                        "f:metadata": {"f:annotations": {f"f:k{i}": {} for i in range(20)}}
                    },
                }
            ],
        },
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        "status": {"phase": "Pending"},
    }
).encode()
RAW = (
    "HTTP/1.1 200 OK\r\nAudit-Id: 6b1c0a4e-1f7d-4f3b-9c33-2a1b8f0c1d2e\r\n"
    "Cache-Control: no-cache, private\r\nContent-Type: application/json\r\n"
    "X-Kubernetes-Pf-Flowschema-Uid: 0f0e2f0a-1111-2222-3333-444455556666\r\n"
    "X-Kubernetes-Pf-Prioritylevel-Uid: 0f0e2f0a-1111-2222-3333-444455556667\r\n"
    f"Date: Fri, 27 Nov 2026 14:30:00 GMT\r\nContent-Length: {len(BODY)}\r\n\r\n"
).encode() + BODY


class _Sink:
    def __init__(self) -> None:
        self.fields: dict[bytes, bytes] = {}
        self.chunks: list[bytes] = []
        self.done = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self.fields[name] = value

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        self.done = True


def httptools_each(n: int) -> float:
    import httptools

    began = time.process_time()
    for _ in range(n):
        sink = _Sink()
        parser = httptools.HttpResponseParser(sink)
        parser.feed_data(RAW)
        assert sink.done
        assert parser.get_status_code() == 200
        b"".join(sink.chunks)
    return time.process_time() - began


def httptools_kept(n: int) -> float:
    import httptools

    sink = _Sink()
    parser = httptools.HttpResponseParser(sink)
    began = time.process_time()
    for _ in range(n):
        sink.fields, sink.chunks, sink.done = {}, [], False
        parser.feed_data(RAW)
        assert sink.done
        assert parser.get_status_code() == 200
        b"".join(sink.chunks)
    return time.process_time() - began


def aiohttp_c(n: int) -> float:
    from aiohttp._http_parser import HttpResponseParser

    loop = asyncio.new_event_loop()
    protocol: Any = mock.Mock()
    protocol._reading_paused = False
    began = time.process_time()
    for _ in range(n):
        parser = HttpResponseParser(protocol, loop, 2**16, max_line_size=8190, max_field_size=8190)
        messages, _, _ = parser.feed_data(RAW)
        assert messages[0][0].code == 200
    spent = time.process_time() - began
    loop.close()
    return spent


def h11_each(n: int) -> float:
    import h11

    request = h11.Request(method="GET", target="/", headers=[("Host", "x")])
    began = time.process_time()
    for _ in range(n):
        conn = h11.Connection(h11.CLIENT)
        conn.send(request)
        conn.send(h11.EndOfMessage())
        conn.receive_data(RAW)
        parts = []
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Data):
                parts.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
        b"".join(parts)
    return time.process_time() - began


WAYS = {
    "httptools, a parser per answer": httptools_each,
    "httptools, one parser per connection": httptools_kept,
    "aiohttp C parser, a parser per answer": aiohttp_c,
    "h11, a connection per answer": h11_each,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=20_000)
    args = parser.parse_args(argv)
    found = {
        way: round(min(fn(args.answers) for _ in range(3)) / args.answers * 1e6, 2)
        for way, fn in WAYS.items()
    }
    print(json.dumps({"us_per_answer": found, "answer_bytes": len(RAW)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
