"""Fault runs: hostile workloads under injected API faults, checked from the server's state.

The one-cluster controller (``carbonshift.k8s.app.ControllerApp``: reconciler, leader
election, webhook and extender over TLS) runs in this process against a fake API server
(``python -m fakekube --virtual-time``) in a subprocess. The bench creates ``--workloads``
Pods and Jobs opted in with ``carbonshift.io/managed: "true"``, arriving over the first
half of the run; a share of them (``--hostile-share``) carries one to three hostile values
drawn from a seeded generator (overflowing durations such as ``9999999d`` or 400 nines and
``d``, deadlines in year 1 or 9999, non-ASCII digits, NaN, infinite, negative or huge power,
bad quantities, wrong types, strings of up to 20,000 characters, ...), and 15 % arrive
already held (a gated Pod, a suspended Job marked ``held``), as a webhook of another version
would leave them.

Meanwhile the fake server refuses a share of requests (``--fault-rate``): 503, 500 and 429
on every verb, 409 on patches and Lease updates, 504 on watches, added latency; every few
steps it drops all watches or forgets its event window (410 Gone), once it answers a burst
of 30 consecutive 503s, for three steps a quarter of the way in the webhook cannot be
reached (``failurePolicy: Ignore``: workloads arrive ungated and unsuspended), and halfway
through the controller is restarted (a clean stop, which gives the Lease up, and a new
replica).

Virtual time moves through a 15-minute grid and stops at every workload's latest start, so
a release due then happens at it; it goes on until every latest start has passed. When the
controller is not the leader (a Lease renewal failed), time moves on in steps of the Lease
renewal period, as it would in a real cluster. Each step waits until the controller's cache
holds the server's objects and the controller is idle, at most ``--step-timeout-s``
seconds of wall time (past that: a hang).

Checked at the end, from the server's objects (faults cleared):

- **lost**: still held by carbonshift (gated / suspended), or released but never started
  and not unschedulable;
- **duplicated**: released twice (two release writes, or two ``Released`` Events), or a Job
  that created more than one Pod;
- **late**: started (``status.startTime``) after its latest start, or after its arrival
  when it is not held or arrived past its latest start;
- **unreported**: a workload whose intent is unusable without ``carbonshift.io/state:
  not-held`` and its reason;
- **tracebacks**: log records with a traceback in this process (controller, webhook,
  extender, asyncio); **5xx**: answers of 500 or more from our webhook and extender, probed
  directly with every workload (the fake server ignores a failing webhook);
- **hangs**: steps that did not settle in time.

Run (about 10 minutes on a loaded 2-core machine for 384 workloads)::

    PYTHONPATH=src:packages/fakekube/src:. python bench/fault_run.py --seed 1 --json fault_run.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import os
import random
import signal
import ssl
import string
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import yaml

try:
    from bench import _fakekube
except ImportError:  # run as a script: bench/ is on the path, the checkout is not
    import _fakekube  # type: ignore[no-redef]
from carbonshift.errors import TemporaryError
from carbonshift.k8s.app import ControllerApp
from carbonshift.k8s.client import connect
from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.config import ControllerConfig, parse_config
from carbonshift.k8s.intent import (
    CRITICAL,
    DEADLINE,
    FLUIDOS_DEADLINE,
    HOLD_GATE,
    MANAGED_LABEL,
    POWER,
    RUNTIME,
    Intent,
    read_intent,
)
from carbonshift.units import format_utc, parse_utc
from fakekube.tls import self_signed

__all__ = ["FaultRun", "main", "run_faults"]

START = datetime(2023, 6, 1, tzinfo=UTC)
NAMESPACE = "fault"
SYSTEM_NS = "carbonshift-system"
WEBHOOK_SERVICE = "carbonshift-webhook"
STATE = "carbonshift.io/state"
REASON = "carbonshift.io/reason"
RELEASED_AT = "carbonshift.io/released-at"
Obj = dict[str, Any]
_MAX_ADVANCE_S = 3e9  # 95 years

_LOG = logging.getLogger("bench.fault_run")

# -- hostile values ---------------------------------------------------------------------------

_SCRIPTS = ("٠١٢٣٤٥٦٧٨٩", "۰۱۲۳۴۵۶۷۸۹", "０１２３４５６７８９", "०१२३४५६७८९", "௦௧௨௩௪௫௬௭௮௯")


def _foreign_digits(rng: random.Random, text: str) -> str:
    """``text`` with its ASCII digits written in another script (Arabic-Indic, fullwidth...)."""
    script = rng.choice(_SCRIPTS)
    return "".join(script[int(c)] if c.isascii() and c.isdigit() else c for c in text)


def _junk(rng: random.Random, longest: int) -> str:
    alphabet = string.printable + "\u00e9\u2028\u202e\ufeff\U0001f600\x00"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, longest)))


def hostile_duration(rng: random.Random) -> str:
    """A duration a careless or hostile user could write: overflowing, negative, foreign."""
    unit = rng.choice("smhdSMHD")
    makers: list[Callable[[], str]] = [
        lambda: rng.choice(["9999999d", "1000000000000d", "9" * 400 + "d", "1000000d"]),
        lambda: f"{rng.randint(10**6, 10**18)}{unit}",
        lambda: "9" * rng.randint(20, 400) + unit,
        lambda: f"{rng.randint(1, 10**6)}.{'9' * rng.randint(1, 400)}{unit}",
        lambda: f"-{rng.randint(1, 99)}{unit}",
        lambda: rng.choice(["0s", "0h", "0.0000001s", "00000m"]),
        lambda: _foreign_digits(rng, f"{rng.randint(1, 48)}h"),
        lambda: rng.choice(["", " ", "12", "h", "12hours", "1.5.h", "P1D", "NaNh", "infh"]),
        lambda: rng.choice(["1e3h", "1_000m", "0x10h", "+5h", "5 h h", "3h30m", "½h"]),
        lambda: "1" * rng.randint(1000, 20_000) + unit,
        lambda: _junk(rng, 64),
        lambda: f"{rng.randint(3661, 99_999)}d",  # just past the cap
        lambda: f"{rng.randint(169, 5000)}h",  # past the planning horizon (runtime)
    ]
    return rng.choice(makers)()


def hostile_time(rng: random.Random) -> str:
    """An RFC 3339 time out of range, impossible, in foreign digits, or odd but valid."""
    makers: list[Callable[[], str]] = [
        lambda: rng.choice(
            [
                "0001-01-01T00:00:00Z",
                "9999-12-31T23:59:59-01:00",
                "0001-01-01T00:00:00+01:00",
                "9999-12-31T23:59:59.999999999Z",
            ]
        ),
        lambda: (
            f"{rng.randint(0, 9999):04d}-{rng.randint(0, 13):02d}-{rng.randint(0, 32):02d}"
            f"T{rng.randint(0, 25):02d}:{rng.randint(0, 61):02d}:{rng.randint(0, 61):02d}Z"
        ),
        lambda: _foreign_digits(rng, "2023-06-01T12:00:00Z"),
        lambda: rng.choice(["2000-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "2023-06-01"]),
        lambda: f"2023-06-01T0{rng.randint(1, 9)}:07:13+{rng.randint(0, 14):02d}:00",
        lambda: rng.choice(["now", "tomorrow", "2023-06-01T12:00:00", "2023-06-01 12:00Z"]),
        lambda: "2023-06-01T12:00:00Z" + " " * rng.randint(1, 5000),
        lambda: hostile_duration(rng),
    ]
    return rng.choice(makers)()


def hostile_number(rng: random.Random) -> str:
    """A power in W (or hours for FLUIDOS): NaN, infinite, negative, huge, foreign digits."""
    makers: list[Callable[[], str]] = [
        lambda: rng.choice(["nan", "NaN", "inf", "-inf", "Infinity", "-1", "-0.5", "1e400"]),
        lambda: f"1e{rng.randint(300, 5000)}",
        lambda: "9" * rng.randint(300, 5000),
        lambda: _foreign_digits(rng, str(rng.randint(1, 999))),
        lambda: rng.choice(["1_000", "0x10", "", " ", "350W", "3,5", "1/2", "true"]),
        lambda: f"{rng.uniform(-1e6, 1e6)}",
        lambda: f"{rng.randint(-(10**30), 10**30)}",
        lambda: _junk(rng, 32),
    ]
    return rng.choice(makers)()


def hostile_flag(rng: random.Random) -> str:
    makers: list[Callable[[], str]] = [
        lambda: rng.choice(["yes", "1", "TRUE", " True ", "false ", "maybe", "", "ｔｒｕｅ"]),
        lambda: _junk(rng, 40),
        lambda: "true" * rng.randint(100, 5000),
    ]
    return rng.choice(makers)()


#: (where, maker): each hostile workload spoils one to three of these.
_SPOILERS: list[tuple[str, Callable[[random.Random], Any]]] = [
    (f"annotation {RUNTIME}", hostile_duration),
    (f"annotation {DEADLINE}", hostile_time),
    (f"annotation {DEADLINE}", hostile_duration),
    (f"annotation {POWER}", hostile_number),
    (f"annotation {FLUIDOS_DEADLINE}", hostile_number),
    (f"annotation {CRITICAL}", hostile_flag),
    (f"label {MANAGED_LABEL}", lambda rng: rng.choice(["True", "TRUE", "yes", "1", "no"])),
    (
        "annotation wrong type",
        lambda rng: rng.choice([12, 1.5, True, None, ["12h"], {"h": 12}, 10**30]),
    ),
    (
        "cpu request",
        lambda rng: rng.choice(
            ["0", "1e999999999", "-1", "1E", "١", "0.0000000001", "1Ki", "100n", "9" * 40, "nan"]
        ),
    ),
]


@dataclass
class Workload:
    """One generated Pod or Job, what was spoiled, and what the run made of it."""

    name: str
    kind: str
    arrival: datetime
    body: Obj
    spoiled: list[tuple[str, str]] = field(default_factory=list)
    pre_gated: bool = False
    created: Obj | None = None
    refused: str = ""  # the API server's answer when it refused the create
    latest_start: datetime | None = None  # None: not held, due at once
    unusable: str = ""  # read_intent's reason when the intent is unusable

    @property
    def hostile(self) -> bool:
        return bool(self.spoiled)


def _good_intent(rng: random.Random, arrival: datetime, end: datetime) -> dict[str, str]:
    runtime_min = rng.choice([15, 30, 45, 60, 90, 120, 180])
    notes = {RUNTIME: rng.choice([f"{runtime_min}m", f"{runtime_min / 60:g}h"])}
    room_h = max(1, int((end - arrival).total_seconds() // 3600) - math.ceil(runtime_min / 60))
    slack_h = rng.randint(0, min(room_h, 12))
    style = rng.random()
    if style < 0.5:
        notes[DEADLINE] = f"{slack_h + math.ceil(runtime_min / 60)}h"
    elif style < 0.75:
        deadline = arrival + timedelta(hours=slack_h, minutes=runtime_min + 15 * rng.randint(0, 3))
        notes[DEADLINE] = format_utc(deadline)
    elif style < 0.9:
        notes[FLUIDOS_DEADLINE] = str(slack_h)
    else:
        notes[CRITICAL] = "true"
    if rng.random() < 0.3:
        notes[POWER] = str(rng.choice([35, 120, 350, 700]))
    return notes


def generate(
    seed: int, count: int, job_share: float, hostile_share: float, arrivals: list[datetime]
) -> list[Workload]:
    """``count`` workloads from a seeded generator; arrivals on the given moments."""
    rng = random.Random(seed)
    end = arrivals[-1] + (arrivals[-1] - arrivals[0])
    out: list[Workload] = []
    for i in range(count):
        kind = "Job" if rng.random() < job_share else "Pod"
        arrival = rng.choice(arrivals)
        annotations: dict[str, Any] = _good_intent(rng, arrival, end)
        labels = {MANAGED_LABEL: "true"}
        cpu: Any = rng.choice(["1", "500m", "2", "250m"])
        spoiled: list[tuple[str, str]] = []
        if rng.random() < hostile_share:
            for where, maker in rng.sample(_SPOILERS, rng.randint(1, 3)):
                value = maker(rng)
                spoiled.append((where, repr(value)[:120]))
                if where.startswith("annotation wrong type"):
                    annotations[rng.choice([RUNTIME, DEADLINE, POWER])] = value
                elif where.startswith("annotation "):
                    annotations[where.removeprefix("annotation ")] = value
                elif where.startswith("label "):
                    labels[MANAGED_LABEL] = value
                else:
                    cpu = value
        name = f"w{i:04d}-{kind.lower()}"
        container = {
            "name": "main",
            "image": "busybox",
            "resources": {"requests": {"cpu": cpu}},
        }
        pre_gated = rng.random() < 0.15  # as another webhook version would leave it
        if kind == "Pod":
            spec: Obj = {"restartPolicy": "Never", "containers": [container]}
            if pre_gated:
                spec["schedulingGates"] = [{"name": HOLD_GATE}]
            body: Obj = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": NAMESPACE,
                    "labels": labels,
                    "annotations": annotations,
                },
                "spec": spec,
            }
        else:
            if pre_gated:
                annotations[STATE] = "held"
            runtime = annotations.get(RUNTIME)
            template_notes = {RUNTIME: runtime} if isinstance(runtime, str) else {}
            body = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": name,
                    "namespace": NAMESPACE,
                    "labels": labels,
                    "annotations": annotations,
                },
                "spec": {
                    **({"suspend": True} if pre_gated else {}),
                    "backoffLimit": 0,
                    "template": {
                        "metadata": {"annotations": template_notes},
                        "spec": {"restartPolicy": "Never", "containers": [container]},
                    },
                },
            }
        out.append(Workload(name, kind, arrival, body, spoiled, pre_gated))
    return out


# -- the fake server and the bench's own client -----------------------------------------------


def fake_server(
    seed: int, nodes: int, cpu: str, folder: Path
) -> contextlib.AbstractContextManager[tuple[Path, str]]:
    """``python -m fakekube --virtual-time --seed`` in a subprocess (bench/_fakekube.py);
    yields (kubeconfig, base URL)."""
    return _fakekube.fake_server(folder, nodes=nodes, cpu=cpu, start=START, seed=seed)


class BenchClient:
    """The bench's own requests, retried through injected faults (they are not under test)."""

    def __init__(self, base_url: str, token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60.0)

    async def close(self) -> None:
        await self.http.aclose()

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        last = ""
        for _ in range(200):
            try:
                response = await self.http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                last = repr(exc)
                await asyncio.sleep(0.05)
                continue
            injected = response.status_code == 409 and "(injected)" in response.text
            if response.status_code == 429 or response.status_code >= 500 or injected:
                last = f"HTTP {response.status_code}"
                await asyncio.sleep(0.005)
                continue
            return response
        raise RuntimeError(f"{method} {path} kept failing: {last}")

    async def items(self, path: str) -> list[Obj]:
        response = await self.call("GET", path)
        response.raise_for_status()
        items: list[Obj] = response.json().get("items") or []
        return items


