"""The hub's plan-size limits (``planning.max_plan_cells``, ``planning.max_horizon_cells``).

Past the weighted-cell limit a planning call plans the most urgent hub workloads that fit
and leaves the rest held with a reason; with more spokes than the horizon-cell limit admits
it plans none. The pass does not fail, it logs once and counts it, and nobody is held past
its latest start: work left out is released then to the spoke with the most room.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from carbonshift.domain import Cluster, ClusterName
from carbonshift.errors import InputError
from carbonshift.k8s.config import PlanningSection
from carbonshift.k8s.multicluster import HubConfig
from carbonshift.k8s.multicluster.config import load_hub_config
from carbonshift.k8s.multicluster.hub import HubController
from carbonshift.k8s.multicluster.workloads import PLANNED_START, REASON
from carbonshift.planning import snapshot as seam
from carbonshift.units import parse_utc
from tests.multicluster.harness import Fleet, fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[2]
LEFT_OUT = "exceed the plan-size limit"


def planning(**limits: object) -> PlanningSection:
    """fluidos over 24 hourly slots: 2 spokes x 24 slots = 48 weighted cells a workload."""
    return PlanningSection(policy="fluidos", forecast="oracle", horizon_slots=24, **limits)  # type: ignore[arg-type]


def latest(deadline_h: float) -> datetime:
    return START + timedelta(hours=deadline_h - 1)


async def _create(f: Fleet, deadlines: dict[str, float]) -> None:
    for name, deadline_h in deadlines.items():
        await f.create(f.hub, hub_job(name, cpu=2, runtime_h=1, deadline_h=deadline_h))


async def _released_by_the_end(
    f: Fleet, controller: HubController, deadlines: dict[str, float]
) -> dict[str, datetime]:
    """Step 10 minutes at a time until every workload is released; when each was."""
    released: dict[str, datetime] = {}
    while len(released) < len(deadlines) and f.now() < START + timedelta(hours=14):
        await f.step(10)
        for e in controller.events:
            if e.what == "released":
                released.setdefault(e.key.split("/")[-1], e.at)
    return released


async def _annotations(f: Fleet, name: str) -> dict[str, str]:
    job = await f.get(f.hub, "Job", name, "batch", "batch/v1")
    notes: dict[str, str] = job["metadata"].get("annotations") or {}
    return notes


async def test_past_the_limit_the_most_urgent_are_planned_and_the_rest_wait(
    caplog: pytest.LogCaptureFixture,
) -> None:
    deadlines = {"d": 10.0, "a": 4.0, "e": 12.0, "c": 8.0, "b": 6.0}
    async with fleet(START, config=HubConfig(planning=planning(max_plan_cells=96))) as f:
        await _create(f, deadlines)
        controller = await f.start_controller()
        with caplog.at_level(logging.WARNING, logger="carbonshift.k8s.hub"):
            await f.step(0)
        for name in ("a", "b"):
            assert LEFT_OUT not in (await _annotations(f, name)).get(REASON, "")
        for name in ("c", "d", "e"):
            notes = await _annotations(f, name)
            assert notes[REASON] == (
                "3 of 5 pending workloads exceed the plan-size limit of 96 weighted cells "
                "(planning.max_plan_cells); planned the 2 most urgent; this one waits for a "
                "later pass and is released at its latest start at the latest"
            )
            assert parse_utc(notes[PLANNED_START]) == latest(deadlines[name])
        assert controller.metrics.plan_left_out._value.get() == 3
        assert controller.metrics.plan_truncated._value.get() == 1
        said = [r for r in caplog.records if "plan-size limit" in r.getMessage()]
        assert len(said) == 1  # once for the planning call, not once per workload

        released = await _released_by_the_end(f, controller, deadlines)
        assert sorted(released) == sorted(deadlines)
        for name, deadline_h in deadlines.items():
            assert released[name] <= latest(deadline_h), name


@pytest.mark.parametrize(
    ("limits", "want_reason"),
    [
        pytest.param({"max_plan_cells": 1}, "planned none of them", id="cells"),
        # 2 spokes x 24 slots x 1 resource = 48 > 47 (one spoke's 24 pass the load check)
        pytest.param(
            {"max_horizon_cells": 47, "max_horizon_hours": 24},
            "2 healthy spokes x 24 slots x 1 resources = 48 cluster x slot x resource cells "
            "exceed the plan-size limit of 47 (planning.max_horizon_cells); planned nothing",
            id="horizon",
        ),
    ],
)
async def test_work_left_out_is_released_at_its_latest_start_not_a_slot_later(
    limits: dict[str, object], want_reason: str
) -> None:
    # latest starts at half past: between two slot boundaries
    deadlines = {"a": 3.5, "b": 4.5, "c": 5.5}
    async with fleet(START, config=HubConfig(planning=planning(**limits))) as f:
        await _create(f, deadlines)
        controller = await f.start_controller()
        await f.step(0)
        for name in deadlines:
            notes = await _annotations(f, name)
            assert want_reason in notes[REASON]
            assert parse_utc(notes[PLANNED_START]) == latest(deadlines[name])
        assert controller.metrics.plan_left_out._value.get() == 3
        released = await _released_by_the_end(f, controller, deadlines)
        assert released == {name: latest(d) for name, d in deadlines.items()}


# -- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("planning_yaml", "want_parts"),
    [
        pytest.param(
            {"max_plan_cells": -5},
            ["planning.max_plan_cells", "-5 cells is not a limit", "0 for no limit"],
            id="negative",
        ),
        pytest.param(
            {"slot_minutes": 5, "max_horizon_hours": 8784},
            [
                "up to 105,408 slots (max_horizon_hours 8784 h at slot_minutes 5) x 2 resources "
                "(resources) = 210,816",
                "more than planning.max_horizon_cells 200,000",
                "(0: no limit)",
            ],
            id="horizon",
        ),
    ],
)
def test_bad_hub_limits_are_refused_at_load(
    tmp_path: Path, planning_yaml: dict[str, object], want_parts: list[str]
) -> None:
    path = tmp_path / "hub.yaml"
    path.write_text(yaml.safe_dump({"planning": planning_yaml, "resources": ["cpu", "memory"]}))
    with pytest.raises(InputError) as caught:
        load_hub_config(path)
    for part in want_parts:
        assert part in str(caught.value)


def _bench_instance(policy: str, spokes: int, jobs: int) -> seam.Snapshot:
    """The instance of bench/bench_hub_live.py's first planning call (and, on one spoke,
    bench/bench_controller.py's): 1 cpu, 1 h, deadlines spread 6-30 h, 24 hourly slots."""
    resources = ("cpu",)
    return seam.build_snapshot(
        now_h=0.0,
        slot_minutes=60,
        resources=resources,
        clusters=[
            Cluster(ClusterName(f"s{i}"), {"cpu": 16.0}, {"cpu": 10.0}, 1.0, {}, f"Z{i}")
            for i in range(spokes)
        ],
        forecast_g_per_kwh={f"s{i}": [100.0 + i] * 24 for i in range(spokes)},
        pending=[
            seam.PendingWork(
                id=f"w{j}",
                demand={"cpu": 1.0},
                runtime_h=1.0,
                deadline_h=6.0 + (j * 7919) % 25,
                submit_h=0.0,
            )
            for j in range(jobs)
        ],
        running=[],
    )


