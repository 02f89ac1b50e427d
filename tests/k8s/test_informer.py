"""The watch-fed cache the controller and the hub share (carbonshift.k8s.informer), against a
scripted source: lists and watch streams given in advance, counted, no server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from carbonshift.errors import TemporaryError
from carbonshift.k8s.client import GoneError
from carbonshift.k8s.informer import Informer

Obj = dict[str, Any]


def job(name: str, rv: int, **labels: str) -> Obj:
    meta = {"name": name, "namespace": "b", "resourceVersion": str(rv), "labels": labels}
    return {"metadata": meta}


class Scripted:
    """A source whose lists and watch streams are scripted; each watch call takes the next
    stream (a list of events, or an exception to raise after them)."""

    def __init__(self, lists: list[list[Obj]], streams: list[list[Any]]) -> None:
        self.lists = lists
        self.streams = streams
        self.calls: list[tuple[str, str, dict[str, str]]] = []

    async def list(self, path: str, **query: str) -> Obj:
        self.calls.append(("list", path, query))
        items = self.lists.pop(0)
        rv = max((int(o["metadata"]["resourceVersion"]) for o in items), default=1)
        return {"metadata": {"resourceVersion": str(rv)}, "items": items}

    async def watch(self, path: str, resource_version: str, **query: str) -> AsyncIterator[Obj]:
        self.calls.append(("watch", resource_version, query))
        if not self.streams:
            await asyncio.Event().wait()  # nothing more: an open, quiet stream
        for event in self.streams.pop(0):
            if isinstance(event, Exception):
                raise event
            yield event


async def no_wait(_seconds: float) -> None:
    return None


async def test_a_relist_fills_the_cache_and_drops_what_the_list_does_not_name() -> None:
    source = Scripted([[job("a", 5), job("b", 6)], [job("b", 7)]], [])
    informer = Informer(source, "/jobs", kind="Job", api_version="batch/v1")
    await informer.relist()
    assert sorted(informer.items) == ["b/a", "b/b"]
    assert informer.items["b/a"]["kind"] == "Job"
    await informer.relist()
    assert list(informer.items) == ["b/b"]
    assert informer.resource_version == "7"
    assert informer.lists == 2


async def test_watch_events_add_modify_delete_and_bookmarks_move_the_version() -> None:
    stream = [
        {"type": "ADDED", "object": job("c", 8)},
        {"type": "MODIFIED", "object": job("a", 9)},
        {"type": "DELETED", "object": job("b", 10)},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}},
    ]
    source = Scripted([[job("a", 5), job("b", 6)]], [stream])
    informer = Informer(
        source, "/jobs", kind="Job", api_version="batch/v1", query={"labelSelector": "x"}
    )
    await informer.relist()
    seen: list[str] = []
    await informer.follow(seen.append)
    assert sorted(informer.items) == ["b/a", "b/c"]
    assert informer.items["b/a"]["metadata"]["resourceVersion"] == "9"
    assert seen == ["b/c", "b/a", "b/b"]
    assert informer.resource_version == "12"
    want_watch = ("watch", "6", {"labelSelector": "x"})  # from the list's version, selected
    assert source.calls[1] == want_watch


FAILURE_CASES = [
    ("410: the version is too old", GoneError(410, "too old"), "gone"),
    ("the watch failed", TemporaryError("connection refused"), "error"),
]


@pytest.mark.parametrize(
    ("failure", "want_reason"),
    [(f, r) for _, f, r in FAILURE_CASES],
    ids=[i for i, _, _ in FAILURE_CASES],
)
async def test_a_failed_watch_relists_and_watches_again_from_the_new_version(
    failure: Exception, want_reason: str
) -> None:
    source = Scripted(
        [[job("a", 5)], [job("a", 20), job("d", 21)]],
        [[{"type": "ADDED", "object": job("b", 6)}, failure]],
    )
    informer = Informer(source, "/jobs", kind="Job", api_version="batch/v1")
    await informer.relist()
    reasons: list[str] = []
    relisted = asyncio.Event()
    task = asyncio.create_task(
        informer.run(no_wait, on_restart=reasons.append, on_relist=relisted.set)
    )
    try:
        await asyncio.wait_for(relisted.wait(), timeout=5)
        await asyncio.sleep(0)  # let it start the next watch
    finally:
        task.cancel()
    assert reasons == [want_reason]
    assert informer.lists == 2
    assert sorted(informer.items) == ["b/a", "b/d"]  # b was missed by the list: dropped
    assert not informer.failing
    assert source.calls[-1][:2] == ("watch", "21")


async def test_a_closed_stream_resumes_without_a_list() -> None:
    source = Scripted([[job("a", 5)]], [[{"type": "ADDED", "object": job("b", 6)}]])
    informer = Informer(source, "/jobs", kind="Job", api_version="batch/v1")
    await informer.relist()
    reasons: list[str] = []
    task = asyncio.create_task(informer.run(no_wait, on_restart=reasons.append))
    for _ in range(100):
        if len(source.calls) >= 3:
            break
        await asyncio.sleep(0)
    task.cancel()
    assert reasons == ["closed"]
    assert informer.lists == 1
    assert source.calls[-1][:2] == ("watch", "6")


KEEP_CASES = [
    ("an answer behind the watch's copy", {"b/a": job("a", 7)}, job("a", 5), True, "7"),
    ("an answer ahead of the cache", {"b/a": job("a", 5)}, job("a", 7), True, "7"),
    ("an object the watch saw deleted", {}, job("a", 7), True, None),
    ("no watch running: the next pass relists", {}, job("a", 7), False, "7"),
]


@pytest.mark.parametrize(
    ("cache", "answer", "watching", "want_rv"),
    [(c, a, w, r) for _, c, a, w, r in KEEP_CASES],
    ids=[i for i, _, _, _, _ in KEEP_CASES],
)
def test_a_write_answer_is_kept_only_when_it_is_the_newest_copy(
    cache: dict[str, Obj], answer: Obj, watching: bool, want_rv: str | None
) -> None:
    informer = Informer(Scripted([], []), "/jobs", kind="Job", api_version="batch/v1")
    informer.items.update(cache)
    informer.watching = watching
    informer.keep("b/a", answer)
    got = informer.items.get("b/a")
    assert (None if got is None else got["metadata"]["resourceVersion"]) == want_rv


async def test_a_create_answer_after_the_watch_saw_it_deleted_stays_out() -> None:
    stream = [
        {"type": "ADDED", "object": job("a", 8)},
        {"type": "DELETED", "object": job("a", 9)},
    ]
    informer = Informer(Scripted([[]], [stream]), "/jobs", kind="Job", api_version="batch/v1")
    await informer.relist()
    await informer.follow()
    informer.add("b/a", job("a", 8))  # the create's answer, late
    assert "b/a" not in informer.items
    informer.forget("b/a")  # we deleted it ourselves; a new create is a new object
    informer.add("b/a", job("a", 12))
    assert informer.items["b/a"]["metadata"]["resourceVersion"] == "12"


async def test_a_late_deleted_event_leaves_the_object_created_again_since() -> None:
    # we deleted "a" and created it again; the create's answer (version 12) is cached before
    # the watch hands on the old object's DELETED (version 9), as when echoes are read late
    informer = Informer(Scripted([[job("a", 5)]], []), "/jobs", kind="Job", api_version="batch/v1")
    await informer.relist()
    informer.forget("b/a")
    informer.add("b/a", job("a", 12))
    informer.source.streams.append([{"type": "DELETED", "object": job("a", 9)}])  # type: ignore[attr-defined]
    await informer.follow()
    assert informer.items["b/a"]["metadata"]["resourceVersion"] == "12"
    informer.source.streams.append([{"type": "DELETED", "object": job("a", 13)}])  # type: ignore[attr-defined]
    await informer.follow()
    assert "b/a" not in informer.items