# -- the run ----------------------------------------------------------------------------------


class _Tracebacks(logging.Handler):
    """Keeps every log record that carries a traceback (or is an error) in this process."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.tracebacks: list[str] = []
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or "Traceback (most recent call last)" in record.getMessage():
            self.tracebacks.append(self.format(record)[:4000])
        elif record.levelno >= logging.ERROR:
            self.errors.append(record.getMessage()[:1000])


@dataclass
class FaultRun:
    """Settings of one run (the command-line options)."""

    seed: int = 1
    workloads: int = 384
    steps: int = 96
    step_minutes: int = 15
    job_share: float = 0.4
    hostile_share: float = 0.5
    fault_rate: float = 0.05
    restart: bool = True
    step_timeout_s: float = 120.0
    nodes: int = 6
    cpu_per_node: str = "64"
    policy: str = "fluidos"
    log_file: Path | None = None


def controller_config(cert: Path, key: Path, identity: str, policy: str) -> ControllerConfig:
    tls = {"port": 0, "cert_file": str(cert), "key_file": str(key)}
    return parse_config(
        {
            "cluster": {
                "zone": "DE",
                "resources": ["cpu"],
                "watts_per_unit": {"cpu": 10.0},
                "allow_replay": True,
            },
            "planning": {
                "policy": policy,
                "forecast": "oracle",
                "horizon_slots": 24,
                "min_saving_g": 0,
                "min_saving_pct": 0,
            },
            "defaults": {"deadline_hours": 12, "expected_runtime_minutes": 60},
            "webhook": tls,
            "extender": tls,
            "metrics": {"port": 0},
            "leader_election": {"namespace": SYSTEM_NS, "lease_duration_s": 15},
            "identity": identity,
        }
    )


def _faults(rate: float) -> list[Obj]:
    """Faults on for the whole run, each firing on ``rate`` of the requests it matches."""
    return [
        {"code": 503, "probability": rate},
        {"code": 500, "verb": "patch", "probability": rate},
        {"code": 500, "verb": "list", "probability": rate},
        {"code": 429, "probability": rate / 2},
        {"code": 409, "verb": "patch", "probability": rate},
        {"code": 409, "verb": "update", "resource": "leases", "probability": rate},
        {"code": 504, "verb": "watch", "probability": rate * 4},
        {"latency_s": 0.02, "probability": rate},
    ]


def _webhook_configuration(ca_bundle: str) -> Obj:
    """deploy/base's MutatingWebhookConfiguration, as shipped, with the bench's CA."""
    manifest = Path(__file__).resolve().parents[1] / "deploy/base/mutatingwebhook.yaml"
    config: Obj = yaml.safe_load(manifest.read_text())
    for webhook in config["webhooks"]:
        webhook["clientConfig"]["caBundle"] = ca_bundle
    return config


class _Run:
    """One fault run in progress: the server, the controller replicas and the tallies."""

    def __init__(
        self,
        opts: FaultRun,
        folder: Path,
        kubeconfig: Path,
        base_url: str,
        attach: Callable[[], None],
    ) -> None:
        self.opts = opts
        self.attach = attach
        self.folder = folder
        self.kubeconfig = kubeconfig
        token = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"].get("token", "")
        self.bench = BenchClient(base_url, token)
        self.now = START
        self.clock = ExternalClock(lambda: self.now, poll_s=3600.0)
        self.cert = self_signed(
            folder / "tls", (f"{WEBHOOK_SERVICE}.{SYSTEM_NS}.svc", "127.0.0.1", "localhost")
        )
        self.app: ControllerApp | None = None
        self.webhook_down = False
        self.replicas = 0
        self.actions: list[Any] = []
        self.errors_by_stage: Counter[str] = Counter()
        self.hangs: list[str] = []
        self.leaderless_advances = 0
        self.probe_5xx: list[str] = []
        self.probes = 0
        self.steps_done = 0

    # -- server and controller ----------------------------------------------------------

    async def setup(self) -> None:
        for name in (SYSTEM_NS, NAMESPACE):
            await self.bench.call(
                "POST",
                "/api/v1/namespaces",
                json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
            )
        await self.bench.call(
            "POST",
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
            json=_webhook_configuration(self.cert.ca_bundle),
        )
        await self.start_replica()
        for fault in _faults(self.opts.fault_rate):
            await self.bench.call("POST", "/fakekube/faults", json=fault)

    async def start_replica(self) -> None:
        self.replicas += 1
        identity = f"fault-run-{self.replicas}"
        config = controller_config(self.cert.cert, self.cert.key, identity, self.opts.policy)
        app = ControllerApp(config, await connect(str(self.kubeconfig), self.clock), self.clock)
        self.attach()
        await app.start()
        self.attach()
        self.app = app
        if not self.webhook_down:
            await self.route_webhook(app.servers["webhook"].url)

    async def route_webhook(self, url: str) -> None:
        """Point the API server's calls to the webhook Service at ``url``."""
        body = {"namespace": SYSTEM_NS, "name": WEBHOOK_SERVICE, "url": url}
        await self.bench.call("POST", "/fakekube/service-endpoints", json=body)

    async def webhook_outage(self, down: bool) -> None:
        """Send the webhook calls to a closed port (``failurePolicy: Ignore``: workloads
        arrive ungated and unsuspended), or back to the webhook."""
        self.webhook_down = down
        if down:
            await self.route_webhook("https://127.0.0.1:1")
        elif self.app is not None:
            await self.route_webhook(self.app.servers["webhook"].url)

    async def stop_replica(self) -> None:
        if self.app is None:
            return
        app, self.app = self.app, None
        if app.controller is not None:
            self.actions.extend(app.controller.actions)
        self._collect_errors(app)
        await app.stop()

    def _collect_errors(self, app: ControllerApp) -> None:
        for metric in app.metrics.registry.collect():
            if metric.name != "carbonshift_errors":
                continue
            for sample in metric.samples:
                if sample.name.endswith("_total"):
                    self.errors_by_stage[sample.labels.get("stage", "")] += int(sample.value)

    def _leader(self) -> bool:
        app = self.app
        return app is not None and (app.elector is None or app.elector.is_leader.is_set())

    # -- time -----------------------------------------------------------------------------

    async def advance_to(self, moment: datetime) -> None:
        # a deadline may be centuries away (RFC 3339 times up to year 9000 are accepted);
        # the fake moves at most 100 years at a time
        while (seconds := (moment - self.now).total_seconds()) > 0:
            response = await self.bench.call(
                "POST",
                "/fakekube/clock/advance",
                params={"seconds": f"{min(seconds, _MAX_ADVANCE_S):.6f}"},
            )
            response.raise_for_status()
            self.now = parse_utc(response.json()["now"], what="fake clock")
        self.clock.poke()

    async def settle(self, label: str) -> None:
        """Wait until the controller has caught up with the server and is idle (or a hang)."""
        began = time.monotonic()
        limit = self.opts.step_timeout_s
        try:
            for _ in range(3):
                if not self._leader():
                    return
                await self._caught_up(began + limit)
                self.clock.poke()
                assert self.app is not None
                assert self.app.controller is not None
                if not await self._idle(began + limit):
                    return
                await self.bench.call("POST", "/fakekube/settle")
        except (TimeoutError, TemporaryError) as exc:
            self.hangs.append(f"{label}: {exc}")
        finally:
            self.steps_done += 1

    async def _idle(self, deadline: float) -> bool:
        """Wait until the controller is idle; False when it lost the lease meanwhile (it then
        waits for its next renewal, which needs the clock to move)."""
        assert self.app is not None
        assert self.app.controller is not None
        while True:
            try:
                await self.app.controller.until_idle(timeout_s=0.5)
                return True
            except TemporaryError:
                if not self._leader():
                    return False
                if time.monotonic() > deadline:
                    raise

    async def _caught_up(self, deadline: float) -> None:
        assert self.app is not None
        assert self.app.controller is not None
        controller = self.app.controller
        while True:
            pods = await self.bench.items("/api/v1/pods")
            jobs = await self.bench.items("/apis/batch/v1/jobs")
            cache = {**controller.pods, **controller.jobs}
            behind = [
                o
                for kind, o in [("Pod", p) for p in pods] + [("Job", j) for j in jobs]
                if (cache.get(f"{kind}/{o['metadata']['namespace']}/{o['metadata']['name']}") or {})
                .get("metadata", {})
                .get("resourceVersion")
                != o["metadata"]["resourceVersion"]
            ]
            if not behind or not self._leader():
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the controller's cache stayed behind on {len(behind)} objects "
                    f"(first {behind[0]['metadata']['name']})"
                )
            await asyncio.sleep(0.02)

    async def step(self, moment: datetime, label: str) -> None:
        await self.advance_to(moment)
        await self.settle(label)
        renew_s = 5.0
        for _ in range(40):  # not the leader: time goes on in renewal periods, as in a cluster
            if self._leader():
                break
            self.leaderless_advances += 1
            await self.advance_to(self.now + timedelta(seconds=renew_s))
            await asyncio.sleep(0.01)
            await self.settle(f"{label} (+{renew_s:g} s, no leader)")

    # -- workloads --------------------------------------------------------------------------

    async def create(self, w: Workload) -> None:
        plural = "pods" if w.kind == "Pod" else "jobs"
        prefix = "/api/v1" if w.kind == "Pod" else "/apis/batch/v1"
        path = f"{prefix}/namespaces/{NAMESPACE}/{plural}"
        response = await self.bench.call("POST", path, json=w.body)
        if response.status_code == 409:  # an earlier try went through
            response = await self.bench.call("GET", f"{path}/{w.name}")
        if response.status_code >= 400:
            w.refused = f"HTTP {response.status_code}: {response.json().get('message', '')}"[:300]
            return
        w.created = response.json()
        assert self.app is not None
        intent = read_intent(w.created, self.app.config, self.now)
        if isinstance(intent, Intent):
            w.latest_start = intent.latest_start
        elif intent.unusable:
            w.unusable = intent.reason

    async def probe(self, w: Workload) -> None:
        """Send the workload to our webhook and extender as the API server and scheduler do."""
        if self.app is None:
            return
        obj = w.created or w.body
        review = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": w.name,
                "operation": "CREATE",
                "namespace": NAMESPACE,
                "name": w.name,
                "object": obj,
            },
        }
        args: Obj = {"Pod": obj, "Nodes": None, "NodeNames": [f"node-{i}" for i in range(3)]}
        calls: list[tuple[str, str, Obj]] = [("webhook", "/mutate", review)]
        calls += [("extender", "/filter", args), ("extender", "/prioritize", args)]
        trust = ssl.create_default_context(cafile=str(self.cert.cert))
        async with httpx.AsyncClient(verify=trust, timeout=30.0) as client:
            for server, path, body in calls:
                url = self.app.servers[server].url + path
                self.probes += 1
                try:
                    response = await client.post(url, json=body)
                except httpx.HTTPError as exc:
                    self.probe_5xx.append(f"{w.name} {server}{path}: {exc!r}"[:300])
                    continue
                if response.status_code >= 500:
                    self.probe_5xx.append(f"{w.name} {server}{path}: HTTP {response.status_code}")


