"""CPU to decode a gzip list page: ``zlib.decompress`` (the lean transport until 2026-11-29)
against the bounded ``carbonshift.k8s.wire._decoded`` (a ``decompressobj`` stopped one byte
past ``MAX_ANSWER_BYTES``; bench/controller.md, "Bounded answers").

The page: 500 Jobs with random names, uids, versions and annotations (about 260 KiB of
JSON, 30 KiB as gzip level 1, the API server's level), decoded N times each way, in
alternating rounds.

Run: ``.venv/bin/python bench/bench_bounded_decode.py`` (``--rounds 3 --decodes 300``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import zlib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from carbonshift.k8s.wire import _decoded


def _page(n_jobs: int, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    for _ in range(n_jobs):
        items.append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": f"train-{rng.getrandbits(40):x}",
                    "namespace": "batch",
                    "uid": f"{rng.getrandbits(128):032x}",
                    "resourceVersion": str(rng.randrange(10**9)),
                    "labels": {"a": "b"},
                    "annotations": {
                        "carbonshift.io/state": "held",
                        "carbonshift.io/planned-start": f"2026-11-29T{rng.randrange(24):02d}:00Z",
                        "carbonshift.io/estimated-g-now": f"{rng.random() * 1000:.3f}",
                        "carbonshift.io/estimated-g-planned": f"{rng.random() * 1000:.3f}",
                    },
                },
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "busybox", "command": ["sh", "-c", "true"]}
                            ]
                        }
                    }
                },
                "status": {},
            }
        )
    return json.dumps({"kind": "JobList", "items": items}).encode()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--decodes", type=int, default=300)
    args = parser.parse_args(argv)
    page = _page(500)
    packer = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    gz = packer.compress(page) + packer.flush()
    ways = {
        "zlib.decompress": lambda: zlib.decompress(gz, 16 + zlib.MAX_WBITS),
        "bounded _decoded": lambda: _decoded(gz, "gzip"),
    }
    assert ways["zlib.decompress"]() == ways["bounded _decoded"]() == page
    for n in range(args.rounds):
        for name, way in ways.items():
            began = time.process_time()
            for _ in range(args.decodes):
                way()
            us = 1e6 * (time.process_time() - began) / args.decodes
            print(
                f"round {n} {name}: {us:.0f} us CPU a page "
                f"({len(page) >> 10} KiB, {len(gz) >> 10} KiB gzip)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
