"""Electricity Maps v3 client against its loopback fake: shapes, cache, errors, secrets."""

from __future__ import annotations

import logging
from datetime import timedelta

import numpy as np
import pytest

from carbonshift.carbon.providers import (
    AuthError,
    DiskCache,
    ElectricityMapsProvider,
    ManualClock,
    RetryPolicy,
    Secret,
    UnknownZoneError,
    UpstreamFormatError,
    unit_of,
)
from carbonshift.carbon.series import CiKind
from carbonshift.errors import TemporaryError
from tests.providers.fakes import EM_TOKEN, T0, Fakes, em_value
from tests.providers.loopback import closed_port_url


def make(
    base_url: str,
    clock: ManualClock,
    cache: DiskCache | None,
    retry: RetryPolicy,
    token: str = EM_TOKEN,
) -> ElectricityMapsProvider:
    return ElectricityMapsProvider(
        Secret(token), base_url=base_url + "/em", retry=retry, clock=clock, cache=cache
    )


@pytest.mark.parametrize(
    ("kind", "factor"),
    [
        pytest.param(CiKind.DIRECT, "direct", id="direct"),
        pytest.param(CiKind.LCA, "lifecycle", id="lca"),
    ],
)
def test_window_spans_past_range_and_forecast(
    fakes: Fakes,
    base_url: str,
    clock: ManualClock,
    cache: DiskCache,
    retry: RetryPolicy,
    kind: CiKind,
    factor: str,
) -> None:
    provider = make(base_url, clock, cache, retry)
    start = T0 - timedelta(hours=3)
    window = provider.window("DE", start, T0 + timedelta(hours=3), kind=kind)
    want = [em_value(start + timedelta(hours=i), factor) for i in range(6)]
    np.testing.assert_allclose(window.values_g_per_kwh, want)
    assert window.kind is kind
    assert unit_of(window.kind) == "gCO2eq/kWh"
    assert window.stale_since is None
    paths = [p for p, _ in fakes.em.requests]
    assert paths == ["/v3/carbon-intensity/past-range", "/v3/carbon-intensity/forecast"]
    assert all(q["emissionFactorType"] == factor for _, q in fakes.em.requests)
    assert window.estimated_share == pytest.approx(0.5)


def test_second_ask_within_ttl_comes_from_cache_with_its_fetch_time(
    fakes: Fakes, base_url: str, clock: ManualClock, cache: DiskCache, retry: RetryPolicy
) -> None:
    provider = make(base_url, clock, cache, retry)
    first = provider.window("DE", T0, T0 + timedelta(hours=2))
    fetched_at = clock.now()
    clock.advance(60)
    again = provider.window("DE", T0, T0 + timedelta(hours=2), slot_minutes=30)
    assert len(fakes.em.requests) == 1
    assert again.stale_since == fetched_at
    np.testing.assert_allclose(again.values_g_per_kwh[::2], first.values_g_per_kwh)
    clock.advance(provider.ttl_s)
    provider.window("DE", T0, T0 + timedelta(hours=2))
    assert len(fakes.em.requests) == 2, "past the TTL the provider must ask again"


