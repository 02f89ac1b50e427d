"""How long the controller's event loop stalls during one big planning pass.

A fake API server (``python -m fakekube --virtual-time``) runs in its own process with N
pending Pods, already gated as the webhook leaves them (1 cpu, expected runtime 1 h,
deadlines spread minute by minute over 6-30 h after 2023-06-01 00:00 UTC, so each Pod is a
job class of its own), DE, embedded data, ``seasonal-day`` forecast, 60-min slots. The
controller app starts (no webhook, extender or Lease; the real uvicorn /metrics server on
loopback), lists them and plans them all in its first pass, in dry-run (the plan is the
same; its thousands of annotation writes, not what is measured here, are left out).
Meanwhile:

- a coroutine on the loop sleeps 10 ms at a time and records how late each wake-up is
  (the loop's lag: what the webhook, the extender, the watches and the Lease renewal wait);
- a thread GETs /metrics every 50 ms (as the kubelet's liveness probe, from outside the
  loop) and records each answer's latency.

Reported: the wall seconds of the planning call (``plan_round``, wrapped to time it), and
the worst and 99th-percentile loop lag and /metrics latency while it ran, each cut to the
planning call's window (and, uncut, over the whole first pass: list, collect, plan, the
outcomes). ``--forecast-delay-s S`` makes the carbon source's forecast
sleep S seconds first (a provider waiting on its timeouts; a sleep releases the GIL).

Run from the repository root (recorded in bench/controller.md, "The event loop during a
planning pass"):

    .venv/bin/python bench/loop_stall.py --pods 3000

Against other code, put its ``src`` first: ``PYTHONPATH=/tmp/main/src .venv/bin/python
bench/loop_stall.py --pods 3000``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

import carbonshift
from carbonshift.k8s import reconciler
from carbonshift.k8s.app import ControllerApp
from carbonshift.k8s.client import connect
from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.config import parse_config

try:
    from bench.bench_controller import NAMESPACE, START, fake_server, pod
except ImportError:  # run as a script: bench/ is on the path, the checkout is not
    from bench_controller import (  # type: ignore[no-redef]
        NAMESPACE,
        START,
        fake_server,
        pod,
    )

TICK_S = 0.01
PROBE_EVERY_S = 0.05


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _summary(waits: list[tuple[float, float]], began: float, ended: float) -> dict[str, Any]:
    """Worst, p99 and count of the waits (from, to) that overlap [began, ended], each cut to
    that window: how long the loop kept each one waiting while the window lasted."""
    inside = [min(b, ended) - max(a, began) for a, b in waits if a <= ended and b >= began]
    return {
        "n": len(inside),
        "worst_s": round(max(inside, default=0.0), 3),
        "p99_s": round(_pct(inside, 0.99), 3),
        "median_s": round(_pct(inside, 0.5), 4),
    }


async def _ticker(lags: list[tuple[float, float]]) -> None:
    while True:
        due = time.perf_counter() + TICK_S
        await asyncio.sleep(TICK_S)
        lags.append((due, max(due, time.perf_counter())))  # late from when it was due


def _prober(url: str, out: list[tuple[float, float]], stop: threading.Event) -> None:
    with httpx.Client(timeout=120) as http:
        while not stop.is_set():
            began = time.perf_counter()
            try:
                http.get(url).raise_for_status()
            except httpx.HTTPError:
                out.append((began, float("inf")))
            else:
                out.append((began, time.perf_counter()))
            stop.wait(PROBE_EVERY_S)


async def _run(pods: int, policy: str, nodes: int, forecast_delay_s: float) -> dict[str, Any]:
    cpu_per_node = str(max(1, (pods // nodes) // 2))  # about half the held work fits at once
    with fake_server(nodes, cpu_per_node) as (kubeconfig, _url):
        clock = ExternalClock(lambda: START, poll_s=3600.0)
        kube = await connect(str(kubeconfig), clock)
        await kube.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        )
        sem = asyncio.Semaphore(16)

        async def make(i: int) -> None:
            deadline = START + timedelta(hours=6, minutes=(i * 7919) % (24 * 60))
            async with sem:
                await kube.create(f"/api/v1/namespaces/{NAMESPACE}/pods", pod(i, deadline))

        t0 = time.perf_counter()
        await asyncio.gather(*(make(i) for i in range(pods)))
        print(f"created {pods} pods in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        config = parse_config(
            {
                "cluster": {"zone": "DE", "resources": ["cpu"], "watts_per_unit": {"cpu": 10.0}},
                "planning": {"policy": policy, "forecast": "seasonal-day", "horizon_slots": 24},
                "defaults": {"deadline_hours": 24, "expected_runtime_minutes": 60},
                "webhook": {"enabled": False},
                "extender": {"enabled": False},
                "leader_election": {"enabled": False},
                "metrics": {"host": "127.0.0.1", "port": 0},
                "dry_run": True,  # the plan is the same; its writes are not what is measured
            }
        )
        plan_window: list[float] = []
        original: Callable[..., Any] = reconciler.plan_round

        def timed_plan_round(*args: Any, **kwargs: Any) -> Any:
            plan_window.append(time.perf_counter())
            try:
                return original(*args, **kwargs)
            finally:
                plan_window.append(time.perf_counter())

        reconciler.plan_round = timed_plan_round  # type: ignore[assignment]
        app = ControllerApp(config, await connect(str(kubeconfig), clock), clock)
        lags: list[tuple[float, float]] = []
        probes: list[tuple[float, float]] = []
        stop = threading.Event()
        ticker = asyncio.create_task(_ticker(lags))
        prober: threading.Thread | None = None
        try:
            pass_began = time.perf_counter()
            await app.start()
            assert app.controller is not None
            if forecast_delay_s:
                source = app.controller.source
                inner = source.forecast

                def slow(*args: Any, **kwargs: Any) -> Any:
                    time.sleep(forecast_delay_s)
                    return inner(*args, **kwargs)

                source.forecast = slow  # type: ignore[method-assign]
            url = f"{app.servers['metrics'].url}/metrics"
            prober = threading.Thread(target=_prober, args=(url, probes, stop), daemon=True)
            prober.start()
            await app.controller.until_idle(timeout_s=3600.0, poll_s=0.1)
            pass_ended = time.perf_counter()
            await asyncio.sleep(0.2)
        finally:
            stop.set()
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)
            await app.stop()
            await kube.close()
            reconciler.plan_round = original  # type: ignore[assignment]
        if prober is not None:
            prober.join(timeout=10)
        plan_began, plan_ended = plan_window[0], plan_window[1]
        held = sum(1 for o in app.controller.outcomes.values() if not o.start_now)
        return {
            "carbonshift": str(Path(carbonshift.__file__).parents[1]),
            "pods": pods,
            "policy": policy,
            "forecast_delay_s": forecast_delay_s,
            "held_after_pass": held,
            "plan_s": round(plan_ended - plan_began, 2),
            "pass_s": round(pass_ended - pass_began, 2),
            "during_plan": {
                "loop_lag": _summary(lags, plan_began, plan_ended),
                "metrics_latency": _summary(probes, plan_began, plan_ended),
            },
            "whole_run": {
                "loop_lag": _summary(lags, 0.0, float("inf")),
                "metrics_latency": _summary(probes, 0.0, float("inf")),
            },
        }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pods", type=int, default=3000)
    parser.add_argument("--policy", default="carbonshift")
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--forecast-delay-s", type=float, default=0.0)
    args = parser.parse_args(argv)
    result = asyncio.run(_run(args.pods, args.policy, args.nodes, args.forecast_delay_s))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
