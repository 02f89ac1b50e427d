"""Advice API latency over a real uvicorn server on loopback, offline (embedded data).

Figures: median and 95th-percentile wall time of ``GET /healthz`` (the floor of one
round trip through uvicorn and FastAPI), ``GET /emissions/forecasts/current`` (one
zone, 24 h, 3 h window), ``POST /v1/advise`` (3 zones, 3 h job within 24 h) and
``POST /v1/plan`` (caspian, 50 jobs, 3 clusters, 24 hourly slots), measured by an httpx
client in the same process (keep-alive). Recorded in bench/api.md.

Run: ``.venv/bin/python -m bench api``.
"""

from __future__ import annotations

import random
import socket
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import uvicorn

from carbonshift.api import create_app
from carbonshift.carbon.providers import ChainSet, EmbeddedReplay, FallbackChain
from carbonshift.carbon.series import CiKind

#: recorded medians (ms) on the reference machine; a run fails past LIMIT_SLACK x these
RECORDED_MS = {"healthz": 5.7, "forecast": 10.4, "advise": 13.4, "plan": 224.0}
LIMIT_SLACK = 4.0


def _instance(jobs: int = 50, seed: int = 1) -> dict[str, Any]:
    rng = random.Random(seed)
    horizon = 24
    zones = {"a": 300.0, "b": 120.0, "c": 40.0}
    return {
        "version": 1,
        "slot_minutes": 60,
        "horizon_slots": horizon,
        "resources": ["gpu"],
        "clusters": [
            {"name": n, "capacity": {"gpu": 32}, "watts_per_unit": {"gpu": 300}} for n in zones
        ],
        "carbon_g_per_kwh": {
            n: [base * (1 + 0.3 * rng.random()) for _ in range(horizon)]
            for n, base in zones.items()
        },
        "jobs": [
            {
                "id": f"j{i}",
                "demand": {"gpu": rng.randint(1, 5)},
                "runtime_slots": rng.randint(1, 5),
                "release_slot": rng.randint(0, 10),
                "deadline_slot": 24,
            }
            for i in range(jobs)
        ],
    }


def _timed(call: Callable[[], httpx.Response], n: int) -> list[float]:
    call()  # warm-up
    out = []
    for _ in range(n):
        started = time.perf_counter()
        response = call()
        out.append((time.perf_counter() - started) * 1000.0)
        response.raise_for_status()
    return out


def run() -> list[dict[str, Any]]:
    chains = ChainSet(
        chains={CiKind.DIRECT: FallbackChain(CiKind.DIRECT, [], floor=EmbeddedReplay())},
        providers={},
    )
    # IPPROTO_TCP named, so that asyncio turns Nagle off on accepted connections (as uvicorn
    # does for the sockets it opens itself); a bare socket.socket() costs 40 ms per request
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(chains), log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    rows: list[dict[str, Any]] = []
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            calls: dict[str, tuple[Callable[[], httpx.Response], int]] = {
                "healthz": (lambda: client.get("/healthz"), 50),
                "forecast": (
                    lambda: client.get(
                        "/emissions/forecasts/current",
                        params={"location": "DE", "windowSize": 180},
                    ),
                    100,
                ),
                "advise": (
                    lambda: client.post(
                        "/v1/advise",
                        json={"duration": "3h", "within": "24h", "zones": ["DE", "GB", "CA-ON"]},
                    ),
                    50,
                ),
                "plan": (
                    lambda: client.post("/v1/plan", params={"policy": "caspian"}, json=_instance()),
                    10,
                ),
            }
            for name, (call, n) in calls.items():
                times = sorted(_timed(call, n))
                median = statistics.median(times)
                p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
                rows.append(
                    {
                        "name": f"{name}_median_ms",
                        "value": round(median, 2),
                        "unit": "ms",
                        "limit": RECORDED_MS[name] * LIMIT_SLACK,
                        "n": n,
                    }
                )
                rows.append(
                    {"name": f"{name}_p95_ms", "value": round(p95, 2), "unit": "ms", "n": n}
                )
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
