"""Watch lines: CPU to cut one 16 MiB event sent in 4 KiB chunks into lines, the old way
(the line so far joined to every chunk, then searched again) against ``WatchLines``.

Run: ``PYTHONPATH=src python bench/watch_lines.py [MIB] [CHUNK_BYTES]``; figures in
bench/safety.md ("Watch lines").
"""

from __future__ import annotations

import sys
import time

from carbonshift.k8s.wire import WatchLines


def old_way(chunks: list[bytes]) -> list[bytes]:
    """k8s/wire.py WatchStream.lines before safety4 (its loop body, without the socket)."""
    out: list[bytes] = []
    rest = b""
    for data in chunks:
        if rest:
            data = rest + data
        cut = data.rfind(b"\n")
        if cut < 0:
            rest = data
            continue
        rest = data[cut + 1 :]
        out.extend(data[:cut].split(b"\n"))
    return out


def new_way(chunks: list[bytes]) -> list[bytes]:
    split = WatchLines(max_line_bytes=1 << 40)
    out: list[bytes] = []
    for data in chunks:
        out.extend(split.feed(data))
    return out


def main(argv: list[str]) -> int:
    mib = float(argv[0]) if argv else 16.0
    size = int(argv[1]) if len(argv) > 1 else 4096
    body = b"x" * (int(mib * (1 << 20)) - 1) + b"\n"
    chunks = [body[i : i + size] for i in range(0, len(body), size)]
    for name, way in (("old", old_way), ("new", new_way)):
        began = time.process_time()
        lines = way(chunks)
        cpu = time.process_time() - began
        print(
            f"{name}: {mib:g} MiB in {len(chunks)} chunks of {size} B: {cpu:.3f} s CPU, "
            f"{len(lines)} line(s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
