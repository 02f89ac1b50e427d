"""Honest fall-back: /healthz is degraded (still 200) on replayed, stale or fall-back data,
the freshness metrics say which zone and source, and the log says so once per change."""

from __future__ import annotations

import logging
import re

import pytest
from fastapi.testclient import TestClient

from carbonshift.api import create_app
from carbonshift.carbon.providers import ChainSet, EmbeddedReplay, FallbackChain, ManualClock
from carbonshift.carbon.series import CiKind
from tests.providers.fakes import T0, Fakes


def forecast(client: TestClient, zone: str = "DE") -> dict[str, object]:
    response = client.get("/emissions/forecasts/current", params={"location": zone})
    assert response.status_code == 200, response.text
    (one,) = response.json()
    assert isinstance(one, dict)
    return one


def metric(client: TestClient, name: str, labels: str) -> float | None:
    """The value of ``name{labels}`` in /metrics (None when the series is absent)."""
    text = client.get("/metrics").text
    found = re.search(rf"^{name}\{{{re.escape(labels)}\}} (\S+)$", text, re.MULTILINE)
    return None if found is None else float(found.group(1))


def test_live_answers_keep_health_ok_with_a_zero_data_age(client: TestClient) -> None:
    assert forecast(client)["source"] == "electricitymaps"
    health = client.get("/healthz")
    assert health.status_code == 200
    assert health.json()["status"] == "ok"
    assert health.json()["reasons"] == []
    assert (
        metric(client, "carbonshift_carbon_data_age_seconds", 'source="electricitymaps",zone="DE"')
        == 0.0
    )
    assert metric(client, "carbonshift_carbon_replayed", 'zone="DE"') == 0.0


def test_replayed_answers_make_health_degraded_but_200(client: TestClient, fakes: Fakes) -> None:
    fakes.em.always_fail = (503, {}, {"message": "maintenance"})
    answer = forecast(client)
    assert answer["replayed"] is True
    health = client.get("/healthz")
    assert health.status_code == 200
    body = health.json()
    assert body["status"] == "degraded"
    assert any("zone DE: embedded data replayed from" in r for r in body["reasons"])
    assert any("zone DE: fell back past electricitymaps" in r for r in body["reasons"])
    want_age_s = answer["staleAgeSeconds"]
    got_age_s = metric(client, "carbonshift_carbon_data_age_seconds", 'source="embedded",zone="DE"')
    assert got_age_s == want_age_s
    assert metric(client, "carbonshift_carbon_replayed", 'zone="DE"') == 1.0


def test_a_zone_that_recovers_makes_health_ok_again(
    client: TestClient, fakes: Fakes, clock: ManualClock
) -> None:
    fakes.em.always_fail = (503, {}, {"message": "maintenance"})
    forecast(client)
    fakes.em.always_fail = None
    clock.advance(61)  # past the 60 s cool-down of the failed source
    assert forecast(client)["source"] == "electricitymaps"
    assert client.get("/healthz").json()["status"] == "ok"
    assert metric(client, "carbonshift_carbon_replayed", 'zone="DE"') == 0.0
    assert (
        metric(client, "carbonshift_carbon_data_age_seconds", 'source="embedded",zone="DE"') is None
    )


def test_the_log_says_it_once_per_zone_and_change(
    client: TestClient, fakes: Fakes, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="carbonshift.api")
    fakes.em.always_fail = (503, {}, {"message": "maintenance"})
    for _ in range(3):
        forecast(client)
        clock.advance(10)  # the failed source rests: a different detail, the same state
    fakes.em.always_fail = None
    clock.advance(61)
    for _ in range(2):
        forecast(client)
    messages = [r.getMessage() for r in caplog.records if r.name == "carbonshift.api"]
    degraded = [m for m in messages if "zone DE are degraded" in m]
    fresh = [m for m in messages if "zone DE are fresh again" in m]
    assert len(degraded) == 1, messages
    assert len(fresh) == 1, messages


def test_a_server_with_no_live_source_is_degraded_before_any_answer() -> None:
    chains = ChainSet(
        chains={CiKind.DIRECT: FallbackChain(CiKind.DIRECT, [], floor=EmbeddedReplay())},
        providers={},
    )
    client = TestClient(create_app(chains, clock=ManualClock(T0)))
    body = client.get("/healthz").json()
    assert body["status"] == "degraded"
    assert body["reasons"] == [
        "chain direct: no live source configured; answers come from the embedded 2021-2023 "
        "data, replayed past 2023"
    ]
