"""The advice API: Carbon Aware SDK shapes, advice, planning, fall-back, limits and errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from carbonshift.api import create_app
from carbonshift.carbon.providers import ChainSet, EmbeddedReplay, FallbackChain, Secret
from carbonshift.carbon.series import CiKind
from tests.providers.fakes import T0, Fakes, em_value, gb_value
from tests.providers.loopback import LoopbackServer

Z = "%Y-%m-%dT%H:%M:%SZ"


def at(moment: datetime) -> str:
    return moment.strftime(Z)


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_forecast_current_has_the_sdk_shape_and_the_lowest_window(client: TestClient) -> None:
    # the SDK's forecastData is the rolling average of windowSize minutes, one per data point
    start = T0
    response = client.get(
        "/emissions/forecasts/current",
        params={
            "location": "DE",
            "dataStartAt": at(start),
            "dataEndAt": at(T0 + timedelta(hours=12)),
            "windowSize": 180,
        },
    )
    assert response.status_code == 200, response.text
    (forecast,) = response.json()
    values = [em_value(start + timedelta(hours=i)) for i in range(12)]
    means = [sum(values[i : i + 3]) / 3 for i in range(10)]
    assert [p["value"] for p in forecast["forecastData"]] == pytest.approx(means)
    assert {p["duration"] for p in forecast["forecastData"]} == {180}
    want_index = means.index(min(means))
    (optimal,) = forecast["optimalDataPoints"]
    assert parse(optimal["timestamp"]) == start + timedelta(hours=want_index)
    assert optimal["value"] == pytest.approx(min(means))
    assert optimal["duration"] == 180
    assert forecast["windowSize"] == 180
    assert forecast["location"] == "DE"
    assert (forecast["kind"], forecast["unit"], forecast["source"]) == (
        "direct",
        "gCO2eq/kWh",
        "electricitymaps",
    )
    assert forecast["staleSince"] is None
    assert forecast["fallback"] == []


def test_forecast_window_of_30_minutes_uses_half_hour_points(client: TestClient) -> None:
    response = client.get(
        "/emissions/forecasts/current",
        params={
            "location": "GB-R13",
            "dataStartAt": at(T0),
            "dataEndAt": at(T0 + timedelta(hours=2)),
            "windowSize": 30,
        },
    )
    assert response.status_code == 200, response.text
    (forecast,) = response.json()
    assert len(forecast["forecastData"]) == 4
    assert forecast["source"] == "gb"
    assert "electricitymaps" in forecast["fallback"][0]


def test_best_by_locations_picks_the_lowest_slot_over_all_locations(client: TestClient) -> None:
    start = T0 - timedelta(hours=6)
    response = client.get(
        "/emissions/bylocations/best",
        params=[
            ("location", "GB-R13"),
            ("location", "DE"),
            ("time", at(start)),
            ("toTime", at(T0 + timedelta(hours=6))),
        ],
    )
    assert response.status_code == 200, response.text
    (best,) = response.json()
    want = min((em_value(start + timedelta(hours=i)), i) for i in range(12))
    assert (best["location"], best["rating"]) == ("DE", want[0])
    assert parse(best["time"]) == start + timedelta(hours=want[1])
    assert best["duration"] == "01:00:00"
    assert best["unit"] == "gCO2eq/kWh"


def test_outage_answers_from_embedded_replay_with_a_stale_age(
    client: TestClient, fakes: Fakes
) -> None:
    fakes.em.always_fail = (503, {}, {"message": "maintenance"})
    response = client.get(
        "/emissions/forecasts/current", params={"location": "DE", "windowSize": 120}
    )
    assert response.status_code == 200, response.text
    (forecast,) = response.json()
    assert forecast["source"] == "embedded"
    assert forecast["replayed"] is True
    assert parse(forecast["staleSince"]) == datetime(2024, 1, 1, tzinfo=UTC)
    assert forecast["staleAgeSeconds"] > 0
    assert "HTTP 503" in forecast["fallback"][0]
    assert len(forecast["forecastData"]) == 24 - 2 + 1  # 2 h windows in the 24 h forecast


def test_marginal_outage_with_no_cache_is_a_503_with_retry_after(
    client: TestClient, fakes: Fakes
) -> None:
    fakes.wt.always_fail = (500, {}, "internal")
    response = client.get(
        "/emissions/forecasts/current", params={"location": "DE", "kind": "marginal"}
    )
    assert response.status_code == 503
    assert response.headers["retry-after"] == "60"
    body = response.json()
    assert "no marginal source answered" in body["detail"]
    assert "Traceback" not in response.text


@pytest.mark.parametrize(
    ("path", "params", "want_status", "want_detail"),
    [
        pytest.param(
            "/emissions/forecasts/current",
            {},
            400,
            "The location field is required.",
            id="no-location",
        ),
        pytest.param(
            "/emissions/forecasts/current",
            {"location": "DE", "kind": "green"},
            400,
            "The value 'green' is not valid for kind.",
            id="bad-kind",
        ),
        pytest.param(
            "/emissions/forecasts/current",
            {
                "location": "DE",
                "dataStartAt": "2026-03-10T16:00Z",
                "dataEndAt": "2026-03-10T14:00Z",
            },
            400,
            "dataStartAt must be before dataEndAt",
            id="end-before-start",
        ),
        pytest.param(
            "/emissions/forecasts/current",
            {"location": "DE", "dataStartAt": "2026-03-01T00:00Z"},
            400,
            "is outside the forecast data",
            id="start-before-the-forecast",
        ),
        pytest.param(
            "/emissions/bylocations",
            {"location": "DE", "time": "2026-01-01T00:00Z", "toTime": "2026-03-10T00:00Z"},
            400,
            "longer than 31 days",
            id="range-too-long",
        ),
        pytest.param(
            "/emissions/forecasts/current",
            {"location": "DE", "windowSize": -5},
            400,
            "negative",
            id="negative-window",
        ),
        pytest.param(
            "/emissions/forecasts/current",
            {"location": "DE", "dataStartAt": "soon"},
            400,
            "The value 'soon' is not valid for dataStartAt.",
            id="bad-time",
        ),
        pytest.param(
            "/emissions/bylocations/best",
            {"location": "Atlantis"},
            400,
            "'Atlantis'",
            id="unknown-zone-everywhere",
        ),
        pytest.param(
            "/emissions/forecasts/current",
            {"location": "DE", "kind": "lca"},
            400,
            "no source is configured for 'lca'",
            id="kind-without-chain",
        ),
    ],
)
def test_bad_requests_get_a_clear_4xx(
    client: TestClient, path: str, params: dict[str, Any], want_status: int, want_detail: str
) -> None:
    response = client.get(path, params=params)
    assert response.status_code == want_status, response.text
    body = response.json()
    assert body["title"]
    assert want_detail in (body["detail"] or "") + str(body["errors"])


def test_too_many_locations(client: TestClient) -> None:
    params = [("location", f"Z{i}") for i in range(51)]
    response = client.get("/emissions/bylocations/best", params=params)
    assert response.status_code == 400
    assert "at most 50" in response.json()["detail"]


def advise_body(**overrides: Any) -> dict[str, Any]:
    return {
        "duration": "3h",
        "within": "12h",
        "earliest": at(T0),
        "zones": ["DE", "GB-R13"],
        "demand": {"cpu": 4},
        "watts_per_unit": {"cpu": 250},
    } | overrides


def test_advise_finds_the_cheapest_zone_and_start(client: TestClient) -> None:
    response = client.post("/v1/advise", json=advise_body())
    assert response.status_code == 200, response.text
    body = response.json()
    options = []
    for zone, value in (("DE", lambda t: em_value(t)), ("GB-R13", lambda t: gb_value(t, 13) + 1)):
        for s in range(10):
            begin = T0 + timedelta(hours=s)
            ci = sum(value(begin + timedelta(minutes=30 * k)) for k in range(6)) / 6
            options.append((ci, zone, begin))
    want_ci, want_zone, want_start = min(options, key=lambda o: (o[0], o[2]))
    assert body["best"]["zone"] == want_zone
    assert parse(body["best"]["start"]) == want_start
    assert body["best"]["ci_g_per_kwh"] == pytest.approx(want_ci)
    assert body["power_w"] == 1000.0
    assert body["energy_kwh"] == pytest.approx(3.0)
    assert body["best"]["emissions_g"] == pytest.approx(3.0 * want_ci)
    want_now = sum(em_value(T0 + timedelta(hours=k)) for k in range(3)) / 3
    assert body["now"]["zone"] == "DE"
    assert body["now"]["ci_g_per_kwh"] == pytest.approx(want_now)
    assert body["saving_g"] == pytest.approx(3.0 * (want_now - want_ci))
    assert (body["kind"], body["unit"]) == ("direct", "gCO2eq/kWh")
    assert set(body["provenance"]) == {"DE", "GB-R13"}


def test_advise_partial_last_slot_counts_its_fraction(client: TestClient) -> None:
    response = client.post(
        "/v1/advise", json=advise_body(duration="90m", zones=["DE"], power_w=2000, demand={})
    )
    assert response.status_code == 200, response.text
    now = response.json()["now"]
    want_g = 2.0 * (em_value(T0) * 1.0 + em_value(T0 + timedelta(hours=1)) * 0.5)
    assert now["emissions_g"] == pytest.approx(want_g)


@pytest.mark.parametrize(
    ("overrides", "want_status", "want_detail"),
    [
        pytest.param({"duration": "3 parsecs"}, 400, "is not a duration", id="bad-duration"),
        pytest.param({"zones": []}, 422, "zones", id="no-zones"),
        pytest.param(
            {"colour": "green"}, 422, "Extra inputs are not permitted", id="unknown-field"
        ),
        pytest.param({"within": "2h"}, 400, "cannot finish by", id="deadline-too-soon"),
        pytest.param(
            {"watts_per_unit": {}}, 400, "without watts_per_unit", id="demand-without-watts"
        ),
        pytest.param({"kind": "index"}, 400, "kind 'index' has no unit", id="index-kind"),
        pytest.param(
            {"demand": {"cpu": -1}}, 422, "greater than or equal to 0", id="negative-demand"
        ),
    ],
)
def test_advise_bad_input(
    client: TestClient, overrides: dict[str, Any], want_status: int, want_detail: str
) -> None:
    response = client.post("/v1/advise", json=advise_body(**overrides))
    assert response.status_code == want_status, response.text
    assert want_detail in response.json()["detail"]


def instance(jobs: int = 3) -> dict[str, Any]:
    horizon = 8
    return {
        "version": 1,
        "slot_minutes": 60,
        "horizon_slots": horizon,
        "resources": ["gpu"],
        "clusters": [
            {"name": "a", "zone": "DE", "capacity": {"gpu": 4}, "watts_per_unit": {"gpu": 300}},
            {"name": "b", "zone": "GB", "capacity": {"gpu": 2}, "watts_per_unit": {"gpu": 300}},
        ],
        "carbon_g_per_kwh": {
            "a": [300.0 - 10 * i for i in range(horizon)],
            "b": [100.0 + 20 * i for i in range(horizon)],
        },
        "jobs": [{"id": f"j{i}", "demand": {"gpu": 2}, "runtime_slots": 2} for i in range(jobs)],
    }


@pytest.mark.parametrize("policy", ["asap", "caspian", "srr"])
def test_plan_returns_a_feasible_contract_plan(client: TestClient, policy: str) -> None:
    response = client.post("/v1/plan", params={"policy": policy}, json=instance())
    assert response.status_code == 200, response.text
    plan = response.json()
    assert plan["version"] == 1
    assert plan["policy"] == policy
    assert plan["feasible"] is True
    placed = [a["job"] for a in plan["assignments"]] + plan["unscheduled"]
    assert sorted(placed) == ["j0", "j1", "j2"]
    assert set(plan["scores"]) >= {
        "operational_g",
        "embodied_g",
        "gru",
        "on_time",
        "late",
        "unscheduled",
    }


@pytest.mark.parametrize(
    ("params", "body", "want_status", "want_detail"),
    [
        pytest.param(
            {"policy": "caspain"}, instance(), 400, "did you mean 'caspian'", id="misspelt-policy"
        ),
        pytest.param({"policy": "asap"}, {"version": 2}, 400, "version", id="bad-version"),
        pytest.param({"policy": "asap"}, instance(jobs=51), 400, "at most 50", id="too-many-jobs"),
        pytest.param(
            {"policy": "caspian", "param": "omega1"},
            instance(),
            400,
            "not key=value",
            id="param-without-value",
        ),
        pytest.param(
            {"policy": "caspian", "param": "nope=1"}, instance(), 400, "nope", id="unknown-param"
        ),
    ],
)
def test_plan_bad_input(
    client: TestClient, params: dict[str, str], body: Any, want_status: int, want_detail: str
) -> None:
    response = client.post("/v1/plan", params=params, json=body)
    assert response.status_code == want_status, response.text
    assert want_detail in response.json()["detail"]


def test_plan_body_not_json_is_422(client: TestClient) -> None:
    response = client.post(
        "/v1/plan", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422


def test_body_over_the_limit_is_413(client: TestClient) -> None:
    response = client.post(
        "/v1/plan", content=b"x" * 300_000, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert "larger than 200000 bytes" in response.json()["detail"]


def test_health_metrics_and_openapi(client: TestClient) -> None:
    assert client.get("/healthz").json()["chains"] == {
        "direct": ["electricitymaps", "gb", "embedded"],
        "marginal": ["watttime"],
    }
    client.get("/emissions/forecasts/current", params={"location": "DE"})
    metrics = client.get("/metrics")
    assert metrics.status_code == 200
    want_request = (
        'carbonshift_api_requests_total{method="GET",route="/emissions/forecasts/current",'
        'status="200"} 1.0'
    )
    want_answer = (
        'carbonshift_carbon_answers_total{kind="direct",outcome="live",'
        'source="electricitymaps"} 1.0'
    )
    assert want_request in metrics.text
    assert want_answer in metrics.text
    paths = client.get("/openapi.json").json()["paths"]
    assert {
        "/emissions/forecasts/current",
        "/emissions/bylocations/best",
        "/v1/advise",
        "/v1/plan",
        "/healthz",
        "/metrics",
    } <= set(paths)


def test_unexpected_errors_are_500_without_a_traceback(
    client: TestClient, chains: ChainSet
) -> None:
    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals")

    chains.chains[CiKind.DIRECT].answer = explode  # type: ignore[method-assign]
    response = client.get("/emissions/forecasts/current", params={"location": "DE"})
    assert response.status_code == 500
    assert "secret internals" not in response.text
    assert response.json()["detail"] == "internal error; the server log has the details"


def test_served_over_a_real_uvicorn_on_loopback() -> None:
    offline = ChainSet(
        chains={CiKind.DIRECT: FallbackChain(CiKind.DIRECT, [], floor=EmbeddedReplay())},
        providers={},
    )
    with LoopbackServer(create_app(offline)) as server:
        health = httpx.get(server.url + "/healthz", timeout=10)
        forecast = httpx.get(
            server.url + "/emissions/forecasts/current",
            params={"location": "CA-ON", "windowSize": 240},
            timeout=10,
        )
        past = httpx.get(
            server.url + "/emissions/bylocations",
            params={
                "location": "canadacentral",
                "time": "2023-06-01T00:00Z",
                "toTime": "2023-06-02T00:00Z",
            },
            timeout=10,
        )
        bad = httpx.get(
            server.url + "/emissions/forecasts/current", params={"location": "CA-ON", "kind": "x"}
        )
    assert health.status_code == 200
    assert health.json()["status"] == "degraded"  # no live source: said, not hidden
    assert forecast.status_code == 200
    (body,) = forecast.json()
    assert body["source"] == "embedded"
    assert len(body["forecastData"]) == 24 - 4 + 1
    assert past.status_code == 200
    assert len(past.json()) == 24
    assert {(p["zone"], p["replayed"]) for p in past.json()} == {("CA-ON", False)}
    assert bad.status_code == 400


def test_refused_credentials_are_a_502(client: TestClient, chains: ChainSet) -> None:
    em = chains.providers["electricitymaps"]
    em._token = Secret("revoked-key-1234")  # type: ignore[attr-defined]
    chains.chains[CiKind.LCA] = FallbackChain(CiKind.LCA, [em])  # type: ignore[list-item]
    response = client.get("/emissions/forecasts/current", params={"location": "DE", "kind": "lca"})
    assert response.status_code == 502
    assert "fix the credentials" in response.json()["detail"]
    assert "revoked-key-1234" not in response.text
