"""Fuzz targets of issue 13: hostile file kinds behind every CLI path, and hostile values
handed to the domain objects from Python.

- Every command that reads a path gets a FIFO, ``/dev/zero``, a directory, a sparse file over
  the 512 MiB limit, an empty file, random bytes or a missing path, under the harness's hang
  guard: each must end in exit code 2 with one line naming the file.
- ``Job``, ``Cluster`` and ``TimeGrid`` get a hostile value (tests/fuzz/mutations.py) in one
  field: each either builds, with whole slot numbers as ``int`` and amounts finite and >= 0,
  or raises InputError naming the field; any other exception is a defect.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carbonshift.domain import Cluster, ClusterName, Job, JobId, TimeGrid
from carbonshift.errors import InputError
from tests.fuzz.harness import Tally, examples, one_line_naming
from tests.fuzz.mutations import FILE_KINDS, Deep, Huge, hostile, make_file
from tests.fuzz.test_fuzz_inputs import _SETTINGS, _TALLIES, _check, _run_cli, tally

pytestmark = pytest.mark.skipif(
    not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="needs POSIX FIFOs"
)

FAST = 15


@pytest.fixture(scope="module", autouse=True)
def _save_tallies() -> Iterator[None]:
    yield
    for item in _TALLIES.values():
        item.save()
    _TALLIES.clear()


#: (file name, the command line around it); {path} is the hostile path
COMMANDS: list[tuple[str, list[str]]] = [
    ("inst.json", ["plan", "-i", "{path}", "-p", "asap", "-o", "{out}/plan.json"]),
    ("run.toml", ["simulate", "{path}", "--out", "{out}/sim", "--no-report"]),
    ("sweep.toml", ["sweep", "{path}", "--out", "{out}/sweep"]),
    (
        "ci.csv",
        [
            "data",
            "show",
            "DE",
            "--csv",
            "{path}",
            "--start",
            "2023-11-14T00:00Z",
            "--end",
            "2023-11-14T03:00Z",
        ],
    ),
    ("controller.yaml", ["controller", "--config", "{path}", "--check"]),
]


def _file_case(name: str, command: list[str], kind: str, junk: bytes) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as folder:
        path = make_file(Path(folder), name, kind, junk)
        args = [a.format(path=path, out=folder) for a in command]
        code, _out, err = _run_cli(args)
        if code == -1 or "Traceback" in err:
            return "traceback", err
        if code == 2 and one_line_naming(err.strip().splitlines()[-1] if err else "", (name,)):
            return "clean", ""
        return "bad-error", f"{' '.join(args)}: exit {code}: {err[-300:]}"


@settings(max_examples=examples(FAST), **_SETTINGS)  # type: ignore[arg-type]
@given(
    command=st.sampled_from(COMMANDS),
    kind=st.sampled_from(FILE_KINDS),
    junk=st.binary(max_size=64),
)
def test_fuzz_hostile_file_kinds(command: tuple[str, list[str]], kind: str, junk: bytes) -> None:
    name, args = command
    item = tally("CLI paths (FIFO, device, directory, oversize, junk)")
    result: list[tuple[str, str]] = []
    item.run(lambda: result.append(_file_case(name, args, kind, junk)) or result[-1])
    _check(item.target, *result[-1], f"{kind} as {name}")


_JOB = {"id": JobId("j1"), "demand": {"gpu": 1.0}, "runtime_slots": 2, "deadline_slot": 5}
_CLUSTER = {"name": ClusterName("c1"), "capacity": {"gpu": 4.0}, "watts_per_unit": {"gpu": 1.0}}
_FIELDS: list[tuple[str, str]] = [
    ("job", "runtime_slots"),
    ("job", "release_slot"),
    ("job", "deadline_slot"),
    ("job", "demand"),
    ("job", "critical"),
    ("cluster", "capacity"),
    ("cluster", "watts_per_unit"),
    ("cluster", "pue"),
    ("cluster", "embodied_g_per_unit_hour"),
    ("grid", "slot_minutes"),
    ("grid", "horizon_slots"),
]


def _value(raw: Any) -> Any:
    # the JSON-only stand-ins of mutations.py, as Python values
    if isinstance(raw, Huge):
        return 10**50
    if isinstance(raw, Deep):
        return [[[]]]
    return raw


def _build(kind: str, field: str, value: Any) -> object:
    if kind == "job":
        if field == "demand":
            value = {"gpu": value}
        return Job(**{**_JOB, field: value})
    if kind == "cluster":
        if field in ("capacity", "watts_per_unit", "embodied_g_per_unit_hour"):
            value = {"gpu": value}
        return Cluster(**{**_CLUSTER, field: value})
    grid = {"slot_minutes": 60, "horizon_slots": 4, field: value}
    return TimeGrid(**grid)


def _sound(built: object) -> bool:
    """Whole slot numbers are ints; amounts are finite and >= 0."""
    if isinstance(built, Job):
        slots = (built.runtime_slots, built.release_slot, built.deadline_slot)
        amounts = list(built.demand.values())
    elif isinstance(built, Cluster):
        slots = ()
        amounts = [built.pue, *built.watts_per_unit.values()]
        amounts += list(built.embodied_g_per_unit_hour.values())
        for cap in built.capacity.values():
            amounts += list(cap) if isinstance(cap, tuple) else [cap]
    else:
        assert isinstance(built, TimeGrid)
        slots = (built.slot_minutes, built.horizon_slots)
        amounts = []
    return all(type(s) is int for s in slots) and all(
        not isinstance(a, bool) and isinstance(a, int | float) and 0 <= a < math.inf
        for a in amounts
    )


def _domain_case(kind: str, field: str, value: Any) -> tuple[str, str]:
    try:
        built = _build(kind, field, value)
    except InputError as exc:
        if field in str(exc) and "\n" not in str(exc):
            return "clean", ""
        return "bad-error", str(exc)
    except Exception as exc:
        return "traceback", f"{kind}.{field} = {value!r}: {type(exc).__name__}: {exc}"
    if not _sound(built):
        return "accepted", f"{kind}.{field} = {value!r} was accepted as {built!r}"
    return "ok", ""


@settings(max_examples=examples(FAST * 4), **_SETTINGS)  # type: ignore[arg-type]
@given(target=st.sampled_from(_FIELDS), raw=hostile)
def test_fuzz_domain_objects_from_python(target: tuple[str, str], raw: Any) -> None:
    kind, field = target
    item: Tally = tally("domain objects (Python values)")
    result: list[tuple[str, str]] = []
    item.run(lambda: result.append(_domain_case(kind, field, _value(raw))) or result[-1])
    _check(item.target, *result[-1], f"{kind}.{field} = {raw!r}")
