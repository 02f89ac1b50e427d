"""A held workload's annotations are rewritten only when something material changes.

Rewriting every held workload's estimates each period costs one PATCH per workload per
period (bench/controller.md); the planned start, state, latest start and the reason's wording
always go out, the estimates with them ("as of the last plan change").
"""

from __future__ import annotations

import pytest

from carbonshift.k8s.planner import data_used
from carbonshift.k8s.reconciler import (
    EST_NOW,
    EST_PLANNED,
    LATEST_START,
    PLANNED_START,
    REASON,
    STATE,
    _worth_writing,
)

WRITTEN = {
    STATE: "held",
    PLANNED_START: "2023-06-01T12:00:00Z",
    LATEST_START: "2023-06-01T20:00:00Z",
    REASON: "policy carbonshift starts it at 12:00 (120 g/kWh)",
    EST_NOW: "100.0",
    EST_PLANNED: "60.0",
}

CASES = [
    ("nothing changed", {}, False),
    (
        "the forecast moved the quoted intensity",
        {REASON: "policy carbonshift starts it at 12:00 (118 g/kWh)"},
        False,
    ),
    ("estimates drift by 5 %", {EST_NOW: "105.0", EST_PLANNED: "57.0"}, False),
    ("estimates drift by under 1 g", {EST_PLANNED: "60.9"}, False),
    ("the planned start moves", {PLANNED_START: "2023-06-01T13:00:00Z"}, True),
    ("the latest start moves", {LATEST_START: "2023-06-01T21:00:00Z"}, True),
    ("the state changes", {STATE: "released"}, True),
    (
        "the reason's wording changes",
        {REASON: "saving 0.0 g below min_saving_g 1 g: started now"},
        True,
    ),
    ("the estimate now drifts by 20 %", {EST_NOW: "120.0"}, False),
    ("the planned estimate drifts by 12 g", {EST_PLANNED: "48.0"}, False),
]


@pytest.mark.parametrize(
    ("changes", "want_write"), [(c, w) for _, c, w in CASES], ids=[i for i, _, _ in CASES]
)
def test_only_material_changes_are_written(changes: dict[str, str], want_write: bool) -> None:
    assert _worth_writing(WRITTEN, {**WRITTEN, **changes}) is want_write


def test_a_workload_never_annotated_is_written() -> None:
    assert _worth_writing({}, WRITTEN) is True


def test_missing_estimates_are_written() -> None:
    current = {k: v for k, v in WRITTEN.items() if k != EST_PLANNED}
    assert _worth_writing(current, WRITTEN) is True


REPLAYED = " [plan used embedded data replayed from 2023-06-01 .. 2023-06-02]"
DATA_CASES = [
    ("fresh data both times", "waiting (120 g/kWh)", "waiting (118 g/kWh)", False),
    ("the plan turns to replayed data", "waiting", "waiting" + REPLAYED, True),
    ("back to fresh data", "waiting" + REPLAYED, "waiting", True),
    (
        "replayed both times, other dates",
        "a" + REPLAYED,
        "b" + REPLAYED.replace("02]", "03]"),
        False,
    ),
    (
        "replayed, then stale",
        "a" + REPLAYED,
        "a [plan used stale electricitymaps data, 7.0 h old]",
        True,
    ),
]


@pytest.mark.parametrize(
    ("before", "after", "want_event"),
    [(b, a, w) for _, b, a, w in DATA_CASES],
    ids=[i for i, _, _, _ in DATA_CASES],
)
def test_a_change_of_the_data_the_plan_used_is_an_event(
    before: str, after: str, want_event: bool
) -> None:
    assert (data_used(before) != data_used(after)) is want_event
