"""Disjoint ownership (issue 14): a Job labelled ``carbonshift.io/hub: "true"`` is the hub's;
the one-cluster controller and its webhook leave it alone, whatever else opts it in."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.config import parse_config
from carbonshift.k8s.intent import HUB_LABEL, NotHeld, read_intent
from carbonshift.k8s.webhook import admission_patch
from tests.k8s.objects import job

NOW = datetime(2023, 6, 1, tzinfo=UTC)
CONFIG = parse_config(
    {
        "cluster": {"resources": ["cpu"], "watts_per_unit": {"cpu": 10}},
        "opt_in": {"namespaces": ["batch"]},
    }
)
NOTES = {"carbonshift.io/expected-runtime": "1h", "carbonshift.io/deadline": "10h"}


def hub_labelled(**labels: str) -> dict[str, Any]:
    obj = job("train", annotations=NOTES, managed=None)
    obj["metadata"]["labels"] = {HUB_LABEL: "true", **labels}
    return obj


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(hub_labelled(), id="opted-in-namespace"),
        pytest.param(hub_labelled(**{"carbonshift.io/managed": "true"}), id="managed-label-too"),
    ],
)
def test_the_controller_and_its_webhook_leave_hub_jobs_alone(obj: dict[str, Any]) -> None:
    seen = read_intent(obj, CONFIG, NOW)
    assert isinstance(seen, NotHeld)
    assert "carbonshift.io/hub=true" in seen.reason
    assert not seen.unusable
    clock = ExternalClock(lambda: NOW)
    assert admission_patch(obj, CONFIG, clock) == ([], [])


def test_a_job_without_the_hub_label_is_still_the_controllers() -> None:
    obj = job("train", annotations=NOTES)
    assert not isinstance(read_intent(obj, CONFIG, NOW), NotHeld)
