"""The act phase sends the hold writes of consecutive held workloads a few at a time
(``ActPhase.hold_writes_in_flight``) and keeps what one write at a time gave: the same
requests, the same Events in plan order, the same annotations, a conflict counted on its
workload alone. Requests are counted at ``ApiKube._send``, never timed."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from carbonshift.k8s.client import ApiKube, ConflictError
from carbonshift.k8s.keys import PLANNED_CLUSTER, PLANNED_START
from carbonshift.k8s.multicluster import HubConfig
from carbonshift.k8s.multicluster.acting import ActPhase
from tests.multicluster.harness import HOLD_OFF, fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)
FLUIDOS = HubConfig.model_validate(
    {"planning": {"policy": "fluidos", "forecast": "oracle", **HOLD_OFF}}
)


_SEND = ApiKube._send
JOB_PATH = "/apis/batch/v1/namespaces/batch/jobs/"


class InFlight:
    """The requests every ApiKube sends, and the most PATCHes of hub Jobs in flight at once."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 0
        self.most = 0
        self.sent: Counter[str] = Counter()
        original = _SEND

        async def counting(kube: ApiKube, method: str, path: str, **kwargs: Any) -> Any:
            self.sent[f"{method} {path}"] += 1
            if method != "PATCH" or not path.startswith(JOB_PATH):
                return await original(kube, method, path, **kwargs)
            self.now += 1
            self.most = max(self.most, self.now)
            try:
                await asyncio.sleep(0)  # let the others of a window start
                return await original(kube, method, path, **kwargs)
            finally:
                self.now -= 1

        monkeypatch.setattr(ApiKube, "_send", counting)


async def _start(
    monkeypatch: pytest.MonkeyPatch, in_flight: int, conflict_on: str = ""
) -> tuple[InFlight, list[tuple[str, str, str]], dict[str, dict[str, str]], dict[str, int]]:
    """One start of the hub over 11 held Jobs and 2 due at once, interleaved; answers the
    PATCHes, the Events (key, what, cluster), each Job's plan annotations and the tallies."""
    monkeypatch.setattr(ActPhase, "hold_writes_in_flight", in_flight)
    async with fleet(START, config=FLUIDOS) as f:
        for i in range(13):
            due = i in (4, 9)
            await f.create(
                f.hub,
                hub_job(f"j{i:02d}", cpu=1, runtime_h=2, deadline_h=2 if due else 30),
            )
        controller = await f.start_controller()
        if conflict_on:
            real = controller._annotate

            async def conflicting(w: Any, annotations: Any) -> Any:
                if w.key.endswith(conflict_on):
                    raise ConflictError(409, "the object has been modified", "Conflict")
                return await real(w, annotations)

            monkeypatch.setattr(controller, "_annotate", conflicting)
        counted = InFlight(monkeypatch)
        await f.step(0)
        events = [(e.key, e.what, e.cluster) for e in controller.events]
        plans = {}
        for i in range(13):
            meta = (await f.get(f.hub, "Job", f"j{i:02d}", "batch", "batch/v1"))["metadata"]
            notes = meta.get("annotations") or {}
            plans[meta["name"]] = {k: notes.get(k, "") for k in (PLANNED_CLUSTER, PLANNED_START)}
        tallies = {"conflicts": controller.counters.conflicts}
    return counted, events, plans, tallies


async def test_hold_writes_go_a_few_at_a_time_with_the_same_requests_events_and_plans(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one, want_events, want_plans, _ = await _start(monkeypatch, in_flight=1)
    some, events, plans, _ = await _start(monkeypatch, in_flight=4)
    assert one.most == 1
    assert 1 < some.most <= 4
    assert some.sent == one.sent
    assert events == want_events
    assert [what for _, what, _ in events].count("planned") == 11
    assert plans == want_plans


async def test_a_conflict_on_one_hold_is_counted_as_one_at_a_time_and_spares_its_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, want_events, want_plans, want_tallies = await _start(
        monkeypatch, in_flight=1, conflict_on="j02"
    )
    _, events, plans, tallies = await _start(monkeypatch, in_flight=4, conflict_on="j02")
    assert tallies == want_tallies
    assert tallies["conflicts"] >= 1
    assert events == want_events
    assert plans == want_plans
    assert plans["j02"][PLANNED_START] == ""
    assert all(plans[f"j{i:02d}"][PLANNED_START] for i in (0, 1, 3, 5, 6, 7, 8, 10, 11, 12))
