"""The fuzz tier (issue 12): mutated instance JSON (``carbonshift plan``), scenario TOML
(``carbonshift simulate``) and API bodies (``/v1/plan``, ``/v1/advise``).

Each input must end in a result or a clean refusal: no traceback, no 5xx, no hang, strict
JSON out, one-line errors naming the field. A small derandomised run is in the normal tier;
a larger one is marked e2e (about a minute); ``CARBONSHIFT_FUZZ_EXAMPLES=N`` sets the
examples per target for a longer manual run (see tests/fuzz/harness.py and
docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carbonshift.api import ApiSettings, create_app
from carbonshift.api.solves import SolveRunner
from carbonshift.carbon.providers import ChainSet, EmbeddedReplay, FallbackChain
from carbonshift.carbon.series import CiKind
from carbonshift.cli.app import main
from tests.fuzz.harness import DEFECTS, Tally, examples, one_line_naming, strict_json
from tests.fuzz.mutations import hostile, mutate, names_of, paths_of, to_json, to_toml

FAST = 15
LONG = 200

BASE_INSTANCE: dict[str, Any] = {
    "version": 1,
    "slot_minutes": 60,
    "horizon_slots": 4,
    "resources": ["gpu"],
    "clusters": [
        {
            "name": "a",
            "zone": "DE",
            "capacity": {"gpu": 4},
            "watts_per_unit": {"gpu": 200},
            "pue": 1.2,
            "embodied_g_per_unit_hour": {"gpu": 1.0},
        },
        {"name": "b", "capacity": {"gpu": [2, 2, 1, 0]}, "watts_per_unit": {"gpu": 100}},
    ],
    "carbon_g_per_kwh": {"a": [300.0, 100.0, 50.0, 200.0], "b": [80.0, 90.0, 100.0, 60.0]},
    "jobs": [
        {
            "id": "j1",
            "demand": {"gpu": 2},
            "runtime_slots": 2,
            "release_slot": 0,
            "deadline_slot": 4,
            "allowed_clusters": ["a", "b"],
            "critical": False,
        },
        {"id": "j2", "demand": {"gpu": 1}, "runtime_slots": 1},
    ],
    "future_demand": {"gpu": [0, 1, 0, 0]},
}

BASE_SCENARIO: dict[str, Any] = {
    "simulation": {
        "start": "2023-11-14T00:00:00Z",
        "hours": 3,
        "max_drain_hours": 24,
        "allow_replay": False,
        "slot_minutes": 60,
        "horizon_slots": 6,
        "replan_every_slots": 1,
        "policy": "fluidos",
        "baseline": "asap",
        "forecast": "oracle",
        "seed": 1,
    },
    "policy_params": {"late_fallback": True},
    "forecast_params": {},
    "clusters": [
        {
            "name": "a",
            "zone": "DE",
            "capacity": {"gpu": 4},
            "watts_per_unit": {"gpu": 200},
            "pue": 1.1,
            "embodied_g_per_unit_hour": {"gpu": 0.5},
            "idle_watts": 10.0,
        }
    ],
    "workload": {"generator": "caspian", "n_jobs": 4, "hours": 3, "demand_max": 3},
}

BASE_ADVICE: dict[str, Any] = {
    "duration": "3h",
    "within": "24h",
    "zones": ["DE", "GB"],
    "earliest": "2023-06-01T00:00:00Z",
    "demand": {"cpu": 4},
    "watts_per_unit": {"cpu": 50},
    "slot_minutes": 60,
}

POLICIES = ["asap", "fluidos", "srr", "caspian", "window", "exact"]

_TALLIES: dict[str, Tally] = {}


def tally(target: str) -> Tally:
    return _TALLIES.setdefault(target, Tally(target))


@pytest.fixture(scope="module", autouse=True)
def _save_tallies() -> Iterator[None]:
    yield
    for item in _TALLIES.values():
        item.save()
    _TALLIES.clear()


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> tuple[Any, tuple[Any, ...]]:
    """``base`` with one to three values replaced by hostile ones (or deleted)."""
    data: Any = base
    touched: tuple[Any, ...] = ()
    for _ in range(draw(st.integers(1, 3))):
        paths = paths_of(data)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        data = mutate(data, path, draw(hostile), delete=draw(st.integers(0, 9)) == 0)
        touched += path
    return data, touched


@st.composite
def raw_bytes(draw: st.DrawFn, text: str) -> bytes:
    """``text`` as bytes, truncated, with bad UTF-8, or with a huge literal put in."""
    data = text.encode()
    where = draw(st.integers(0, len(data)))
    how = draw(st.sampled_from(["truncate", "bad-utf8", "huge-int", "bom", "nul"]))
    if how == "truncate":
        return data[:where]
    if how == "bad-utf8":
        return data[:where] + b"\xff\xfe\xc3\x28" + data[where:]
    if how == "huge-int":
        return data.replace(b"4", b"4" + b"9" * 5000, 1)
    if how == "bom":
        return b"\xef\xbb\xbf" + data
    return data[:where] + b"\x00" + data[where:]


def _run_cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:  # typer's own usage errors
            code = int(exc.code or 0)
        except Exception as exc:
            return -1, out.getvalue(), f"Traceback: {type(exc).__name__}: {exc}"
    return code, out.getvalue(), err.getvalue()


def _plan_case(raw: bytes, policy: str, names: tuple[str, ...]) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as folder:
        inst, plan = Path(folder) / "inst.json", Path(folder) / "plan.json"
        inst.write_bytes(raw)
        code, out, err = _run_cli(
            ["plan", "-i", str(inst), "-o", str(plan), "-p", policy, "--format", "json"]
        )
        if code == -1 or "Traceback" in err:
            return "traceback", err
        if code == 0:
            try:
                strict_json(plan.read_text())
                strict_json(out)
            except ValueError as exc:
                return "bad-json", str(exc)
            return "ok", ""
        if code == 2 and one_line_naming(err, (*names, "instance", "file")):
            return "clean", ""
        return "bad-error", f"exit {code}: {err}"


def _check(target: str, outcome: str, detail: str, given: str = "") -> None:
    assert outcome not in DEFECTS, f"{target}: {outcome}: {detail}; input: {given}"


def _fuzz_plan_file(data: tuple[Any, tuple[Any, ...]], policy: str) -> None:
    body, path = data
    item = tally("plan (instance JSON, CLI)")
    result: list[tuple[str, str]] = []
    text = to_json(body)
    item.run(lambda: result.append(_plan_case(text.encode(), policy, names_of(path))) or result[-1])
    _check(item.target, *result[-1], text[:300])


def _fuzz_plan_bytes(raw: bytes, policy: str) -> None:
    item = tally("plan (instance bytes, CLI)")
    result: list[tuple[str, str]] = []
    item.run(lambda: result.append(_plan_case(raw, policy, ("UTF-8", "JSON"))) or result[-1])
    _check(item.target, *result[-1])


_SETTINGS = {
    "deadline": None,
    "derandomize": True,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}


@settings(max_examples=examples(FAST), **_SETTINGS)  # type: ignore[arg-type]
@given(data=mutated(BASE_INSTANCE), policy=st.sampled_from(POLICIES))
def test_fuzz_plan_instance(data: tuple[Any, tuple[Any, ...]], policy: str) -> None:
    _fuzz_plan_file(data, policy)


@pytest.mark.e2e
@settings(max_examples=examples(LONG), **_SETTINGS)  # type: ignore[arg-type]
@given(data=mutated(BASE_INSTANCE), policy=st.sampled_from(POLICIES))
def test_fuzz_plan_instance_long(data: tuple[Any, tuple[Any, ...]], policy: str) -> None:
    _fuzz_plan_file(data, policy)


@settings(max_examples=examples(FAST), **_SETTINGS)  # type: ignore[arg-type]
@given(raw=raw_bytes(to_json(BASE_INSTANCE)), policy=st.sampled_from(POLICIES))
def test_fuzz_plan_bytes(raw: bytes, policy: str) -> None:
    _fuzz_plan_bytes(raw, policy)


@pytest.mark.e2e
@settings(max_examples=examples(LONG // 4), **_SETTINGS)  # type: ignore[arg-type]
@given(raw=raw_bytes(to_json(BASE_INSTANCE)), policy=st.sampled_from(POLICIES))
def test_fuzz_plan_bytes_long(raw: bytes, policy: str) -> None:
    _fuzz_plan_bytes(raw, policy)


def _simulate_case(raw: bytes, names: tuple[str, ...]) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as folder:
        scenario, out = Path(folder) / "s.toml", Path(folder) / "out"
        scenario.write_bytes(raw)
        code, stdout, err = _run_cli(
            ["simulate", str(scenario), "--out", str(out), "--no-report", "--format", "json"]
        )
        if code == -1 or "Traceback" in err:
            return "traceback", err
        if code == 0:
            try:
                strict_json((out / "summary.json").read_text())
                strict_json(stdout)
            except ValueError as exc:
                return "bad-json", str(exc)
            return "ok", ""
        if code == 2 and one_line_naming(err, (*names, "s.toml")):
            return "clean", ""
        return "bad-error", f"exit {code}: {err}"


def _fuzz_scenario(data: tuple[Any, tuple[Any, ...]]) -> None:
    body, path = data
    item = tally("simulate (scenario TOML, CLI)")
    try:
        text = to_toml(body)
    except TypeError:
        return  # a value TOML cannot hold (null at the top level)
    result: list[tuple[str, str]] = []
    item.run(lambda: result.append(_simulate_case(text.encode(), names_of(path))) or result[-1])
    _check(item.target, *result[-1], text[:600])


@settings(max_examples=examples(FAST), **_SETTINGS)  # type: ignore[arg-type]
@given(data=mutated(BASE_SCENARIO))
def test_fuzz_scenario(data: tuple[Any, tuple[Any, ...]]) -> None:
    _fuzz_scenario(data)


@pytest.mark.e2e
@settings(max_examples=examples(LONG), **_SETTINGS)  # type: ignore[arg-type]
@given(data=mutated(BASE_SCENARIO))
def test_fuzz_scenario_long(data: tuple[Any, tuple[Any, ...]]) -> None:
    _fuzz_scenario(data)


@pytest.fixture(scope="module")
def api() -> Iterator[TestClient]:
    chains = ChainSet(
        chains={
            CiKind.DIRECT: FallbackChain(CiKind.DIRECT, [], floor=EmbeddedReplay()),
            CiKind.LCA: FallbackChain(CiKind.LCA, [], floor=EmbeddedReplay()),
        },
        providers={},
    )
    runner = SolveRunner(max_solves=4)
    app = create_app(chains, settings=ApiSettings(max_solve_s=20), solves=runner)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client
    runner.stop_all()


def _api_case(
    client: TestClient, method: str, url: str, body: bytes, names: tuple[str, ...]
) -> tuple[str, str]:
    response = client.request(
        method, url, content=body, headers={"content-type": "application/json"}
    )
    if response.status_code >= 500:
        return "5xx", f"{response.status_code} {response.text}"
    try:
        answer = strict_json(response.text)
    except ValueError as exc:
        return "bad-json", str(exc)
    if response.status_code < 400:
        return "ok", ""
    detail = answer.get("detail", "") if isinstance(answer, dict) else ""
    if one_line_naming(str(detail), (*names, "body", "instance", "JSON")):
        return "clean", ""
    return "bad-error", f"{response.status_code} {detail}"


def _fuzz_api(client: TestClient, url: str, body: bytes, names: tuple[str, ...]) -> None:
    item = tally("API (/v1/plan and /v1/advise bodies)")
    result: list[tuple[str, str]] = []
    item.run(lambda: result.append(_api_case(client, "POST", url, body, names)) or result[-1])
    _check(item.target, *result[-1], body[:300].decode(errors="replace"))


@settings(max_examples=examples(FAST), **_SETTINGS)  # type: ignore[arg-type]
@given(data=mutated(BASE_INSTANCE), policy=st.sampled_from(POLICIES))
def test_fuzz_api_plan(api: TestClient, data: tuple[Any, tuple[Any, ...]], policy: str) -> None:
    body, path = data
    _fuzz_api(api, f"/v1/plan?policy={policy}", to_json(body).encode(), names_of(path))


@pytest.mark.e2e
@settings(max_examples=examples(LONG), **_SETTINGS)  # type: ignore[arg-type]
@given(
    data=st.one_of(
        mutated(BASE_INSTANCE).map(lambda d: ("plan", d)),
        mutated(BASE_ADVICE).map(lambda d: ("advise", d)),
    ),
    policy=st.sampled_from(POLICIES),
)
def test_fuzz_api_long(
    api: TestClient, data: tuple[str, tuple[Any, tuple[Any, ...]]], policy: str
) -> None:
    route, (body, path) = data
    url = f"/v1/plan?policy={policy}" if route == "plan" else "/v1/advise"
    _fuzz_api(api, url, to_json(body).encode(), names_of(path))


@settings(max_examples=examples(FAST), **_SETTINGS)  # type: ignore[arg-type]
@given(data=mutated(BASE_ADVICE))
def test_fuzz_api_advise(api: TestClient, data: tuple[Any, tuple[Any, ...]]) -> None:
    body, path = data
    _fuzz_api(api, "/v1/advise", to_json(body).encode(), names_of(path))
