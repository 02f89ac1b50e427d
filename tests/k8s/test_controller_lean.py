"""The controller's own CPU per pass at fleet scale (issue 14 item 5, bench/controller.md,
"Per-request and per-workload CPU"): what a step does once per held workload, it does once.

- A step scans the held workloads once: the fail-open scan leaves the earliest latest start
  to the loop's wake-up, which scanned every held workload again.
- The per-object error containment logs, counts and swallows as before (a carbonshift error
  as a warning, a bug with its traceback), and lets cancellation through.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from carbonshift.errors import TemporaryError
from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.config import parse_config
from carbonshift.k8s.intent import DEADLINE, HOLD_GATE, RUNTIME
from carbonshift.k8s.reconciler import Controller
from tests.k8s.objects import pod

Obj = dict[str, Any]
NOW = datetime(2023, 6, 1, 12, tzinfo=UTC)


class NoApi:
    """A client the controller must not call in these tests."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the API was called: {name}")


def held_pod(name: str, deadline: datetime, version: str = "7") -> Obj:
    obj = pod(
        name,
        annotations={DEADLINE: f"{deadline:%Y-%m-%dT%H:%M:%SZ}", RUNTIME: "1h"},
        gates=[HOLD_GATE],
        created="2023-06-01T11:00:00Z",
    )
    obj["metadata"]["resourceVersion"] = version
    return obj


def _wake_ups(monkeypatch: pytest.MonkeyPatch, clock: ExternalClock) -> list[datetime]:
    """The moments the controller sleeps until from now on (it returns at once)."""
    woke_at: list[datetime] = []

    async def sleep_until(moment: datetime) -> None:
        woke_at.append(moment)

    monkeypatch.setattr(clock, "sleep_until", sleep_until)
    return woke_at


def controller_with(objects: list[Obj]) -> tuple[Controller, ExternalClock]:
    config = parse_config(
        {
            "cluster": {"zone": "DE", "resources": ["cpu"], "watts_per_unit": {"cpu": 10.0}},
            "webhook": {"enabled": False},
            "extender": {"enabled": False},
            "metrics": {"port": 0},
        }
    )
    clock = ExternalClock(lambda: NOW, poll_s=3600.0)
    controller = Controller(config, NoApi(), clock)
    for obj in objects:
        meta = obj["metadata"]
        controller.pods[f"Pod/{meta['namespace']}/{meta['name']}"] = obj
    return controller, clock


async def test_a_step_scans_the_held_workloads_once_for_fail_open_and_wake_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # latest starts 13:00 and 15:00 (deadline minus the 1 h runtime), the next plan at 14:00
    controller, clock = controller_with(
        [held_pod("late", NOW + timedelta(hours=4)), held_pod("soon", NOW + timedelta(hours=2))]
    )
    controller._next_plan = NOW + timedelta(hours=2)
    scans: list[int] = []
    original = Controller._held_objects

    def counted(self: Controller) -> list[Obj]:
        found = original(self)
        scans.append(len(found))
        return found

    monkeypatch.setattr(Controller, "_held_objects", counted)
    woke_at = _wake_ups(monkeypatch, clock)

    await controller._fail_open(NOW)  # nothing due yet: nothing released, no request
    await controller._sleep_until_due()

    want_wake = NOW + timedelta(hours=1)  # "soon"'s latest start, before the next plan
    assert woke_at == [want_wake]
    assert scans == [2], "the wake-up scanned the held workloads again"


async def test_the_wake_up_scans_when_no_fail_open_scan_ran_since_it_last_slept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    controller, clock = controller_with([held_pod("soon", NOW + timedelta(hours=2))])
    controller._next_plan = NOW + timedelta(hours=3)
    woke_at = _wake_ups(monkeypatch, clock)
    await controller._fail_open(NOW)
    await controller._sleep_until_due()
    # a workload arrived without a step between: the next wake-up reads the caches again
    controller.pods["Pod/batch/sooner"] = held_pod("sooner", NOW + timedelta(minutes=90))
    await controller._sleep_until_due()
    assert woke_at == [NOW + timedelta(hours=1), NOW + timedelta(minutes=30)]


async def test_with_nothing_held_the_loop_sleeps_until_the_next_plan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    controller, clock = controller_with([])
    controller._next_plan = NOW + timedelta(hours=1)
    woke_at = _wake_ups(monkeypatch, clock)
    await controller._fail_open(NOW)
    await controller._sleep_until_due()
    assert woke_at == [NOW + timedelta(hours=1)]


CONTAINED_CASES = [
    pytest.param(TemporaryError("the API is away"), logging.WARNING, False, id="carbonshift-error"),
    pytest.param(RuntimeError("a bug"), logging.ERROR, True, id="a-bug-with-its-traceback"),
]


@pytest.mark.parametrize(("raised", "want_level", "want_traceback"), CONTAINED_CASES)
async def test_an_error_for_one_object_is_logged_counted_and_swallowed(
    raised: Exception, want_level: int, want_traceback: bool, caplog: pytest.LogCaptureFixture
) -> None:
    obj = held_pod("cursed", NOW + timedelta(hours=4))
    controller, _ = controller_with([obj])
    with caplog.at_level(logging.INFO, logger="carbonshift.k8s"):
        async with controller._contained("act", obj):
            raise raised
    registry = controller.metrics.registry
    assert registry.get_sample_value("carbonshift_errors_total", {"stage": "act"}) == 1.0
    [record] = [r for r in caplog.records if "Pod/batch/cursed" in r.getMessage()]
    assert record.levelno == want_level
    assert record.getMessage().startswith("act of Pod/batch/cursed failed")
    assert (record.exc_info is not None) == want_traceback


async def test_cancellation_is_not_contained() -> None:
    controller, _ = controller_with([])
    with pytest.raises(asyncio.CancelledError):
        async with controller._contained("act", "Pod/batch/x"):
            raise asyncio.CancelledError
    registry = controller.metrics.registry
    assert not registry.get_sample_value("carbonshift_errors_total", {"stage": "act"})
