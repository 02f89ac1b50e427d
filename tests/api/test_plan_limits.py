"""Issue 12 item 2: /v1/plan compute is bounded (parameters, cells by policy cost, a
wall-time budget) and every solve runs in a worker process that is stopped when the client
leaves, the budget is spent or the server stops; a streamed body over the limit is 413."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from carbonshift.api import ApiSettings, create_app
from carbonshift.api.solves import ClientGoneError, SolveRunner, StoppingError
from carbonshift.carbon.providers import ChainSet, EmbeddedReplay, FallbackChain
from carbonshift.carbon.series import CiKind
from carbonshift.formats import instance_from_dict


def instance(jobs: int = 3, horizon: int = 8, clusters: int = 2) -> dict[str, Any]:
    names = [f"c{i}" for i in range(clusters)]
    return {
        "version": 1,
        "slot_minutes": 60,
        "horizon_slots": horizon,
        "resources": ["gpu"],
        "clusters": [
            {"name": n, "capacity": {"gpu": 8}, "watts_per_unit": {"gpu": 300}} for n in names
        ],
        "carbon_g_per_kwh": {
            n: [100.0 + ((7 * i + 13 * k) % 50) for i in range(horizon)]
            for k, n in enumerate(names)
        },
        "jobs": [
            {"id": f"j{i}", "demand": {"gpu": 1 + i % 3}, "runtime_slots": 1 + i % 4}
            for i in range(jobs)
        ],
    }


def _offline() -> ChainSet:
    return ChainSet(
        chains={CiKind.DIRECT: FallbackChain(CiKind.DIRECT, [], floor=EmbeddedReplay())},
        providers={},
    )


@pytest.fixture
def runner() -> Iterator[SolveRunner]:
    solves = SolveRunner(max_solves=2)
    yield solves
    solves.stop_all()


def _client(runner: SolveRunner, **settings: Any) -> TestClient:
    app = create_app(_offline(), settings=ApiSettings(**settings), solves=runner)
    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize(
    ("policy", "params", "want_detail"),
    [
        pytest.param("srr", ["samples=1000000"], "above its maximum 100000", id="srr-1e6"),
        pytest.param("srr", ["samples=5000"], "above this server's limit of 1000", id="srr-5000"),
        pytest.param("exact", ["time_limit_s=1e9"], "above its maximum 86400", id="exact-1e9-s"),
        pytest.param(
            "exact", ["time_limit_s=600"], "above this server's budget of 30 s", id="exact-600-s"
        ),
        pytest.param(
            "caspian", ["lp_time_limit_s=3600"], "above this server's budget", id="lp-limit"
        ),
        pytest.param(
            "srr", ["samples=" + "9" * 5000], "not a whole number", id="samples-5000-digits"
        ),
        pytest.param("caspian", ["omega1=inf"], "not finite", id="omega-infinite"),
        pytest.param("caspian", ["omega1=1e300"], "above its maximum", id="omega-huge"),
    ],
)
def test_costly_parameters_are_refused(
    runner: SolveRunner, policy: str, params: list[str], want_detail: str
) -> None:
    client = _client(runner)
    response = client.post("/v1/plan", params={"policy": policy, "param": params}, json=instance())
    assert response.status_code == 400, response.text
    assert want_detail in response.json()["detail"]
    assert runner.running == 0


def test_cell_limit_weighs_the_policy_cost(runner: SolveRunner) -> None:
    """1,000 cells: within the limit for a greedy policy, ten times over it for an LP."""
    client = _client(runner, max_plan_cells=2_000)
    body = instance(jobs=50, horizon=10, clusters=2)
    greedy = client.post("/v1/plan", params={"policy": "fluidos"}, json=body)
    assert greedy.status_code == 200, greedy.text
    lp = client.post("/v1/plan", params={"policy": "caspian"}, json=body)
    assert lp.status_code == 400
    assert "policy 'caspian' may plan at most 200 per request" in lp.json()["detail"]


def test_a_solve_past_the_budget_is_stopped(runner: SolveRunner) -> None:
    # a greedy pass over 2,000 jobs (no time limit of its own to cap, unlike exact, whose
    # time_limit_s the budget caps so that HiGHS may stop before the budget is checked)
    client = _client(runner, max_solve_s=0.001)
    response = client.post(
        "/v1/plan",
        params={"policy": "fluidos"},
        json=instance(jobs=2_000, horizon=48, clusters=3),
    )
    assert response.status_code == 400, response.text
    assert "budget of 0.001 s" in response.json()["detail"]
    assert runner.running == 0


def test_a_solve_is_stopped_when_the_client_leaves(runner: SolveRunner) -> None:
    parsed = instance_from_dict(instance(jobs=60, horizon=24, clusters=3))

    async def gone() -> bool:
        return True

    with pytest.raises(ClientGoneError):
        asyncio.run(runner.solve(parsed, "exact", {}, budget_s=60, is_disconnected=gone))
    assert runner.running == 0


def test_stop_all_stops_running_solves_and_refuses_new_ones(runner: SolveRunner) -> None:
    parsed = instance_from_dict(instance(jobs=60, horizon=24, clusters=3))

    async def scenario() -> None:
        async def here() -> bool:
            return False

        task = asyncio.create_task(
            runner.solve(parsed, "exact", {}, budget_s=60, is_disconnected=here)
        )
        while runner.running == 0 and not task.done():
            await asyncio.sleep(0.01)
        runner.stop_all()
        with pytest.raises(StoppingError):
            await task

    asyncio.run(scenario())
    assert runner.running == 0
    with pytest.raises(StoppingError):
        asyncio.run(
            runner.solve(
                instance_from_dict(instance()), "asap", {}, budget_s=5, is_disconnected=_never
            )
        )


async def _never() -> bool:
    return False


def test_a_solve_answers_a_plan_from_the_worker(runner: SolveRunner) -> None:
    client = _client(runner)
    response = client.post("/v1/plan", params={"policy": "srr"}, json=instance())
    assert response.status_code == 200, response.text
    assert response.json()["feasible"] is True
    assert runner.running == 0


def test_a_streamed_body_over_the_limit_is_413(runner: SolveRunner) -> None:
    client = _client(runner, max_body_bytes=10_000)

    def chunks() -> Iterator[bytes]:
        yield b'{"version": 1, "jobs": ['
        for _ in range(200):
            yield b'{"id": "x", "demand": {"gpu": 1}, "runtime_slots": 1},'
        yield b"]}"

    response = client.post(
        "/v1/plan", content=chunks(), headers={"content-type": "application/json"}
    )
    assert "content-length" not in {k.lower() for k in response.request.headers}
    assert response.status_code == 413, response.text
    assert "larger than 10000 bytes" in response.json()["detail"]


def _body(old: str, new: str) -> bytes:
    text = json.dumps(instance())
    assert old in text
    return text.replace(old, new, 1).encode()


@pytest.mark.parametrize(
    ("raw", "want_status", "want_detail"),
    [
        pytest.param(
            _body('"runtime_slots": 1', '"runtime_slots": 1, "release_slot": 9223372036854775808'),
            400,
            "jobs.0.release_slot",
            id="slot-outside-int64-was-500",
        ),
        pytest.param(
            _body('"runtime_slots": 1', '"runtime_slots": 1, "release_slot": ' + "9" * 4301),
            400,
            "jobs.0.release_slot",
            id="integer-of-4301-digits",
        ),
        pytest.param(
            b'{"version": 1, "jobs": ' + b"[" * 1000 + b"]" * 1000 + b"}",
            422,
            "nested more than 32 deep",
            id="nesting-1000-deep",
        ),
        pytest.param(b'{"version": 1, "x": "\xff"}', 422, "not UTF-8", id="non-utf8"),
        pytest.param(
            _body('"watts_per_unit": {"gpu": 300}', '"watts_per_unit": {"gpu": 1e308}'),
            400,
            "watts_per_unit.gpu",
            id="watts-1e308-gave-infinity",
        ),
        pytest.param(
            _body('"capacity": {"gpu": 8}', '"capacity": {"gpu": 5e-324}'),
            400,
            "too small",
            id="capacity-5e-324-stalled-caspian",
        ),
        pytest.param(
            _body('"runtime_slots": 1', '"runtime_slots": true'),
            400,
            "runtime_slots",
            id="boolean-runtime",
        ),
        pytest.param(
            _body('"runtime_slots": 1', '"runtime_slots": "1"'),
            400,
            "runtime_slots",
            id="numeric-string-runtime",
        ),
        pytest.param(_body("100.0", "Infinity"), 400, "carbon_g_per_kwh", id="infinite-slot"),
        pytest.param(_body("100.0", "NaN"), 400, "carbon_g_per_kwh", id="nan-slot"),
    ],
)
def test_hostile_plan_bodies_are_4xx_naming_the_field(
    runner: SolveRunner, raw: bytes, want_status: int, want_detail: str
) -> None:
    """Issue 12 items 8 and 9 over HTTP: each used to be a 500, a traceback or accepted."""
    client = _client(runner)
    response = client.post(
        "/v1/plan",
        params={"policy": "caspian"},
        content=raw,
        headers={"content-type": "application/json"},
    )
    assert response.status_code == want_status, response.text
    detail = response.json()["detail"]
    assert want_detail in detail
    assert "\n" not in detail
    assert runner.running == 0


def test_integral_float_runtime_is_planned_and_the_answer_is_strict_json(
    runner: SolveRunner,
) -> None:
    client = _client(runner)
    response = client.post(
        "/v1/plan",
        params={"policy": "caspian"},
        content=_body('"runtime_slots": 1', '"runtime_slots": 1.0'),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 200, response.text

    def refuse(constant: str) -> None:
        raise AssertionError(f"non-JSON constant {constant}")

    json.loads(response.text, parse_constant=refuse)


def test_a_solve_past_the_memory_cap_is_a_clear_400_not_a_500() -> None:
    # 16 MiB of address space is below what the worker maps already (numpy, HiGHS): the
    # first allocation of the solve fails, as one of a request too large for the cap would.
    capped = SolveRunner(max_solves=1, memory_mb=16)
    try:
        app = create_app(_offline(), settings=ApiSettings(), solves=capped)
        client = TestClient(app, raise_server_exceptions=False)
        response = client.post("/v1/plan", params={"policy": "exact"}, json=instance(jobs=30))
    finally:
        capped.stop_all()
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/json")
    detail = response.json()["detail"]
    assert "memory cap of 16 MiB" in detail
    assert "send fewer jobs" in detail
    assert capped.running == 0


def test_api_settings_pass_the_memory_cap_to_the_workers(runner: SolveRunner) -> None:
    client = _client(runner, max_solve_memory_mb=4096)
    response = client.post("/v1/plan", params={"policy": "exact"}, json=instance())
    assert response.status_code == 200, response.text


def test_carbonshift_counts_job_classes() -> None:
    """50 alike jobs are one class for ``carbonshift`` (it plans classes: 1 x 2 x 10 x 2 =
    40 weighted cells), 50 jobs for an LP policy (50 x 2 x 10 x 10 = 10,000)."""
    body = instance(jobs=50, horizon=10, clusters=2)
    for job in body["jobs"]:
        job["demand"], job["runtime_slots"] = {"gpu": 1}, 2
    solves = SolveRunner(max_solves=1)
    try:
        client = _client(solves, max_plan_cells=200)
        ours = client.post("/v1/plan", params={"policy": "carbonshift"}, json=body)
        assert ours.status_code == 200, ours.text
        lp = client.post("/v1/plan", params={"policy": "caspian"}, json=body)
        assert lp.status_code == 400
        assert "1,000 job x cluster x slot cells" in lp.json()["detail"]
    finally:
        solves.stop_all()


@pytest.mark.parametrize(
    ("name", "given", "budget_s", "want"),
    [
        # step 8b (up to 30 s of CPU by default): a late plan of 1,000 jobs must still
        # answer within the request's budget
        pytest.param("late_milp_cpu_s", [], 30.0, "10", id="late-default-a-third-of-30-s"),
        pytest.param("late_milp_cpu_s", [], 90.0, "30", id="late-default-below-a-third"),
        pytest.param("late_milp_cpu_s", ["late_milp_cpu_s=20"], 30.0, "20", id="late-given-kept"),
        # step 7h (14-18 s of CPU on 100-300 jobs, its guard 60 s): a plan must still answer
        pytest.param("pair_cpu_s", [], 30.0, "7.5", id="pairs-default-a-quarter-of-30-s"),
        pytest.param("pair_cpu_s", [], 600.0, "60", id="pairs-default-below-a-quarter"),
        pytest.param("pair_cpu_s", ["pair_cpu_s=20"], 30.0, "20", id="pairs-given-kept"),
    ],
)
def test_a_step_gets_a_share_of_the_budget(
    runner: SolveRunner,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    given: list[str],
    budget_s: float,
    want: str,
) -> None:
    """carbonshift's CPU budgets of one step are lowered to their share of the server's
    budget per request unless the request sets them."""
    seen: dict[str, Any] = {}

    async def solve(_inst: Any, policy: str, params: dict[str, str], **_: Any) -> dict[str, Any]:
        seen.update(params, policy=policy)
        return {}

    monkeypatch.setattr(runner, "solve", solve)
    client = _client(runner, max_solve_s=budget_s)
    client.post("/v1/plan", params={"policy": "carbonshift", "param": given}, json=instance())
    assert seen["policy"] == "carbonshift"
    assert seen[name] == want
