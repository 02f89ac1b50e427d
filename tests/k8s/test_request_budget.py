"""Fewer requests, copies and re-reads per workload (issue 14: the first pass over 10,000 held
Pods), against the fake API server.

- The watch caches store a version of an object once (our write's answer, then its watch
  event, are one copy), share what did not change with the version before, and let a list's
  parsed items go as they store them (the list and the cache never hold every object twice).
- The client sends our dicts as plain JSON, without kubernetes-asyncio's serialiser walk;
  a body that is not plain JSON still goes, through the walk.
- Events have a budget (``events.qps`` / ``.burst``): past it an Event is dropped and
  counted; the annotations are written all the same.
- The intent is not read again for the answer of the controller's own annotation write.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from carbonshift.errors import InputError
from carbonshift.k8s import reconciler
from carbonshift.k8s.client import TRANSPORT_ENV, ApiKube, DirectSend, connect
from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.config import parse_config
from carbonshift.k8s.flowcontrol import TokenBucket
from carbonshift.k8s.informer import Informer
from carbonshift.k8s.intent import only_written
from fakekube import FakeKube
from tests.k8s.harness import controller_config, make_harness
from tests.k8s.objects import pod

Obj = dict[str, Any]
START = datetime(2023, 6, 1, tzinfo=UTC)
pytestmark = pytest.mark.fakekube_config(start=START, nodes=2, cpu="8")
PODS = "/api/v1/pods"
INTENT = {"carbonshift.io/deadline": "20h", "carbonshift.io/expected-runtime": "2h"}


def fresh(obj: Obj) -> Obj:
    """An object as a user sends it (no uid, no creation time)."""
    for key in ("uid", "creationTimestamp"):
        obj["metadata"].pop(key, None)
    return obj


async def admin_client(fakekube: FakeKube) -> ApiKube:
    return await connect(str(fakekube.kubeconfig), ExternalClock(fakekube.now, poll_s=3600.0))


async def with_pods(fakekube: FakeKube, names: list[str]) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "batch"}}
    await asyncio.to_thread(fakekube.create, namespace)
    for name in names:
        body = fresh(pod(name, annotations={"team": "ml"}, gates=["example.com/wait"]))
        await asyncio.to_thread(fakekube.create, body)


async def until_seen(informer: Informer, key: str, version: str) -> None:
    """Follow the watch until ``key`` is cached at ``version``."""
    seen = asyncio.Event()

    def changed(changed_key: str) -> None:
        cached = informer.items.get(changed_key) or {}
        if changed_key == key and cached["metadata"]["resourceVersion"] == version:
            seen.set()

    task = asyncio.create_task(informer.follow(changed))
    try:
        await asyncio.wait_for(seen.wait(), timeout=10)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


# -- the watch caches --------------------------------------------------------------------------


async def test_a_version_is_stored_once_and_the_next_shares_what_did_not_change(
    fakekube: FakeKube,
) -> None:
    await with_pods(fakekube, ["p0"])
    kube = await admin_client(fakekube)
    try:
        informer = Informer(kube, PODS, kind="Pod", api_version="v1")
        await informer.relist()
        listed = informer.items["batch/p0"]

        answer = await kube.patch(
            "/api/v1/namespaces/batch/pods/p0", {"metadata": {"annotations": {"step": "1"}}}
        )
        informer.keep("batch/p0", answer)
        kept = informer.items["batch/p0"]
        version = kept["metadata"]["resourceVersion"]
        await until_seen(informer, "batch/p0", version)
        # the watch event of the very version our write answered: the same copy, not another
        assert informer.items["batch/p0"] is kept
        # what the write did not change is the listed version's, not a copy of it
        assert kept["spec"] is listed["spec"]
        assert kept["metadata"]["labels"] is listed["metadata"]["labels"]
        assert kept["metadata"]["annotations"] == {"team": "ml", "step": "1"}

        newer = await kube.patch(
            "/api/v1/namespaces/batch/pods/p0", {"metadata": {"labels": {"tier": "b"}}}
        )
        await until_seen(informer, "batch/p0", newer["metadata"]["resourceVersion"])
        watched = informer.items["batch/p0"]
        assert watched["metadata"]["labels"] == {"carbonshift.io/managed": "true", "tier": "b"}
        assert watched["spec"] is listed["spec"]
        assert watched["metadata"]["annotations"] is kept["metadata"]["annotations"]
    finally:
        await kube.close()


class Recording:
    """The client, remembering each list answer it handed the informer."""

    def __init__(self, kube: ApiKube) -> None:
        self.kube = kube
        self.answers: list[Obj] = []

    async def list(self, path: str, **query: str) -> Obj:
        answer = await self.kube.list(path, **query)
        self.answers.append(answer)
        return answer

    def watch(self, path: str, resource_version: str, **query: str) -> AsyncIterator[Obj]:
        return self.kube.watch(path, resource_version, **query)


async def test_a_relist_does_not_hold_the_list_beside_the_cache(fakekube: FakeKube) -> None:
    # Regression: the parsed list answer stayed alive, every Pod in it, until the whole cache
    # was built from it: every Pod held twice at the peak of the controller's first list.
    await with_pods(fakekube, [f"p{i}" for i in range(5)])
    kube = await admin_client(fakekube)
    try:
        source = Recording(kube)
        informer = Informer(source, PODS, kind="Pod", api_version="v1")
        await informer.relist()
        assert len(informer.items) == 5
        assert not source.answers[0].get("items"), "the list answer still holds the Pods"
        before = dict(informer.items)
        await informer.relist()  # after a 410, say: the versions it holds are not copied
        assert all(informer.items[key] is before[key] for key in before)
        assert not source.answers[1].get("items")
        # pods of one template share what they have in common
        assert informer.items["batch/p1"]["spec"] is informer.items["batch/p0"]["spec"]
    finally:
        await kube.close()


async def test_a_relist_goes_in_pages_and_changes_the_cache_once_all_are_in(
    fakekube: FakeKube,
) -> None:
    await with_pods(fakekube, [f"p{i}" for i in range(5)])
    kube = await admin_client(fakekube)
    try:
        informer = Informer(kube, PODS, kind="Pod", api_version="v1", page_size=2)
        seen: list[int] = []
        original = kube.list

        async def listing(path: str, **query: str) -> Obj:
            seen.append(len(informer.items))  # what a reader between two pages sees
            return await original(path, **query)

        kube.list = listing  # type: ignore[method-assign]
        await informer.relist()
        assert sorted(informer.items) == [f"batch/p{i}" for i in range(5)]
        assert informer.lists == 3
        assert seen == [0, 0, 0]
        assert informer.resource_version == str(fakekube.resource_version)
    finally:
        await kube.close()


# -- the client --------------------------------------------------------------------------------


async def test_bodies_go_as_plain_json_and_others_through_the_library(
    fakekube: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubernetes_asyncio.client import ApiClient

    walked: list[Any] = []
    walk = ApiClient.sanitize_for_serialization

    def spy(self: Any, obj: Any) -> Any:
        walked.append(obj)
        return walk(self, obj)

    monkeypatch.setattr(ApiClient, "sanitize_for_serialization", spy)
    await with_pods(fakekube, [])
    kube = await admin_client(fakekube)
    try:
        body = fresh(pod("plain"))
        made = await kube.create("/api/v1/namespaces/batch/pods", body)
        assert made["metadata"]["name"] == "plain"
        assert not any(obj is body for obj in walked), "the body went through the walk"

        when = datetime(2023, 6, 1, 12, tzinfo=UTC)
        odd = {"metadata": {"annotations": {"when": when}}}  # type: ignore[dict-item]
        patched = await kube.patch("/api/v1/namespaces/batch/pods/plain", odd)
        assert patched["metadata"]["annotations"]["when"] == when.isoformat()
        assert any(obj is odd for obj in walked)  # only what plain JSON cannot say
    finally:
        await kube.close()


@pytest.mark.parametrize("transport", ["lean", "aiohttp"])
async def test_requests_skip_the_library_call_api_and_keep_its_auth_and_headers(
    fakekube: FakeKube, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    """Every verb goes straight to the library's aiohttp session (``DirectSend``), or every
    one, the watch included, over the lean transport, not through ``ApiClient.call_api``'s
    generic per-call work; the bearer token is still asked of the library per request (a
    refreshed token is used), and the User-Agent, fieldManager, content types and bodies are
    what the library sent."""
    from kubernetes_asyncio.client import ApiClient

    async def refused(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("call_api was used")

    await with_pods(fakekube, ["direct"])
    monkeypatch.setenv(TRANSPORT_ENV, transport)
    kube = await admin_client(fakekube)
    monkeypatch.setattr(ApiClient, "call_api", refused)
    configuration = kube._client.configuration
    good = configuration.api_key["BearerToken"]
    configuration.api_key["BearerToken"] = "expired"
    refreshed: list[str] = []

    def refresh(config: Any) -> None:  # as an exec plugin or a rotated token file would
        refreshed.append("yes")
        config.api_key["BearerToken"] = good

    configuration.refresh_api_key_hook = refresh
    sent: list[tuple[str, Any]] = []
    session = kube._client.rest_client.pool_manager
    real_request = session.request

    def spy(method: str, url: str, **kwargs: Any) -> Any:
        sent.append((f"{method} {url}", kwargs.get("headers")))
        return real_request(method, url, **kwargs)

    monkeypatch.setattr(session, "request", spy)
    ways: list[str] = []
    lean = kube._direct.lean if kube._direct is not None else None
    assert (lean is not None) == (transport == "lean")
    if lean is not None:
        real_lean = lean.request

        async def lean_spy(method: str, target: str, fields: str, body: Any, limit: float) -> Any:
            headers = dict(line.split(": ", 1) for line in fields.split("\r\n") if line)
            sent.append((f"{method} {configuration.host}{target}", headers))
            ways.append("lean")
            return await real_lean(method, target, fields, body, limit)

        monkeypatch.setattr(lean, "request", lean_spy)
        real_watch = lean.watch

        async def watch_spy(target: str, fields: str, **limits: float) -> Any:
            headers = dict(line.split(": ", 1) for line in fields.split("\r\n") if line)
            sent.append((f"GET {configuration.host}{target}", headers))
            ways.append("lean watch")
            return await real_watch(target, fields, **limits)

        monkeypatch.setattr(lean, "watch", watch_spy)
    path = "/api/v1/namespaces/batch/pods/direct"
    try:
        got = await kube.get(path)
        listed = await kube.list("/api/v1/namespaces/batch/pods", labelSelector="app!=x")
        patched = await kube.patch(path, {"metadata": {"annotations": {"a": "1"}}})
        json_patched = await kube.patch(
            path,
            [{"op": "add", "path": "/metadata/labels/b", "value": "2"}],
            content_type="application/json-patch+json",
        )
        events = kube.watch("/api/v1/namespaces/batch/pods", listed["metadata"]["resourceVersion"])
        first = await asyncio.wait_for(anext(events), timeout=10)
        await events.aclose()
    finally:
        await kube.close()
    assert got["metadata"]["name"] == "direct"
    assert [o["metadata"]["name"] for o in listed["items"]] == ["direct"]
    assert patched["metadata"]["annotations"]["a"] == "1"
    assert json_patched["metadata"]["labels"]["b"] == "2"
    assert first["type"] in ("ADDED", "MODIFIED")
    assert len(refreshed) == len(sent) == 5
    assert ways == (["lean"] * 4 + ["lean watch"] if transport == "lean" else [])
    base = configuration.host
    assert [line for line, _ in sent] == [
        f"GET {base}{path}",
        f"GET {base}/api/v1/namespaces/batch/pods?labelSelector=app%21%3Dx",
        f"PATCH {base}{path}?fieldManager=carbonshift",
        f"PATCH {base}{path}?fieldManager=carbonshift",
        f"GET {base}/api/v1/namespaces/batch/pods?watch=true&resourceVersion="
        f"{listed['metadata']['resourceVersion']}&allowWatchBookmarks=true&timeoutSeconds=300",
    ]
    want_types = [
        "application/json",
        "application/json",
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/json",
    ]
    for (_, headers), want_type in zip(sent, want_types, strict=True):
        assert headers["Content-Type"] == want_type
        assert headers["Accept"] == "application/json"
        assert headers["authorization"] == f"Bearer {good.removeprefix('Bearer ')}"
        assert headers["User-Agent"].startswith("carbonshift")


class _RefusedError(ValueError):
    """What a parser stub raises for input it refuses (as orjson's JSONDecodeError)."""


def _refusing_parser(raw: bytes | str) -> Any:
    raise _RefusedError(raw)


PARSE_CASES = [
    ("an object", b'{"a": [1, 2.5, "x", null, true]}', {"a": [1, 2.5, "x", None, True]}),
    ("a lone surrogate", b'{"s": "\\ud800"}', {"s": "\ud800"}),
]


@pytest.mark.parametrize("fast", ["installed", "absent", "refusing"])
@pytest.mark.parametrize(
    ("raw", "want"), [(r, w) for _, r, w in PARSE_CASES], ids=[i for i, _, _ in PARSE_CASES]
)
def test_answers_parse_alike_with_or_without_orjson(
    fast: str, raw: bytes, want: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import types

    from carbonshift.k8s import client

    stub = {
        "installed": types.SimpleNamespace(loads=json.loads, JSONDecodeError=ValueError),
        "absent": None,
        "refusing": types.SimpleNamespace(loads=_refusing_parser, JSONDecodeError=_RefusedError),
    }[fast]
    if fast != "installed" or client._orjson is None:
        monkeypatch.setattr(client, "_orjson", stub)
    assert client.parse_json(raw) == want
    with pytest.raises(ValueError, match="Expecting value"):  # json's own message
        client.parse_json(b"not json")


# -- the Event budget ---------------------------------------------------------------------------


def dropped(metrics: Any, reason: str) -> float:
    value = metrics.registry.get_sample_value(
        "carbonshift_events_dropped_total", {"reason": reason}
    )
    return float(value or 0.0)


async def test_events_past_the_budget_are_dropped_and_counted_annotations_stay(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    h = await make_harness(fakekube, tmp_path)
    await h.start(controller_config(h.certs, events={"qps": 1, "burst": 2}))
    try:
        # the budget as configured, in a time that stands still: 2 Events, then none
        h.controller.event_budget = TokenBucket(1, 2, now_s=lambda: 0.0)
        names = [f"p{i}" for i in range(5)]
        for name in names:
            await h.create(fresh(pod(name, created=None, annotations=INTENT)))
        await h.step()
        for name in names:
            notes = (await h.get("Pod", name))["metadata"]["annotations"]
            assert notes["carbonshift.io/state"] == "held", name
            assert notes["carbonshift.io/planned-start"], name
        events = await asyncio.to_thread(fakekube.list, "Event", "batch")
        held = [e for e in events if e["reason"] == "Held"]
        assert len(held) == 2
        assert dropped(h.controller.metrics, "Held") == 3
    finally:
        await h.stop()


async def test_events_qps_0_posts_every_event(fakekube: FakeKube, tmp_path: Path) -> None:
    h = await make_harness(fakekube, tmp_path)
    await h.start(controller_config(h.certs, events={"qps": 0, "burst": 1}))
    try:
        assert h.controller.event_budget is None
        for i in range(4):
            await h.create(fresh(pod(f"p{i}", created=None, annotations=INTENT)))
        await h.step()
        events = await asyncio.to_thread(fakekube.list, "Event", "batch")
        assert len([e for e in events if e["reason"] == "Held"]) == 4
        assert dropped(h.controller.metrics, "Held") == 0
    finally:
        await h.stop()


def test_the_event_budget_defaults_to_50_per_second_bursts_of_100() -> None:
    config = parse_config({})
    assert (config.events.qps, config.events.burst) == (50.0, 100)


BAD_EVENTS = [
    ("a negative rate", {"qps": -1}, "events.qps = -1 is invalid: Value error, -1 Events/s"),
    ("a rate past 100000", {"qps": 1e6}, "Events/s is not a rate between 0 and 100000"),
    ("a rate that is no number", {"qps": "fast"}, "events.qps = 'fast' is invalid"),
    ("a burst of 0", {"burst": 0}, "events.burst = 0 is invalid: Value error, 0 Events is"),
    ("an unknown key", {"rate": 5}, "unknown key 'events.rate'"),
]


@pytest.mark.parametrize(
    ("section", "want_words"),
    [(s, w) for _, s, w in BAD_EVENTS],
    ids=[i for i, _, _ in BAD_EVENTS],
)
def test_a_bad_event_budget_names_value_unit_and_fix(section: Obj, want_words: str) -> None:
    with pytest.raises(InputError, match=r"^configuration: ") as caught:
        parse_config({"events": section})
    assert want_words in str(caught.value)
    if "unknown" not in want_words and "'fast'" not in want_words:
        assert "use e.g." in str(caught.value)


def test_take_answers_whether_a_token_was_there_without_waiting() -> None:
    now = [0.0]
    bucket = TokenBucket(2, 3, now_s=lambda: now[0])
    want_taken = [True, True, True, False, False]
    assert [bucket.take() for _ in want_taken] == want_taken
    now[0] = 1.0  # 2 tokens back after one second at 2 per second
    assert [bucket.take() for _ in range(3)] == [True, True, False]
    assert bucket.taken == 5
    assert bucket.waited_s == 0.0


# -- the intent and our own writes --------------------------------------------------------------


def count_reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    reads: Counter[str] = Counter()
    read: Callable[..., Any] = reconciler.read_intent

    def counting(obj: Obj, *args: Any, **kwargs: Any) -> Any:
        reads[obj["metadata"]["name"]] += 1
        return read(obj, *args, **kwargs)

    monkeypatch.setattr(reconciler, "read_intent", counting)
    return reads


async def test_the_intent_is_read_once_not_again_for_our_own_annotation_write(
    fakekube: FakeKube, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = count_reads(monkeypatch)
    h = await make_harness(fakekube, tmp_path)
    await h.start(controller_config(h.certs))
    try:
        names = [f"p{i}" for i in range(3)]
        for name in names:
            await h.create(fresh(pod(name, created=None, annotations=INTENT)))
        await h.step()
        for name in names:
            notes = (await h.get("Pod", name))["metadata"]["annotations"]
            assert notes["carbonshift.io/state"] == "held"
        assert {name: reads[name] for name in names} == dict.fromkeys(names, 1)
        for name in names:  # the cache, built from its own parts and our write, is the server's
            server = (await h.get("Pod", name))["metadata"]
            cached = h.controller.pods[f"Pod/batch/{name}"]["metadata"]
            for field in ("resourceVersion", "annotations", "labels"):
                assert cached[field] == server[field], (name, field)

        # a change of the intent itself is read again
        later = {"metadata": {"annotations": {"carbonshift.io/deadline": "22h"}}}
        admin = await admin_client(fakekube)
        try:
            await admin.patch("/api/v1/namespaces/batch/pods/p0", later)
        finally:
            await admin.close()
        await h.step()
        assert reads["p0"] == 2
    finally:
        await h.stop()


def test_an_answer_with_more_than_our_write_is_read_afresh() -> None:
    config = parse_config({})
    controller = reconciler.Controller(config, None, None)  # type: ignore[arg-type]
    meta = {
        "name": "p",
        "namespace": "batch",
        "uid": "u1",
        "resourceVersion": "5",
        "creationTimestamp": "2023-06-01T00:00:00Z",
        "labels": {"carbonshift.io/managed": "true"},
        "annotations": dict(INTENT),
    }
    old = {"kind": "Pod", "metadata": meta, "spec": {"containers": []}}
    intent = controller._intent(old, START)
    written = {"carbonshift.io/state": "held", "carbonshift.io/reason": "r"}
    labels = {**meta["labels"], "carbonshift.io/state": "held"}
    ours = {**meta, "resourceVersion": "6", "labels": labels}
    ours["annotations"] = {**INTENT, **written}
    cases = {
        "6": ({"kind": "Pod", "metadata": ours, "spec": old["spec"]}, True),
        "7": (
            {
                "kind": "Pod",
                "metadata": {
                    **ours,
                    "resourceVersion": "7",
                    "annotations": {**ours["annotations"], "carbonshift.io/deadline": "2h"},
                },
                "spec": old["spec"],
            },
            False,
        ),
        "8": (
            {
                "kind": "Pod",
                "metadata": {**ours, "resourceVersion": "8"},
                "spec": {"containers": [{}]},
            },
            False,
        ),
        "9": (
            {
                "kind": "Pod",
                "metadata": {**ours, "resourceVersion": "9"},
                "spec": old["spec"],
                "status": {"phase": "Running"},
            },
            False,
        ),
    }
    for version, (answer, want_carried) in cases.items():
        assert controller._carry_intent(old, answer, written) is want_carried, version
        carried = controller._intents.get(("Pod", "u1", version))
        assert (carried is intent) is want_carried, version


async def test_a_library_with_another_auth_hook_keeps_call_api(
    fakekube: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``DirectSend`` calls the library's ``update_params_for_auth`` as kubernetes-asyncio 36
    has it; a release where that hook is not the same coroutine keeps ``call_api`` (the
    library's own path, which knows its own hook)."""
    from kubernetes_asyncio.client import ApiClient

    def old_hook(self: Any, headers: Any, querys: Any, auth_settings: Any) -> None:
        """A synchronous hook of another shape, as an older or newer release might have."""

    monkeypatch.setattr(ApiClient, "update_params_for_auth", old_hook)
    kube = await admin_client(fakekube)
    try:
        assert DirectSend.of(kube._client) is None
        assert kube._direct is None
    finally:
        await kube.close()


async def test_held_events_follow_the_plan_writes_so_slow_writes_do_not_post_more(
    fakekube: FakeKube, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass posts its Held Events after all its plan writes: how many the budget lets
    through no longer grows with how long the writes take (on a loaded machine the first
    pass over 10,000 Pods posted 1,100-7,000 Events as its wall time went from 34 to 200 s,
    bench/controller.md). Every workload still says why it waits in its annotations."""
    h = await make_harness(fakekube, tmp_path)
    config = controller_config(h.certs, events={"qps": 1, "burst": 2})
    config = config.model_copy(
        update={"planning": config.planning.model_copy(update={"plan_on_arrival": False})}
    )
    await h.start(config)
    seconds = [0.0]
    try:
        # the budget as configured, in a time that moves one second per write
        h.controller.event_budget = TokenBucket(1, 2, now_s=lambda: seconds[0])
        kube = h.controller.kube
        original_patch = kube.patch
        order: list[str] = []

        async def slow_patch(path: str, body: Any, *args: Any, **kwargs: Any) -> Obj:
            seconds[0] += 1.0
            order.append("write")
            return await original_patch(path, body, *args, **kwargs)

        original_create = kube.create

        async def create(path: str, body: Obj) -> Obj:
            if body.get("kind") == "Event":
                order.append(str(body["reason"]))
            return await original_create(path, body)

        monkeypatch.setattr(kube, "patch", slow_patch)
        monkeypatch.setattr(kube, "create", create)
        names = [f"p{i}" for i in range(6)]
        for name in names:  # held for the next planning round: annotated, no Event yet
            await h.create(fresh(pod(name, created=None, annotations=INTENT)))
        await h.step()
        order.clear()
        await h.step(hours=1)  # one pass plans all six
        held = []
        for name in names:
            notes = (await h.get("Pod", name))["metadata"]["annotations"]
            assert notes["carbonshift.io/reason"], name
            if notes["carbonshift.io/state"] == "held":
                held.append(name)
        assert len(held) >= 3, "the plan held too few to tell"
        events = await asyncio.to_thread(fakekube.list, "Event", "batch")
        want_held_events = 2  # the burst: the seconds the writes took refilled none past it
        assert len([e for e in events if e["reason"] == "Held"]) == want_held_events
        assert dropped(h.controller.metrics, "Held") == len(held) - want_held_events
        last_write = max(i for i, what in enumerate(order) if what == "write")
        assert [what for what in order[last_write:] if what == "Held"] == ["Held"] * 2
    finally:
        await h.stop()


_OLD: Obj = {
    "kind": "Job",
    "metadata": {
        "name": "j",
        "uid": "u1",
        "resourceVersion": "5",
        "labels": {"carbonshift.io/hub": "true"},
        "annotations": {"carbonshift.io/deadline": "2h", "carbonshift.io/released-at": "x"},
    },
    "spec": {"suspend": True},
}
_WRITTEN = {"carbonshift.io/reason": "r", "carbonshift.io/released-at": None}
_LABELS = {"carbonshift.io/state": "held"}


def _answer(**changes: Any) -> Obj:
    meta = {
        **_OLD["metadata"],
        "resourceVersion": "6",
        "labels": {**_OLD["metadata"]["labels"], **_LABELS},
        "annotations": {"carbonshift.io/deadline": "2h", "carbonshift.io/reason": "r"},
        "managedFields": [{"manager": "carbonshift"}],
    }
    meta.update(changes.pop("metadata", {}))
    return {**_OLD, "metadata": meta, **changes}


@pytest.mark.parametrize(
    ("new", "want_only_ours"),
    [
        pytest.param(_answer(), True, id="our-write-and-a-deletion"),
        pytest.param(_answer(metadata={"resourceVersion": ""}), False, id="no-version"),
        pytest.param(_answer(spec={"suspend": False}), False, id="spec-changed"),
        pytest.param(_answer(metadata={"generation": 2}), False, id="other-metadata"),
        pytest.param(
            _answer(metadata={"annotations": {"carbonshift.io/deadline": "3h"}}),
            False,
            id="an-intent-annotation-changed",
        ),
        pytest.param(
            _answer(metadata={"labels": {"carbonshift.io/hub": "true"}}),
            False,
            id="our-label-missing",
        ),
        pytest.param(
            _answer(metadata={"labels": {**_OLD["metadata"]["labels"], **_LABELS, "x": "y"}}),
            False,
            id="another-label-added",
        ),
    ],
)
def test_only_written_tells_our_write_from_more(new: Obj, want_only_ours: bool) -> None:
    assert only_written(_OLD, new, _WRITTEN, _LABELS) is want_only_ours
