"""CPU of a controller's own watch echoes: N merge PATCHes with and without an informer
watching the collection they change.

Against the fake API server (``python -m fakekube``, its own process) with N suspended hub
Jobs (bench/bench_hub_live.py's), the client's CPU seconds (``time.process_time``) of N
PATCHes (one annotation each, as the hub's act phase writes its Jobs) sent ``--in-flight``
at a time (1: one after another, as the hub and the controller write today), in two ways,
alternating in rounds so the machine's load falls on each alike:

- ``writes``: no watch open;
- ``writes+echoes``: an :class:`~carbonshift.k8s.informer.Informer` of the Jobs watching,
  until it has cached the version of every PATCH's answer.

Their difference per write is what receiving one's own echo costs (the hub's start: 10,000
of them, bench/hub.md). Runs on whatever ``carbonshift`` the path holds, so the same script
measures a tree before a change (``PYTHONPATH=/tmp/before/src:...``).

Run: ``PYTHONPATH=src:packages/fakekube/src:. .venv/bin/python bench/bench_watch.py``
(``--writes 2000 --rounds 3 --in-flight 1``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

try:
    from bench import _fakekube
    from bench.bench_hub_live import hub_job
except ImportError:  # run as a script: bench/ is on the path, the checkout is not
    import _fakekube  # type: ignore[no-redef]
    from bench_hub_live import hub_job  # type: ignore[no-redef]
from carbonshift.k8s.client import ApiKube, connect
from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.informer import Informer

START = datetime(2023, 6, 1, tzinfo=UTC)
JOBS = "/apis/batch/v1/namespaces/batch/jobs"


async def _no_wait(_seconds: float) -> None:
    return None


async def _patch_all(kube: ApiKube, tag: str, writes: int, in_flight: int) -> dict[str, str]:
    """PATCH every Job, ``in_flight`` at a time; answers each Job's new resourceVersion."""
    versions: dict[str, str] = {}
    gate = asyncio.Semaphore(in_flight)

    async def one(i: int) -> None:
        async with gate:
            answer = await kube.patch(
                f"{JOBS}/w{i:06d}", {"metadata": {"annotations": {"round": f"{tag}-{i}"}}}
            )
        versions[f"batch/w{i:06d}"] = answer["metadata"]["resourceVersion"]

    if in_flight == 1:
        for i in range(writes):
            await one(i)
    else:
        await asyncio.gather(*(one(i) for i in range(writes)))
    return versions


async def _measure(writes: int, rounds: int, in_flight: int) -> dict[str, list[float]]:
    with (
        tempfile.TemporaryDirectory() as tmp,
        _fakekube.fake_server(Path(tmp), nodes=1, cpu="10", start=START) as (kubeconfig, _),
    ):
        kube = await connect(str(kubeconfig), ExternalClock(lambda: START))
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "batch"}}
        await kube.create("/api/v1/namespaces", namespace)
        for i in range(writes):
            await kube.create(JOBS, hub_job(i))
        out: dict[str, list[float]] = {"writes": [], "writes+echoes": []}
        for n in range(rounds):
            for way in out:
                informer: Informer | None = None
                if way == "writes+echoes":
                    informer = Informer(kube, JOBS, kind="Job", api_version="batch/v1")
                    await informer.relist()
                    informer.start(_no_wait)
                    await asyncio.sleep(0.2)  # the watch is open
                began = time.process_time()
                versions = await _patch_all(kube, f"{way}-{n}", writes, in_flight)
                if informer is not None:
                    items = informer.items
                    while any(
                        items[k]["metadata"]["resourceVersion"] != v for k, v in versions.items()
                    ):
                        await asyncio.sleep(0.005)
                out[way].append((time.process_time() - began) / writes * 1000)
                if informer is not None:
                    await informer.stop()
        await kube.close()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--in-flight", type=int, default=1)
    args = parser.parse_args(argv)
    out = asyncio.run(_measure(args.writes, args.rounds, args.in_flight))
    result: dict[str, Any] = {
        "writes": args.writes,
        "in_flight": args.in_flight,
        "cpu_ms_per_write": {k: [round(v, 3) for v in vs] for k, vs in out.items()},
        "echo_cpu_ms_min": round(min(out["writes+echoes"]) - min(out["writes"]), 3),
    }
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
