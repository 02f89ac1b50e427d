"""The controller's plan-size limit (``planning.max_plan_cells``) against the fake API server.

Past the limit a pass plans the most urgent pending workloads that fit and leaves the rest
held with a reason that says so; it does not fail, it logs once and counts it, and nobody is
held past its latest start (the fail-open covers the workloads left out).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from carbonshift.errors import InputError
from carbonshift.k8s.config import load_config, parse_config
from carbonshift.units import parse_utc
from fakekube import FakeKube
from tests.k8s.harness import Harness, controller_config, make_harness
from tests.k8s.objects import pod
from tests.k8s.test_controller_fake import fresh

START = datetime(2023, 6, 1, tzinfo=UTC)
pytestmark = pytest.mark.fakekube_config(start=START, nodes=2, cpu="8")
REPO = Path(__file__).resolve().parents[2]

# (name, deadline h): runtime 1 h, so latest starts 03:00 .. 11:00; the first two are the
# most urgent. fluidos over a 24-slot horizon: 24 weighted cells a workload
DEADLINES = [("p4", 10), ("p1", 4), ("p5", 12), ("p3", 8), ("p2", 6)]
LEFT_OUT = "exceed the plan-size limit"


def latest_start(deadline_h: int) -> datetime:
    return START + timedelta(hours=deadline_h - 1)


async def _start(h: Harness, max_plan_cells: int) -> None:
    await h.start(
        controller_config(
            h.certs, planning={"max_plan_cells": max_plan_cells, "plan_on_arrival": False}
        )
    )
    for name, deadline_h in DEADLINES:
        notes = {
            "carbonshift.io/deadline": f"{deadline_h}h",
            "carbonshift.io/expected-runtime": "1h",
        }
        await h.create(fresh(pod(name, created=None, annotations=notes)))


async def _run_to_the_end(h: Harness) -> dict[str, datetime]:
    """Step the clock 10 minutes at a time until every Pod is released; their release times."""
    released: dict[str, datetime] = {}
    while len(released) < len(DEADLINES) and h.kube.now() < START + timedelta(hours=14):
        await h.step(minutes=10)
        for name, _ in DEADLINES:
            notes = (await h.get("Pod", name))["metadata"]["annotations"]
            if "carbonshift.io/released-at" in notes:
                released.setdefault(name, parse_utc(notes["carbonshift.io/released-at"]))
    return released


async def test_past_the_limit_the_most_urgent_are_planned_and_the_rest_wait(
    fakekube: FakeKube, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = await make_harness(fakekube, tmp_path)
    await _start(h, max_plan_cells=48)  # two workloads
    try:
        with caplog.at_level(logging.WARNING, logger="carbonshift.k8s"):
            await h.step(hours=1)  # the pass at 01:00: five pending, two fit
        reasons = {
            name: (await h.get("Pod", name))["metadata"]["annotations"] for name, _ in DEADLINES
        }
        for name in ("p1", "p2"):
            assert LEFT_OUT not in reasons[name]["carbonshift.io/reason"], reasons[name]
        for name, deadline_h in DEADLINES:
            if name in ("p1", "p2"):
                continue
            notes = reasons[name]
            assert notes["carbonshift.io/state"] == "held"
            assert notes["carbonshift.io/reason"] == (
                "3 of 5 pending workloads exceed the plan-size limit of 48 weighted cells "
                "(planning.max_plan_cells); planned the 2 most urgent; this one waits for a "
                "later pass and is released at its latest start at the latest"
            )
            assert parse_utc(notes["carbonshift.io/planned-start"]) == latest_start(deadline_h)
        sample = h.controller.metrics.registry.get_sample_value
        assert sample("carbonshift_plan_left_out_workloads") == 3
        assert sample("carbonshift_plan_truncated_total") == 1
        said = [r for r in caplog.records if "plan-size limit" in r.getMessage()]
        assert len(said) == 1  # once for the pass, not once per workload
        assert "3 of 5 pending workloads" in said[0].getMessage()

        released = await _run_to_the_end(h)
        assert sorted(released) == sorted(name for name, _ in DEADLINES)
        for name, deadline_h in DEADLINES:
            assert released[name] <= latest_start(deadline_h), name
        assert sample("carbonshift_errors_total", {"stage": "plan"}) is None
    finally:
        await h.stop()


async def test_a_limit_below_one_workload_holds_each_until_its_latest_start(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    h = await make_harness(fakekube, tmp_path)
    await _start(h, max_plan_cells=1)  # not even one: nothing is planned, nothing fails
    try:
        await h.step(hours=1)
        for name, _ in DEADLINES:
            notes = (await h.get("Pod", name))["metadata"]["annotations"]
            assert "planned none of them" in notes["carbonshift.io/reason"]
        released = await _run_to_the_end(h)
        want = {name: latest_start(deadline_h) for name, deadline_h in DEADLINES}
        assert released == want  # the fail-open, exactly at each latest start
        sample = h.controller.metrics.registry.get_sample_value
        assert sample("carbonshift_failed_open_total") == len(DEADLINES)
        assert sample("carbonshift_plan_left_out_workloads") == 0  # none pending at the end
    finally:
        await h.stop()


# -- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("planning", "want_parts"),
    [
        pytest.param(
            {"max_plan_cells": -1},
            ["planning.max_plan_cells = -1", "-1 cells is not a limit", "0 for no limit"],
            id="negative-cells",
        ),
        pytest.param(
            {"max_horizon_cells": 10**16},
            ["planning.max_horizon_cells", "between 0 and 10^15", "200000"],
            id="huge-horizon-cells",
        ),
        pytest.param(
            {"max_plan_cells": "many"},
            ["planning.max_plan_cells = 'many'", "valid integer"],
            id="not-a-number",
        ),
        pytest.param(
            {"slot_minutes": 1, "max_horizon_hours": 8784},
            [
                "up to 527,040 slots (max_horizon_hours 8784 h at slot_minutes 1) x 1 "
                "resources (cluster.resources) = 527,040 cluster x slot x resource cells",
                "more than planning.max_horizon_cells 200,000",
                "raise slot_minutes",
            ],
            id="horizon-past-the-limit",
        ),
    ],
)
def test_bad_limits_are_refused_with_the_value_the_unit_and_the_fix(
    planning: dict[str, object], want_parts: list[str]
) -> None:
    with pytest.raises(InputError) as caught:
        parse_config({"planning": planning})
    for part in want_parts:
        assert part in str(caught.value)


@pytest.mark.parametrize(
    ("planning", "want"),
    [
        ({}, (1_000_000, 200_000)),
        ({"max_plan_cells": 0, "max_horizon_cells": None}, (None, None)),
        ({"max_plan_cells": None, "max_horizon_cells": 0}, (None, None)),
        ({"slot_minutes": 1, "max_horizon_hours": 8784, "max_horizon_cells": 0}, (1_000_000, None)),
    ],
    ids=["defaults", "zero-and-null-lift", "null-and-zero-lift", "lifted-horizon-admits"],
)
def test_zero_or_null_lifts_a_limit(
    planning: dict[str, object], want: tuple[int | None, int | None]
) -> None:
    limits = parse_config({"planning": planning}).planning.plan_limits()
    assert (limits.max_cells, limits.max_horizon_cells) == want


def test_the_defaults_admit_the_shipped_controller_configurations() -> None:
    import yaml

    chart = yaml.safe_load((REPO / "charts/carbonshift/values.yaml").read_text())
    configs = [load_config(REPO / "deploy/base/config.yaml")]
    configs.append(parse_config(chart["controller"]["config"], source="values.yaml"))
    for config in configs:
        limits = config.planning.plan_limits()
        assert (limits.max_cells, limits.max_horizon_cells) == (1_000_000, 200_000)
