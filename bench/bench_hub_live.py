"""The hub controller live: N held hub Jobs over S fake spokes, per reconcile.

A fake hub (``python -m fakekube --virtual-time``, no nodes, the CarbonCluster CRD of
deploy/hub) and S fake spokes (2 nodes each, room for about half the work at once) run in
their own processes, so the CPU seconds are the hub controller's. N Jobs labelled
``carbonshift.io/hub: "true"`` are created suspended in namespace ``batch`` of the hub
(1 cpu, expected runtime 1 h, deadlines spread 6-30 h, as bench/bench_controller.py), one
CarbonCluster and kubeconfig Secret per spoke (zones of bench/bench_hub.py). Then one
``HubController.reconcile()`` per period: the first at the start, then after moving every
clock one 60-min slot; a reconcile that left plan writes to the next pass
(``hold_writes_per_pass``, ``holds_deferred``) is followed by the next at once, a row
``<period> pass 2`` of its own (``HubController.run`` runs it 1 s later).

Per reconcile: the controller process's CPU seconds (``time.process_time``), wall seconds,
API requests by cluster (hub / spokes) and verb (counted at ``ApiKube._send``; a watch is one
request however long it streams), workloads released to spokes, the wall seconds of the last
pass's phases and of its planning call (``HubController.last_phase_s`` / ``last_plan_s``),
the CPU seconds and voluntary context switches of each phase over the reconcile's passes
(:class:`PhaseCpu`); when the pass's release writes left, in wall seconds and in hub
requests made before them (:class:`ReleaseWrites`: what a client rate limit turns into
the time from a planned start to its release write);
peak RSS of the process after creating the Jobs (the driver's share), after each reconcile
and after the run.

Run: ``.venv/bin/python bench/bench_hub_live.py --jobs 10000 --spokes 10 --periods 2``
(policy ``carbonshift``, the hub's default, HubConfig and deploy/hub/hub.yaml; ``--policy
fluidos`` for the runs recorded with it before 2026-11-27). Recorded in bench/hub.md.
``python -m bench hub_live`` runs a small default (200 Jobs, 3 spokes, 1 period).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import resource
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

try:
    from bench.bench_controller import START, GcTime, fake_server
    from bench.bench_hub import ZONES
except ImportError:  # run as a script: bench/ is on the path, the checkout is not
    from bench_controller import START, GcTime, fake_server  # type: ignore[no-redef]
    from bench_hub import ZONES  # type: ignore[no-redef]
from carbonshift.k8s import heap
from carbonshift.k8s.client import ApiKube, connect
from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.intent import HUB_LABEL
from carbonshift.k8s.multicluster import HubConfig, HubController
from carbonshift.k8s.multicluster.api import HubApi
from carbonshift.units import format_utc

HUB_NS = "carbonshift-system"
CRD = Path(__file__).resolve().parent.parent / "deploy" / "hub" / "crd-carboncluster.yaml"


def hub_job(i: int) -> dict[str, Any]:
    deadline = START + timedelta(hours=6 + (i * 7919) % 25)
    notes = {
        "carbonshift.io/expected-runtime": "60m",
        "carbonshift.io/deadline": format_utc(deadline),
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"w{i:06d}",
            "namespace": "batch",
            "labels": {HUB_LABEL: "true"},
            "annotations": notes,
        },
        "spec": {
            "suspend": True,
            "template": {
                "metadata": {"annotations": {"carbonshift.io/expected-runtime": "60m"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": "1"}},
                        }
                    ],
                },
            },
        },
    }


class Counting:
    """Requests by (cluster, verb) at ApiKube's one transport seam."""

    def __init__(self, hub_host: str) -> None:
        self.by: Counter[str] = Counter()
        self._original = ApiKube._send
        self._hub_host = hub_host

    def install(self) -> None:
        original, counts, hub_host = self._original, self.by, self._hub_host

        async def send(kube: ApiKube, method: str, *args: Any, **kwargs: Any) -> Any:
            host = kube._client.configuration.host
            counts[f"{'hub' if host == hub_host else 'spokes'} {method}"] += 1
            return await original(kube, method, *args, **kwargs)

        ApiKube._send = send  # type: ignore[method-assign]

    def uninstall(self) -> None:
        ApiKube._send = self._original  # type: ignore[method-assign]


