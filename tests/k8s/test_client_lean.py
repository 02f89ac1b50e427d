"""The client's CPU per request (issue 14 item 5, bench/controller.md, "Per-request and
per-workload CPU"): bodies serialised by orjson when installed, with what ``json.dumps``
refuses still refused (the body then goes through the library's walk, as before); the
encoded query of repeating query names kept, not encoded again per request."""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
from datetime import UTC, datetime
from typing import Any

import pytest

from carbonshift.k8s import client
from carbonshift.k8s.client import DirectSend, dump_json


@dataclasses.dataclass
class _Point:
    x: int


BODY_CASES = [
    pytest.param({"metadata": {"annotations": {"a": "1"}}}, id="merge-patch"),
    pytest.param([{"op": "add", "path": "/metadata/labels/b", "value": "2"}], id="json-patch"),
    pytest.param({"a": [1, 2.5, "é", None, True, False, -3]}, id="every-json-type"),
    pytest.param({"big": 2**70}, id="an-integer-past-64-bits"),
    pytest.param({"a": (1, 2)}, id="a-tuple-as-a-list"),
]


@pytest.mark.parametrize("body", BODY_CASES)
def test_a_body_is_the_json_that_json_dumps_makes(body: Any) -> None:
    assert json.loads(dump_json(body)) == json.loads(json.dumps(body))


REFUSED_CASES = [
    pytest.param({"when": datetime(2023, 6, 1, tzinfo=UTC)}, id="a-datetime"),
    pytest.param({"point": _Point(1)}, id="a-dataclass"),
    pytest.param({1: "x"}, id="a-key-that-is-not-a-string"),
    pytest.param({"a": object()}, id="an-object"),
]


@pytest.mark.parametrize("body", REFUSED_CASES)
def test_what_plain_json_cannot_say_is_refused_for_the_librarys_walk(body: Any) -> None:
    # json.dumps would write {1: "x"} with a string key: orjson's refusal sends it through
    # the library's walk, which gives the same JSON
    with pytest.raises(TypeError):
        dump_json(body)


def test_without_orjson_bodies_go_through_json_dumps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client, "_orjson", None)
    assert dump_json({"a": [1, "x"]}) == json.dumps({"a": [1, "x"]}).encode()
    with pytest.raises(TypeError):
        dump_json({"when": datetime(2023, 6, 1, tzinfo=UTC)})


def _direct() -> DirectSend:
    """A :class:`DirectSend` for its query encoding, without a library client behind it."""
    direct = DirectSend.__new__(DirectSend)
    direct._queries = {}
    return direct


QUERY_CASES = [
    pytest.param([("fieldManager", "carbonshift")], True, id="a-write"),
    pytest.param([("fieldManager", "kueue-admission"), ("force", "true")], True, id="an-apply"),
    pytest.param([("labelSelector", "app!=x"), ("limit", "500")], True, id="a-list"),
    pytest.param([("limit", "500"), ("continue", "eyJ2Ijoi")], False, id="a-list-page"),
    pytest.param(
        [("watch", "true"), ("resourceVersion", "41"), ("allowWatchBookmarks", "true")],
        False,
        id="a-watch",
    ),
]


@pytest.mark.parametrize(("queries", "want_kept"), QUERY_CASES)
def test_a_query_is_encoded_as_urlencode_and_kept_only_when_it_repeats(
    queries: list[tuple[str, str]], want_kept: bool
) -> None:
    direct = _direct()
    want = urllib.parse.urlencode(queries)
    assert direct._query_string(queries) == want
    assert direct._query_string(list(queries)) == want
    assert (tuple(queries) in direct._queries) == want_kept


def test_kept_queries_are_bounded() -> None:
    direct = _direct()
    for i in range(1000):
        direct._query_string([("labelSelector", f"app={i}")])
    assert len(direct._queries) == client._REMEMBERED_QUERIES
    assert direct._query_string([("labelSelector", "app=999")]) == "labelSelector=app%3D999"
