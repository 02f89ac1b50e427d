"""GB Carbon Intensity API and Carbon Aware SDK clients against their loopback fakes."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from carbonshift.carbon.providers import (
    CarbonAwareSdkProvider,
    GbCarbonIntensityProvider,
    ManualClock,
    RetryPolicy,
    UnknownZoneError,
    ZoneTable,
)
from carbonshift.carbon.providers.carbon_aware_sdk import parse_timespan_minutes
from carbonshift.carbon.series import CiKind
from tests.providers.fakes import T0, Fakes, gb_value, sdk_value


def gb(
    base_url: str, clock: ManualClock, retry: RetryPolicy, **kw: object
) -> GbCarbonIntensityProvider:
    return GbCarbonIntensityProvider(base_url=base_url + "/gb", clock=clock, retry=retry, **kw)  # type: ignore[arg-type]


def test_gb_national_uses_actuals_then_the_forecast(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    start = T0 - timedelta(hours=1)
    window = gb(base_url, clock, retry).window(
        "GB", start, T0 + timedelta(hours=1), slot_minutes=30
    )
    half = timedelta(minutes=30)
    want = [gb_value(start + i * half, None) for i in range(2)]  # actuals
    want += [gb_value(T0 + i * half, None) + 1 for i in range(2)]  # forecasts (fake: +1)
    np.testing.assert_allclose(window.values_g_per_kwh, want)
    assert window.kind is CiKind.DIRECT
    assert window.estimated_share == pytest.approx(0.5)
    paths = [p for p, _ in fakes.gb.requests]
    assert paths == [
        "/intensity/2026-03-10T10:30Z/2026-03-10T12:00Z",
        "/intensity/2026-03-10T12:00Z/fw48h",
    ]


def test_gb_regional_reads_the_nested_shape(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    window = gb(base_url, clock, retry).window(
        "GB-R13", T0, T0 + timedelta(hours=1), slot_minutes=30
    )
    np.testing.assert_allclose(
        window.values_g_per_kwh,
        [gb_value(T0, 13) + 1, gb_value(T0 + timedelta(minutes=30), 13) + 1],
    )
    assert fakes.gb.requests[0][0] == "/regional/intensity/2026-03-10T12:00Z/fw48h/regionid/13"


def test_gb_latest(fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy) -> None:
    fakes.gb.now = T0 + timedelta(minutes=40)
    reading = gb(base_url, clock, retry).latest("GB")
    assert (reading.at, reading.value) == (
        T0 + timedelta(minutes=30),
        gb_value(T0 + timedelta(minutes=30), None),
    )


def test_gb_refuses_zones_outside_great_britain_without_asking(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    with pytest.raises(UnknownZoneError, match="'DE' is not in Great Britain"):
        gb(base_url, clock, retry).window("DE", T0, T0 + timedelta(hours=1))
    assert fakes.gb.requests == []


def test_gb_bad_region_id_from_the_zone_table(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    table = ZoneTable(gb={"GB-BAD": 99})
    with pytest.raises(UnknownZoneError, match=r"HTTP 400.*valid region id"):
        gb(base_url, clock, retry, zones=table).window("GB-BAD", T0, T0 + timedelta(hours=1))


def sdk(base_url: str, clock: ManualClock, retry: RetryPolicy) -> CarbonAwareSdkProvider:
    return CarbonAwareSdkProvider(
        base_url + "/sdk",
        kind=CiKind.MARGINAL,
        zones=ZoneTable(carbon_aware_sdk={"NL": "westeurope"}),
        clock=clock,
        retry=retry,
    )


def test_sdk_joins_emissions_and_forecast(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    start = T0 - timedelta(hours=2)
    window = sdk(base_url, clock, retry).window(
        "NL", start, T0 + timedelta(hours=2), kind=CiKind.MARGINAL
    )
    np.testing.assert_allclose(
        window.values_g_per_kwh, [sdk_value(start + timedelta(hours=i)) for i in range(4)]
    )
    assert [p for p, _ in fakes.sdk.requests] == [
        "/emissions/bylocations",
        "/emissions/forecasts/current",
    ]
    assert fakes.sdk.requests[0][1]["location"] == "westeurope"


def test_sdk_unknown_location(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    with pytest.raises(UnknownZoneError, match=r"'mars'.*HTTP 400"):
        sdk(base_url, clock, retry).window(
            "mars", T0 - timedelta(hours=1), T0, kind=CiKind.MARGINAL
        )


@pytest.mark.parametrize(
    ("text", "want_minutes"),
    [("00:05:00", 5), ("01:00:00", 60), ("1.02:00:00", 1560), (30, 30), ("00:00:30", 1)],
)
def test_timespans(text: object, want_minutes: int) -> None:
    assert parse_timespan_minutes(text) == want_minutes


def test_timespan_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="not a TimeSpan"):
        parse_timespan_minutes("five minutes")
