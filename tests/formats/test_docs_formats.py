"""docs/formats.md stays true: its instance example reads, and its plan example is that
instance's plan with the scores the page states (computed here, not copied)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from carbonshift.domain import score_plan
from carbonshift.formats import instance_from_dict, plan_from_dict
from carbonshift.planning import run_policy

DOC = Path(__file__).resolve().parents[2] / "docs" / "formats.md"


def json_blocks() -> list[dict[str, Any]]:
    text = DOC.read_text(encoding="utf-8")
    return [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, flags=re.DOTALL)]


def test_the_plan_example_scores_are_those_of_the_instance_example() -> None:
    instance_doc, plan_doc = json_blocks()[:2]
    instance = instance_from_dict(instance_doc)
    plan = plan_from_dict(plan_doc)
    got = score_plan(instance, plan)
    want = plan_doc["scores"]
    assert got.operational_g == pytest.approx(want["operational_g"], rel=1e-6)
    assert got.embodied_g == pytest.approx(want["embodied_g"], rel=1e-6)
    assert got.gru == pytest.approx(want["gru"], rel=1e-3)
    assert (got.on_time, got.late, got.unscheduled) == (
        want["on_time"],
        want["late"],
        want["unscheduled"],
    )
    # the only on-time starts are slots 0 and 1; slot 1 is the cleaner, so the stated lower
    # bound equals the plan's grams and the gap is 0
    assert plan_doc["bound"]["lower_bound_g"] == pytest.approx(got.operational_g + got.embodied_g)
    assert plan_doc["bound"]["gap"] == 0.0


def test_the_default_policy_plans_the_instance_example_as_the_page_says() -> None:
    instance_doc, plan_doc = json_blocks()[:2]
    result = run_policy("carbonshift", instance_from_dict(instance_doc))
    assert [(a.job, a.cluster, a.start_slot) for a in result.plan.assignments] == [
        (a["job"], a["cluster"], a["start_slot"]) for a in plan_doc["assignments"]
    ]
    assert result.bound is not None
    assert result.bound.lower_bound_g == pytest.approx(plan_doc["bound"]["lower_bound_g"])
    assert result.bound.gap == pytest.approx(plan_doc["bound"]["gap"], abs=1e-6)
