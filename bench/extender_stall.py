"""How long the scheduler extender answers, and how long the event loop stalls, while the
carbon source's forecast hangs.

Every forecast sleeps ``--forecast-delay-s`` seconds first (a provider waiting on its
timeouts; a sleep releases the GIL, as a socket wait does). The real extender app
(``extender_app``, DE the cluster's zone, embedded data, ``oracle`` forecast,
``extender.max_g_per_kwh`` 105 g/kWh, between CA-ON's and DE's intensity at 2023-06-01
12:00 UTC) is called in process through httpx's ASGI transport on the loop that a ticker
shares: a coroutine sleeps 10 ms at a time and records how late each wake-up is (the loop's
lag: what the webhook, /metrics, the Lease renewal and the watches wait). The requests, as
kube-scheduler would send them (two nodes in DE, one in CA-ON, a shiftable Pod):

1. ``/prioritize`` and, 0.2 s later, ``/filter`` at once (each zone's first lookup);
2. ``/prioritize`` when both have answered (the lookups may still run);
3. ``/prioritize`` after every lookup has ended (the intensities cached).

Reported: each request's answer time (from when it was due to be sent) and answer, the
loop's worst and 99th-percentile lag from the first request to the end of the lookups, and
the forecasts asked.

Run from the repository root (recorded in bench/controller.md, "The extender while a
provider hangs"):

    .venv/bin/python bench/extender_stall.py --forecast-delay-s 5

Against other code, put its ``src`` first: ``PYTHONPATH=/tmp/main/src .venv/bin/python
bench/extender_stall.py --forecast-delay-s 5``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

import carbonshift
from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.config import parse_config
from carbonshift.k8s.extender import extender_app
from carbonshift.k8s.planner import CarbonSource, Forecast

NOW = datetime(2023, 6, 1, 12, tzinfo=UTC)
TICK_S = 0.01
WATTS = "carbonshift.io/watts-per-core"
ZONE = "carbonshift.io/grid-zone"


def _node(name: str, watts: str, zone: str | None = None) -> dict[str, Any]:
    labels = {WATTS: watts} | ({ZONE: zone} if zone else {})
    return {"kind": "Node", "metadata": {"name": name, "labels": labels}}


NODES = [_node("de-hungry", "20"), _node("de-lean", "5"), _node("ca-lean", "5", "CA-ON")]
POD = {
    "kind": "Pod",
    "metadata": {
        "name": "job",
        "namespace": "batch",
        "labels": {"carbonshift.io/managed": "true"},
        "annotations": {"carbonshift.io/deadline": "20h", "carbonshift.io/expected-runtime": "1h"},
        "creationTimestamp": "2023-06-01T11:00:00Z",
    },
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
}
ARGS = {"Pod": POD, "Nodes": {"items": NODES}, "NodeNames": None}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


async def _ticker(lags: list[tuple[float, float]]) -> None:
    while True:
        due = time.perf_counter() + TICK_S
        await asyncio.sleep(TICK_S)
        lags.append((due, time.perf_counter() - due))


async def _run(delay_s: float) -> dict[str, Any]:
    asked: list[str] = []
    lock = threading.Lock()
    original = CarbonSource.forecast

    def sleepy(self: CarbonSource, slot0: datetime, horizon_slots: int) -> Forecast:
        with lock:
            asked.append(self._config.cluster.zone)
        time.sleep(delay_s)
        return original(self, slot0, horizon_slots)

    CarbonSource.forecast = sleepy  # type: ignore[method-assign]
    config = parse_config(
        {
            "cluster": {"zone": "DE"},
            "planning": {"forecast": "oracle"},
            "extender": {"max_g_per_kwh": 105.0},
        }
    )
    app = extender_app(
        config, ExternalClock(lambda: NOW, poll_s=3600.0), source=CarbonSource(config)
    )
    http = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://extender", timeout=120
    )
    lags: list[tuple[float, float]] = []
    ticker = asyncio.create_task(_ticker(lags))
    await asyncio.sleep(0.1)
    began = time.perf_counter()
    out: dict[str, Any] = {}

    async def ask(name: str, path: str, after_s: float = 0.0) -> None:
        t = time.perf_counter() + after_s  # from when it is due: a stalled loop sends late
        await asyncio.sleep(after_s)
        got = (await http.post(path, json=ARGS)).json()
        answer: Any = (
            {e["Host"]: e["Score"] for e in got} if path == "/prioritize" else got["FailedNodes"]
        )
        out[name] = {"answer_s": round(time.perf_counter() - t, 3), "answer": answer}

    await asyncio.gather(ask("1 prioritize", "/prioritize"), ask("1 filter", "/filter", 0.2))
    await ask("2 prioritize", "/prioritize")
    while len(asked) < 2 or time.perf_counter() - began < 2 * delay_s + 0.5:
        await asyncio.sleep(0.05)  # every lookup has ended: each asked zone slept delay_s
    ended = time.perf_counter()
    await ask("3 prioritize", "/prioritize")
    ticker.cancel()
    CarbonSource.forecast = original  # type: ignore[method-assign]
    window = [lag for due, lag in lags if began <= due <= ended]
    return {
        "code": str(Path(carbonshift.__file__).parents[1]),
        "forecast_delay_s": delay_s,
        "requests": out,
        "loop_lag_worst_s": round(max(window, default=0.0), 3),
        "loop_lag_p99_s": round(_pct(window, 0.99), 4),
        "ticks": len(window),
        "forecasts_asked": asked,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--forecast-delay-s", type=float, default=5.0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(_run(args.forecast_delay_s)), indent=1))


if __name__ == "__main__":
    main()
