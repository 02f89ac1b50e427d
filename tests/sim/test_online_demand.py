"""The simulator's demand forecast for the rounds: learned from past arrivals only, nothing
forecast after the declared arrival span, and reserving room for it keeps deadlines; by
default ``carbonshift`` (and no other policy) plans online with it and a reserve of 1.0 in
phantoms shaped as the pending jobs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from carbonshift.domain import Instance, Plan
from carbonshift.planning import parse_params, run_policy
from carbonshift.planning.types import PlanContext, PlanStatus, PolicyResult
from carbonshift.sim import experiment as experiment_module
from carbonshift.sim.experiment import Experiment, online_settings, prepare, simulate_policy
from carbonshift.sim.outputs import run_metrics
from carbonshift.sim.reproduce import caspian_setting
from carbonshift.workloads import forecast_demand

#: each round's future_demand of gpu, in order, recorded by :func:`recorder`
SEEN: list[tuple[float, ...]] = []


def recorder(instance: Instance, context: PlanContext) -> PolicyResult:
    """A policy that records the future demand it is given and starts nothing, so that every
    slot from the first arrival on has a round."""
    SEEN.append(tuple((instance.future_demand or {}).get("gpu", ())))
    return PolicyResult(
        plan=Plan.of("recorder", [], [job.id for job in instance.jobs]),
        status=PlanStatus.FEASIBLE,
    )


def _small(seed: int, n_jobs: int, demand_forecast: str | None = "moving-average") -> Experiment:
    exp = caspian_setting(seed, n_jobs=n_jobs, max_drain_hours=48)
    return replace(exp, baseline="asap", baseline_params={}, demand_forecast=demand_forecast)


@pytest.mark.parametrize("method", ["moving-average", "moving-average-lower"])
def test_rounds_get_a_forecast_from_past_arrivals_that_stops_with_the_arrival_span(
    method: str,
) -> None:
    small = _small(1, 12, method)
    exp = replace(small, config=replace(small.config, max_drain_hours=4))
    SEEN.clear()

    simulate_policy(exp, prepare(exp), f"{__name__}:recorder", {})

    hours = exp.config.hours
    work = exp.workload
    first_round_h = float(np.ceil(np.min(work.submit_h)))
    assert len(SEEN) == hours + 4 - first_round_h
    for i, got in enumerate(SEEN):
        now_h = first_round_h + i
        past = work.take(work.submit_h < now_h)
        want = forecast_demand(
            past,
            resource="gpu",
            now_h=now_h,
            slot_minutes=60,
            horizon_slots=len(got),
            method=method,
        )
        want[now_h + np.arange(len(got)) >= hours] = 0.0
        np.testing.assert_allclose(got, want, err_msg=f"round at {now_h} h")
    assert any(sum(got) > 0 for got in SEEN)


@pytest.mark.parametrize("seed", [1, 2], ids=["seed-1", "seed-2"])
def test_reserving_room_for_the_learned_demand_keeps_every_deadline_asap_keeps(
    seed: int,
) -> None:
    exp = _small(seed, 50)
    prepared = prepare(exp)

    asap = run_metrics(simulate_policy(exp, prepared, "asap", {}))
    reserving = run_metrics(
        simulate_policy(exp, prepared, "carbonshift", {"reserve_future_demand": 0.5})
    )

    assert asap["deadline_met_pct"] == 100.0
    assert reserving["deadline_met_pct"] == 100.0
    assert reserving["jobs_completed"] == asap["jobs_completed"] == 50
    assert reserving["carbon_kg"] < asap["carbon_kg"]


ONLINE_SETTINGS = [
    pytest.param(
        "carbonshift",
        None,
        {},
        (
            "moving-average",
            {
                "cluster_band_columns": 0,
                "lp_bands": False,
                "late_bound": False,
                "late_milp_columns": 0,
                "polish_chain_lp_iterations": 0,
                "pair_lp_iterations": 0,
                "support_nodes": 500,
                "reserve_future_demand": 1.0,
                "reserve_shapes": "sample",
            },
        ),
        id="carbonshift-scenario-names-nothing-learned-demand-and-reserve-no-cluster-bands",
    ),
    pytest.param(
        "carbonshift",
        "moving-average",
        {},
        (
            "moving-average",
            {
                "cluster_band_columns": 0,
                "lp_bands": False,
                "late_bound": False,
                "late_milp_columns": 0,
                "polish_chain_lp_iterations": 0,
                "pair_lp_iterations": 0,
                "support_nodes": 500,
                "reserve_future_demand": 1.0,
                "reserve_shapes": "sample",
            },
        ),
        id="carbonshift-names-the-learned-forecast-same-as-default",
    ),
    pytest.param(
        "carbonshift",
        None,
        {"reserve_future_demand": 0},
        (
            "moving-average",
            {
                "cluster_band_columns": 0,
                "lp_bands": False,
                "late_bound": False,
                "late_milp_columns": 0,
                "polish_chain_lp_iterations": 0,
                "pair_lp_iterations": 0,
                "support_nodes": 500,
                "reserve_future_demand": 0,
                "reserve_shapes": "sample",
            },
        ),
        id="carbonshift-reserve-0-turns-the-reserve-off",
    ),
    pytest.param(
        "carbonshift",
        "none",
        {},
        (
            "none",
            {
                "cluster_band_columns": 0,
                "lp_bands": False,
                "late_bound": False,
                "late_milp_columns": 0,
                "polish_chain_lp_iterations": 0,
                "pair_lp_iterations": 0,
                "support_nodes": 500,
            },
        ),
        id="carbonshift-demand-none-turns-both-off-rounds-still-without-cluster-bands",
    ),
    pytest.param(
        "carbonshift",
        "seasonal-day",
        {"polish_steps": 0},
        (
            "seasonal-day",
            {
                "cluster_band_columns": 0,
                "lp_bands": False,
                "late_bound": False,
                "late_milp_columns": 0,
                "polish_chain_lp_iterations": 0,
                "pair_lp_iterations": 0,
                "support_nodes": 500,
                "polish_steps": 0,
            },
        ),
        id="carbonshift-another-forecast-no-default-reserve-cjps-co2-reproductions",
    ),
    pytest.param(
        "carbonshift",
        "seasonal-day",
        {"cluster_band_columns": 400},
        (
            "seasonal-day",
            {
                "cluster_band_columns": 400,
                "lp_bands": False,
                "late_bound": False,
                "late_milp_columns": 0,
                "polish_chain_lp_iterations": 0,
                "pair_lp_iterations": 0,
                "support_nodes": 500,
            },
        ),
        id="carbonshift-a-scenario-may-turn-the-cluster-bands-on-in-its-rounds",
    ),
    pytest.param(
        "srr",
        None,
        {"future_weight": 1.0},
        (None, {"future_weight": 1.0}),
        id="srr-unchanged",
    ),
    pytest.param(
        "window",
        "seasonal-day",
        {},
        ("seasonal-day", {}),
        id="window-unchanged",
    ),
    pytest.param("caspian", None, {}, (None, {}), id="caspian-unchanged"),
    pytest.param("fluidos", None, {}, (None, {}), id="fluidos-unchanged"),
]


@pytest.mark.parametrize(("policy", "scenario_demand", "params", "want"), ONLINE_SETTINGS)
def test_online_settings_give_carbonshift_alone_its_learned_demand_and_reserve(
    policy: str,
    scenario_demand: str | None,
    params: dict[str, float],
    want: tuple[str | None, dict[str, float]],
) -> None:
    assert online_settings(scenario_demand, policy, params) == want


@pytest.mark.parametrize(
    ("scenario_demand", "params", "want_warning"),
    [
        pytest.param("seasonal-day", {}, True, id="another-forecast-drops-the-reserve-says-so"),
        pytest.param(
            "oracle",
            {"reserve_future_demand": 1.0, "reserve_shapes": "sample"},
            False,
            id="another-forecast-with-the-reserve-set-is-quiet",
        ),
        pytest.param(None, {}, False, id="the-default-forecast-is-quiet"),
        pytest.param("none", {}, False, id="no-forecast-is-quiet"),
    ],
)
def test_naming_another_demand_forecast_warns_that_the_reserve_is_off(
    scenario_demand: str | None,
    params: dict[str, object],
    want_warning: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="carbonshift.sim"):
        online_settings(scenario_demand, "carbonshift", params)
    got = [r.getMessage() for r in caplog.records if "reserve_future_demand" in r.getMessage()]
    assert bool(got) is want_warning
    if want_warning:
        assert "reserve_future_demand = 1.0" in got[0]
        assert "[policy_params]" in got[0]


#: (policy, reserve_future_demand given, whether future_demand was carried) per round
CALLS: list[tuple[str, object, bool]] = []


def _spy(
    name: str,
    instance: Instance,
    params: dict[str, object] | None = None,
    context: PlanContext | None = None,
) -> PolicyResult:
    CALLS.append(
        (name, (params or {}).get("reserve_future_demand"), instance.future_demand is not None)
    )
    return run_policy("asap", instance, {}, context)


@pytest.mark.parametrize(
    ("policy", "scenario_demand", "want_reserve", "want_demand"),
    [
        pytest.param("carbonshift", None, 1.0, True, id="carbonshift-by-default"),
        pytest.param("carbonshift", "none", None, False, id="carbonshift-demand-none"),
        pytest.param("caspian", None, None, False, id="caspian-as-before"),
    ],
)
def test_the_rounds_of_a_scenario_that_names_no_demand_forecast(
    monkeypatch: pytest.MonkeyPatch,
    policy: str,
    scenario_demand: str | None,
    want_reserve: float | None,
    want_demand: bool,
) -> None:
    exp = _small(1, 12, demand_forecast=scenario_demand)
    monkeypatch.setattr(experiment_module, "run_policy", _spy)
    CALLS.clear()

    simulate_policy(exp, prepare(exp), policy, {})

    assert CALLS
    assert {(name, reserve, demand) for name, reserve, demand in CALLS} == {
        (policy, want_reserve, want_demand)
    }


def test_static_plans_keep_no_reserve() -> None:
    """``carbonshift plan`` on an instance with future_demand (CJPS, /v1/plan) is unchanged:
    the policy's own default reserve is 0; only the simulator's rounds get 1.0."""
    assert parse_params("carbonshift").get_float("reserve_future_demand") == 0.0


@pytest.mark.parametrize(
    ("policy", "params", "want"),
    [
        pytest.param(
            "carbonshift",
            {},
            {
                "cluster_band_columns": 0,
                "lp_bands": False,
                "late_bound": False,
                "late_milp_columns": 0,
                "polish_chain_lp_iterations": 0,
                "pair_lp_iterations": 0,
                "support_nodes": 500,
            },
            id="carbonshift-no-bands",
        ),
        pytest.param(
            "carbonshift",
            {"cluster_band_columns": 400, "polish_steps": 0},
            {
                "cluster_band_columns": 400,
                "lp_bands": False,
                "late_bound": False,
                "late_milp_columns": 0,
                "polish_chain_lp_iterations": 0,
                "pair_lp_iterations": 0,
                "support_nodes": 500,
                "polish_steps": 0,
            },
            id="given-params-win",
        ),
        pytest.param("fluidos", {"x": 1}, {"x": 1}, id="a-policy-without-round-params-unchanged"),
    ],
)
def test_round_params_put_the_policys_round_defaults_under_the_given_ones(
    policy: str, params: dict[str, int], want: dict[str, int]
) -> None:
    from carbonshift.planning.registry import round_params

    assert round_params(policy, params) == want


def test_a_run_warns_once_about_the_dropped_reserve(caplog: pytest.LogCaptureFixture) -> None:
    """run_experiment asked online_settings twice (the rounds, then the summary's record) and
    so logged the dropped-reserve warning twice per reproduction run."""
    exp = replace(_small(1, 4, demand_forecast="seasonal-day"), policy="carbonshift")
    with caplog.at_level("WARNING", logger="carbonshift.sim"):
        experiment_module.run_experiment(exp)
    got = [r.getMessage() for r in caplog.records if "reserve_future_demand" in r.getMessage()]
    assert len(got) == 1, got
