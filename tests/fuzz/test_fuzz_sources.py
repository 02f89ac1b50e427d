"""Fuzz targets of issue 13: hostile file kinds behind every CLI path, and hostile values
handed to the domain objects from Python.

- Every command that reads a path gets a FIFO, ``/dev/zero``, a directory, a sparse file over
  the 512 MiB limit, an empty file, random bytes or a missing path, under the harness's hang
  guard: each must end in exit code 2 with one line naming the file.
- ``Job``, ``Cluster`` and ``TimeGrid`` get a hostile value (tests/fuzz/mutations.py) in one
  field: each either builds, with whole slot numbers as ``int`` and amounts finite and >= 0,
  or raises InputError naming the field; any other exception is a defect.
- Round two: ``.gz`` and ``.zip`` traces with flipped bytes, cut tails and tight expansion
  limits; ``CarbonSeries`` with a hostile value in one field; a policy's plan with a hostile
  job, cluster or start: each is read or built soundly, or refused with one line.
"""

from __future__ import annotations

import gzip
import io
import math
import os
import tempfile
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carbonshift.carbon.series import CarbonSeries, CiKind
from carbonshift.domain import (
    Assignment,
    Cluster,
    ClusterName,
    Instance,
    Job,
    JobId,
    Plan,
    TimeGrid,
)
from carbonshift.errors import InputError
from carbonshift.files import open_decompressed
from carbonshift.planning.output_check import check_policy_output
from carbonshift.workloads import read_workload
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


# --- round two (safety2): compressed traces, CarbonSeries, a policy's plan ------------------

_TRACE = b"arrival_time,length,cpus\n" + b"".join(
    f"{i},{1 + i % 5},{1 + i % 3}\n".encode() for i in range(200)
)


def _archive(kind: str) -> bytes:
    if kind == "gz":
        return gzip.compress(_TRACE)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("jobs.csv", _TRACE)
    return buffer.getvalue()


def _trace_case(kind: str, edits: list[tuple[int, int]], cut: int, limit: int) -> tuple[str, str]:
    data = bytearray(_archive(kind))
    for offset, byte in edits:
        data[offset % len(data)] = byte
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"jobs.csv.{kind}"
        path.write_bytes(bytes(data[: max(1, len(data) - cut)]))
        try:
            with open_decompressed(path, "trace", max_bytes=limit) as stream:
                stream.read()
            read_workload(path, strict=False)
        except InputError as exc:
            if str(path) in str(exc) and "\n" not in str(exc):
                return "clean", ""
            return "bad-error", str(exc)
        except Exception as exc:
            return "traceback", f"{type(exc).__name__}: {exc}"
    return "ok", ""


@settings(max_examples=examples(FAST * 2), **_SETTINGS)  # type: ignore[arg-type]
@given(
    kind=st.sampled_from(["gz", "zip"]),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
    cut=st.sampled_from([0, 0, 1, 7, 30]),
    limit=st.sampled_from([100, len(_TRACE) - 1, len(_TRACE), 1 << 20]),
)
def test_fuzz_compressed_traces(
    kind: str, edits: list[tuple[int, int]], cut: int, limit: int
) -> None:
    """Flipped bytes, cut tails and tight limits in a .gz or .zip trace: read, or an
    InputError naming the file; never a zlib.error, RuntimeError or a memory blow-up."""
    item = tally("compressed traces (.gz, .zip)")
    result: list[tuple[str, str]] = []
    item.run(lambda: result.append(_trace_case(kind, edits, cut, limit)) or result[-1])
    _check(item.target, *result[-1], f"{kind} edits={edits} cut={cut} limit={limit}")


_SERIES_FIELDS = ["value", "start", "step_minutes", "estimated", "kind", "zone"]


