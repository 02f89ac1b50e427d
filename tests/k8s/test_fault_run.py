"""Reproducers of what the fault runs (bench/fault_run.py) found.

- durations, FLUIDOS hours and powers in Arabic-Indic or fullwidth digits were read as
  numbers (``re`` without ``re.ASCII``; ``float("١٢")`` is 12).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from carbonshift.errors import InputError
from carbonshift.k8s.config import parse_config
from carbonshift.k8s.intent import NotHeld, read_intent
from carbonshift.units import parse_duration
from tests.k8s.objects import pod

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
