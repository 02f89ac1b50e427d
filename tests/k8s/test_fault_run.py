"""Reproducers of what the fault runs (bench/fault_run.py) found, and a short fault run.

- a refused note (409, or 503s past the client's retries) was never tried again: the
  controller remembered it as written;
- a held Job whose release write was refused was then noted ``not-held``, and a suspended Job
  noted so is not held by carbonshift any more: it was never released (lost);
- a gated workload whose intent is unusable was released without the ``not-held`` note when
  its watch event released it; the note waited for the next planning pass, and a workload
  that ended before it was never noted; nor was one that ended before the controller saw it;
- a reason quoted the whole bad value (20,000 characters in the fault run);
- durations, FLUIDOS hours and powers in Arabic-Indic or fullwidth digits were read as
  numbers (``re`` without ``re.ASCII``; ``float("١٢")`` is 12).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from carbonshift.errors import InputError
from carbonshift.k8s.client import connect
from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.config import parse_config
from carbonshift.k8s.intent import HOLD_GATE, NotHeld, read_intent
from carbonshift.k8s.reconciler import Controller
from carbonshift.units import parse_duration
from fakekube import FakeKube
from fakekube.faults import Fault
from tests.k8s.harness import controller_config, make_harness
from tests.k8s.objects import job, pod

START = datetime(2023, 6, 1, tzinfo=UTC)
pytestmark = pytest.mark.fakekube_config(start=START, nodes=1, cpu="8")
STATE = "carbonshift.io/state"
REASON = "carbonshift.io/reason"
CONFIG: dict[str, Any] = {
    "cluster": {"zone": "DE", "resources": ["cpu"], "watts_per_unit": {"cpu": 10.0}},
    "planning": {"policy": "fluidos", "forecast": "oracle", "min_saving_g": 0},
    "webhook": {"enabled": False},
    "extender": {"enabled": False},
    "metrics": {"enabled": False},
    "leader_election": {"enabled": False},
}


@contextlib.asynccontextmanager
async def _controller(fakekube: FakeKube) -> AsyncIterator[Controller]:
    clock = ExternalClock(fakekube.now)
    kube = await connect(str(fakekube.kubeconfig), clock)
    try:
        yield Controller(parse_config(CONFIG), kube, clock)
    finally:
        await kube.close()


def _created(obj: dict[str, Any]) -> dict[str, Any]:
    obj = dict(obj)
    meta = dict(obj["metadata"])
    for key in ("uid", "creationTimestamp"):
        meta.pop(key, None)
    obj["metadata"] = meta
    return obj


def _namespace(fakekube: FakeKube) -> None:
    fakekube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "batch"}})


@pytest.mark.parametrize(
    "fault",
    [Fault(code=409, verb="patch", times=1), Fault(code=503, verb="patch", times=7)],
    ids=["conflict", "503-past-the-retries"],
)
async def test_a_refused_note_is_written_on_a_later_pass(fakekube: FakeKube, fault: Fault) -> None:
    _namespace(fakekube)
    fakekube.create(
        _created(pod("bad", annotations={"carbonshift.io/expected-runtime": "9999999d"}))
    )
    async with _controller(fakekube) as controller:
        fakekube.add_fault(fault)
        await controller.plan_pass()
        await controller.plan_pass()

    notes = fakekube.get("Pod", "bad", "batch")["metadata"]["annotations"]
    assert notes.get(STATE) == "not-held"
    assert "longer than 3660 days" in notes.get(REASON, "")


async def test_a_held_job_whose_release_was_refused_is_released_later(
    fakekube: FakeKube,
) -> None:
    _namespace(fakekube)
    held = {STATE: "held", "carbonshift.io/expected-runtime": "9999999d"}
    fakekube.create(_created(job("stuck", annotations=held, suspend=True)))
    async with _controller(fakekube) as controller:
        fakekube.add_fault(Fault(code=503, verb="patch", times=7))  # the release, 7 tries
        await controller.plan_pass()
        await controller.plan_pass()

    got = fakekube.get("Job", "stuck", "batch", "batch/v1")
    assert got["spec"]["suspend"] is False
    assert "carbonshift.io/released-at" in got["metadata"]["annotations"]
    assert got["metadata"]["annotations"][STATE] == "not-held"


async def test_a_gated_unusable_workload_is_noted_when_released(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    h = await make_harness(fakekube, tmp_path)
    await h.start(controller_config(h.certs))
    try:
        notes = {"carbonshift.io/expected-runtime": "15m", "carbonshift.io/power-watts": "nan"}
        await h.create(_created(pod("gated", annotations=notes, gates=[HOLD_GATE], created=None)))
        await h.step()
        await h.step(minutes=20)  # it ran and ended before the next planning pass
        await h.step(minutes=60)
        got = await h.get("Pod", "gated")
        events = await asyncio.to_thread(fakekube.list, "Event", "batch")
    finally:
        await h.stop()

    assert got["status"]["phase"] == "Succeeded"
    assert got["metadata"]["annotations"][STATE] == "not-held"
    assert "finite power" in got["metadata"]["annotations"][REASON]
    assert [e["reason"] for e in events if e["reason"] == "UnusableIntent"] == ["UnusableIntent"]


async def test_an_unusable_workload_that_ended_before_it_was_seen_is_noted(
    fakekube: FakeKube,
) -> None:
    _namespace(fakekube)
    notes = {"carbonshift.io/expected-runtime": "00000m"}  # the fake's kubelet: ends at once
    fakekube.create(_created(pod("instant", annotations=notes)))
    fakekube.settle()
    assert fakekube.get("Pod", "instant", "batch")["status"]["phase"] == "Succeeded"
    async with _controller(fakekube) as controller:
        await controller.plan_pass()

    got = fakekube.get("Pod", "instant", "batch")["metadata"]["annotations"]
    assert got.get(STATE) == "not-held"
    assert "must be longer than 0s" in got.get(REASON, "")


@pytest.mark.parametrize(
    "text",
    ["١٢h", "۱۲h", "１２h", "१२m", "1٫5h"],
    ids=["arabic-indic", "persian", "fullwidth", "devanagari", "arabic-decimal"],
)
def test_durations_take_only_ascii_digits(text: str) -> None:
    with pytest.raises(InputError, match="is not a duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("annotation", "value", "want_in_reason"),
    [
        ("carbonshift.io/expected-runtime", "١h", "not a duration"),
        ("carbonshift.io/deadline", "١٢h", "neither an RFC 3339 time nor a duration"),
        ("carbonshift.io/deadline", "٢٠٢٣-06-02T00:00:00Z", "neither an RFC 3339 time"),
        ("fluidos-intent-deadline", "٦", "number of hours"),
        ("carbonshift.io/power-watts", "٣٥٠", "finite power"),
        ("carbonshift.io/power-watts", "1_000", "finite power"),
    ],
    ids=["runtime", "deadline-duration", "deadline-time", "fluidos", "power", "power-underscore"],
)
def test_intents_in_foreign_digits_are_unusable(
    annotation: str, value: str, want_in_reason: str
) -> None:
    got = read_intent(pod(annotations={annotation: value}), parse_config(CONFIG), START)

    assert isinstance(got, NotHeld)
    assert got.unusable
    assert want_in_reason in got.reason


#: A Lease renewal the API refuses (a 409, or 5xx past the client's retries) makes the
#: leader step down until its next renewal, 5 s later (``leader_election.renew_every_s``),
#: where it takes its own Lease back; a workload due in between starts that much late. The
#: fault run injects those often (a burst of 30 consecutive 503s, 5 % of Lease updates 409).
MAX_LATE_S = 30.0


@pytest.mark.e2e
async def test_a_short_fault_run_loses_duplicates_and_crashes_nothing() -> None:
    from bench.fault_run import FaultRun, run_faults

    result = await run_faults(FaultRun(seed=3, workloads=48, steps=24, step_timeout_s=60.0))

    assert result["tally"]["workloads"] == 48
    assert result["tally"]["started"] > 24
    assert result["lost"] == []
    assert result["duplicated"] == []
    assert result["unreported"] == []
    assert result["tracebacks"] == 0, result["traceback_samples"]
    assert result["hangs"] == []
    assert result["probe_5xx"] == []
    assert result["max_late_s"] <= MAX_LATE_S, result["late"]


def test_a_reason_quoting_a_huge_value_stays_short() -> None:
    # the fault run wrote 20,000-character reasons; a 200 kB annotation copied into
    # carbonshift.io/reason would pass the API server's 256 kB limit on annotations
    huge = "1" * 200_000 + "h"
    got = read_intent(
        pod(annotations={"carbonshift.io/expected-runtime": huge}), parse_config(CONFIG), START
    )

    assert isinstance(got, NotHeld)
    assert len(got.reason) <= 400
    assert got.reason.startswith("unusable carbonshift.io/expected-runtime: annotation")
    assert got.reason.endswith("give a shorter duration like 12h")
    assert "characters left out" in got.reason