def test_half_hour_slots_average_the_hourly_steps(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    provider = make(base_url, clock, None, retry)
    start = T0 - timedelta(hours=2, minutes=30)
    window = provider.window("DE", start, start + timedelta(hours=1), slot_minutes=60)
    want = (em_value(T0 - timedelta(hours=3)) + em_value(T0 - timedelta(hours=2))) / 2
    assert window.values_g_per_kwh[0] == pytest.approx(want)


def test_latest(fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy) -> None:
    reading = make(base_url, clock, None, retry).latest("FR", CiKind.LCA)
    assert (reading.zone, reading.at, reading.value) == ("FR", T0, em_value(T0, "lifecycle"))
    assert reading.unit == "gCO2eq/kWh"
    assert reading.estimated


def test_bad_key_is_an_auth_error_that_never_shows_the_key(
    fakes: Fakes,
    base_url: str,
    clock: ManualClock,
    retry: RetryPolicy,
    caplog: pytest.LogCaptureFixture,
) -> None:
    wrong = "wrong-but-secret-key-789"
    provider = make(base_url, clock, None, retry, token=wrong)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(AuthError, match="HTTP 401") as info:
        provider.window("DE", T0, T0 + timedelta(hours=1))
    assert wrong not in str(info.value)
    assert wrong not in repr(provider.http.secrets)
    assert wrong not in caplog.text
    assert clock.slept_s == [], "a refused key is not retried"


def test_missing_key_names_the_variable(clock: ManualClock, retry: RetryPolicy) -> None:
    provider = ElectricityMapsProvider(None, base_url=closed_port_url(), clock=clock, retry=retry)
    with pytest.raises(AuthError, match="CARBONSHIFT_ELECTRICITYMAPS_TOKEN"):
        provider.window("DE", T0, T0 + timedelta(hours=1))


def test_unknown_zone(fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy) -> None:
    with pytest.raises(UnknownZoneError, match=r"'XX'.*HTTP 404"):
        make(base_url, clock, None, retry).window("XX", T0, T0 + timedelta(hours=1))


@pytest.mark.parametrize(
    ("body", "want"),
    [
        pytest.param("<html>502 Bad Gateway</html>", "not JSON", id="html-instead-of-json"),
        pytest.param({"zone": "DE"}, "no field 'data'", id="missing-data"),
        pytest.param(
            {"zone": "DE", "data": [{"datetime": "yesterday", "carbonIntensity": 1}]},
            "not an ISO 8601 time",
            id="bad-time",
        ),
        pytest.param(
            {
                "zone": "DE",
                "data": [{"datetime": "2026-03-10T09:00:00Z", "carbonIntensity": "high"}],
            },
            "not a number",
            id="value-not-a-number",
        ),
    ],
)
def test_malformed_body_is_an_upstream_format_error(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy, body: object, want: str
) -> None:
    fakes.em.faults.append((200, {}, body))
    with pytest.raises(UpstreamFormatError, match=want):
        make(base_url, clock, None, retry).window("DE", T0 - timedelta(hours=3), T0)


def test_rate_limit_waits_retry_after_then_succeeds(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    fakes.em.faults.append((429, {"Retry-After": "7"}, {"message": "Too many requests"}))
    window = make(base_url, clock, None, retry).window("DE", T0 - timedelta(hours=1), T0)
    assert clock.slept_s == [7.0]
    assert window.values_g_per_kwh[0] == em_value(T0 - timedelta(hours=1))


def test_rate_limit_with_an_http_date(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    fakes.em.faults.append((429, {"Retry-After": "Tue, 10 Mar 2026 12:00:12 GMT"}, {}))
    make(base_url, clock, None, retry).window("DE", T0 - timedelta(hours=1), T0)
    assert clock.slept_s == [12.0]


def test_rate_limit_longer_than_the_budget_fails_at_once_with_the_delay(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    fakes.em.faults.append((429, {"Retry-After": "3600"}, {}))
    with pytest.raises(TemporaryError, match="HTTP 429") as info:
        make(base_url, clock, None, retry).window("DE", T0 - timedelta(hours=1), T0)
    assert info.value.delay_s == 3600.0
    assert clock.slept_s == []


def test_server_errors_are_retried_with_exponential_backoff(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    fakes.em.faults.extend([(503, {}, {"message": "down"}), (500, {}, "oops")])
    make(base_url, clock, None, retry).window("DE", T0 - timedelta(hours=1), T0)
    assert clock.slept_s == [0.5, 1.0]
    assert len(fakes.em.requests) == 3


def test_server_errors_past_the_attempts_are_temporary(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    fakes.em.always_fail = (502, {}, {"message": "bad gateway"})
    with pytest.raises(TemporaryError, match=r"HTTP 502.*after 3 tries"):
        make(base_url, clock, None, retry).window("DE", T0 - timedelta(hours=1), T0)
    assert len(fakes.em.requests) == 3
    assert clock.slept_s == [0.5, 1.0]


def test_unreachable_service_is_temporary(clock: ManualClock) -> None:
    provider = ElectricityMapsProvider(
        Secret(EM_TOKEN),
        base_url=closed_port_url(),
        clock=clock,
        retry=RetryPolicy(attempts=2, backoff_s=0.25),
    )
    with pytest.raises(TemporaryError, match="cannot reach") as info:
        provider.window("DE", T0 - timedelta(hours=1), T0)
    assert EM_TOKEN not in str(info.value)
    assert clock.slept_s == [0.25]


def test_slow_service_times_out(fakes: Fakes, base_url: str, clock: ManualClock) -> None:
    fakes.em.delay_s = 0.5
    provider = make(base_url, clock, None, RetryPolicy(attempts=1, timeout_s=0.1))
    with pytest.raises(TemporaryError, match=r"timeout_s 0.1"):
        provider.window("DE", T0 - timedelta(hours=1), T0)


def test_a_503_with_retry_after_waits_what_it_asks(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    fakes.em.faults.append((503, {"Retry-After": "4"}, {"message": "maintenance"}))
    make(base_url, clock, None, retry).window("DE", T0 - timedelta(hours=1), T0)
    assert clock.slept_s == [4.0]


def test_a_503_asking_for_longer_than_the_budget_fails_at_once(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    fakes.em.faults.append((503, {"Retry-After": "900"}, {"message": "maintenance"}))
    with pytest.raises(TemporaryError, match="HTTP 503") as info:
        make(base_url, clock, None, retry).window("DE", T0 - timedelta(hours=1), T0)
    assert info.value.delay_s == 900.0
    assert clock.slept_s == []


def test_a_forecast_starting_next_hour_is_completed_by_latest(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    fakes.em.forecast_skips_h = 1
    window = make(base_url, clock, None, retry).window("DE", T0, T0 + timedelta(hours=2))
    np.testing.assert_allclose(
        window.values_g_per_kwh, [em_value(T0), em_value(T0 + timedelta(hours=1))]
    )
    assert [p for p, _ in fakes.em.requests] == [
        "/v3/carbon-intensity/forecast",
        "/v3/carbon-intensity/latest",
    ]