def _moments(workloads: list[Workload], grid: list[datetime]) -> list[datetime]:
    extra = set()
    for w in workloads:
        if w.latest_start is not None:
            extra.add(w.latest_start)
    return sorted(set(grid) | extra)


async def _drive(
    opts: FaultRun, folder: Path, log: _Tracebacks, attach: Callable[[], None]
) -> dict[str, Any]:
    began = time.monotonic()
    rng = random.Random(opts.seed * 7919 + 1)
    grid = [START + timedelta(minutes=opts.step_minutes * i) for i in range(opts.steps + 1)]
    arrivals = grid[1 : max(2, opts.steps // 2)]
    workloads = generate(opts.seed, opts.workloads, opts.job_share, opts.hostile_share, arrivals)
    by_arrival: dict[datetime, list[Workload]] = {}
    for w in workloads:
        by_arrival.setdefault(w.arrival, []).append(w)
    with fake_server(opts.seed, opts.nodes, opts.cpu_per_node, folder) as (kubeconfig, url):
        run = _Run(opts, folder, kubeconfig, url, attach)
        try:
            await run.setup()
            restart_at = grid[len(grid) // 2] if opts.restart else None
            burst_at = grid[len(grid) // 3]
            outage = (grid[len(grid) // 4], grid[len(grid) // 4 + 3])
            done: set[datetime] = set()
            while True:
                pending = [m for m in _moments(workloads, grid) if m > run.now]
                if not pending:
                    break
                moment = pending[0]
                if moment in done:
                    break
                done.add(moment)
                if restart_at is not None and moment >= restart_at:
                    restart_at = None
                    _progress(f"{moment:%m-%d %H:%M}: restarting the controller")
                    await run.stop_replica()
                    await run.start_replica()
                if moment >= burst_at:
                    burst_at = datetime.max.replace(tzinfo=UTC)
                    await run.bench.call(
                        "POST", "/fakekube/faults", json={"code": 503, "times": 30}
                    )
                if outage[0] <= moment < outage[1] and not run.webhook_down:
                    _progress(f"{moment:%m-%d %H:%M}: the webhook is down for 3 steps")
                    await run.webhook_outage(True)
                elif moment >= outage[1] and run.webhook_down:
                    await run.webhook_outage(False)
                roll = rng.random()
                if roll < 0.15:
                    await run.bench.call("POST", "/fakekube/watches/drop")
                elif roll < 0.2:
                    await run.bench.call("POST", "/fakekube/compact")
                await run.advance_to(moment)
                arriving = by_arrival.pop(moment, [])
                for w in arriving:
                    await run.create(w)
                for w in arriving:
                    await run.probe(w)
                await run.step(moment, f"{moment:%m-%d %H:%M}")
                if run.steps_done % 20 == 0:
                    _progress(
                        f"{moment:%m-%d %H:%M}: {run.steps_done} steps, "
                        f"{time.monotonic() - began:.0f} s"
                    )
            # one more grid step past the last latest start, then read the state without faults
            await run.step(run.now + timedelta(minutes=opts.step_minutes), "final")
            await run.bench.call("DELETE", "/fakekube/faults")
            await run.stop_replica()
            result = await _check(run, workloads)
        finally:
            with contextlib.suppress(Exception):
                await run.stop_replica()
            await run.bench.close()
    fake_tracebacks = (folder / "fakekube.log").read_text(errors="replace").count("Traceback")
    result.update(
        tracebacks=len(log.tracebacks),
        traceback_samples=log.tracebacks[:5],
        error_logs=len(log.errors),
        error_log_samples=log.errors[:5],
        fake_server_tracebacks=fake_tracebacks,
        wall_s=round(time.monotonic() - began, 1),
    )
    return result


async def _check(run: _Run, workloads: list[Workload]) -> dict[str, Any]:
    pods = await run.bench.items(f"/api/v1/namespaces/{NAMESPACE}/pods")
    jobs = await run.bench.items(f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs")
    events = await run.bench.items(f"/api/v1/namespaces/{NAMESPACE}/events")
    by_name = {("Pod", p["metadata"]["name"]): p for p in pods}
    by_name |= {("Job", j["metadata"]["name"]): j for j in jobs}
    pods_of: Counter[str] = Counter()
    pod_of_job: dict[str, Obj] = {}
    for p in pods:
        for ref in p["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Job":
                pods_of[ref.get("uid", "")] += 1
                pod_of_job[ref.get("uid", "")] = p
    released_events: Counter[str] = Counter(
        (e.get("involvedObject") or {}).get("uid", "")
        for e in events
        if e.get("reason") == "Released"
    )
    release_writes: Counter[str] = Counter(a.key for a in run.actions if a.verb == "release")
    tally: Counter[str] = Counter()
    lost: list[Obj] = []
    duplicated: list[Obj] = []
    late: list[Obj] = []
    unreported: list[Obj] = []
    lateness: list[float] = []
    for w in workloads:
        tally["workloads"] += 1
        tally["hostile"] += w.hostile
        if w.refused:
            tally["refused by the API server"] += 1
            tally["clean errors"] += w.hostile
            continue
        obj = by_name.get((w.kind, w.name))
        if obj is None:
            lost.append({"name": w.name, "why": "gone"})
            continue
        meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
        notes = meta.get("annotations") or {}
        uid = meta.get("uid", "")
        if w.unusable:
            tally["unusable intent"] += 1
            if notes.get(STATE) == "not-held" and str(notes.get(REASON, "")).startswith("unusable"):
                tally["clean errors"] += w.hostile
            else:
                unreported.append(
                    {"name": w.name, "state": notes.get(STATE), "why": w.unusable[:300]}
                )
        elif w.hostile:
            tally["hostile accepted"] += 1
        key = f"{w.kind}/{NAMESPACE}/{w.name}"
        if release_writes[key] > 1 or released_events[uid] > 1 or pods_of[uid] > 1:
            duplicated.append(
                {
                    "name": w.name,
                    "release_writes": release_writes[key],
                    "released_events": released_events[uid],
                    "pods": pods_of[uid],
                }
            )
        if w.kind == "Pod":
            held = any(g.get("name") == HOLD_GATE for g in spec.get("schedulingGates") or [])
            started = status.get("startTime")
            pending_pod = obj
        else:
            held = bool(spec.get("suspend")) and RELEASED_AT not in notes
            started = status.get("startTime")
            pending_pod = pod_of_job.get(uid, obj)
        if started is None:
            conditions = (pending_pod.get("status") or {}).get("conditions") or []
            unschedulable = any(
                c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                for c in conditions
            )
            if unschedulable and not held:
                tally["unschedulable"] += 1
                continue
            lost.append(
                {
                    "name": w.name,
                    "held": held,
                    "state": notes.get(STATE),
                    "reason": str(notes.get(REASON, ""))[:200],
                    "spoiled": w.spoiled,
                }
            )
            continue
        tally["started"] += 1
        # due at its latest start, or at once when not held or when that has passed already
        created = parse_utc(meta["creationTimestamp"], what="creationTimestamp")
        due = max(w.latest_start or created, created)
        behind = (parse_utc(started, what="startTime") - due).total_seconds()
        if behind > 0:
            lateness.append(behind)
            late.append({"name": w.name, "late_s": behind, "due": format_utc(due)})
    return {
        "tally": dict(tally),
        "lost": lost,
        "duplicated": duplicated,
        "late": late,
        "max_late_s": max(lateness, default=0.0),
        "unreported": unreported,
        "hangs": run.hangs,
        "probes": run.probes,
        "probe_5xx": run.probe_5xx,
        "errors_by_stage": dict(run.errors_by_stage),
        "leaderless_advances": run.leaderless_advances,
        "replicas": run.replicas,
        "steps": run.steps_done,
        "virtual_end": format_utc(run.now),
    }


def _progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _commit() -> str:
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    return "unknown"


def _load() -> str:
    with contextlib.suppress(OSError):
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    return "unknown"


def _attach(handlers: list[logging.Handler]) -> None:
    """Put the handlers on the root logger and on uvicorn's, which does not propagate (each
    uvicorn server configures logging anew, closing handlers it did not make)."""
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    for name in ("", "uvicorn"):
        logger = logging.getLogger(name)
        for handler in handlers:
            if handler not in logger.handlers:
                logger.addHandler(handler)


async def run_faults(opts: FaultRun) -> dict[str, Any]:
    """One fault run (see the module doc); answers the figures as a dict."""
    log = _Tracebacks()
    handlers: list[logging.Handler] = [log]
    if opts.log_file is not None:
        opts.log_file.write_text("")
        file_handler = logging.FileHandler(opts.log_file, mode="a", delay=True)
        file_handler.setFormatter(
            logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s")
        )
        handlers.append(file_handler)
    old_level = logging.getLogger().level
    loop = asyncio.get_running_loop()
    old_handler = loop.get_exception_handler()
    loop.set_exception_handler(
        lambda _loop, context: logging.getLogger("asyncio").error(
            "%s", context.get("message"), exc_info=context.get("exception")
        )
    )
    load_before, commit = _load(), _commit()  # at the start: the code that runs
    try:
        with tempfile.TemporaryDirectory(prefix="fault-run-") as tmp:
            result = await _drive(opts, Path(tmp), log, lambda: _attach(handlers))
    finally:
        loop.set_exception_handler(old_handler)
        for name in ("", "uvicorn"):
            for handler in handlers:
                logging.getLogger(name).removeHandler(handler)
        for handler in handlers:
            handler.close()
        logging.getLogger().setLevel(old_level)
    result["settings"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(opts).items()}
    result["date"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%MZ")
    result["commit"] = commit
    result["load_average"] = {"before": load_before, "after": _load()}
    return result


def figures(result: dict[str, Any]) -> dict[str, Any]:
    """The table's row: the counts issue 12 asks for."""
    tally = result["tally"]
    return {
        "seed": result["settings"]["seed"],
        "inputs tried": tally.get("workloads", 0),
        "hostile": tally.get("hostile", 0),
        "clean errors": tally.get("clean errors", 0),
        "tracebacks": result["tracebacks"],
        "hangs": len(result["hangs"]),
        "5xx": len(result["probe_5xx"]),
        "lost": len(result["lost"]),
        "duplicated": len(result["duplicated"]),
        "late": len(result["late"]),
        "max late (s)": round(result["max_late_s"], 1),
        "unreported": len(result["unreported"]),
        "unschedulable": tally.get("unschedulable", 0),
        "wall (s)": result["wall_s"],
    }


def table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of :func:`figures` rows."""
    heads = list(rows[0])
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    lines += ["| " + " | ".join(str(r[h]) for h in heads) + " |" for r in rows]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python bench/fault_run.py",
        description="Run the one-cluster controller against a fake API server with hostile "
        "workloads and injected API faults, then count lost, duplicated and late workloads, "
        "tracebacks, hangs and 5xx answers (issue 12).",
        epilog="example: PYTHONPATH=src:packages/fakekube/src:. python bench/fault_run.py "
        "--seed 1 --seed 2 --workloads 384 --json fault_run.json",
    )
    parser.add_argument(
        "--seed",
        type=int,
        action="append",
        help="seed of workloads and faults (repeatable; default 1)",
    )
    parser.add_argument("--workloads", type=int, default=384, help="Pods and Jobs (default 384)")
    parser.add_argument(
        "--steps", type=int, default=96, help="virtual-time grid steps (default 96, 24 h)"
    )
    parser.add_argument(
        "--step-minutes", type=int, default=15, help="minutes per grid step (default 15)"
    )
    parser.add_argument(
        "--job-share", type=float, default=0.4, help="share of Jobs among workloads (default 0.4)"
    )
    parser.add_argument(
        "--hostile-share",
        type=float,
        default=0.5,
        help="share of workloads with hostile values (default 0.5)",
    )
    parser.add_argument(
        "--fault-rate",
        type=float,
        default=0.05,
        help="share of API requests each fault rule refuses (default 0.05)",
    )
    parser.add_argument(
        "--no-restart", action="store_true", help="do not restart the controller mid-run"
    )
    parser.add_argument(
        "--step-timeout-s",
        type=float,
        default=120.0,
        help="wall seconds a step may take before it counts as a hang (default 120)",
    )
    parser.add_argument(
        "--policy",
        default="fluidos",
        help="the controller's planning.policy (default fluidos, fast; the shipped default is "
        "carbonshift)",
    )
    parser.add_argument("--json", type=Path, help="write the results (JSON) to this file")
    parser.add_argument("--log", type=Path, help="write the controller's log to this file")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for what in ("job_share", "hostile_share", "fault_rate"):
        value = getattr(args, what)
        if not 0.0 <= value <= 1.0:
            print(
                f"--{what.replace('_', '-')} {value} is not a share; give 0 to 1", file=sys.stderr
            )
            return 2
    if args.workloads < 1 or args.steps < 4 or args.step_minutes < 1:
        print("--workloads must be >= 1, --steps >= 4 and --step-minutes >= 1", file=sys.stderr)
        return 2
    results = []

    async def everything() -> None:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        assert task is not None
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
        for seed in args.seed or [1]:
            opts = FaultRun(
                seed=seed,
                workloads=args.workloads,
                steps=args.steps,
                step_minutes=args.step_minutes,
                job_share=args.job_share,
                hostile_share=args.hostile_share,
                fault_rate=args.fault_rate,
                restart=not args.no_restart,
                step_timeout_s=args.step_timeout_s,
                log_file=args.log,
                policy=args.policy,
            )
            _progress(f"seed {seed}: {opts.workloads} workloads, {opts.steps} steps")
            results.append(await run_faults(opts))

    try:
        asyncio.run(everything())
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("interrupted; the fake API server was stopped", file=sys.stderr)
        return 130
    rows = [figures(r) for r in results]
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1, default=str) + "\n")
    bad = any(r["lost"] or r["duplicated"] or r["tracebacks"] or r["hangs"] for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
