"""Property tests of the API surface: whatever the query or body, never a 5xx.

schemathesis is not in the project's dependencies; these hypothesis strategies play its
role for the query parameters and JSON bodies of every route (the OpenAPI schema is checked
to list them, so a new route without a case here is noticed).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carbonshift.api import create_app
from carbonshift.carbon.providers import ChainSet, EmbeddedReplay, FallbackChain
from carbonshift.carbon.series import CiKind

FUZZED = {
    "/emissions/forecasts/current",
    "/emissions/forecasts/batch",
    "/emissions/bylocations",
    "/emissions/bylocation",
    "/emissions/bylocations/best",
    "/emissions/average-carbon-intensity",
    "/emissions/average-carbon-intensity/batch",
    "/locations",
    "/v1/advise",
    "/v1/plan",
    "/v1/policies",
    "/healthz",
    "/metrics",
}


@pytest.fixture(scope="module")
def offline_client() -> Iterator[TestClient]:
    chains = ChainSet(
        chains={
            CiKind.DIRECT: FallbackChain(CiKind.DIRECT, [], floor=EmbeddedReplay()),
            CiKind.LCA: FallbackChain(CiKind.LCA, [], floor=EmbeddedReplay()),
        },
        providers={},
    )
    with TestClient(create_app(chains), raise_server_exceptions=False) as client:
        yield client


def test_every_route_is_fuzzed(offline_client: TestClient) -> None:
    paths = set(offline_client.get("/openapi.json").json()["paths"])
    assert paths == FUZZED


times = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "2023-06-01T00:00Z",
            "2026-03-10T12:00Z",
            "1999-01-01T00:00Z",
            "9999-12-31T23:59Z",
            "0001-01-01T00:00Z",
            "soon",
            "",
        ]
    ),
    st.datetimes().map(lambda d: d.isoformat()),
)
zones = st.one_of(st.sampled_from(["DE", "GB", "CA-ON", "de-lu", "XX", ""]), st.text(max_size=12))
kinds = st.one_of(st.none(), st.sampled_from(["direct", "lca", "marginal", "index", "x"]))


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    path=st.sampled_from(
        [
            "/emissions/forecasts/current",
            "/emissions/bylocations/best",
            "/emissions/bylocations",
            "/emissions/bylocation",
            "/emissions/average-carbon-intensity",
        ]
    ),
    locations=st.lists(zones, max_size=3),
    start=times,
    end=times,
    window=st.one_of(st.none(), st.integers(-5, 20000)),
    kind=kinds,
)
def test_carbon_routes_never_fail_with_5xx(
    offline_client: TestClient,
    path: str,
    locations: list[str],
    start: str | None,
    end: str | None,
    window: int | None,
    kind: str | None,
) -> None:
    params: list[tuple[str, Any]] = [("location", z) for z in locations]
    names = ("dataStartAt", "dataEndAt") if "forecasts" in path else ("time", "toTime")
    if "average" in path:
        names = ("startTime", "endTime")
    for name, value in zip(names, (start, end), strict=True):
        if value is not None:
            params.append((name, value))
    if window is not None:
        params.append(("windowSize" if "forecasts" in path else "durationMinutes", window))
    if kind is not None:
        params.append(("kind", kind))
    response = offline_client.get(path, params=params)
    assert response.status_code < 500, response.text


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-10, 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    body=st.fixed_dictionaries(
        {},
        optional={
            "duration": st.one_of(
                st.sampled_from(["3h", "90m", "0h", "400d", "x", "9" * 400 + "d"]), json_values
            ),
            "zones": st.one_of(st.lists(zones, max_size=3), json_values),
            "within": st.one_of(
                st.sampled_from(["24h", "1h", "0s", "99999999d", "9" * 400 + "d"]), json_values
            ),
            "earliest": times,
            "deadline": times,
            "demand": json_values,
            "watts_per_unit": json_values,
            "power_w": json_values,
            "kind": kinds,
            "slot_minutes": st.integers(-5, 2000),
        },
    )
)
def test_advise_never_fails_with_5xx(offline_client: TestClient, body: dict[str, Any]) -> None:
    response = offline_client.post("/v1/advise", json=body)
    assert response.status_code < 500, response.text


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    body=st.one_of(
        json_values,
        st.fixed_dictionaries(
            {
                "version": st.sampled_from([1, 2, "1"]),
                "slot_minutes": st.integers(-1, 120),
                "horizon_slots": st.integers(-1, 6),
                "resources": st.one_of(st.just(["gpu"]), json_values),
                "clusters": st.one_of(
                    st.just(
                        [{"name": "a", "capacity": {"gpu": 2}, "watts_per_unit": {"gpu": 100}}]
                    ),
                    json_values,
                ),
                "carbon_g_per_kwh": st.one_of(
                    st.lists(st.floats(0, 500), min_size=0, max_size=6).map(lambda v: {"a": v}),
                    json_values,
                ),
                "jobs": st.lists(
                    st.fixed_dictionaries(
                        {
                            "id": st.text(min_size=1, max_size=3),
                            "demand": st.dictionaries(
                                st.sampled_from(["gpu", "cpu"]), st.floats(-1, 4), max_size=2
                            ),
                            "runtime_slots": st.integers(-1, 8),
                        },
                        optional={
                            "release_slot": st.integers(-2, 8),
                            "deadline_slot": st.integers(-2, 10),
                        },
                    ),
                    max_size=4,
                ),
            }
        ),
    ),
    policy=st.sampled_from(["asap", "caspian", "srr", "window", "nope"]),
)
def test_plan_never_fails_with_5xx(offline_client: TestClient, body: Any, policy: str) -> None:
    response = offline_client.post("/v1/plan", params={"policy": policy}, json=body)
    assert response.status_code < 500, response.text


@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    path=st.sampled_from(
        ["/emissions/forecasts/batch", "/emissions/average-carbon-intensity/batch"]
    ),
    body=st.one_of(
        json_values,
        st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "location": st.one_of(zones, json_values),
                    "requestedAt": times,
                    "dataStartAt": times,
                    "dataEndAt": times,
                    "startTime": times,
                    "endTime": times,
                    "windowSize": st.one_of(st.integers(-5, 20000), json_values),
                },
            ),
            max_size=3,
        ),
    ),
)
def test_sdk_batches_never_fail_with_5xx(
    offline_client: TestClient, path: str, body: object
) -> None:
    response = offline_client.post(path, json=body)
    assert response.status_code < 500, response.text
