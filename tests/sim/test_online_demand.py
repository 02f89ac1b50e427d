"""The simulator's demand forecast for the rounds: learned from past arrivals only, nothing
forecast after the declared arrival span, and reserving room for it keeps deadlines."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from carbonshift.domain import Instance, Plan
from carbonshift.planning.types import PlanContext, PlanStatus, PolicyResult
from carbonshift.sim.experiment import Experiment, prepare, simulate_policy
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


def test_rounds_get_a_forecast_from_past_arrivals_that_stops_with_the_arrival_span() -> None:
    exp = replace(_small(1, 12), config=replace(_small(1, 12).config, max_drain_hours=4))
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
            method="moving-average",
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
