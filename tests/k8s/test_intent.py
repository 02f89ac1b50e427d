"""Opt-in and intent parsing: every annotation, and unusable values that never block."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from carbonshift.k8s.config import parse_config
from carbonshift.k8s.intent import Intent, NotHeld, parse_quantity, read_intent
from tests.k8s.objects import job, pod

CONFIG = parse_config({"cluster": {"resources": ["cpu", "memory"], "watts_per_unit": {"cpu": 10}}})
NOW = datetime(2023, 11, 14, 6, tzinfo=UTC)
T0 = datetime(2023, 11, 14, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "want"),
    [("500m", 0.5), ("2", 2.0), ("1Gi", 2.0**30), ("1e3", 1000.0), ("1.5k", 1500.0)],
    ids=["millicores", "whole", "binary-suffix", "exponent", "decimal-suffix"],
)
def test_quantities_parse_like_kubernetes(text: str, want: float) -> None:
    assert float(parse_quantity(text)) == pytest.approx(want)


def test_a_quantity_read_again_is_the_same_and_a_bad_one_is_refused_each_time() -> None:
    from carbonshift.errors import InputError

    first, again = parse_quantity(" 750m"), parse_quantity("750m")
    assert first == again == parse_quantity("0.75")
    for what in ("cpu request", "memory request"):  # not remembered: named each time
        with pytest.raises(InputError, match=f"^{what} '-1' is negative"):
            parse_quantity("-1", what=what)


@pytest.mark.parametrize(
    ("annotations", "want_deadline", "want_runtime", "want_source"),
    [
        ({}, T0 + timedelta(hours=24), timedelta(hours=1), "default"),
        (
            {"carbonshift.io/deadline": "12h"},
            T0 + timedelta(hours=12),
            timedelta(hours=1),
            "carbonshift.io/deadline",
        ),
        (
            {
                "carbonshift.io/deadline": "2023-11-14T18:30:00Z",
                "carbonshift.io/expected-runtime": "90m",
            },
            T0 + timedelta(hours=18, minutes=30),
            timedelta(minutes=90),
            "carbonshift.io/deadline",
        ),
        (
            {"fluidos-intent-deadline": "6", "carbonshift.io/expected-runtime": "2h"},
            T0 + timedelta(hours=8),
            timedelta(hours=2),
            "fluidos-intent-deadline",
        ),
        (
            {"fluidos-intent-deadline": "6", "carbonshift.io/deadline": "3h"},
            T0 + timedelta(hours=3),
            timedelta(hours=1),
            "carbonshift.io/deadline",
        ),
    ],
    ids=[
        "defaults",
        "duration-from-creation",
        "rfc3339-and-runtime",
        "fluidos-start-within",
        "ours-beats-fluidos",
    ],
)
def test_deadlines_and_runtimes(
    annotations: dict[str, str], want_deadline: datetime, want_runtime: timedelta, want_source: str
) -> None:
    got = read_intent(pod(annotations=annotations), CONFIG, NOW)
    assert isinstance(got, Intent)
    assert got.deadline == want_deadline
    assert got.expected_runtime == want_runtime
    assert got.deadline_source == want_source
    assert got.latest_start == want_deadline - want_runtime


def test_demand_is_in_planning_units_and_jobs_count_parallelism() -> None:
    got = read_intent(pod(cpu="1500m", memory="4Gi"), CONFIG, NOW)
    assert isinstance(got, Intent)
    assert got.demand == {"cpu": 1.5, "memory": 4.0}
    got_job = read_intent(job(cpu="2", parallelism=3), CONFIG, NOW)
    assert isinstance(got_job, Intent)
    assert got_job.demand == {"cpu": 6.0, "memory": 0.0}
    assert got_job.key == "Job/batch/j1"


@pytest.mark.parametrize(
    ("obj", "want_in_reason"),
    [
        (pod(managed=None), "not opted in"),
        (pod(managed="false"), "managed=false"),
        (pod(annotations={"carbonshift.io/critical": "true"}), "never held"),
        (pod(owner_job="j1"), "the Job is held"),
    ],
    ids=["no-label", "opted-out", "critical", "job-owned-pod"],
)
def test_workloads_left_alone(obj: dict[str, object], want_in_reason: str) -> None:
    got = read_intent(obj, CONFIG, NOW)  # type: ignore[arg-type]
    assert isinstance(got, NotHeld)
    assert not got.unusable
    assert want_in_reason in got.reason


def test_namespace_and_priority_class_opt_in() -> None:
    config = parse_config({"opt_in": {"namespaces": ["batch"]}})
    assert isinstance(read_intent(pod(managed=None), config, NOW), Intent)
    assert isinstance(read_intent(pod(managed=None, namespace="other"), config, NOW), NotHeld)
    assert isinstance(
        read_intent(
            pod(managed=None, namespace="other", priority_class="not-critical"), config, NOW
        ),
        Intent,
    )
    assert isinstance(read_intent(pod(managed="false"), config, NOW), NotHeld)


@pytest.mark.parametrize(
    ("obj", "want_annotation", "want_in_reason"),
    [
        (
            pod(annotations={"carbonshift.io/deadline": "tomorrow"}),
            "carbonshift.io/deadline",
            "neither an RFC 3339",
        ),
        (
            pod(annotations={"carbonshift.io/deadline": "2023-13-01T00:00Z"}),
            "carbonshift.io/deadline",
            "not an ISO 8601",
        ),
        (
            pod(annotations={"carbonshift.io/expected-runtime": "long"}),
            "carbonshift.io/expected-runtime",
            "not a duration",
        ),
        (
            pod(annotations={"carbonshift.io/expected-runtime": "0s"}),
            "carbonshift.io/expected-runtime",
            "longer than 0s",
        ),
        (
            pod(annotations={"fluidos-intent-deadline": "soon"}),
            "fluidos-intent-deadline",
            "number of hours",
        ),
        (
            pod(annotations={"carbonshift.io/critical": "maybe"}),
            "carbonshift.io/critical",
            "neither 'true'",
        ),
        (
            pod(annotations={"carbonshift.io/power-watts": "-3"}),
            "carbonshift.io/power-watts",
            "power >= 0",
        ),
        (pod(managed="yes"), "carbonshift.io/managed", "neither 'true' nor 'false'"),
        (pod(cpu=None), "resources.requests", "requests none of cpu, memory"),
        (pod(cpu="lots"), "resources.requests", "not a Kubernetes quantity"),
    ],
    ids=[
        "deadline-word",
        "deadline-bad-month",
        "runtime-word",
        "runtime-zero",
        "fluidos-word",
        "critical-maybe",
        "negative-power",
        "label-yes",
        "no-requests",
        "bad-quantity",
    ],
)
def test_unusable_values_leave_the_workload_unheld_and_say_why(
    obj: dict[str, object], want_annotation: str, want_in_reason: str
) -> None:
    got = read_intent(obj, CONFIG, NOW)  # type: ignore[arg-type]
    assert isinstance(got, NotHeld)
    assert got.unusable
    assert got.annotation == want_annotation
    assert want_in_reason in got.reason
    assert "\n" not in got.reason


def test_creation_time_defaults_to_now_at_admission() -> None:
    got = read_intent(pod(created=None, annotations={"carbonshift.io/deadline": "2h"}), CONFIG, NOW)
    assert isinstance(got, Intent)
    assert got.deadline == NOW + timedelta(hours=2)
