"""The client-side rate limit and the controller's request budget, in virtual time.

No test here sleeps or times anything: the token bucket reads a fake clock that only its own
sleeps move, and the controller talks to an in-memory API (:class:`MemoryApi`, standing in
for kubernetes-asyncio's ``ApiClient`` under the real :class:`ApiKube`), so requests and
tokens are counted, not seconds.
"""

from __future__ import annotations

import asyncio
import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from carbonshift.errors import InputError
from carbonshift.k8s.app import ControllerApp
from carbonshift.k8s.client import ApiKube, connect
from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.config import ControllerConfig, parse_config
from carbonshift.k8s.flowcontrol import TokenBucket
from carbonshift.k8s.reconciler import Controller
from tests.k8s.objects import node, pod

START = datetime(2023, 6, 1, tzinfo=UTC)
Obj = dict[str, Any]


class VirtualTime:
    """Seconds that pass only when the limiter sleeps."""

    def __init__(self) -> None:
        self.now_s = 0.0

    def now(self) -> float:
        return self.now_s

    async def sleep(self, seconds: float) -> None:
        self.now_s += seconds
        await asyncio.sleep(0)


# -- the bucket ---------------------------------------------------------------------------

BUCKET_CASES = [
    # (id, qps, burst, [(advance s, requests)], want waits of the last batch)
    ("a full bucket lets a burst through at once", 5.0, 10, [(0.0, 10)], [0.0] * 10),
    ("past the burst, one request per 1/qps", 5.0, 10, [(0.0, 12)], [0.0] * 10 + [0.2, 0.4]),
    ("a quiet second refills qps tokens", 5.0, 10, [(0.0, 10), (1.0, 6)], [0.0] * 5 + [0.2]),
    ("the bucket holds no more than burst", 5.0, 2, [(0.0, 2), (60.0, 3)], [0.0, 0.0, 0.2]),
    ("a slow limit", 0.5, 1, [(0.0, 3)], [0.0, 2.0, 4.0]),
]


@pytest.mark.parametrize(
    ("qps", "burst", "batches", "want_waits"),
    [c[1:] for c in BUCKET_CASES],
    ids=[c[0] for c in BUCKET_CASES],
)
def test_bucket_arithmetic(
    qps: float, burst: int, batches: list[tuple[float, int]], want_waits: list[float]
) -> None:
    clock = VirtualTime()
    bucket = TokenBucket(qps, burst, now_s=clock.now, sleep=clock.sleep)
    waits: list[float] = []
    for advance_s, requests in batches:
        clock.now_s += advance_s
        waits = [bucket.reserve() for _ in range(requests)]
    assert waits == pytest.approx(want_waits)


@pytest.mark.parametrize(
    ("qps", "burst", "want_words"),
    [(0.0, 10, "qps 0.0 requests/s"), (float("nan"), 10, "> 0"), (5.0, 0, "burst 0 requests")],
    ids=["zero rate", "not a number", "no burst"],
)
def test_a_bad_limit_names_value_and_unit(qps: float, burst: int, want_words: str) -> None:
    with pytest.raises(InputError, match=want_words):
        TokenBucket(qps, burst)


@pytest.mark.parametrize(
    ("section", "want_words"),
    [
        ({"qps": -1}, "client_connection.qps = -1 .* requests/s .* use e.g. 50"),
        ({"burst": 0}, "client_connection.burst = 0 .* requests .* at least 1"),
    ],
    ids=["negative qps", "zero burst"],
)
def test_a_bad_config_value_says_the_fix(section: Obj, want_words: str) -> None:
    with pytest.raises(InputError, match=want_words):
        parse_config({"client_connection": section})


def test_the_release_budget_follows_qps_and_the_slot() -> None:
    assert parse_config({}).release_budget_per_slot() == 50 * 3600 // 2
    slow = parse_config({"client_connection": {"qps": 5}, "planning": {"slot_minutes": 15}})
    assert slow.release_budget_per_slot() == 5 * 900 // 2
    assert parse_config({"client_connection": {"qps": 0}}).release_budget_per_slot() == 0


# -- an in-memory API under the real ApiKube -------------------------------------------------


class _Response:
    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self._raw = json.dumps(body).encode()
        self.headers: dict[str, str] = {}
        self.content = self

    async def read(self) -> bytes:
        return self._raw

    async def readline(self) -> bytes:  # a watch that ends at once
        return b""

    def release(self) -> None:
        pass


def _merge(into: Obj, patch: Obj) -> None:
    """RFC 7386 JSON merge patch."""
    for key, value in patch.items():
        if value is None:
            into.pop(key, None)
        elif isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


