"""The planning adapter: the snapshot is built like the simulator's rounds, by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from carbonshift.carbon.series import CarbonSeries, CiKind
from carbonshift.k8s.config import ControllerConfig, parse_config
from carbonshift.k8s.intent import Intent
from carbonshift.k8s.planner import (
    CarbonSource,
    Forecast,
    RunningWork,
    build_snapshot,
    estimate_g,
    plan_round,
    slot_floor,
)

T0 = datetime(2023, 11, 14, tzinfo=UTC)


def intent(
    name: str = "a",
    *,
    cpu: float = 2.0,
    created: datetime = T0,
    deadline_h: float = 24.0,
    runtime_h: float = 1.0,
) -> Intent:
    return Intent(
        kind="Pod",
        namespace="batch",
        name=name,
        uid=f"uid-{name}",
        created=created,
        deadline=created + timedelta(hours=deadline_h),
        expected_runtime=timedelta(hours=runtime_h),
        demand={"cpu": cpu},
        deadline_source="test",
    )


def series(values: list[float], start: datetime = T0 - timedelta(days=2)) -> CarbonSeries:
    return CarbonSeries(
        zone="XX",
        kind=CiKind.DIRECT,
        start=start,
        step_minutes=60,
        values_g_per_kwh=np.asarray(values, dtype=np.float64),
    )


def config(**planning: object) -> ControllerConfig:
    return parse_config(
        {
            "cluster": {"zone": "DE", "watts_per_unit": {"cpu": 100}, "pue": 1.0},
            "planning": {"policy": "fluidos", "forecast": "oracle", "horizon_slots": 6, **planning},
        }
    )


def test_slot_floor_aligns_to_midnight() -> None:
    assert slot_floor(T0 + timedelta(minutes=95), 60) == T0 + timedelta(hours=1)
    assert slot_floor(T0 + timedelta(minutes=95), 30) == T0 + timedelta(minutes=90)
    assert slot_floor(T0, 60) == T0


def test_snapshot_mirrors_the_simulator_round() -> None:
    slot0 = T0 + timedelta(hours=3)
    forecast = Forecast(slot0, tuple(float(v) for v in range(8)), issued_at=slot0)
    pending = [
        intent("a", created=T0 + timedelta(minutes=30), deadline_h=5.75, runtime_h=1.5),
        intent("b", created=slot0, deadline_h=2.0, runtime_h=0.25),
    ]
    running = [
        RunningWork("r1", {"cpu": 3.0}, ends=slot0 + timedelta(minutes=90)),
        RunningWork("r2", {"cpu": 1.0}, ends=None),
        RunningWork("done", {"cpu": 5.0}, ends=slot0 - timedelta(minutes=1)),
    ]
    instance, context = build_snapshot(config(), slot0, pending, {"cpu": 8.0}, running, forecast)
    a, b = instance.jobs
    # a: runtime ceil(1.5) = 2 slots; deadline 00:30 + 5:45 = 06:15 -> floor(3.25) = 3
    assert (a.runtime_slots, a.deadline_slot, a.release_slot) == (2, 3, 0)
    # b: runtime ceil(0.25) = 1 slot; deadline 05:00 -> slot 2
    assert (b.runtime_slots, b.deadline_slot) == (1, 2)
    assert dict(context.waited_slots) == {"Pod/batch/a": 2, "Pod/batch/b": 0}
    assert context.held_units is not None
    want_held = [4.0, 4.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]  # r1 until 04:30 -> 2 slots; r2 always
    assert context.held_units[0, 0].tolist() == want_held
    assert instance.clusters[0].capacity == {"cpu": 8.0}


def test_estimate_counts_partial_slots_and_embodied() -> None:
    cfg = parse_config(
        {
            "cluster": {
                "watts_per_unit": {"cpu": 100},
                "pue": 1.5,
                "embodied_g_per_unit_hour": {"cpu": 2},
            }
        }
    )
    work = intent(cpu=2, runtime_h=1.5)
    # 200 W x 1.5 PUE = 0.3 kW; 1 h at 100 + 0.5 h at 300 = 250 g h/kWh -> 75 g
    # embodied 2 x 2 x 1.5 = 6 g
    assert estimate_g(cfg, work, [100.0, 300.0, 50.0], 0) == pytest.approx(75.0 + 6.0)
    assert estimate_g(cfg, work, [100.0, 300.0, 50.0], 1) == pytest.approx(0.3 * (300 + 25) + 6.0)


def test_plan_round_holds_until_the_clean_slot_and_says_why() -> None:
    values = [500.0] * 48 + [400.0, 400.0, 100.0, 400.0, 400.0, 400.0] + [400.0] * 48
    cfg = config()
    source = CarbonSource(cfg, series(values))
    now = T0 + timedelta(minutes=5)
    got = plan_round(cfg, now, [intent("a", deadline_h=12)], {"cpu": 8.0}, [], source)
    outcome = got.outcomes["Pod/batch/a"]
    assert not outcome.start_now
    assert outcome.planned_start == T0 + timedelta(hours=2)
    assert outcome.est_g_now == pytest.approx(0.2 * 400)
    assert outcome.est_g_planned == pytest.approx(0.2 * 100)
    assert "100 g/kWh" in outcome.reason


def test_plan_round_fails_open_when_the_latest_start_has_come() -> None:
    values = [500.0] * 48 + [400.0, 400.0, 100.0] + [400.0] * 48
    cfg = config(policy="fluidos", params={"late_fallback": False})
    source = CarbonSource(cfg, series(values))
    late = intent("late", created=T0 - timedelta(hours=5), deadline_h=5.5, runtime_h=1.0)
    got = plan_round(cfg, T0 + timedelta(minutes=40), [late], {"cpu": 8.0}, [], source)
    outcome = got.outcomes["Pod/batch/late"]
    assert outcome.start_now
    assert "latest start" in outcome.reason


def test_forecast_errors_fall_back_to_the_last_good_forecast() -> None:
    cfg = config()
    source = CarbonSource(cfg, series([300.0] * 72, start=T0 - timedelta(days=1)))
    first = source.forecast(T0, 6)
    assert not first.fallback
    later = source.forecast(T0 + timedelta(days=5), 6)  # past the data, and the series has no week
    assert later.fallback
    assert source.errors == 1
    assert later.values_g_per_kwh == (300.0,) * 6


@pytest.mark.parametrize(
    ("policy", "dip_g_per_kwh"),
    [
        # issue 13.3: the controller held a Job for hours to save 0.0 g
        pytest.param("fluidos", 0.001, id="fluidos-chases-a-dip-of-a-thousandth"),
        pytest.param("carbonshift", 0.0, id="carbonshift-on-a-flat-forecast"),
    ],
)
def test_a_hold_that_saves_nothing_starts_now_and_says_why(
    policy: str, dip_g_per_kwh: float
) -> None:
    values = [300.0, 300.0, 300.0 - dip_g_per_kwh] + [300.0] * 200
    now = T0 + timedelta(minutes=5)
    work = [intent("a", deadline_h=12)]
    off = config(policy=policy, min_saving_g=0, min_saving_pct=0)
    before = plan_round(off, now, work, {"cpu": 8.0}, [], CarbonSource(off, series(values, T0)))
    held = before.outcomes["Pod/batch/a"]
    assert not held.start_now  # the reproducer: without the rule it waits
    assert held.est_g_now - held.est_g_planned < 0.01
    on = config(policy=policy)  # defaults: 1 g and 1 %
    got = plan_round(on, now, work, {"cpu": 8.0}, [], CarbonSource(on, series(values, T0)))
    outcome = got.outcomes["Pod/batch/a"]
    assert outcome.start_now
    assert "saving 0.0 g below min_saving_g 1 g: started now" in outcome.reason


def test_the_controller_keeps_its_planned_start_for_a_crumb_of_improvement() -> None:
    # planned for 02:00 (100 g/kWh) last round; now 03:00 is 99.5: 0.1 g better, kept
    values = [500.0] * 2 + [100.0, 99.5] + [500.0] * 200
    cfg = config()
    now = T0 + timedelta(minutes=5)
    got = plan_round(
        cfg,
        now,
        [intent("a", deadline_h=12)],
        {"cpu": 8.0},
        [],
        CarbonSource(cfg, series(values, T0)),
        previous={"Pod/batch/a": T0 + timedelta(hours=2)},
    )
    outcome = got.outcomes["Pod/batch/a"]
    assert outcome.planned_start == T0 + timedelta(hours=2)
    assert "kept its planned start" in outcome.reason


def test_the_release_limit_counts_what_this_slot_already_released() -> None:
    cfg = config(max_releases_per_slot=2)
    now = T0 + timedelta(minutes=5)
    work = [intent(n, deadline_h=d) for n, d in (("a", 6), ("b", 3), ("c", 9))]
    source = CarbonSource(cfg, series([300.0] * 200, T0))
    first = plan_round(cfg, now, work, {"cpu": 8.0}, [], source)
    assert {k for k, o in first.outcomes.items() if o.start_now} == {"Pod/batch/a", "Pod/batch/b"}
    assert "release rate limit" in first.outcomes["Pod/batch/c"].reason
    later = plan_round(cfg, now, work[2:], {"cpu": 8.0}, [], source, released_this_slot=2)
    assert not later.outcomes["Pod/batch/c"].start_now


@pytest.mark.parametrize(
    ("params", "want_cluster_band_columns"),
    [
        pytest.param({}, 0, id="carbonshift-passes-plan-without-cluster-bands"),
        pytest.param({"cluster_band_columns": 400}, 400, id="the-config-may-turn-them-on"),
    ],
)
def test_a_pass_plans_with_the_policys_round_params(
    monkeypatch: pytest.MonkeyPatch, params: dict[str, int], want_cluster_band_columns: int
) -> None:
    import carbonshift.k8s.planner as planner_module

    seen: list[dict[str, object]] = []
    real = planner_module.run_policy

    def spy(policy: str, instance: object, given: dict[str, object], *rest: object) -> object:
        seen.append(dict(given))
        return real(policy, instance, given, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(planner_module, "run_policy", spy)
    cfg = config(policy="carbonshift", params=params)
    source = CarbonSource(cfg, series([400.0] * 72))
    plan_round(
        cfg, T0 + timedelta(minutes=5), [intent("a", deadline_h=12)], {"cpu": 8.0}, [], source
    )
    assert [s.get("cluster_band_columns") for s in seen] == [want_cluster_band_columns]
