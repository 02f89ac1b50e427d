"""Once its watches run, the controller plans from the caches they keep: no list per pass.

A relist of every Pod, Job and Node per planning period is what the scale target (10,000
held workloads, a client's 5 requests/s) rules out; a watch that fails or answers 410
relists on its own. A write's answer never replaces a newer copy the watch already brought.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from carbonshift.k8s.client import ApiKube
from carbonshift.k8s.reconciler import _older
from fakekube import FakeKube
from tests.k8s.harness import controller_config, make_harness
from tests.k8s.objects import pod

START = datetime(2023, 6, 1, tzinfo=UTC)


@pytest.mark.fakekube_config(start=START, nodes=2, cpu="8")
async def test_planning_periods_list_nothing_once_the_watches_run(
    fakekube: FakeKube, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = await make_harness(fakekube, tmp_path)
    await h.start(controller_config(h.certs))
    try:
        spec = {"carbonshift.io/deadline": "20h", "carbonshift.io/expected-runtime": "2h"}
        for i in range(3):
            body = pod(f"p{i}", created=None, annotations=spec)
            for key in ("uid", "creationTimestamp"):
                body["metadata"].pop(key, None)
            await h.create(body)
        sent: list[tuple[str, str, dict[str, str]]] = []
        original = ApiKube._send

        async def counting(kube: ApiKube, method: str, path: str, **kwargs: Any) -> Any:
            sent.append((method, path, dict(kwargs.get("query") or {})))
            return await original(kube, method, path, **kwargs)

        monkeypatch.setattr(ApiKube, "_send", counting)
        for _ in range(3):
            await h.step(hours=1)

        lists = [
            (m, p)
            for m, p, q in sent
            if m == "GET" and p.endswith(("/pods", "/jobs", "/nodes")) and q.get("watch") != "true"
        ]
        assert lists == []
        assert h.controller.rounds >= 3  # the periods did plan
        held = (await h.get("Pod", "p0"))["metadata"]["annotations"]
        assert held["carbonshift.io/state"] in ("held", "released")
    finally:
        await h.stop()


def meta(rv: str) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": rv}}


OLDER_CASES = [
    ("an answer behind the watch's copy", meta("1416"), meta("1419"), True),
    ("the same version", meta("1419"), meta("1419"), False),
    ("an answer ahead of the cache", meta("1420"), meta("1419"), False),
    ("nothing cached", meta("1419"), None, False),
    ("versions that are no integers", meta("abc"), meta("1419"), False),
]


@pytest.mark.parametrize(
    ("answer", "cached", "want_older"),
    [(a, c, w) for _, a, c, w in OLDER_CASES],
    ids=[i for i, _, _, _ in OLDER_CASES],
)
def test_a_write_answer_older_than_the_cached_copy_is_not_kept(
    answer: dict[str, Any], cached: dict[str, Any] | None, want_older: bool
) -> None:
    assert _older(answer, cached) is want_older


KEEP_CASES = [
    ("an answer behind the watch's copy", {"Pod/b/p": meta("7")}, meta("5"), True, "7"),
    ("an answer ahead of the cache", {"Pod/b/p": meta("5")}, meta("7"), True, "7"),
    ("an object the watch saw deleted", {}, meta("7"), True, None),
    ("no watch running: the next pass relists", {}, meta("7"), False, "7"),
]


@pytest.mark.parametrize(
    ("cache", "answer", "watching", "want_rv"),
    [(c, a, w, r) for _, c, a, w, r in KEEP_CASES],
    ids=[i for i, _, _, _, _ in KEEP_CASES],
)
def test_a_write_answer_is_cached_only_when_it_is_the_newest_copy(
    cache: dict[str, Any], answer: dict[str, Any], watching: bool, want_rv: str | None
) -> None:
    from carbonshift.k8s.clock import ExternalClock
    from carbonshift.k8s.config import parse_config
    from carbonshift.k8s.reconciler import Controller

    no_api: Any = None  # _keep makes no request
    controller = Controller(
        parse_config({"cluster": {"zone": "DE"}}), no_api, ExternalClock(lambda: START)
    )
    controller._watching = watching
    controller.pods.update(cache)

    controller._keep(controller.pods, "Pod/b/p", answer, "Pod")

    got = controller.pods.get("Pod/b/p")
    assert (None if got is None else got["metadata"]["resourceVersion"]) == want_rv
