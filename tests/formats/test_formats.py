"""Instance and plan JSON (CONTRACTS.md sections 1-2): defaults, round trips, bad input."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carbonshift.domain import Assignment, ClusterName, JobId, Plan, score_plan
from carbonshift.errors import InputError
from carbonshift.formats import (
    instance_from_dict,
    instance_to_dict,
    plan_from_dict,
    plan_to_dict,
    read_instance,
    read_plan,
    write_plan,
)


def contract_example() -> dict[str, Any]:
    """The example of CONTRACTS.md section 1 with full-length lists."""
    return {
        "version": 1,
        "slot_minutes": 60,
        "horizon_slots": 3,
        "resources": ["gpu"],
        "clusters": [
            {
                "name": "spoke1",
                "zone": "CA-ON",
                "capacity": {"gpu": 32},
                "watts_per_unit": {"gpu": 200},
                "pue": 1.0,
                "embodied_g_per_unit_hour": {"gpu": 0.0},
            }
        ],
        "carbon_g_per_kwh": {"spoke1": [120.5, 118.0, 90.0]},
        "jobs": [
            {
                "id": "j1",
                "demand": {"gpu": 3},
                "runtime_slots": 2,
                "release_slot": 0,
                "deadline_slot": 20,
                "allowed_clusters": ["spoke1"],
                "critical": False,
            }
        ],
        "future_demand": {"gpu": [0, 0, 1]},
    }


def test_contract_example_reads() -> None:
    inst = instance_from_dict(contract_example())
    assert inst.grid.horizon_slots == 3
    assert inst.clusters[0].zone == "CA-ON"
    assert inst.jobs[0].allowed_clusters == frozenset({"spoke1"})
    assert inst.future_demand == {"gpu": (0.0, 0.0, 1.0)}


def test_defaults_of_section_1() -> None:
    data = contract_example()
    del data["future_demand"]
    data["clusters"][0] = {"name": "spoke1", "capacity": {"gpu": 32}, "watts_per_unit": {}}
    data["jobs"][0] = {"id": "j1", "demand": {"gpu": 3}, "runtime_slots": 2}
    inst = instance_from_dict(data)
    want_job = inst.jobs[0]
    assert (want_job.release_slot, want_job.deadline_slot) == (0, 3)
    assert want_job.allowed_clusters is None
    assert want_job.critical is False
    assert inst.clusters[0].pue == 1.0
    assert inst.future_demand is None


def test_unknown_fields_are_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    data = contract_example()
    data["colour"] = "green"
    data["jobs"][0]["owner"] = "ada"
    with caplog.at_level(logging.WARNING):
        instance_from_dict(data)
    assert "colour" in caplog.text
    assert "jobs[0].owner" in caplog.text


@pytest.mark.parametrize(
    ("mutate", "want_in_message"),
    [
        pytest.param(lambda d: d.update(version=2), "version", id="wrong-version"),
        pytest.param(lambda d: d.pop("jobs"), "jobs", id="missing-jobs"),
        pytest.param(
            lambda d: d["jobs"][0]["demand"].update(gpu=-1),
            "demand.gpu = -1",
            id="negative-demand",
        ),
        pytest.param(
            lambda d: d["carbon_g_per_kwh"].update(spoke1=[1.0]),
            "has 1 values; it needs exactly horizon_slots = 3",
            id="list-wrong-length",
        ),
        pytest.param(
            lambda d: d["jobs"][0].update(runtime_slots="long"),
            "jobs.0.runtime_slots",
            id="runtime-not-a-number",
        ),
        pytest.param(
            lambda d: d["jobs"][0].update(demand={"cpu": 1}), "'cpu'", id="unknown-resource"
        ),
    ],
)
def test_bad_instances(mutate: Any, want_in_message: str) -> None:
    data = contract_example()
    mutate(data)
    with pytest.raises(InputError) as info:
        instance_from_dict(data)
    message = str(info.value)
    assert want_in_message in message
    assert "\n" not in message


def test_malformed_json_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"version": 1,\n "jobs": [}\n')
    with pytest.raises(InputError, match=r"not valid JSON: .* line 2"):
        read_instance(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read instance file"):
        read_instance(tmp_path / "nope.json")


def test_plan_round_trip_with_scores(tmp_path: Path) -> None:
    inst = instance_from_dict(contract_example())
    plan = Plan.of("srr", [Assignment(JobId("j1"), ClusterName("spoke1"), 1)], [], 0.25)
    path = tmp_path / "plan.json"
    write_plan(plan, path, score_plan(inst, plan))
    raw = json.loads(path.read_text())
    assert raw["version"] == 1
    assert raw["assignments"] == [{"job": "j1", "cluster": "spoke1", "start_slot": 1}]
    assert set(raw["scores"]) == {
        "operational_g",
        "embodied_g",
        "gru",
        "on_time",
        "late",
        "unscheduled",
    }
    assert read_plan(path) == plan


def test_plan_contract_example() -> None:
    plan = plan_from_dict(
        {
            "version": 1,
            "policy": "srr",
            "assignments": [{"job": "j1", "cluster": "spoke1", "start_slot": 5}],
            "unscheduled": ["j7"],
            "solve_seconds": 0.12,
        }
    )
    assert plan.unscheduled == ("j7",)
    assert plan_to_dict(plan)["solve_seconds"] == 0.12


# inside the documented limits: 0, or between MIN_POSITIVE and the smallest maximum (g/kWh)
_finite = st.one_of(st.just(0.0), st.floats(min_value=1e-9, max_value=1e5))


@st.composite
def instances(draw: st.DrawFn) -> dict[str, Any]:
    horizon = draw(st.integers(1, 6))
    n_clusters = draw(st.integers(1, 3))
    names = [f"c{i}" for i in range(n_clusters)]
    jobs = []
    for i in range(draw(st.integers(0, 5))):
        job: dict[str, Any] = {
            "id": f"j{i}",
            "demand": {"gpu": draw(st.floats(0.5, 10)), "mem": draw(_finite)},
            "runtime_slots": draw(st.integers(1, 4)),
            "release_slot": draw(st.integers(0, 5)),
            "deadline_slot": draw(st.integers(-3, 12)),
            "critical": draw(st.booleans()),
        }
        if draw(st.booleans()):
            job["allowed_clusters"] = draw(
                st.lists(st.sampled_from(names), min_size=1, unique=True)
            )
        jobs.append(job)
    return {
        "version": 1,
        "slot_minutes": draw(st.sampled_from([5, 30, 60, 120])),
        "horizon_slots": horizon,
        "resources": ["gpu", "mem"],
        "clusters": [
            {
                "name": name,
                "zone": "DE",
                "capacity": {
                    "gpu": draw(
                        st.one_of(_finite, st.lists(_finite, min_size=horizon, max_size=horizon))
                    )
                },
                "watts_per_unit": {"gpu": draw(_finite)},
                "pue": draw(st.floats(1, 2)),
                "embodied_g_per_unit_hour": {"gpu": draw(_finite)},
            }
            for name in names
        ],
        "carbon_g_per_kwh": {
            name: draw(st.lists(_finite, min_size=horizon, max_size=horizon)) for name in names
        },
        "jobs": jobs,
    }


@settings(max_examples=60, deadline=None)
@given(instances())
def test_instance_json_round_trip(data: dict[str, Any]) -> None:
    first = instance_from_dict(data)
    again = instance_from_dict(json.loads(json.dumps(instance_to_dict(first))))
    assert again == first


def test_write_plan_makes_the_folder_and_names_an_unwritable_path(tmp_path: Path) -> None:
    from carbonshift.formats import write_plan

    plan = Plan.of("asap", [Assignment(JobId("j1"), ClusterName("c"), 0)])
    target = tmp_path / "new" / "folder" / "plan.json"
    write_plan(plan, target)
    assert json.loads(target.read_text())["assignments"][0]["job"] == "j1"
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(InputError, match=r"cannot write the plan to .*choose a writable --out"):
        write_plan(plan, blocker / "plan.json")