@pytest.mark.parametrize(
    ("policy", "spokes", "want_fit"),
    [
        ("carbonshift", 10, 10_000),  # 25 classes: 12,000 weighted cells
        ("carbonshift", 1, 10_000),
        ("fluidos", 1, 10_000),  # counted by jobs: 240,000
        ("fluidos", 10, 1_000_000 // (10 * 24)),  # 2,400,000: past the default
    ],
    ids=["hub-carbonshift", "controller-carbonshift", "controller-fluidos", "hub-fluidos"],
)
def test_the_defaults_plan_the_10000_workload_benchmarks_whole(
    policy: str, spokes: int, want_fit: int
) -> None:
    limits = PlanningSection().plan_limits()
    instance = _bench_instance(policy, spokes, 10_000).instance
    assert limits.fitting_jobs(instance, policy) == want_fit


def test_the_defaults_admit_the_shipped_hub_configurations() -> None:
    chart = yaml.safe_load((REPO / "charts/carbonshift/values.yaml").read_text())
    shipped = [load_hub_config(REPO / "deploy/hub/hub.yaml"), HubConfig(**chart["hub"]["config"])]
    for config in shipped:
        limits = config.planning.plan_limits()
        assert (limits.max_cells, limits.max_horizon_cells) == (1_000_000, 200_000)