class ReleaseWrites:
    """When each release's write-ahead (the hub object's plan PATCH, ``ActPhase._released``
    runs right after it) left, within one pass: the wall seconds since the pass began and
    how many hub requests the pass had made by then, that one included. The second is what
    a client rate limit turns into time: with ``client_connection`` q requests/s and bursts
    of b, the n-th request of a burst leaves about (n - b) / q s after the first."""

    def __init__(self, counting: Counting) -> None:
        self.began = time.perf_counter()
        self.at_s: list[float] = []
        self.at_request: list[int] = []
        self._counting = counting
        self._original = HubController._released

    def install(self) -> None:
        original, seen, counting = self._original, self, self._counting

        def released(controller: HubController, *args: Any) -> None:
            seen.at_s.append(time.perf_counter() - seen.began)
            seen.at_request.append(
                sum(n for name, n in counting.by.items() if name.startswith("hub "))
            )
            original(controller, *args)

        HubController._released = released  # type: ignore[method-assign]

    def take(self) -> dict[str, Any]:
        """First, median and last of this pass's release writes; the last one's wait at a
        client rate limit of 50 requests/s with bursts of 100 (the hub's default) and of
        client-go's 5 / 10 (by the request count: (n - burst) / qps)."""
        at_s, at_request = self.at_s, self.at_request
        self.at_s, self.at_request, self.began = [], [], time.perf_counter()
        if not at_s:
            return {}
        last = max(at_request)
        return {
            "release_write_s": _spread(at_s, 2),
            "release_write_hub_request": _spread([float(n) for n in at_request], 0),
            "last_release_wait_s_at_50qps": round(max(0, last - 100) / 50, 1),
            "last_release_wait_s_at_5qps": round(max(0, last - 10) / 5, 1),
        }

    def uninstall(self) -> None:
        HubController._released = self._original  # type: ignore[method-assign]