class MemoryApi:
    """Just enough of kubernetes-asyncio's ApiClient for the controller: lists, gets,
    creates and merge patches on paths; records (virtual second, method, path, body)."""

    def __init__(self, time: VirtualTime) -> None:
        self.time = time
        self.objects: dict[str, Obj] = {}  # path of the object -> object
        self.sent: list[tuple[float, str, str, Any]] = []
        self._rv = 100

    def add(self, path: str, obj: Obj) -> None:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        self.objects[path] = obj

    async def call_api(
        self, path: str, method: str, *, query_params: Any, body: Any = None, **_: Any
    ) -> _Response:
        self.sent.append((self.time.now(), method, path, body))
        if dict(query_params).get("watch") == "true":
            return _Response(200, {})
        if method == "POST":
            return _Response(201, body)
        if method == "PATCH":
            obj = self.objects[path]
            want_rv = (body.get("metadata") or {}).get("resourceVersion")
            if want_rv and want_rv != obj["metadata"]["resourceVersion"]:
                return _Response(409, {"kind": "Status", "code": 409, "message": "conflict"})
            patch = copy.deepcopy(body)
            patch["metadata"].pop("resourceVersion", None)
            _merge(obj, patch)
            self.add(path, obj)
            return _Response(200, obj)
        if path in self.objects:
            return _Response(200, self.objects[path])
        plural = path.rsplit("/", 1)[1]  # a list, like /api/v1/pods
        items = [o for p, o in self.objects.items() if p.rsplit("/", 2)[1] == plural]
        return _Response(200, {"items": items, "metadata": {"resourceVersion": str(self._rv)}})

    def writes(self) -> list[tuple[float, str, str, Any]]:
        return [s for s in self.sent if s[1] in ("PATCH", "POST")]


def _config(**overrides: Any) -> ControllerConfig:
    raw: Obj = {
        "cluster": {"zone": "DE", "resources": ["cpu"], "watts_per_unit": {"cpu": 10.0}},
        # every workload the policy would hold starts now (no saving pays 1e9 g), so all
        # are due at once and only the release rate limit decides who waits
        "planning": {"policy": "fluidos", "forecast": "oracle", "min_saving_g": 1e9},
        "webhook": {"enabled": False},
        "extender": {"enabled": False},
    }
    for section, values in overrides.items():
        raw.setdefault(section, {}).update(values)
    return parse_config(raw)


def _held_pod(name: str, deadline_h: int) -> Obj:
    notes = {
        "carbonshift.io/deadline": f"{deadline_h}h",
        "carbonshift.io/expected-runtime": "1h",
    }
    obj = pod(name, annotations=notes, cpu="1", created="2023-06-01T00:00:00Z")
    obj["spec"]["schedulingGates"] = [{"name": "carbonshift.io/hold"}]
    return obj


def _world(
    qps: float, burst: int, deadlines_h: dict[str, int], **config: Any
) -> tuple[Controller, MemoryApi, VirtualTime]:
    time = VirtualTime()
    api = MemoryApi(time)
    api.add("/api/v1/nodes/n1", node("n1", cpu="64"))
    for name, deadline_h in deadlines_h.items():
        api.add(f"/api/v1/namespaces/batch/pods/{name}", _held_pod(name, deadline_h))
    limiter = TokenBucket(qps, burst, now_s=time.now, sleep=time.sleep)
    clock = ExternalClock(lambda: START + timedelta(minutes=5))
    kube = ApiKube(api, clock, limiter=limiter)
    config.setdefault("client_connection", {"qps": qps, "burst": burst})  # as ControllerApp
    controller = Controller(_config(**config), kube, clock)
    return controller, api, time


def _released(controller: Controller) -> list[str]:
    return [a.key.rsplit("/", 1)[1] for a in controller.actions if a.verb == "release"]


async def test_a_mass_release_keeps_to_qps_in_virtual_time() -> None:
    names = {f"w{i:02d}": 6 + i % 5 for i in range(40)}
    controller, api, time = _world(5.0, 10, names)
    await controller.plan_pass()
    writes = api.writes()
    assert len(_released(controller)) == 40
    assert len(writes) == 80  # a release patch and its Event each
    for t, *_ in writes:  # never more than the burst plus what the rate refilled
        assert sum(1 for s, *_ in api.sent if s <= t + 1e-9) <= 10 + 5.0 * t + 1e-6
    # the 3 lists at start and the 80 writes take (83 - 10) / 5 s of virtual time
    assert time.now_s == pytest.approx((len(api.sent) - 10) / 5.0)


async def test_watches_take_no_token() -> None:
    controller, _, _ = _world(5.0, 1, {})
    kube = controller.kube
    assert isinstance(kube, ApiKube)
    assert kube.limiter is not None
    async for _ in kube.watch("/api/v1/pods", "1"):
        pass
    assert kube.limiter.taken == 0
    await kube.get("/api/v1/nodes/n1")
    assert kube.limiter.taken == 1


