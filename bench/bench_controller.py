"""The one-cluster controller at scale: N held Pods, CPU, API requests and memory per period.

A fake API server (``python -m fakekube --virtual-time``) runs in its own process, so the
figures below are the controller's alone. N Pods in namespace ``batch`` are created already
gated (as the webhook leaves them: the ``carbonshift.io/hold`` scheduling gate and the
intent annotations), 1 cpu each, expected runtime 1 h, deadlines spread 6-30 h after the
start, on 2023-06-01 (DE, embedded data, ``seasonal-day`` forecast, 60-min slots, 24-slot
horizon). Then the controller starts (initial list, watches) and the bench drives
``periods`` planning periods: advance the virtual clock one slot, wake the controller, wait
until it is idle.

Per period: the controller process's CPU seconds (``time.process_time``; the bench's own
driving is a few HTTP calls), API requests by verb (counted at the client's one transport
seam, ``ApiKube._send``; watch streams count once when opened), releases written, and the
release latency: wall seconds from the clock's advance to each release write of the period
(median and max; the "planned start to release write" delay: releases are due at the slot
boundary the clock moves to, and the fake has settled before the controller is woken).
Peak RSS of the bench process (the controller, its caches and the driver) after the run.
``--qps`` / ``--burst`` give the controller's client the client-side rate limit
(``client_connection``; default: none, as before it existed); each row then says how many
seconds its requests waited for it.

Run: ``.venv/bin/python bench/bench_controller.py --pods 10000 --periods 3 --policy carbonshift``
(``python -m bench controller`` runs a small default: 1,000 Pods, 2 periods). Recorded in
bench/controller.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

try:
    from bench import _fakekube
except ImportError:  # run as a script: bench/ is on the path, the checkout is not
    import _fakekube  # type: ignore[no-redef]
from carbonshift.k8s import heap
from carbonshift.k8s.client import ApiKube, connect
from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.config import parse_config
from carbonshift.k8s.intent import DEADLINE, HOLD_GATE, MANAGED_LABEL, RUNTIME
from carbonshift.k8s.reconciler import Controller
from carbonshift.units import format_utc

START = datetime(2023, 6, 1, tzinfo=UTC)
NAMESPACE = "batch"
PASS_S: list[float] = []  # wall seconds of the planning passes of the current period
RELEASED_AT: list[float] = []  # perf_counter of each release write of the current period


@contextmanager
def fake_server(nodes: int, cpu: str, crds: Sequence[Path] = ()) -> Iterator[tuple[Path, str]]:
    """A fake API server in a subprocess, in a scratch folder (``crds``: CRD files to
    install); yields (kubeconfig path, base URL)."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        _fakekube.fake_server(
            Path(tmp), nodes=nodes, cpu=cpu, start=START, memory="4000Gi", crds=crds
        ) as found,
    ):
        yield found


class GcTime:
    """Seconds of this process's CPU spent in cyclic garbage collection, and how many full
    (generation 2) collections ran, since the last :meth:`take` (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.cpu_s = 0.0
        self.full = 0
        self._began = 0.0
        gc.callbacks.append(self._note)

    def _note(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.process_time()
        else:
            self.cpu_s += time.process_time() - self._began
            self.full += info["generation"] == 2

    def take(self) -> dict[str, float]:
        taken = {"gc_cpu_s": round(self.cpu_s, 2), "gc_full": self.full}
        self.cpu_s, self.full = 0.0, 0
        return taken

    def close(self) -> None:
        gc.callbacks.remove(self._note)


def pod(i: int, deadline: datetime) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"w{i:06d}",
            "namespace": NAMESPACE,
            "labels": {MANAGED_LABEL: "true"},
            "annotations": {DEADLINE: format_utc(deadline), RUNTIME: "60m"},
        },
        "spec": {
            "schedulingGates": [{"name": HOLD_GATE}],
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
            ],
        },
    }


class Counting:
    """Counts requests by verb at ApiKube's one transport seam."""

    def __init__(self) -> None:
        self.by_verb: Counter[str] = Counter()
        self._original = ApiKube._send

    def install(self) -> None:
        original = self._original
        counts = self.by_verb

        async def send(kube: ApiKube, method: str, *args: Any, **kwargs: Any) -> Any:
            counts[method] += 1
            return await original(kube, method, *args, **kwargs)

        ApiKube._send = send  # type: ignore[method-assign]

    def uninstall(self) -> None:
        ApiKube._send = self._original  # type: ignore[method-assign]