def _spread(values: list[float], digits: int) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "first": round(ordered[0], digits),
        "median": round(ordered[len(ordered) // 2], digits),
        "last": round(ordered[-1], digits),
    }


class PhaseCpu:
    """This process's CPU seconds per phase of the hub's passes (``HubController._phase``
    wrapped), added up over the passes of one reconcile. The watch events the process
    handles while a phase runs (the echoes of its own writes) count in that phase.

    Also the system (kernel) CPU seconds of each phase (``ru_stime``), and the process's
    voluntary context switches per phase (``getrusage``'s ``ru_nvcsw``:
    each time it blocked waiting for the network, about one a wake-up of its event loop): a
    count, less moved by the machine's load than CPU seconds."""

    def __init__(self) -> None:
        self.cpu_s: dict[str, float] = {}
        self.sys_s: dict[str, float] = {}
        self.waits: dict[str, int] = {}
        self._original = HubController._phase

    def install(self) -> None:
        original, spent, waits, in_kernel = self._original, self.cpu_s, self.waits, self.sys_s

        @contextlib.contextmanager
        def phase(controller: HubController, name: str) -> Iterator[None]:
            began = time.process_time()
            usage = resource.getrusage(resource.RUSAGE_SELF)
            try:
                with original(controller, name):
                    yield
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - began
                now = resource.getrusage(resource.RUSAGE_SELF)
                waits[name] = waits.get(name, 0) + now.ru_nvcsw - usage.ru_nvcsw
                in_kernel[name] = in_kernel.get(name, 0.0) + now.ru_stime - usage.ru_stime

        HubController._phase = phase  # type: ignore[method-assign,assignment]

    def take(self) -> dict[str, float]:
        taken = {name: round(s, 2) for name, s in self.cpu_s.items()}
        self.cpu_s.clear()
        return taken

    def take_sys(self) -> dict[str, float]:
        taken = {name: round(s, 2) for name, s in self.sys_s.items()}
        self.sys_s.clear()
        return taken

    def take_waits(self) -> dict[str, int]:
        taken = dict(self.waits)
        self.waits.clear()
        return taken

    def uninstall(self) -> None:
        HubController._phase = self._original  # type: ignore[method-assign]


async def _run(
    jobs: int, spokes: int, periods: int, policy: str, hold_writes: int | None = None
) -> dict[str, Any]:
    cpu_per_node = str(max(1, jobs // spokes // 4))  # 2 nodes: about half the work at once
    with ExitStack() as stack:
        hub_cfg, hub_url = stack.enter_context(fake_server(0, "1", crds=[CRD]))
        spoke_cfgs = [stack.enter_context(fake_server(2, cpu_per_node)) for _ in range(spokes)]
        now = [START]
        clock = ExternalClock(lambda: now[0], poll_s=3600.0)
        admin = await connect(str(hub_cfg), clock)
        for ns in (HUB_NS, "batch"):
            await admin.create(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            )
        for zone, (cfg, _url) in zip(ZONES, spoke_cfgs, strict=False):
            name = zone.lower()
            await admin.create(
                f"/api/v1/namespaces/{HUB_NS}/secrets",
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": f"spoke-{name}", "namespace": HUB_NS},
                    "data": {"kubeconfig": base64.b64encode(cfg.read_text().encode()).decode()},
                },
            )
            await admin.create(
                "/apis/carbonshift.io/v1alpha1/carbonclusters",
                {
                    "apiVersion": "carbonshift.io/v1alpha1",
                    "kind": "CarbonCluster",
                    "metadata": {"name": name},
                    "spec": {
                        "zone": zone,
                        "kubeconfigSecretRef": {"name": f"spoke-{name}", "key": "kubeconfig"},
                        "wattsPerUnit": {"cpu": 10.0},
                        "pue": 1.2,
                    },
                },
            )
        spoke_admins = [await connect(str(cfg), clock) for cfg, _ in spoke_cfgs]
        t0 = time.perf_counter()
        sem = asyncio.Semaphore(16)

        async def make(i: int) -> None:
            async with sem:
                await admin.create("/apis/batch/v1/namespaces/batch/jobs", hub_job(i))

        await asyncio.gather(*(make(i) for i in range(jobs)))
        _progress(f"created {jobs} hub Jobs in {time.perf_counter() - t0:.1f} s")
        driver_rss_mb = _peak_rss_mb()  # the driver's share, before the controller exists
        settings: dict[str, Any] = {"planning": {"policy": policy, "forecast": "seasonal-day"}}
        if hold_writes is not None:
            settings["hold_writes_per_pass"] = hold_writes
        config = HubConfig.model_validate(settings)
        # as ``carbonshift hub``: the collector's young threshold raised at the start, the heap
        # settled once the first list of each kind of hub object is stored
        heap.prepare()
        hub_api = HubApi(await connect(str(hub_cfg), clock))
        controller = HubController(config, hub_api, clock, after_list=heap.settle)
        counting = Counting(hub_url)
        counting.install()
        phase_cpu = PhaseCpu()
        phase_cpu.install()
        release_writes = ReleaseWrites(counting)
        release_writes.install()
        rows = []
        gc_time = GcTime()
        try:
            for period in range(periods + 1):
                if period:  # one slot on every clock; the fakes settle before answering
                    for kube in (admin, *spoke_admins):
                        await kube._call(
                            "POST", "/fakekube/clock/advance", query={"seconds": "3600"}
                        )
                    now[0] = START + timedelta(hours=period)
                # a pass that left plan writes to the next (``hold_writes_per_pass``) is
                # followed by the next at once, as ``HubController.run`` does 1 s later
                for pass_ in range(1, 6):
                    releases0 = controller.counters.releases
                    counting.by.clear()
                    phase_cpu.take()
                    phase_cpu.take_waits()
                    phase_cpu.take_sys()
                    cpu0, wall0 = time.process_time(), time.perf_counter()
                    release_writes.take()
                    round_ = await controller.reconcile()
                    deferred = getattr(controller, "last_holds_deferred", 0)
                    name = "start" if period == 0 else f"period {period}"
                    row = {
                        "name": name if pass_ == 1 else f"{name} pass {pass_}",
                        "cpu_s": round(time.process_time() - cpu0, 2),
                        "wall_s": round(time.perf_counter() - wall0, 2),
                        "requests": dict(sorted(counting.by.items())),
                        "requests_total": sum(counting.by.values()),
                        "released": 0
                        if round_ is None
                        else sum(1 for d in round_.decisions.values() if d.start_now)
                        if pass_ == 1
                        else controller.counters.releases - releases0,
                        "holds_deferred": deferred,
                        "peak_rss_mb_so_far": _peak_rss_mb(),
                        # wall seconds of the last pass's phases and of its planning call
                        "phase_wall_s": {
                            k: round(v, 2) for k, v in controller.last_phase_s.items()
                        },
                        "plan_wall_s": round(controller.last_plan_s or 0.0, 2),
                        # CPU seconds of each phase, over every pass of the reconcile
                        "phase_cpu_s": phase_cpu.take(),
                        # of which in the kernel (system CPU seconds: sends, receives, polls)
                        "phase_sys_s": phase_cpu.take_sys(),
                        # voluntary context switches of each phase (blocking waits: wake-ups)
                        "phase_waits": phase_cpu.take_waits(),
                        **gc_time.take(),
                        # when the pass's release writes left (wall s, hub requests before)
                        **release_writes.take(),
                    }
                    rows.append(row)
                    _progress(f"{row['name']}: {row}")
                    if not deferred:
                        break
        finally:
            gc_time.close()
            release_writes.uninstall()
            phase_cpu.uninstall()
            counting.uninstall()
            await controller.close()
            await controller.hub.close()
            await admin.close()
            for kube in spoke_admins:
                await kube.close()
    return {
        "jobs": jobs,
        "spokes": spokes,
        "policy": policy,
        "hold_writes_per_pass": config.hold_writes_per_pass,
        "rows": rows,
        "peak_rss_mb_after_creating_jobs": driver_rss_mb,
        "peak_rss_mb": _peak_rss_mb(),
    }


def _peak_rss_mb() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def _progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run() -> list[dict[str, Any]]:
    """``python -m bench hub_live``: 200 Jobs over 3 spokes, 1 period."""
    result = asyncio.run(_run(200, 3, 1, "carbonshift"))
    return [
        {
            "name": f"hub live 200 jobs x 3 spokes: {r['name']} cpu",
            "value": r["cpu_s"],
            "unit": "s",
            "requests": r["requests_total"],
        }
        for r in result["rows"]
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--spokes", type=int, default=10, help=f"1-{len(ZONES)}")
    parser.add_argument("--periods", type=int, default=2)
    parser.add_argument("--policy", default="carbonshift", help="the hub's planning policy")
    parser.add_argument(
        "--hold-writes-per-pass",
        type=int,
        default=None,
        help="the hub's hold_writes_per_pass (default: HubConfig's)",
    )
    args = parser.parse_args(argv)
    result = asyncio.run(
        _run(args.jobs, args.spokes, args.periods, args.policy, args.hold_writes_per_pass)
    )
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
