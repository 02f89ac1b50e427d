"""CPU of reading bodies through the one bounded reader (``carbonshift.bounded``; 2026-11-29)
against the loops it replaced.

- ``gather``: a body of MIB MiB in chunks of CHUNK bytes kept up to its limit: the loop the
  five readers each wrote (count, compare, ``list.append``, one ``b"".join``) against
  ``BoundedBuffer.add`` / ``take`` (skipped where ``carbonshift.bounded`` is missing);
- ``provider``: ``HttpSource.get_json`` of a provider's largest answer (WattTime's 31 days of
  5-minute points, about 0.5 MiB of JSON) through ``httpx.MockTransport``, plain and gzip
  level 6, as the ``carbonshift`` on ``PYTHONPATH`` reads it: run once with the tree before
  the change and once after to compare.

With ``--memory``: instead, the traced peak (``tracemalloc``) of one request answered by a
gzip bomb of 64 MiB (about 64 KiB of gzip: one network read), refused at its limit: a
provider's ``get_json`` (limit 16 MiB) and ``ApiKube.get`` through aiohttp
(``CARBONSHIFT_K8S_TRANSPORT=aiohttp``, limit set to 1 MiB; the answer chunked, so that no
``Content-Length`` refuses it first) against the tests' loopback server.

With ``--before-src DIR`` (another tree's ``src``, e.g. from ``git archive``): the old and new
readers alternating in one process, 15 rounds or more: the lean transport's ``_decoded`` of a
500-Job gzip list page (``bench_bounded_decode.py``'s) and a provider's ``_get`` (the read
alone, no JSON parse) of the answer above.

Run: ``PYTHONPATH=src:. nice -n 5 .venv/bin/python bench/bench_bounded_read.py``
(``--rounds 3 --reads 200 --mib 16 --chunk 4096``, ``--memory`` or ``--before-src DIR``);
figures in bench/safety.md ("One bounded reader").
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import importlib.util
import json
import os
import random
import sys
import time
import tracemalloc
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from types import ModuleType

import httpx

from carbonshift.carbon.providers import ManualClock, RetryPolicy
from carbonshift.carbon.providers._http import HttpSource


def old_gather(chunks: list[bytes], limit: int) -> bytes:
    """The loop of k8s/bodies.py, k8s/client.py and carbon/providers/_http.py before."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise ValueError(size)
        parts.append(chunk)
    return b"".join(parts)


def new_gather(chunks: list[bytes], limit: int) -> bytes:
    from carbonshift.bounded import BoundedBuffer

    body = BoundedBuffer(limit, what="the body", fix="send less")
    for chunk in chunks:
        body.add(chunk)
    return body.take()


def _answer_json(seed: int = 0) -> bytes:
    rng = random.Random(seed)
    points = [
        {
            "point_time": f"2023-11-{1 + i // 288:02d}T{i % 288 // 12:02d}:{i % 12 * 5:02d}:00Z",
            "value": round(rng.uniform(200, 900), 3),
        }
        for i in range(31 * 288)
    ]
    return json.dumps({"data": points, "meta": {"region": "CAISO_NORTH"}}).encode()


def _source(body: bytes, coding: str | None, kind: type[HttpSource] = HttpSource) -> HttpSource:
    headers = {"content-type": "application/json"}
    if coding:
        headers["content-encoding"] = coding

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=headers, stream=httpx.ByteStream(body))

    return kind(
        "bench",
        "http://provider.test",
        retry=RetryPolicy(attempts=1),
        clock=ManualClock(datetime(2023, 11, 1, tzinfo=UTC)),
        transport=httpx.MockTransport(handler),
    )


def _cpu_us(run: Callable[[], object], n: int) -> float:
    began = time.process_time()
    for _ in range(n):
        run()
    return 1e6 * (time.process_time() - began) / n