def _series_case(field: str, value: Any) -> tuple[str, str]:
    args: dict[str, Any] = {
        "zone": "DE",
        "kind": CiKind.DIRECT,
        "start": datetime(2024, 1, 1, tzinfo=UTC),
        "step_minutes": 60,
        "values_g_per_kwh": np.array([100.0, 200.0, 300.0]),
    }
    try:
        if field == "value":
            args["values_g_per_kwh"] = np.array([100.0, value, 300.0])
        elif field == "estimated":
            args["estimated"] = np.array(value if isinstance(value, list) else [value])
        else:
            args[field] = value
    except (TypeError, ValueError, OverflowError):
        return "ok", ""  # numpy itself refuses it: not our input
    try:
        built = CarbonSeries(**args)
    except InputError as exc:
        return ("clean", "") if "\n" not in str(exc) else ("bad-error", str(exc))
    except Exception as exc:
        return "traceback", f"{field} = {value!r}: {type(exc).__name__}: {exc}"
    values = built.values_g_per_kwh
    sound = (
        values.dtype == np.float64
        and bool(np.isfinite(values).all() and (values >= 0).all())
        and built.start.utcoffset() is not None
        and type(built.step_minutes) is int
        and built.step_minutes >= 1
    )
    return ("ok", "") if sound else ("accepted", f"{field} = {value!r} gave {built!r}")


@settings(max_examples=examples(FAST * 3), **_SETTINGS)  # type: ignore[arg-type]
@given(field=st.sampled_from(_SERIES_FIELDS), raw=hostile)
def test_fuzz_carbon_series_from_python(field: str, raw: Any) -> None:
    item = tally("CarbonSeries (Python values)")
    result: list[tuple[str, str]] = []
    item.run(lambda: result.append(_series_case(field, _value(raw))) or result[-1])
    _check(item.target, *result[-1], f"{field} = {raw!r}")


_PLAN_JOBS = ("j0", "j1", "j2")


def _plan_case(job_id: str, cluster: str, start: Any, extra: list[str]) -> tuple[str, str]:
    inst = Instance(
        grid=TimeGrid(slot_minutes=60, horizon_slots=6),
        resources=("gpu",),
        clusters=(Cluster(**_CLUSTER),),
        carbon_g_per_kwh={ClusterName("c1"): (1.0,) * 6},
        jobs=tuple(Job(**{**_JOB, "id": JobId(j), "release_slot": 1}) for j in _PLAN_JOBS),
    )
    try:
        first = Assignment(JobId(job_id), ClusterName(cluster), start)
        plan = Plan.of("fuzzed", [first], [JobId(j) for j in extra])
        check_policy_output("fuzzed", inst, plan)
    except InputError as exc:
        return ("clean", "") if "\n" not in str(exc) else ("bad-error", str(exc))
    except Exception as exc:
        return "traceback", f"{type(exc).__name__}: {exc}"
    seen = sorted([first.job, *extra])
    sound = seen == sorted(_PLAN_JOBS) and 1 <= first.start_slot <= 4 and cluster == "c1"
    return ("ok", "") if sound else ("accepted", f"{first!r} with unscheduled {extra}")


@settings(max_examples=examples(FAST * 3), **_SETTINGS)  # type: ignore[arg-type]
@given(
    job_id=st.sampled_from([*_PLAN_JOBS, "ghost"]),
    cluster=st.sampled_from(["c1", "c2"]),
    start=st.one_of(hostile, st.integers(-2, 8)),
    extra=st.lists(st.sampled_from([*_PLAN_JOBS, "ghost"]), max_size=4),
)
def test_fuzz_policy_output(job_id: str, cluster: str, start: Any, extra: list[str]) -> None:
    """A fuzzed plan either is valid or is refused naming the policy; the check never raises
    anything else and never lets an invalid plan through."""
    item = tally("policy output (plan from a policy)")
    result: list[tuple[str, str]] = []
    item.run(lambda: result.append(_plan_case(job_id, cluster, _value(start), extra)) or result[-1])
    _check(item.target, *result[-1], f"{job_id} {cluster} {start!r} {extra}")
