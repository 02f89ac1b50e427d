"""Issue 12 items 8 and 9: every hostile instance file or body ends in one clean line naming
the field; numbers are strict and finite; what is written is strict JSON."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from carbonshift.errors import InputError
from carbonshift.formats import instance_from_dict, read_instance
from tests.formats.test_formats import contract_example

Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    """A mutation setting the dotted ``path`` (list indexes as numbers) to ``value``."""

    def mutate(data: dict[str, Any]) -> None:
        keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
        target: Any = data
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return mutate


REFUSED: list[Any] = [
    pytest.param(_set("jobs.0.demand.gpu", True), "jobs.0.demand.gpu", "boolean", id="bool-demand"),
    pytest.param(_set("jobs.0.demand.gpu", "3"), "jobs.0.demand.gpu", "string", id="string-demand"),
    pytest.param(
        _set("jobs.0.runtime_slots", "2"), "jobs.0.runtime_slots", "string", id="string-runtime"
    ),
    pytest.param(_set("jobs.0.runtime_slots", True), "runtime_slots", "boolean", id="bool-runtime"),
    pytest.param(_set("jobs.0.runtime_slots", 2.5), "runtime_slots", "whole", id="fractional"),
    pytest.param(
        _set("carbon_g_per_kwh.spoke1.1", float("inf")),
        "carbon_g_per_kwh.spoke1.1",
        "finite",
        id="infinite-carbon-slot",
    ),
    pytest.param(_set("clusters.0.pue", float("nan")), "clusters.0.pue", "finite", id="nan-pue"),
    pytest.param(
        _set("clusters.0.watts_per_unit.gpu", 1e308),
        "watts_per_unit.gpu",
        "above the limit",
        id="watts-1e308-would-give-infinite-grams",
    ),
    pytest.param(
        _set("clusters.0.capacity.gpu", 5e-324),
        "field clusters.0.capacity.gpu = ",  # no pydantic validator steps in the path
        "too small; use a smaller unit",
        id="subnormal-capacity",
    ),
    pytest.param(
        _set("jobs.0.demand.gpu", 1e-12), "demand.gpu", "too small", id="tiny-positive-demand"
    ),
    pytest.param(
        _set("jobs.0.release_slot", 2**63), "release_slot", "between", id="slot-over-int64"
    ),
    pytest.param(
        _set("jobs.0.deadline_slot", -(2**63) - 1),
        "deadline_slot",
        "between",
        id="slot-under-int64",
    ),
    pytest.param(_set("horizon_slots", 10**12), "horizon_slots", "between", id="huge-horizon"),
    pytest.param(_set("slot_minutes", 0), "slot_minutes", "between", id="zero-slot-minutes"),
    pytest.param(_set("jobs.0.critical", 1), "jobs.0.critical", "true or false", id="int-critical"),
    pytest.param(_set("version", True), "version", "must be 1", id="bool-version"),
    pytest.param(
        _set("future_demand.gpu.0", "1"), "future_demand.gpu.0", "string", id="string-future"
    ),
]


@pytest.mark.parametrize(("mutate", "want_field", "want_reason"), REFUSED)
def test_strict_numbers_are_refused_naming_the_field(
    mutate: Mutation, want_field: str, want_reason: str
) -> None:
    data = copy.deepcopy(contract_example())
    mutate(data)
    with pytest.raises(InputError) as caught:
        instance_from_dict(data)
    message = str(caught.value)
    assert want_field in message
    assert want_reason in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("mutate", "want_runtime_slots", "want_demand"),
    [
        pytest.param(_set("jobs.0.runtime_slots", 2.0), 2, 3.0, id="integral-float-runtime"),
        pytest.param(_set("jobs.0.demand.gpu", 3), 2, 3.0, id="integer-demand"),
        pytest.param(_set("horizon_slots", 3.0), 2, 3.0, id="integral-float-horizon"),
    ],
)
def test_integral_floats_and_integers_are_accepted(
    mutate: Mutation, want_runtime_slots: int, want_demand: float
) -> None:
    data = copy.deepcopy(contract_example())
    mutate(data)
    inst = instance_from_dict(data)
    assert inst.jobs[0].runtime_slots == want_runtime_slots
    assert isinstance(inst.jobs[0].runtime_slots, int)
    assert inst.jobs[0].demand["gpu"] == want_demand


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


FILES: list[Any] = [
    pytest.param(b"\xff\xfe{not utf-8}", "not UTF-8 text", id="non-utf8-bytes"),
    pytest.param(
        ('{"version": 1, "x": ' + _nested(1000) + "}").encode(),
        "nested more than 32 deep",
        id="nesting-1000-deep",
    ),
    pytest.param(
        ('{"version": 1, "x": ' + _nested(100_000) + "}").encode(),
        "nested more than 32 deep",
        id="nesting-100000-deep",
    ),
    pytest.param(
        json.dumps(contract_example())
        .replace('"release_slot": 0', '"release_slot": ' + "9" * 5000)
        .encode(),
        "jobs.0.release_slot",
        id="integer-of-5000-digits",
    ),
    pytest.param(
        json.dumps(contract_example())
        .replace('"release_slot": 0', '"release_slot": 9223372036854775808')
        .encode(),
        "jobs.0.release_slot",
        id="slot-just-over-int64",
    ),
    pytest.param(
        json.dumps(contract_example()).replace("120.5", "Infinity").encode(),
        "carbon_g_per_kwh.spoke1.0",
        id="infinity-literal",
    ),
    pytest.param(
        json.dumps(contract_example()).replace("120.5", "NaN").encode(),
        "carbon_g_per_kwh.spoke1.0",
        id="nan-literal",
    ),
    pytest.param(b'{"version": 1,', "not valid JSON", id="truncated"),
    pytest.param(b"", "not valid JSON", id="empty"),
]


@pytest.mark.parametrize(("raw", "want_in_message"), FILES)
def test_hostile_files_give_one_line(tmp_path: Path, raw: bytes, want_in_message: str) -> None:
    path = tmp_path / "inst.json"
    path.write_bytes(raw)
    with pytest.raises(InputError) as caught:
        read_instance(path)
    message = str(caught.value)
    assert want_in_message in message
    assert "\n" not in message
    assert len(message) < 600


def test_a_10kb_path_is_a_clean_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read instance file") as caught:
        read_instance(tmp_path / ("x" * 10_000))
    assert len(str(caught.value)) < 600


def test_nesting_given_as_objects_is_refused_before_validation() -> None:
    deep: Any = {}
    for _ in range(5000):
        deep = {"x": deep}
    data = contract_example()
    data["extra"] = deep
    with pytest.raises(InputError, match="nested more than 32 deep"):
        instance_from_dict(data)
