"""Run every ``bench/bench_*.py`` module (or those named) and print their figures.

Each module defines ``run() -> list[dict]``: rows with at least ``name``, ``value`` and
``unit``, and optionally ``limit`` (a recorded figure times its slack): a row whose value
exceeds its limit is a regression and makes this command exit 1.
"""

from __future__ import annotations

import importlib
import json
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = argv or sorted(p.stem.removeprefix("bench_") for p in here.glob("bench_*.py"))
    failed = False
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ")
    print(f"# {stamp} on {platform.machine()} {platform.python_version()}, {_cores()} cores")
    for name in names:
        module = importlib.import_module(f"bench.bench_{name}")
        for row in module.run():
            limit = row.get("limit")
            bad = limit is not None and row["value"] > limit
            failed = failed or bad
            flag = f"  REGRESSION (limit {limit})" if bad else ""
            print(json.dumps({"bench": name, **row}) + flag)
    return 1 if failed else 0


def _cores() -> int:
    import os

    return os.cpu_count() or 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