async def test_releases_go_most_urgent_first() -> None:
    # created in the least urgent order; deadlines 11 h .. 3 h
    names = {"late": 11, "later": 9, "soon": 5, "sooner": 3, "mid": 7}
    controller, api, _ = _world(50.0, 100, names)
    await controller.plan_pass()
    assert _released(controller) == ["sooner", "soon", "mid", "later", "late"]
    writes = api.writes()
    patched = [p.rsplit("/", 1)[1] for _, m, p, _ in writes if m == "PATCH"]
    assert patched == ["sooner", "soon", "mid", "later", "late"]
    # every release write before the first Event: Events never delay a release
    assert [m for _, m, _, _ in writes] == ["PATCH"] * 5 + ["POST"] * 5
    events = [(body["reason"], body["involvedObject"]["name"]) for *_, body in writes[5:]]
    assert events == [("Released", n) for n in patched]


async def test_past_the_budget_the_least_urgent_wait_and_say_why() -> None:
    names = {"late": 11, "later": 9, "soon": 5, "sooner": 3}
    # 2 releases a slot: qps x 3600 s / 2 requests per release
    controller, api, _ = _world(4.5 / 3600.0, 100, names)
    await controller.plan_pass()
    assert _released(controller) == ["sooner", "soon"]
    for name in ("late", "later"):
        notes = api.objects[f"/api/v1/namespaces/batch/pods/{name}"]["metadata"]["annotations"]
        assert notes["carbonshift.io/state"] == "held"
        assert notes["carbonshift.io/planned-start"] == "2023-06-01T01:00:00Z"
        reason = notes["carbonshift.io/reason"]
        assert "release rate limit" in reason
        assert "waits for the API request budget: client_connection.qps" in reason
    assert controller.metrics.rate_limited._value.get() == 2


async def test_a_smaller_max_releases_per_slot_is_not_called_the_request_budget() -> None:
    names = {"late": 11, "later": 9, "soon": 5}
    controller, api, _ = _world(50.0, 100, names, planning={"max_releases_per_slot": 1})
    await controller.plan_pass()
    assert _released(controller) == ["soon"]
    reason = api.objects["/api/v1/namespaces/batch/pods/late"]["metadata"]["annotations"][
        "carbonshift.io/reason"
    ]
    assert "release rate limit: 1 per slot" in reason
    assert "client_connection" not in reason


async def test_a_quiet_pass_writes_nothing_and_events_are_not_repeated() -> None:
    # held for cleaner power: the hold rule off, so the policy's later starts stand
    names = {f"w{i}": 20 for i in range(5)}
    controller, api, _ = _world(50.0, 100, names, planning={"min_saving_g": 0, "min_saving_pct": 0})
    await controller.plan_pass()
    first = api.writes()
    assert _released(controller) == []
    events = [body["reason"] for _, m, _, body in first if m == "POST"]
    assert events == ["Held"] * 5  # one per workload that became held
    assert sum(1 for _, m, _, _ in first if m == "PATCH") == 5
    for _ in range(3):
        await controller.plan_pass()
    assert api.writes() == first  # no write, no Event on the passes that change nothing


async def test_an_annotation_already_there_is_not_written_again() -> None:
    controller, api, _ = _world(50.0, 100, {"w": 20})
    obj = api.objects["/api/v1/namespaces/batch/pods/w"]
    obj["metadata"]["annotations"]["carbonshift.io/state"] = "held"
    obj["metadata"]["labels"]["carbonshift.io/state"] = "held"
    assert await controller._annotate(obj, {"carbonshift.io/state": "held"})
    assert api.writes() == []
    assert await controller._annotate(obj, {"carbonshift.io/state": "not-held"})
    assert len(api.writes()) == 1


def _kubeconfig(folder: Path) -> str:
    """A kubeconfig naming a server nobody listens on (nothing here connects)."""
    path = folder / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    return str(path)


async def test_the_app_builds_the_limiter_from_the_config_and_counts_its_waits(
    tmp_path: Path,
) -> None:
    config = _config(client_connection={"qps": 7, "burst": 3})
    app = await ControllerApp.connect(config, _kubeconfig(tmp_path))
    try:
        assert isinstance(app.kube, ApiKube)
        limiter = app.kube.limiter
        assert limiter is not None
        assert (limiter.qps, limiter.burst) == (7.0, 3)
        for _ in range(4):
            limiter.reserve()  # empty the bucket: the next request waits about 1/7 s
        limiter._sleep = VirtualTime().sleep  # no real sleep
        waited = await limiter.wait()
        histogram = "carbonshift_client_rate_limiter_wait_seconds"
        registry = app.metrics.registry
        assert registry.get_sample_value(f"{histogram}_count") == 1
        assert registry.get_sample_value(f"{histogram}_sum") == pytest.approx(waited)
        assert waited > 0
    finally:
        await app.stop()


async def test_without_qps_the_client_has_no_limiter(tmp_path: Path) -> None:
    kube = await connect(_kubeconfig(tmp_path), ExternalClock(lambda: START))
    try:
        assert kube.limiter is None
    finally:
        await kube.close()
