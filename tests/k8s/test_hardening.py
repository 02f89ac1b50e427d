"""Hostile values never crash, stall or switch off the controller (issue 12, items 1, 5, 6, 12).

Reproducers: one annotation (``deadline: "0001-01-01T00:00:00Z"``, ``"9999999d"``,
``expected-runtime: "1000000000000d"``, 400 nines and ``d``) raised ``OverflowError`` out of
``read_intent`` and ended the controller; ``expected-runtime: 1000000d`` made a pass take
minutes and gigabytes (the horizon followed it); one unschedulable Pending Pod counted as
used capacity for the whole horizon, so every later workload fell back to its latest start.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carbonshift.errors import InputError
from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.config import parse_config
from carbonshift.k8s.intent import MAX_SPAN, Intent, NotHeld, parse_quantity, read_intent
from carbonshift.k8s.planner import horizon_slots
from carbonshift.k8s.reconciler import Controller
from carbonshift.units import parse_utc
from fakekube import FakeKube
from tests.k8s.harness import controller_config, make_harness
from tests.k8s.objects import job, pod

CONFIG = parse_config({"cluster": {"resources": ["cpu", "memory"]}})
NOW = datetime(2023, 11, 14, 6, tzinfo=UTC)
START = datetime(2023, 6, 1, tzinfo=UTC)
DEADLINE = "carbonshift.io/deadline"
RUNTIME = "carbonshift.io/expected-runtime"
POWER = "carbonshift.io/power-watts"


# -- item 1: read_intent never raises ------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "want_annotation", "want_in_reason"),
    [
        ({DEADLINE: "0001-01-01T00:00:00Z"}, DEADLINE, "between 1970 and 9000"),
        ({DEADLINE: "9999-12-31T23:59:59-01:00"}, DEADLINE, "between 1970 and 9000"),
        ({DEADLINE: "0001-01-01T00:00:00+01:00"}, DEADLINE, "between 1970 and 9000"),
        ({DEADLINE: "9999999d"}, DEADLINE, "longer than 3660 days"),
        ({RUNTIME: "1000000000000d"}, RUNTIME, "longer than 3660 days"),
        ({RUNTIME: "9" * 400 + "d"}, RUNTIME, "longer than 3660 days"),
        ({RUNTIME: "1000000d"}, RUNTIME, "longer than 3660 days"),
        ({RUNTIME: "200h"}, RUNTIME, "max_horizon_hours = 168 h"),
        ({POWER: "1e400"}, POWER, "finite power"),
        ({POWER: "inf"}, POWER, "finite power"),
        ({"fluidos-intent-deadline": "nan"}, "fluidos-intent-deadline", "number of hours"),
    ],
    ids=[
        "deadline-year-one",
        "deadline-shifts-past-9999",
        "deadline-shifts-before-year-one",
        "deadline-ten-million-days",
        "runtime-trillion-days",
        "runtime-400-nines",
        "runtime-million-days",
        "runtime-past-the-horizon-cap",
        "power-overflows-to-infinity",
        "power-infinite",
        "fluidos-nan",
    ],
)
def test_reproducers_are_unusable_not_fatal(
    annotations: dict[str, str], want_annotation: str, want_in_reason: str
) -> None:
    got = read_intent(pod(annotations=annotations), CONFIG, NOW)

    assert isinstance(got, NotHeld)
    assert got.unusable
    assert got.annotation == want_annotation
    assert want_in_reason in got.reason


def _with(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    node = obj
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return obj


@pytest.mark.parametrize(
    ("obj", "want_annotation"),
    [
        (_with(pod(), ("metadata", "creationTimestamp"), "0001-01-01T00:00:00+05:00"),
         "metadata.creationTimestamp"),
        (_with(job(), ("spec", "parallelism"), "many"), "resources.requests"),
        (_with(job(), ("spec", "parallelism"), True), "resources.requests"),
        (_with(pod(), ("metadata", "annotations"), ["not", "a", "map"]), "object"),
        (_with(pod(), ("spec", "containers"), [{"resources": "cpu=1"}]), "object"),
        (_with(pod(), ("metadata", "labels"), {"carbonshift.io/managed": 1}),
         "carbonshift.io/managed"),
    ],
    ids=["created-before-year-one", "parallelism-word", "parallelism-bool", "annotations-list",
         "resources-string", "label-not-a-string"],
)  # fmt: skip
def test_malformed_objects_are_unusable_not_fatal(
    obj: dict[str, Any], want_annotation: str
) -> None:
    got = read_intent(obj, CONFIG, NOW)

    assert isinstance(got, NotHeld)
    assert got.unusable
    assert got.annotation == want_annotation


_NUMBER = st.one_of(
    st.integers(min_value=0, max_value=10**30).map(str),
    st.just("9" * 400),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str),
)
_DURATION = st.builds(
    lambda n, unit: f"{n}{unit}",
    _NUMBER,
    st.sampled_from(["s", "m", "h", "d", "min", "w", "y", ""]),
)
_EDGE_TIMES = st.sampled_from(
    [
        "0001-01-01T00:00:00Z",
        "0001-01-01T00:00:00+14:00",
        "9999-12-31T23:59:59Z",
        "9999-12-31T23:59:59-14:00",
        "1970-01-01T00:00:00Z",
        "8999-12-31T23:59:59Z",
        "2023-02-29T00:00:00Z",
    ]
)
_TIMES = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ").rjust(20, "0"))
_VALUES = st.one_of(_DURATION, _EDGE_TIMES, _TIMES, _NUMBER, st.text(max_size=30))


@given(deadline=_VALUES, runtime=_VALUES, power=_VALUES, fluidos=_VALUES, critical=_VALUES)
@settings(max_examples=200, deadline=None)
def test_read_intent_never_raises_and_its_times_can_be_used(
    deadline: str, runtime: str, power: str, fluidos: str, critical: str
) -> None:
    annotations = {
        DEADLINE: deadline,
        RUNTIME: runtime,
        POWER: power,
        "fluidos-intent-deadline": fluidos,
        "carbonshift.io/critical": critical,
    }
    for subset in (annotations, {DEADLINE: deadline}, {RUNTIME: runtime}, {POWER: power}):
        got = read_intent(pod(annotations=subset), CONFIG, NOW)
        assert isinstance(got, Intent | NotHeld)
        if isinstance(got, Intent):  # everything the controller computes from it works
            assert timedelta(0) < got.expected_runtime <= timedelta(hours=168)
            assert datetime(1969, 1, 1, tzinfo=UTC) < got.latest_start < got.deadline
            assert got.deadline <= max(got.created + MAX_SPAN, datetime(9000, 1, 1, tzinfo=UTC))
            assert got.power_w is None or 0 <= got.power_w < float("inf")


@pytest.mark.parametrize(
    ("text", "want"),
    [("1E", Decimal(10) ** 18), ("1Ei", Decimal(2) ** 60), ("250u", Decimal("0.00025")),
     ("5n", Decimal("5e-9")), ("1e3", Decimal(1000)), (".5", Decimal("0.5"))],
    ids=["exa", "exbi", "micro", "nano", "exponent", "dot-first"],
)  # fmt: skip
def test_product_quantities_follow_the_kubernetes_grammar(text: str, want: Decimal) -> None:
    assert parse_quantity(text) == want


@given(st.text(max_size=40) | st.from_regex(r"[+-]?[0-9.]{0,30}[eE]?[+-]?[0-9]{0,12}[a-zA-Z]{0,2}"))
@settings(max_examples=300, deadline=None)
def test_product_parse_quantity_raises_only_input_error(text: str) -> None:
    try:
        got = parse_quantity(text)
    except InputError as exc:
        message = str(exc)
    else:
        message = ""
        assert 0 <= got <= 2**63
    assert "\n" not in message


# -- item 5: the horizon is capped ----------------------------------------------------------


@pytest.mark.parametrize(
    ("planning", "longest_slots", "want_slots"),
    [
        ({}, 3, 24),
        ({}, 100, 100),
        ({}, 10**9, 168),
        ({"max_horizon_hours": 48}, 10**6, 48),
        ({"slot_minutes": 15, "max_horizon_hours": 12}, 10**6, 48),
        ({"horizon_slots": 200, "max_horizon_hours": 48}, 10**6, 200),
    ],
    ids=["short-work", "fits", "capped", "configured-cap", "quarter-hours", "minimum-wins"],
)
def test_the_horizon_follows_the_longest_work_up_to_the_cap(
    planning: dict[str, Any], longest_slots: int, want_slots: int
) -> None:
    config = parse_config({"planning": planning})
    assert horizon_slots(config.planning, longest_slots) == want_slots


# -- item 6: capacity counted as the scheduler counts it -------------------------------------


def _controller() -> Controller:
    config = parse_config({"cluster": {"resources": ["cpu"]}})
    return Controller(config, kube=None, clock=ExternalClock(lambda: START))  # type: ignore[arg-type]


def test_only_bound_or_released_pods_hold_capacity() -> None:
    c = _controller()
    unschedulable = pod("huge", managed=None, cpu="100", created=None)
    bound = _with(pod("svc", managed=None, cpu="2", created=None), ("spec", "nodeName"), "n1")
    batch = _with(
        pod("batch", cpu="1", created=None, annotations={RUNTIME: "2h"}),
        ("spec", "nodeName"),
        "n1",
    )
    batch["status"] = {"phase": "Running", "startTime": "2023-06-01T00:00:00Z"}
    released = pod(
        "ours",
        cpu="3",
        created=None,
        annotations={"carbonshift.io/released-at": "2023-06-01T00:00:00Z"},
    )
    broken = _with(pod("broken", managed=None, cpu="1"), ("spec", "nodeName"), "n1")
    broken["status"] = {"startTime": "yesterday"}
    for obj in (unschedulable, bound, batch, released, broken):
        c.pods[f"Pod/batch/{obj['metadata']['name']}"] = obj

    got = {w.key: (w.demand["cpu"], w.ends) for w in c.running(START)}

    assert got == {
        "Pod/batch/svc": (2.0, None),  # a service says no end: the whole horizon
        "Pod/batch/batch": (1.0, START + timedelta(hours=2)),
        "Pod/batch/ours": (3.0, START + timedelta(hours=1)),  # default runtime from release
        "Pod/batch/broken": (1.0, None),  # an unreadable start counts from now
    }


# -- against the fake API server ------------------------------------------------------------

pytestmark_fake = pytest.mark.fakekube_config(start=START, nodes=2, cpu="8")

HOSTILE: list[dict[str, str]] = [
    {DEADLINE: "0001-01-01T00:00:00Z"},
    {DEADLINE: "9999999d"},
    {RUNTIME: "1000000000000d"},
    {RUNTIME: "9" * 400 + "d"},
    {RUNTIME: "1000000d"},
    {DEADLINE: "9999-12-31T23:59:59-01:00"},
    {POWER: "1e400"},
    {"carbonshift.io/critical": "maybe"},
]


def _fresh(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"].pop("uid", None)
    obj["metadata"].pop("creationTimestamp", None)
    return obj


@pytestmark_fake
async def test_hostile_workloads_never_stop_the_well_formed_ones(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    h = await make_harness(fakekube, tmp_path)
    app = await h.start(controller_config(h.certs))
    try:
        good = {DEADLINE: "20h", RUNTIME: "2h"}
        await h.create(_fresh(pod("good-pod", created=None, annotations=good, cpu="1")))
        await h.create(_fresh(job("good-job", created=None, annotations=good)))
        for i, notes in enumerate(HOSTILE):
            await h.create(_fresh(pod(f"bad-{i}", created=None, annotations=notes, cpu="1")))
        await h.create(
            _fresh(pod("crit", created=None, annotations={"carbonshift.io/critical": "true"}))
        )
        await h.step()
        for i in range(len(HOSTILE)):
            bad = await h.get("Pod", f"bad-{i}")
            assert "schedulingGates" not in bad["spec"]
            assert bad["metadata"]["annotations"]["carbonshift.io/state"] == "not-held"
        crit = await h.get("Pod", "crit")
        assert crit["metadata"]["annotations"]["carbonshift.io/state"] == "not-held"
        assert "critical=true" in crit["metadata"]["annotations"]["carbonshift.io/reason"]
        events = fakekube.list("Event", "batch")
        reasons = {(e["involvedObject"]["name"], e["reason"]) for e in events}
        assert ("crit", "NotHeld") in reasons
        assert all((f"bad-{i}", "UnusableIntent") in reasons for i in range(len(HOSTILE)))
        planned = parse_utc(
            (await h.get("Pod", "good-pod"))["metadata"]["annotations"][
                "carbonshift.io/planned-start"
            ]
        )
        assert START < planned <= START + timedelta(hours=18)

        released_at: dict[str, datetime] = {}
        while fakekube.now() < START + timedelta(hours=20):
            await h.step(hours=1)
            for kind, name in (("Pod", "good-pod"), ("Job", "good-job")):
                notes = (await h.get(kind, name))["metadata"]["annotations"]
                if "carbonshift.io/released-at" in notes and name not in released_at:
                    released_at[name] = parse_utc(notes["carbonshift.io/released-at"])
        assert set(released_at) == {"good-pod", "good-job"}
        assert all(at <= START + timedelta(hours=18) for at in released_at.values())
        assert released_at["good-pod"] == planned

        registry = app.metrics.registry
        unusable = sum(
            registry.get_sample_value("carbonshift_unusable_intent_total", {"annotation": a}) or 0.0
            for a in (DEADLINE, RUNTIME, POWER, "carbonshift.io/critical")
        )
        assert unusable == len(HOSTILE)  # once each, though the webhook saw them too
        assert registry.get_sample_value("carbonshift_not_held_total", {"why": "critical"}) == 1
        assert not app._tasks[-1].done()  # the reconcile loop is alive
    finally:
        await h.stop()


@pytestmark_fake
async def test_a_pass_survives_a_bug_raised_for_one_object(
    fakekube: FakeKube, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = await make_harness(fakekube, tmp_path)
    app = await h.start(controller_config(h.certs))
    original = Controller._write_plan

    async def write_plan(self: Controller, obj: dict[str, Any], *args: Any) -> None:
        if obj["metadata"]["name"] == "cursed":
            raise RuntimeError("a bug that only this object triggers")
        await original(self, obj, *args)

    monkeypatch.setattr(Controller, "_write_plan", write_plan)
    try:
        notes = {DEADLINE: "20h", RUNTIME: "2h"}
        await h.create(_fresh(pod("cursed", created=None, annotations=notes, cpu="1")))
        await h.create(_fresh(pod("fine", created=None, annotations=notes, cpu="1")))
        await h.step()
        fine = await h.get("Pod", "fine")
        assert fine["metadata"]["annotations"]["carbonshift.io/state"] == "held"
        errors = app.metrics.registry.get_sample_value("carbonshift_errors_total", {"stage": "act"})
        assert errors is not None
        assert errors >= 1.0
        while fakekube.now() < START + timedelta(hours=19):
            await h.step(hours=1)
        for name in ("cursed", "fine"):  # both released by their latest start at the latest
            got = await h.get("Pod", name)
            assert "schedulingGates" not in got["spec"]
        assert not app._tasks[-1].done()
    finally:
        await h.stop()


@pytestmark_fake
async def test_an_unschedulable_pod_does_not_switch_shifting_off(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    h = await make_harness(fakekube, tmp_path)
    await h.start(controller_config(h.certs))
    try:
        await h.create(_fresh(pod("huge", managed=None, created=None, cpu="100")))
        await h.step()
        assert (await h.get("Pod", "huge"))["status"]["phase"] == "Pending"
        notes = {DEADLINE: "20h", RUNTIME: "1h"}
        for i in range(12):
            await h.create(_fresh(pod(f"w{i}", created=None, annotations=notes, cpu="1")))
        await h.step()
        shifted = 0
        for i in range(12):
            got = (await h.get("Pod", f"w{i}"))["metadata"]["annotations"]
            if got["carbonshift.io/planned-start"] != got["carbonshift.io/latest-start"]:
                shifted += 1
        assert shifted == 12
    finally:
        await h.stop()


# -- item 12: who writes --------------------------------------------------------------------


@pytestmark_fake
async def test_every_write_is_made_as_carbonshift(fakekube: FakeKube, tmp_path: Path) -> None:
    h = await make_harness(fakekube, tmp_path)
    app = await h.start(controller_config(h.certs))
    try:
        assert app.kube._client.user_agent.startswith("carbonshift")  # type: ignore[attr-defined]
        notes = {DEADLINE: "20h", RUNTIME: "2h"}
        await h.create(_fresh(pod("p", created=None, annotations=notes, cpu="1")))
        await h.create(_fresh(job("j", created=None, annotations=notes)))
        await h.step()
        while fakekube.now() < START + timedelta(hours=19):
            await h.step(hours=2)
        for kind, name in (("Pod", "p"), ("Job", "j")):
            got = await h.get(kind, name)
            assert "carbonshift.io/released-at" in got["metadata"]["annotations"]
            writers = {
                m["manager"]
                for m in got["metadata"]["managedFields"]
                if "f:carbonshift.io/state" in str(m.get("fieldsV1"))
            }
            assert writers == {"carbonshift"}
        events = [e for e in fakekube.list("Event", "batch") if e["reason"] in ("Held", "Released")]
        assert events
        assert {m["manager"] for e in events for m in e["metadata"]["managedFields"]} == {
            "carbonshift"
        }
    finally:
        await h.stop()


@pytest.mark.parametrize(
    ("message", "args", "want_hidden"),
    [
        ("receive_response_headers.complete return_value=%r",
         ((b"HTTP/1.1", 200, b"OK", [(b"auth-token", b"upstream-echo-1"), (b"x", b"y")]),),
         "upstream-echo-1"),
        ("GET %s", ("https://api.example/v3?zone=DE&token=tok-123456&x=1",), "tok-123456"),
        ("headers %s", ("Authorization: Bearer eyJ.abc.def",), "eyJ.abc.def"),
        ("echoed body %s", ('{"message": "bad key sk-known-987654"}',), "sk-known-987654"),
    ],
    ids=["httpcore-header-tuple", "token-parameter", "bearer-header", "known-key-anywhere"],
)  # fmt: skip
def test_logs_never_show_a_credential(
    message: str, args: tuple[Any, ...], want_hidden: str, caplog: pytest.LogCaptureFixture
) -> None:
    from carbonshift.carbon.providers._http import ScrubSecrets
    from carbonshift.carbon.providers.secrets import Secret

    ScrubSecrets.install(Secret("sk-known-987654"))
    caplog.handler.addFilter(ScrubSecrets())
    with caplog.at_level(logging.DEBUG, logger="httpcore.http11"):
        logging.getLogger("httpcore.http11").debug(message, *args)

    assert want_hidden not in caplog.text
    assert "***" in caplog.text
