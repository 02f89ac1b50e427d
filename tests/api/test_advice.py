"""The arithmetic of advice, without HTTP: windows, slot weights, costs, best zone and start."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from carbonshift.api.advice import (
    JobAsk,
    advise_job,
    best_window,
    floor_to_slot,
    power_w_of,
    run_costs,
    slot_weights,
)
from carbonshift.carbon.providers import Answer
from carbonshift.carbon.series import CiKind, SignalWindow
from carbonshift.errors import InputError

T = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("values", "points", "want"),
    [
        pytest.param([5.0, 1.0, 2.0, 9.0], 2, (1, 1.5), id="middle"),
        pytest.param([3.0, 3.0, 3.0], 3, (0, 3.0), id="whole-range"),
        pytest.param([2.0, 1.0, 1.0, 2.0], 1, (1, 1.0), id="tie-takes-the-first"),
    ],
)
def test_best_window(values: list[float], points: int, want: tuple[int, float]) -> None:
    assert best_window(np.array(values), points) == want


def test_best_window_refuses_a_window_longer_than_the_values() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        best_window(np.array([1.0]), 2)


@pytest.mark.parametrize(
    ("minutes", "slot", "want"),
    [(60, 60, [1.0]), (90, 60, [1.0, 0.5]), (45, 30, [1.0, 0.5]), (10, 60, [1 / 6])],
)
def test_slot_weights(minutes: float, slot: int, want: list[float]) -> None:
    np.testing.assert_allclose(slot_weights(minutes, slot), want)


def test_run_costs_weigh_a_partial_last_slot() -> None:
    costs = run_costs(np.array([100.0, 200.0, 50.0]), np.array([1.0, 0.5]), 2.0, 60)
    assert [c.start_slot for c in costs] == [0, 1]
    assert costs[0].emissions_g == pytest.approx(2.0 * (100 + 0.5 * 200))
    assert costs[0].ci_g_per_kwh == pytest.approx((100 + 0.5 * 200) / 1.5)
    assert costs[1].emissions_g == pytest.approx(2.0 * (200 + 0.5 * 50))


@pytest.mark.parametrize(
    ("moment", "slot", "want"),
    [
        (T + timedelta(minutes=47), 30, T + timedelta(minutes=30)),
        (T, 60, T),
        (T + timedelta(minutes=59, seconds=59), 15, T + timedelta(minutes=45)),
    ],
)
def test_floor_to_slot(moment: datetime, slot: int, want: datetime) -> None:
    assert floor_to_slot(moment, slot) == want


def test_power_from_demand_and_watts() -> None:
    assert power_w_of(None, {"cpu": 4, "gpu": 1}, {"cpu": 10, "gpu": 300}) == 340
    assert power_w_of(50, {"cpu": 4}, {}) == 50
    assert power_w_of(None, {}, {}) == 1000
    with pytest.raises(InputError, match=r"demand names \['gpu'\] without watts_per_unit"):
        power_w_of(None, {"gpu": 1}, {"cpu": 10})


def answers(table: dict[str, list[float]]) -> object:
    def answer_for(zone: str, start: datetime, end: datetime, slot: int) -> Answer:
        n = int((end - start) / timedelta(minutes=slot))
        window = SignalWindow(
            zone,
            CiKind.DIRECT,
            start,
            end,
            slot,
            np.array(table[zone][:n], dtype=np.float64),
            source="stub",
        )
        return Answer(window, (), start)

    return answer_for


def test_advise_job_picks_the_cheapest_zone_and_start_and_compares_with_now() -> None:
    job = JobAsk(
        duration=timedelta(hours=2),
        zones=("A", "B"),
        earliest=T + timedelta(minutes=10),
        deadline=T + timedelta(hours=4),
        power_w=500.0,
    )
    advice = advise_job(job, answers({"A": [300, 300, 100, 100], "B": [250, 90, 200, 400]}))  # type: ignore[arg-type]
    assert (advice.best.zone, advice.best.start) == ("A", T + timedelta(hours=2))
    assert advice.best.emissions_g == pytest.approx(0.5 * 200)
    assert (advice.now.zone, advice.now.start) == ("A", T)
    assert advice.now.emissions_g == pytest.approx(0.5 * 600)
    assert advice.saving_g == pytest.approx(200)
    assert advice.saving_pct == pytest.approx(200 / 3)
    assert [r.zone for r in advice.per_zone] == ["A", "B"]
    assert advice.energy_kwh == pytest.approx(1.0)


def test_advise_job_refuses_a_deadline_too_soon() -> None:
    job = JobAsk(
        duration=timedelta(hours=3),
        zones=("A",),
        earliest=T,
        deadline=T + timedelta(hours=2),
        power_w=1.0,
    )
    with pytest.raises(InputError, match="cannot finish by 2026-03-10T14:00:00Z"):
        advise_job(job, answers({"A": [1.0, 1.0]}))  # type: ignore[arg-type]
