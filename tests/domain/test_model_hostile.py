"""Domain objects built from Python refuse what the JSON readers refuse (issue 13).

Before: ``Job(runtime_slots=2.5)``, ``runtime_slots=True``, ``deadline_slot=nan``,
``capacity=inf`` and ``critical="false"`` were accepted, and a string amount raised a bare
TypeError. Each case below must give an InputError naming the field; the same values in a
JSON instance are refused by the reader too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from carbonshift.domain import Cluster, ClusterName, Instance, Job, JobId, TimeGrid
from carbonshift.errors import InputError
from carbonshift.formats import instance_from_dict
from tests.builders import cluster, instance, job
from tests.formats.test_formats import contract_example


def _job(**fields: Any) -> Job:
    base: dict[str, Any] = {
        "id": JobId("j1"),
        "demand": {"gpu": 1.0},
        "runtime_slots": 2,
        "deadline_slot": 10,
    }
    return Job(**{**base, **fields})


def _cluster(**fields: Any) -> Cluster:
    base: dict[str, Any] = {
        "name": ClusterName("c1"),
        "capacity": {"gpu": 4.0},
        "watts_per_unit": {"gpu": 100.0},
    }
    return Cluster(**{**base, **fields})


def _carbon(value: Any) -> Instance:
    return instance([job("a")], [cluster("c1")], {"c1": [10.0, value, 10.0, 10.0]})


PYTHON_CASES = [
    pytest.param(lambda: _job(runtime_slots=2.5), "runtime_slots", id="fractional-runtime"),
    pytest.param(lambda: _job(runtime_slots=True), "runtime_slots", id="bool-runtime"),
    pytest.param(lambda: _job(runtime_slots="3"), "runtime_slots", id="string-runtime"),
    pytest.param(lambda: _job(runtime_slots=math.inf), "runtime_slots", id="inf-runtime"),
    pytest.param(lambda: _job(release_slot=0.5), "release_slot", id="fractional-release"),
    pytest.param(lambda: _job(deadline_slot=math.nan), "deadline_slot", id="nan-deadline"),
    pytest.param(lambda: _job(deadline_slot="10"), "deadline_slot", id="string-deadline"),
    pytest.param(lambda: _job(demand={"gpu": math.inf}), "demand['gpu']", id="inf-demand"),
    pytest.param(lambda: _job(demand={"gpu": "2"}), "demand['gpu']", id="string-demand"),
    pytest.param(lambda: _job(demand={"gpu": True}), "demand['gpu']", id="bool-demand"),
    pytest.param(lambda: _job(critical="false"), "critical", id="string-critical"),
    pytest.param(lambda: _cluster(capacity={"gpu": math.inf}), "capacity", id="inf-capacity"),
    pytest.param(lambda: _cluster(capacity={"gpu": (1.0, math.nan)}), "capacity", id="nan-cap"),
    pytest.param(lambda: _cluster(watts_per_unit={"gpu": "100"}), "watts", id="string-watts"),
    pytest.param(lambda: _cluster(pue=math.inf), "pue", id="inf-pue"),
    pytest.param(lambda: _cluster(pue=None), "pue", id="none-pue"),
    pytest.param(lambda: TimeGrid(60.5, 3), "slot_minutes", id="fractional-slot-minutes"),
    pytest.param(lambda: TimeGrid(60, True), "horizon_slots", id="bool-horizon"),
    pytest.param(lambda: TimeGrid(60, math.inf), "horizon_slots", id="inf-horizon"),
    pytest.param(lambda: _carbon(math.inf), "carbon_g_per_kwh", id="inf-carbon"),
    pytest.param(lambda: _carbon(math.nan), "carbon_g_per_kwh", id="nan-carbon"),
    pytest.param(lambda: _carbon("12"), "carbon_g_per_kwh", id="string-carbon"),
]


@pytest.mark.parametrize(("build", "want_field"), PYTHON_CASES)
def test_python_built_objects_refuse_hostile_values(
    build: Callable[[], object], want_field: str
) -> None:
    with pytest.raises(InputError) as caught:
        build()
    message = str(caught.value)
    assert want_field in message, message
    assert "must be" in message, message


def test_whole_numbers_from_numpy_or_integral_floats_are_kept_as_ints() -> None:
    built = _job(runtime_slots=np.int64(3), release_slot=1.0, deadline_slot=np.int32(7))
    assert (built.runtime_slots, built.release_slot, built.deadline_slot) == (3, 1, 7)
    assert all(type(v) is int for v in (built.runtime_slots, built.release_slot))
    assert type(built.deadline_slot) is int
    assert _job(critical=np.bool_(True)).critical is True
    assert TimeGrid(60.0, np.int64(4)) == TimeGrid(60, 4)


def _set(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = contract_example()
    target: Any = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


JSON_CASES = [
    pytest.param(("jobs", 0, "runtime_slots"), 2.5, "runtime_slots", id="fractional-runtime"),
    pytest.param(("jobs", 0, "runtime_slots"), True, "runtime_slots", id="bool-runtime"),
    pytest.param(("jobs", 0, "deadline_slot"), math.nan, "deadline_slot", id="nan-deadline"),
    pytest.param(("jobs", 0, "demand", "gpu"), math.inf, "demand", id="inf-demand"),
    pytest.param(("jobs", 0, "critical"), "false", "critical", id="string-critical"),
    pytest.param(("clusters", 0, "pue"), math.inf, "pue", id="inf-pue"),
    pytest.param(("horizon_slots",), 2.5, "horizon_slots", id="fractional-horizon"),
    pytest.param(("carbon_g_per_kwh", "spoke1", 0), math.nan, "carbon_g_per_kwh", id="nan-ci"),
]


@pytest.mark.parametrize(("path", "value", "want_field"), JSON_CASES)
def test_json_instances_refuse_the_same_values(
    path: tuple[Any, ...], value: Any, want_field: str
) -> None:
    with pytest.raises(InputError) as caught:
        instance_from_dict(_set(path, value))
    assert want_field in str(caught.value)
