"""Demand forecasts for CJPS's future_demand: hand-computed values, and no peeking ahead."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carbonshift.errors import InputError
from carbonshift.workloads import (
    Workload,
    arrived_demand,
    demand_forecast_error,
    forecast_demand,
    read_trace_csv,
)


def _workload(submit_h: list[float], gpu: list[float]) -> Workload:
    return Workload.from_columns(
        ids=[f"j{i}" for i in range(len(submit_h))],
        submit_h=submit_h,
        runtime_h=[1.0] * len(submit_h),
        demand={"gpu": gpu},
    )


# Two past days with demand at 02:xx (4 then 6) and 05:xx (1 on day 1 only)
PAST = _workload([2.5, 5.0, 26.2, 47.5], [4.0, 1.0, 6.0, 3.0])


def test_arrived_demand_bins_by_slot() -> None:
    got = arrived_demand(PAST, resource="gpu", slot_minutes=60, origin_h=24.0, n_slots=24)

    assert got[2] == 6.0
    assert got[23] == 3.0
    assert got.sum() == 9.0


def test_seasonal_day_averages_the_same_hour_over_past_days() -> None:
    got = forecast_demand(
        PAST, resource="gpu", now_h=48.0, slot_minutes=60, horizon_slots=24, method="seasonal-day"
    )

    assert got[2] == pytest.approx((4.0 + 6.0) / 2)
    assert got[5] == pytest.approx((1.0 + 0.0) / 2)
    assert got[23] == pytest.approx((0.0 + 3.0) / 2)
    assert got[0] == 0.0


def test_seasonal_day_with_a_longer_horizon_only_uses_complete_past_slots() -> None:
    got = forecast_demand(
        PAST, resource="gpu", now_h=48.0, slot_minutes=60, horizon_slots=30, method="seasonal-day"
    )

    # slot 26 = 02:00 of day 3: only day 1 (two days back) is in the past for it... and day 2
    assert got[26] == pytest.approx((4.0 + 6.0) / 2)


def test_moving_average_is_flat_over_the_last_window() -> None:
    got = forecast_demand(
        PAST,
        resource="gpu",
        now_h=48.0,
        slot_minutes=60,
        horizon_slots=4,
        method="moving-average",
        window_slots=24,
    )

    np.testing.assert_allclose(got, (6.0 + 3.0) / 24)


def test_first_day_falls_back_to_the_moving_average() -> None:
    got = forecast_demand(
        PAST, resource="gpu", now_h=10.0, slot_minutes=60, horizon_slots=3, method="seasonal-day"
    )

    np.testing.assert_allclose(got, (4.0 + 1.0) / 10)


def test_at_the_start_there_is_nothing_to_forecast_from() -> None:
    got = forecast_demand(PAST, resource="gpu", now_h=0.0, slot_minutes=60, horizon_slots=5)

    np.testing.assert_allclose(got, 0.0)


def test_oracle_and_zero() -> None:
    oracle = forecast_demand(
        PAST, resource="gpu", now_h=24.0, slot_minutes=60, horizon_slots=24, method="oracle"
    )
    zero = forecast_demand(
        PAST, resource="gpu", now_h=24.0, slot_minutes=60, horizon_slots=24, method="zero"
    )

    assert oracle[2] == 6.0
    assert oracle.sum() == 9.0
    assert zero.sum() == 0.0


@settings(max_examples=40, deadline=None)
@given(
    future=st.lists(
        st.tuples(st.floats(min_value=0.0, max_value=48.0), st.floats(min_value=0.1, max_value=9)),
        max_size=10,
    ),
    method=st.sampled_from(["seasonal-day", "moving-average", "moving-average-lower"]),
    now=st.sampled_from([12.0, 30.0, 49.0]),
    end=st.sampled_from([None, 20.0, 40.5]),
)
def test_forecasts_never_read_jobs_submitted_at_or_after_now(
    future: list[tuple[float, float]], method: str, now: float, end: float | None
) -> None:
    base = forecast_demand(
        PAST,
        resource="gpu",
        now_h=now,
        slot_minutes=60,
        horizon_slots=30,
        method=method,
        arrivals_end_h=end,
    )
    past_part = [(s, g) for s, g in zip(PAST.submit_h, PAST.demand["gpu"], strict=True) if s < now]
    extra = [(now + offset, g) for offset, g in future]
    changed = _workload([s for s, _ in past_part + extra], [g for _, g in past_part + extra])

    got = forecast_demand(
        changed,
        resource="gpu",
        now_h=now,
        slot_minutes=60,
        horizon_slots=30,
        method=method,
        arrivals_end_h=end,
    )

    np.testing.assert_allclose(got, base)


# 3 jobs of 2 GPUs in every hour from 0 h to 20 h: 6 GPUs arrive per hourly slot
STEADY = _workload([h + f for h in range(20) for f in (0.1, 0.4, 0.7)], [2.0] * 60)


@pytest.mark.parametrize(
    ("arrivals_end_h", "want"),
    [
        pytest.param(None, [6.0] * 8, id="arrivals-never-stop"),
        pytest.param(14.0, [6.0] * 4 + [0.0] * 4, id="stop-at-a-slot-boundary"),
        pytest.param(13.5, [6.0] * 3 + [3.0] + [0.0] * 4, id="stop-inside-a-slot"),
        pytest.param(8.0, [0.0] * 8, id="already-stopped"),
    ],
)
def test_moving_average_learns_a_steady_rate_and_stops_with_the_arrivals(
    arrivals_end_h: float | None, want: list[float]
) -> None:
    got = forecast_demand(
        STEADY,
        resource="gpu",
        now_h=10.0,
        slot_minutes=60,
        horizon_slots=8,
        method="moving-average",
        arrivals_end_h=arrivals_end_h,
    )

    np.testing.assert_allclose(got, want)


# STEADY's slots each hold 3 jobs of 2 GPUs: 6 GPUs, sum of demand^2 12. After n slots the
# moving average is 6 and its compound-Poisson standard error sqrt(12 n) / n.
@pytest.mark.parametrize(
    ("now_h", "lower_z", "want"),
    [
        pytest.param(1.0, 1.0, 6.0 - 12**0.5, id="one-slot-seen-a-third-sure"),
        pytest.param(10.0, 1.0, 6.0 - 120**0.5 / 10, id="ten-slots-seen"),
        pytest.param(10.0, 2.0, 6.0 - 2 * 120**0.5 / 10, id="two-standard-errors"),
        pytest.param(10.0, 0.0, 6.0, id="z-0-is-the-moving-average"),
        pytest.param(1.0, 5.0, 0.0, id="never-below-zero"),
        pytest.param(0.0, 1.0, 0.0, id="nothing-seen-yet"),
    ],
)
def test_moving_average_lower_is_lower_by_its_standard_error(
    now_h: float, lower_z: float, want: float
) -> None:
    got = forecast_demand(
        STEADY,
        resource="gpu",
        now_h=now_h,
        slot_minutes=60,
        horizon_slots=4,
        method="moving-average-lower",
        lower_z=lower_z,
    )

    np.testing.assert_allclose(got, want)


def test_moving_average_lower_grows_sure_with_history_and_stops_with_the_arrivals() -> None:
    def lower(now_h: float) -> float:
        got = forecast_demand(
            STEADY,
            resource="gpu",
            now_h=now_h,
            slot_minutes=60,
            horizon_slots=8,
            method="moving-average-lower",
            arrivals_end_h=13.5,
        )
        return float(got[0])

    shares = [lower(h) / 6.0 for h in (1.0, 2.0, 4.0, 8.0)]

    assert shares == sorted(shares)  # surer with every slot seen, never above the average
    assert shares[-1] < 1.0
    got = forecast_demand(
        STEADY,
        resource="gpu",
        now_h=10.0,
        slot_minutes=60,
        horizon_slots=8,
        method="moving-average-lower",
        arrivals_end_h=13.5,
    )
    np.testing.assert_allclose(got[4:], 0.0)
    assert got[3] == pytest.approx(got[0] / 2)


@pytest.mark.parametrize("lower_z", [-1.0, float("nan"), float("inf")])
def test_a_bad_lower_z_is_refused_in_one_line(lower_z: float) -> None:
    with pytest.raises(InputError, match=r"lower_z is .* standard errors; give a number >= 0"):
        forecast_demand(
            STEADY,
            resource="gpu",
            now_h=10.0,
            slot_minutes=60,
            horizon_slots=8,
            method="moving-average-lower",
            lower_z=lower_z,
        )


@pytest.mark.parametrize("arrivals_end_h", [-1.0, float("nan"), float("inf")])
def test_a_bad_arrival_end_is_refused_in_one_line(arrivals_end_h: float) -> None:
    with pytest.raises(InputError, match=r"arrivals_end_h is .* h; give the hour") as caught:
        forecast_demand(
            STEADY,
            resource="gpu",
            now_h=10.0,
            slot_minutes=60,
            horizon_slots=8,
            arrivals_end_h=arrivals_end_h,
        )

    assert "\n" not in str(caught.value)


def test_error_report_is_zero_for_the_oracle_and_positive_otherwise() -> None:
    workload = _workload(
        [float(h) + 0.5 for h in range(96)], [float(h % 24) + 1 for h in range(96)]
    )
    kwargs = {
        "resource": "gpu",
        "slot_minutes": 60,
        "horizon_slots": 12,
        "start_h": 48.0,
        "end_h": 72.0,
    }

    oracle = demand_forecast_error(workload, method="oracle", **kwargs)  # type: ignore[arg-type]
    seasonal = demand_forecast_error(workload, method="seasonal-day", **kwargs)  # type: ignore[arg-type]
    flat = demand_forecast_error(workload, method="moving-average", **kwargs)  # type: ignore[arg-type]

    assert oracle.mae == 0.0
    assert oracle.mape_pct == 0.0
    assert seasonal.mae == pytest.approx(0.0, abs=1e-9)  # a perfectly daily pattern
    assert flat.mae > 1.0
    assert flat.mape_pct is not None
    assert seasonal.n_slots == 24 * 12


@pytest.mark.parametrize(
    ("kwargs", "want_in_message"),
    [
        pytest.param({"method": "seasonal"}, "did you mean 'seasonal-day'", id="method-typo"),
        pytest.param({"resource": "gpus"}, "did you mean 'gpu'", id="resource-typo"),
        pytest.param({"slot_minutes": 7}, "does not divide a day", id="odd-slot"),
        pytest.param({"horizon_slots": 0}, "horizon_slots is 0", id="no-horizon"),
    ],
)
def test_bad_forecast_input(kwargs: dict[str, object], want_in_message: str) -> None:
    args: dict[str, object] = {
        "resource": "gpu",
        "now_h": 48.0,
        "slot_minutes": 60,
        "horizon_slots": 4,
    }
    args.update(kwargs)

    with pytest.raises(InputError, match=want_in_message):
        forecast_demand(PAST, **args)  # type: ignore[arg-type]


def test_seasonal_forecast_on_the_pai_week(shared_data: Path) -> None:
    workload = read_trace_csv(shared_data / "traces" / "gaia" / "pai_1k.csv", time_unit="seconds")

    report = demand_forecast_error(
        workload, resource="gpu", slot_minutes=60, horizon_slots=24, start_h=72.0, end_h=144.0
    )

    assert report.n_slots == 72 * 24
    assert report.mae > 0
    assert report.mape_pct is not None