def _gzip_bomb(n_mib: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b"0" * (1 << 20)
    parts = [packer.compress(b'{"a": "')]
    parts += [packer.compress(zeros) for _ in range(n_mib)]
    return b"".join([*parts, packer.compress(b'"}'), packer.flush()])


def _peak_mib(run: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        run()
    except Exception as exc:  # the refusal is the point
        print(f"  refused: {type(exc).__name__}: {str(exc)[:100]}")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / (1 << 20)


async def _kube_peak(bomb: bytes) -> float:
    from tests.k8s.test_client_wire import _api_kube, tiny_server

    from carbonshift.k8s import wire
    from carbonshift.k8s.client import TRANSPORT_ENV

    os.environ[TRANSPORT_ENV] = "aiohttp"
    wire.MAX_ANSWER_BYTES = 1 << 20
    pieces = [bomb[i : i + 0x4000] for i in range(0, len(bomb), 0x4000)]
    answer = (
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"".join(b"%x\r\n" % len(p) + p + b"\r\n" for p in pieces)
        + b"0\r\n\r\n"
    )

    async def handler(line: str, n: int, writer: asyncio.StreamWriter) -> bool:
        writer.write(answer)
        await writer.drain()
        return False

    async with tiny_server(handler) as (url, _):
        kube = await _api_kube(url)
        tracemalloc.start()
        try:
            await kube.get("/bomb")
        except Exception as exc:  # the refusal is the point
            print(f"  refused: {type(exc).__name__}: {str(exc)[:100]}")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        await kube.close()
    return peak / (1 << 20)


def memory() -> int:
    bomb = _gzip_bomb(64)
    source = _source(bomb, "gzip")
    mib = _peak_mib(partial(source.get_json, "/bomb"))
    print(f"provider get_json, 64 MiB bomb ({len(bomb)} B gzip), limit 16 MiB: peak {mib:.1f} MiB")
    mib = asyncio.run(_kube_peak(bomb))
    print(f"ApiKube.get via aiohttp, same bomb chunked, limit 1 MiB: peak {mib:.1f} MiB")
    return 0


def _module_from(path: Path, name: str) -> ModuleType:
    """A module loaded from ``path`` under ``name`` (another tree's version of one)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def compare(before_src: Path, rounds: int) -> int:
    """Old and new readers alternating in one process: the lean transport's ``_decoded`` of
    a 500-Job gzip list page, and a provider's ``_get`` (the read, no JSON parse)."""
    from carbonshift.carbon.providers import _http
    from carbonshift.k8s import wire

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_bounded_decode import _page

    old_wire = _module_from(before_src / "carbonshift/k8s/wire.py", "before_wire")
    old_http = _module_from(before_src / "carbonshift/carbon/providers/_http.py", "before_http")
    page = _page(500)
    packer = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    page_gz = packer.compress(page) + packer.flush()
    answer = _answer_json()
    answer_gz = gzip.compress(answer, 6)
    ways: dict[str, tuple[Callable[[], object], int]] = {}
    for side, w, h in (("before", old_wire, old_http), ("after", wire, _http)):
        ways[f"{side} wire._decoded list page"] = (partial(w._decoded, page_gz, "gzip"), 200)
        for coding, body in (("plain", answer), ("gzip", answer_gz)):
            source = _source(body, None if coding == "plain" else coding, h.HttpSource)
            ways[f"{side} provider _get {coding}"] = (
                partial(source._get, "/x", None, None, None),
                50,
            )
    found: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(rounds):
        for name, (run, n) in ways.items():
            found[name].append(_cpu_us(run, n))
    for name, us in found.items():
        us.sort()
        print(f"{name}: min {us[0]:.0f} us, median {us[len(us) // 2]:.0f} us CPU ({rounds} rounds)")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--mib", type=float, default=16.0)
    parser.add_argument("--chunk", type=int, default=4096)
    parser.add_argument("--memory", action="store_true")
    parser.add_argument("--before-src", type=Path, help="compare with this tree's src")
    args = parser.parse_args(argv)
    if args.memory:
        return memory()
    if args.before_src is not None:
        return compare(args.before_src, max(args.rounds, 15))
    size = int(args.mib * (1 << 20))
    body = b"x" * size
    chunks = [body[i : i + args.chunk] for i in range(0, size, args.chunk)]
    gathers: dict[str, Callable[[list[bytes], int], bytes]] = {"old loop": old_gather}
    try:
        import carbonshift.bounded  # noqa: F401

        gathers["BoundedBuffer"] = new_gather
    except ImportError:
        pass
    answer = _answer_json()
    packed = gzip.compress(answer, 6)
    plain, coded = _source(answer, None), _source(packed, "gzip")
    assert plain.get_json("/x") == coded.get_json("/x") == json.loads(answer)
    for n in range(args.rounds):
        for name, gather in gathers.items():
            assert len(gather(chunks, size)) == size
            us = _cpu_us(partial(gather, chunks, size), 10)
            print(
                f"round {n} gather {name}: {us / 1000:.2f} ms CPU for {args.mib:g} MiB in "
                f"{len(chunks)} chunks of {args.chunk} B"
            )
        for name, source in (("plain", plain), ("gzip", coded)):
            us = _cpu_us(partial(source.get_json, "/x"), args.reads)
            print(
                f"round {n} provider {name}: {us:.0f} us CPU a get_json "
                f"({len(answer) >> 10} KiB JSON, {len(packed) >> 10} KiB gzip)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