async def _run(
    pods: int, periods: int, policy: str, nodes: int, qps: float = 0.0, burst: int = 100
) -> dict[str, Any]:
    cpu_per_node = str(max(1, (pods // nodes) // 2))  # about half the held work fits at once
    with fake_server(nodes, cpu_per_node) as (kubeconfig, _url):
        now = [START]
        clock = ExternalClock(lambda: now[0], poll_s=3600.0)
        kube = await connect(str(kubeconfig), clock)
        await kube.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        )
        t0 = time.perf_counter()
        sem = asyncio.Semaphore(16)

        async def make(i: int) -> None:
            deadline = START + timedelta(hours=6 + (i * 7919) % 25)
            async with sem:
                await kube.create(f"/api/v1/namespaces/{NAMESPACE}/pods", pod(i, deadline))

        await asyncio.gather(*(make(i) for i in range(pods)))
        create_s = time.perf_counter() - t0
        _progress(f"created {pods} pods in {create_s:.1f} s")

        config = parse_config(
            {
                "cluster": {"zone": "DE", "resources": ["cpu"], "watts_per_unit": {"cpu": 10.0}},
                "planning": {"policy": policy, "forecast": "seasonal-day", "horizon_slots": 24},
                "defaults": {"deadline_hours": 24, "expected_runtime_minutes": 60},
                "webhook": {"enabled": False},
                "extender": {"enabled": False},
                "metrics": {"port": 0},
                "client_connection": {"qps": qps, "burst": burst},
            }
        )
        # the controller's own client, with the client-side rate limit when --qps is given
        # (the driver's client above stays unlimited: creating the Pods is not measured)
        limited = await connect(str(kubeconfig), clock, qps=qps, burst=burst)
        counting = Counting()
        counting.install()
        # as the process's entry (ControllerApp.connect): the collector's young threshold
        # raised at the start, the heap settled after the first list
        heap.prepare()
        controller = Controller(config, limited, clock, after_list=heap.settle)
        original_pass = controller.plan_pass

        async def timed_pass() -> None:
            t = time.perf_counter()
            try:
                await original_pass()
            finally:
                PASS_S.append(time.perf_counter() - t)

        controller.plan_pass = timed_pass  # type: ignore[method-assign]
        original_release = controller._release

        async def timed_release(*args: Any, **kwargs: Any) -> None:
            before = len(controller.actions)
            await original_release(*args, **kwargs)
            if any(a.verb == "release" for a in controller.actions[before:]):
                RELEASED_AT.append(time.perf_counter())

        controller._release = timed_release  # type: ignore[method-assign]
        rows: list[dict[str, Any]] = []
        gc_time = GcTime()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        task = asyncio.create_task(controller.run())
        await _until_idle(controller)
        _progress("controller started")
        rows.append(_row("start (list + first pass)", controller, counting, cpu0, wall0, 0))
        rows[-1].update(gc_time.take())
        for period in range(1, periods + 1):
            counting.by_verb.clear()
            PASS_S.clear()
            RELEASED_AT.clear()
            released_before = len([a for a in controller.actions if a.verb == "release"])
            cpu0, wall0 = time.process_time(), time.perf_counter()
            await kube._call("POST", "/fakekube/clock/advance", query={"seconds": "3600"})
            now[0] = START + timedelta(hours=period)
            due = time.perf_counter()  # the slot boundary: releases planned for it are due
            clock.poke()
            await _until_idle(controller)
            await asyncio.sleep(0.5)  # let watch events of the writes arrive
            await _until_idle(controller)
            _progress(f"period {period} done: {len(RELEASED_AT)} released")
            row = _row(f"period {period}", controller, counting, cpu0, wall0, released_before)
            row.update(gc_time.take())
            latency = sorted(t - due for t in RELEASED_AT)
            if latency:
                row["release_latency_s"] = {
                    "median": round(latency[len(latency) // 2], 2),
                    "max": round(latency[-1], 2),
                }
            rows.append(row)
        why = Counter(a.why for a in controller.actions)
        _progress(f"actions by why: {dict(why.most_common(5))}")
        controller.stop()
        task.cancel()
        gc_time.close()
        counting.uninstall()
        await limited.close()
        await kube.close()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "pods": pods,
        "nodes": nodes,
        "policy": policy,
        "create_s": round(create_s, 1),
        "peak_rss_mb": round(peak_mb),
        "rows": rows,
    }


async def _until_idle(controller: Controller) -> None:
    # every 0.1 s: this process's CPU is the controller's figure, and a period paced by the
    # rate limit lasts minutes (polling every 5 ms would add seconds of the driver's CPU)
    await controller.until_idle(timeout_s=3600.0, poll_s=0.1)


def _row(
    name: str,
    controller: Controller,
    counting: Counting,
    cpu0: float,
    wall0: float,
    released_before: int,
) -> dict[str, Any]:
    releases = [a for a in controller.actions if a.verb == "release"]
    new = releases[released_before:]
    return {
        "name": name,
        "cpu_s": round(time.process_time() - cpu0, 2),
        "wall_s": round(time.perf_counter() - wall0, 2),
        "requests": dict(sorted(counting.by_verb.items())),
        "requests_total": sum(counting.by_verb.values()),
        "releases": len(new),
        "held": sum(1 for o in controller.pods.values() if _gated(o)),
        "plan_pass_s": round(sum(PASS_S), 2),
        "limiter_wait_s": round(_waited(controller), 1),
    }


WAITED_BEFORE = [0.0]


def _waited(controller: Controller) -> float:
    """Seconds the controller's requests waited for the rate limit since the last row."""
    limiter = getattr(controller.kube, "limiter", None)
    total = 0.0 if limiter is None else limiter.waited_s
    waited, WAITED_BEFORE[0] = total - WAITED_BEFORE[0], total
    return waited


def _progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _gated(obj: dict[str, Any]) -> bool:
    gates = (obj.get("spec") or {}).get("schedulingGates") or []
    return any(g.get("name") == HOLD_GATE for g in gates)


def run() -> list[dict[str, Any]]:
    """``python -m bench controller``: 1,000 Pods, 2 periods, fluidos and carbonshift."""
    out = []
    for policy in ("fluidos", "carbonshift"):
        result = asyncio.run(_run(1000, 2, policy, 4))
        for row in result["rows"]:
            out.append(
                {
                    "name": f"controller {policy} 1000 pods: {row['name']} cpu",
                    "value": row["cpu_s"],
                    "unit": "s",
                    "requests": row["requests_total"],
                    "releases": row["releases"],
                }
            )
        out.append(
            {
                "name": f"controller {policy} 1000 pods peak rss",
                "value": result["peak_rss_mb"],
                "unit": "MB",
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="example: python bench/bench_controller.py --pods 10000 --periods 3",
    )
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--periods", type=int, default=3)
    parser.add_argument("--policy", default="carbonshift")
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument(
        "--qps", type=float, default=0.0, help="client_connection.qps, requests/s (0: no limit)"
    )
    parser.add_argument("--burst", type=int, default=100, help="client_connection.burst")
    args = parser.parse_args(argv)
    result = asyncio.run(
        _run(args.pods, args.periods, args.policy, args.nodes, args.qps, args.burst)
    )
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
