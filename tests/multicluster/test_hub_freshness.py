"""The hub's metrics and reasons say when its plans run on replayed carbon data."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from carbonshift.k8s.multicluster import HubObserver
from carbonshift.k8s.multicluster.hub import held_change
from carbonshift.k8s.multicluster.workloads import PLANNED_CLUSTER, PLANNED_START, REASON
from tests.multicluster.harness import fleet, hub_job
from tests.multicluster.test_hub_observe import FLUIDOS, metric_lines, step


@pytest.mark.parametrize(
    ("start", "want_replayed", "want_age_s"),
    [
        pytest.param(datetime(2023, 6, 1, tzinfo=UTC), 0.0, 0.0, id="inside-the-data"),
        pytest.param(
            datetime(2026, 6, 15, 12, tzinfo=UTC),
            1.0,
            (
                datetime(2026, 6, 15, 12, tzinfo=UTC) - datetime(2024, 1, 1, tzinfo=UTC)
            ).total_seconds(),
            id="june-2026-replays",
        ),
    ],
)
async def test_hub_metrics_expose_replay_and_data_age_by_zone(
    start: datetime, want_replayed: float, want_age_s: float
) -> None:
    async with fleet(start, nodes=1, cpu="16", config=FLUIDOS) as f:
        await f.create(f.hub, hub_job("later", cpu=2, runtime_h=2, deadline_h=16))
        observer = HubObserver(await f.start_controller())
        await step(f, observer, 0)
        values = {
            line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in metric_lines(observer)
            if line.startswith("carbonshift_carbon_")
        }
        replayed = {k: v for k, v in values.items() if k.startswith("carbonshift_carbon_replayed")}
        ages = {k: v for k, v in values.items() if k.startswith("carbonshift_carbon_data_age")}
        assert replayed, values
        assert set(replayed.values()) == {want_replayed}
        assert all('source="embedded"' in k for k in ages), ages
        assert ages
        assert all(v == pytest.approx(want_age_s) for v in ages.values()), ages


async def test_hub_reasons_say_the_plan_used_replayed_data() -> None:
    async with fleet(datetime(2026, 6, 15, 12, tzinfo=UTC), nodes=1, cpu="16", config=FLUIDOS) as f:
        await f.create(f.hub, hub_job("later", cpu=2, runtime_h=2, deadline_h=16))
        observer = HubObserver(await f.start_controller())
        await step(f, observer, 0)
        round_ = observer.controller.last_round
        assert round_ is not None
        (decision,) = round_.decisions.values()
        assert "[plan used embedded data replayed from 2023-06-19 .. " in decision.reason


HELD = {
    PLANNED_CLUSTER: "west",
    PLANNED_START: "2026-06-15T18:00:00Z",
    REASON: "waiting for cleaner power: west at 2026-06-15T18:00Z (120 g/kWh; policy fluidos)",
}
REPLAYED = " [plan used embedded data replayed from 2023-06-19 .. 2023-06-20]"
STALE = " [plan used stale electricitymaps data, 7.0 h old]"
CHANGE_CASES = [
    ("nothing changed", HELD, True, {}, False, False),
    (
        "only the numbers moved",
        HELD,
        True,
        {REASON: HELD[REASON].replace("120", "118")},
        False,
        False,
    ),
    (
        "the stale data aged",
        {**HELD, REASON: HELD[REASON] + STALE},
        True,
        {REASON: HELD[REASON] + STALE.replace("7.0", "8.0")},
        False,
        False,
    ),
    ("not labelled held yet", HELD, False, {}, True, True),
    ("another start", HELD, True, {PLANNED_START: "2026-06-15T19:00:00Z"}, True, True),
    ("another cluster", HELD, True, {PLANNED_CLUSTER: "east"}, True, True),
    ("the plan turns to replayed data", HELD, True, {REASON: HELD[REASON] + REPLAYED}, True, True),
    ("back to fresh data", {**HELD, REASON: HELD[REASON] + REPLAYED}, True, {}, True, True),
    (
        "replayed, then stale",
        {**HELD, REASON: HELD[REASON] + REPLAYED},
        True,
        {REASON: HELD[REASON] + STALE},
        True,
        True,
    ),
    (
        "other wording, same start and data",
        HELD,
        True,
        {REASON: "policy fluidos planned it after its latest start; released then"},
        True,
        False,
    ),
]


@pytest.mark.parametrize(
    ("current", "labelled_held", "change", "want_write", "want_event"),
    [c[1:] for c in CHANGE_CASES],
    ids=[c[0] for c in CHANGE_CASES],
)
def test_a_held_hub_workload_is_written_and_told_only_on_a_material_change(
    current: dict[str, str],
    labelled_held: bool,
    change: dict[str, str],
    want_write: bool,
    want_event: bool,
) -> None:
    """Numbers in the reason follow the forecast every pass: no write, no Event (the churn the
    controller's bench measured); a degraded-data change at the same start is an Event."""
    assert held_change(current, labelled_held, {**HELD, **change}) == (want_write, want_event)
