"""Watches: resume from a resourceVersion, bookmarks, 410 Gone, selectors, dropped streams."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from fakekube import FakeKube
from tests.testing.builders import MERGE, PODS, pod


def events(http: httpx.Client, query: str) -> Iterator[dict[str, Any]]:
    """Watch events, one per line, until the server ends the stream."""
    with http.stream("GET", f"{PODS}?watch=true&{query}") as stream:
        for line in stream.iter_lines():
            if line:
                yield json.loads(line)


def test_watch_from_a_resource_version_replays_later_changes(http: httpx.Client) -> None:
    start = http.post(PODS, json=pod("a", gates=("g",))).json()["metadata"]["resourceVersion"]
    http.patch(f"{PODS}/a", json={"metadata": {"labels": {"x": "1"}}}, headers=MERGE)
    http.post(PODS, json=pod("b", gates=("g",)))
    http.delete(f"{PODS}/b")

    seen = [
        (e["type"], e["object"]["metadata"]["name"])
        for e in events(http, f"resourceVersion={start}&timeoutSeconds=1")
    ]

    assert seen == [("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "b")]


def test_watch_without_a_resource_version_starts_with_the_current_state(http: httpx.Client) -> None:
    http.post(PODS, json=pod("a", gates=("g",)))

    first = next(events(http, "timeoutSeconds=1"))

    assert first["type"] == "ADDED"
    assert first["object"]["metadata"]["name"] == "a"
    assert first["object"]["apiVersion"] == "v1"


def test_watch_from_a_compacted_resource_version_is_gone(
    http: httpx.Client, fakekube: FakeKube
) -> None:
    start = http.post(PODS, json=pod("a", gates=("g",))).json()["metadata"]["resourceVersion"]
    http.patch(f"{PODS}/a", json={"metadata": {"labels": {"x": "1"}}}, headers=MERGE)
    fakekube.compact()

    seen = list(events(http, f"resourceVersion={start}&timeoutSeconds=1"))

    assert len(seen) == 1
    assert seen[0]["type"] == "ERROR"
    assert seen[0]["object"]["code"] == 410
    assert seen[0]["object"]["reason"] == "Expired"
    assert seen[0]["object"]["message"].startswith(f"too old resource version: {start} (")


@pytest.mark.fakekube_config(event_window=5)
def test_the_event_window_is_bounded(http: httpx.Client) -> None:
    start = http.post(PODS, json=pod("a", gates=("g",))).json()["metadata"]["resourceVersion"]
    for i in range(6):
        http.patch(f"{PODS}/a", json={"metadata": {"labels": {"i": str(i)}}}, headers=MERGE)
    recent = http.get(f"{PODS}/a").json()["metadata"]["resourceVersion"]

    too_old = list(events(http, f"resourceVersion={start}&timeoutSeconds=1"))
    recent_enough = list(events(http, f"resourceVersion={int(recent) - 2}&timeoutSeconds=1"))

    assert [e["type"] for e in too_old] == ["ERROR"]
    assert [e["type"] for e in recent_enough] == ["MODIFIED", "MODIFIED"]


def test_bookmarks_carry_the_current_resource_version(
    http: httpx.Client, fakekube: FakeKube
) -> None:
    rv = http.post(PODS, json=pod("a", gates=("g",))).json()["metadata"]["resourceVersion"]
    with http.stream(
        "GET", f"{PODS}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=2"
    ) as stream:
        fakekube.send_bookmarks()
        line = next(line for line in stream.iter_lines() if line)
    event = json.loads(line)

    assert event["type"] == "BOOKMARK"
    assert event["object"]["kind"] == "Pod"
    assert event["object"]["metadata"]["resourceVersion"] == str(fakekube.resource_version)


def test_leaving_a_label_selection_is_a_deleted_event(http: httpx.Client) -> None:
    start = http.post(PODS, json=pod("a", gates=("g",), labels={"managed": "yes"})).json()[
        "metadata"
    ]["resourceVersion"]
    http.patch(f"{PODS}/a", json={"metadata": {"labels": {"managed": "no"}}}, headers=MERGE)
    http.patch(f"{PODS}/a", json={"metadata": {"labels": {"managed": "yes"}}}, headers=MERGE)

    seen = [
        e["type"]
        for e in events(http, f"resourceVersion={start}&labelSelector=managed=yes&timeoutSeconds=1")
    ]

    assert seen == ["DELETED", "ADDED"]


def test_field_selected_watch_follows_one_object(http: httpx.Client) -> None:
    start = http.post(PODS, json=pod("a", gates=("g",))).json()["metadata"]["resourceVersion"]
    http.post(PODS, json=pod("b", gates=("g",)))
    http.patch(f"{PODS}/a", json={"metadata": {"labels": {"x": "1"}}}, headers=MERGE)

    seen = [
        e["object"]["metadata"]["name"]
        for e in events(
            http, f"resourceVersion={start}&fieldSelector=metadata.name=a&timeoutSeconds=1"
        )
    ]

    assert seen == ["a"]


def test_dropped_watches_end_the_stream(http: httpx.Client, fakekube: FakeKube) -> None:
    rv = http.post(PODS, json=pod("a", gates=("g",))).json()["metadata"]["resourceVersion"]
    with http.stream("GET", f"{PODS}?watch=true&resourceVersion={rv}&timeoutSeconds=30") as stream:
        dropped = fakekube.drop_watches()
        remaining = [line for line in stream.iter_lines() if line]

    assert dropped == 1
    assert remaining == []
