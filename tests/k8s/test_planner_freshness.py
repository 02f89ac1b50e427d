"""The controller says when it plans on replayed or fall-back data: the reason, the freshness
metrics and one log line per zone and change."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from carbonshift.k8s.config import parse_config
from carbonshift.k8s.metrics import Metrics
from carbonshift.k8s.planner import CarbonSource, carbon_source_for, plan_round
from tests.k8s.test_planner import config, intent, series

JUNE_2026 = datetime(2026, 6, 15, 12, tzinfo=UTC)  # a Monday, past the embedded data


def test_a_june_plan_on_embedded_data_replays_june_and_says_so() -> None:
    cfg = config()
    source = CarbonSource(cfg)  # the embedded data of DE, replayed past 2023
    work = intent("a", created=JUNE_2026, deadline_h=24)
    got = plan_round(cfg, JUNE_2026, [work], {"cpu": 8.0}, [], source)
    fresh = got.forecast.freshness
    assert fresh is not None
    assert fresh.replayed
    assert fresh.replayed_from is not None
    first, last = fresh.replayed_from
    assert (first.year, first.month, first.day, first.hour) == (2023, 6, 19, 12)
    assert (first.weekday(), last.month) == (JUNE_2026.weekday(), 6)
    want_age_s = (JUNE_2026 - datetime(2024, 1, 1, tzinfo=UTC)).total_seconds()
    assert fresh.data_age_s == want_age_s
    reason = got.outcomes[work.key].reason
    assert reason.endswith("[plan used embedded data replayed from 2023-06-19 .. 2023-06-19]")


def test_a_plan_inside_the_data_adds_no_note() -> None:
    cfg = config()
    source = CarbonSource(cfg)
    moment = datetime(2023, 6, 19, 12, tzinfo=UTC)
    work = intent("a", created=moment, deadline_h=24)
    got = plan_round(cfg, moment, [work], {"cpu": 8.0}, [], source)
    assert got.forecast.freshness is not None
    assert not got.forecast.freshness.degraded
    assert "[plan used" not in got.outcomes[work.key].reason


def test_a_reused_forecast_is_named_in_the_reason() -> None:
    cfg = config()
    start = datetime(2023, 11, 13, tzinfo=UTC)
    source = CarbonSource(cfg, series([300.0] * 72, start=start))
    source.forecast(start + timedelta(hours=1), 6)
    later = start + timedelta(days=5)  # past the data, and the series has no week to replay
    work = intent("a", created=later, deadline_h=24)
    got = plan_round(cfg, later, [work], {"cpu": 8.0}, [], source)
    assert got.forecast.fallback
    assert got.outcomes[work.key].reason.endswith("[plan used the last good forecast]")


def test_the_log_says_it_once_per_zone_and_change(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="carbonshift.k8s")
    source = CarbonSource(config())
    for hours in range(5):  # five planning passes on replayed data
        source.forecast(JUNE_2026 + timedelta(hours=hours), 6)
    source.forecast(datetime(2023, 6, 1, tzinfo=UTC), 6)  # inside the data again
    messages = [r.getMessage() for r in caplog.records]
    assert sum("zone DE are degraded" in m for m in messages) == 1, messages
    assert sum("zone DE are fresh again" in m for m in messages) == 1, messages


def test_metrics_expose_the_data_age_and_replay_by_zone() -> None:
    metrics = Metrics()
    source = CarbonSource(config())
    metrics.record_freshness(source.forecast(JUNE_2026, 6).freshness)
    text = generate_latest(metrics.registry).decode()
    values = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("carbonshift_carbon_")
    }
    want_age_s = (JUNE_2026 - datetime(2024, 1, 1, tzinfo=UTC)).total_seconds()
    assert values['carbonshift_carbon_data_age_seconds{source="embedded",zone="DE"}'] == want_age_s
    assert values['carbonshift_carbon_replayed{zone="DE"}'] == 1.0


def test_live_planning_works_for_a_zone_outside_the_embedded_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "csv"
    folder.mkdir()
    first = JUNE_2026 - timedelta(days=2)
    lines = ["Datetime (UTC),Zone Id,Carbon Intensity gCO₂eq/kWh (direct)"]
    lines += [f"{first + timedelta(hours=h):%Y-%m-%d %H:%M:%S},FR,{30 + h % 24}" for h in range(96)]
    (folder / "FR.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv("CARBONSHIFT_OFFLINE", "1")
    monkeypatch.setenv("CARBONSHIFT_CSV_DIR", str(folder))
    monkeypatch.setenv("CARBONSHIFT_CACHE_DIR", str(tmp_path / "cache"))
    cfg = parse_config(
        {
            "cluster": {"zone": "FR", "watts_per_unit": {"cpu": 100}},
            "planning": {"policy": "fluidos", "carbon_source": "providers", "horizon_slots": 6},
        }
    )
    source = carbon_source_for(cfg)  # FR is not in the embedded data: no load at start
    work = intent("a", created=JUNE_2026, deadline_h=24)
    got = plan_round(cfg, JUNE_2026, [work], {"cpu": 8.0}, [], source)
    want = [float(30 + (48 + h) % 24) for h in range(24)]  # the file's values from JUNE_2026
    assert list(got.forecast.values_g_per_kwh) == want[: len(got.forecast.values_g_per_kwh)]
    assert got.forecast.freshness is not None
    assert got.forecast.freshness.source == "csv"
    assert not got.forecast.freshness.degraded
    assert "[plan used" not in got.outcomes[work.key].reason


def test_the_webhook_healthz_is_degraded_but_200_after_a_replayed_plan() -> None:
    from fastapi.testclient import TestClient

    from carbonshift.k8s.clock import ExternalClock
    from carbonshift.k8s.webhook import webhook_app

    cfg = config()
    source = CarbonSource(cfg)
    client = TestClient(
        webhook_app(cfg, ExternalClock(lambda: JUNE_2026), None, source.board.reasons)
    )
    assert client.get("/healthz").json() == {"status": "ok", "reasons": []}
    source.forecast(JUNE_2026, 6)
    health = client.get("/healthz")
    assert health.status_code == 200
    assert health.json()["status"] == "degraded"
    (reason,) = health.json()["reasons"]
    assert reason.startswith("zone DE: embedded data replayed from 2023-06-19T12:00:00Z")
