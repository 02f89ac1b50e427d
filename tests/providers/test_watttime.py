"""WattTime v3 client against its loopback fake: login, token renewal, MOER units, index."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from carbonshift.carbon.providers import (
    AuthError,
    ManualClock,
    RetryPolicy,
    Secret,
    UnknownZoneError,
    WattTimeProvider,
)
from carbonshift.carbon.series import CiKind
from carbonshift.errors import DataRangeError, InputError
from tests.providers.fakes import T0, WT_PASSWORD, WT_USER, Fakes, wt_value_lbs

LBS_PER_MWH_TO_G_PER_KWH = 0.45359237


def make(
    base_url: str,
    clock: ManualClock,
    retry: RetryPolicy,
    password: str = WT_PASSWORD,
) -> WattTimeProvider:
    return WattTimeProvider(
        WT_USER, Secret(password), base_url=base_url + "/wt", retry=retry, clock=clock
    )


def test_marginal_window_logs_in_and_converts_lbs_per_mwh(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    provider = make(base_url, clock, retry)
    start = T0 - timedelta(minutes=10)
    window = provider.window(
        "US-CAL-CISO", start, T0 + timedelta(minutes=10), slot_minutes=5, kind=CiKind.MARGINAL
    )
    want = [
        wt_value_lbs(start + timedelta(minutes=5 * i)) * LBS_PER_MWH_TO_G_PER_KWH for i in range(4)
    ]
    np.testing.assert_allclose(window.values_g_per_kwh, want)
    paths = [p for p, _ in fakes.wt.requests]
    assert paths == ["/login", "/v3/historical", "/v3/forecast"]
    assert fakes.wt.requests[1][1]["region"] == "CAISO_NORTH"
    assert fakes.wt.requests[1][1]["signal_type"] == "co2_moer"


def test_expired_token_is_renewed_once(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    provider = make(base_url, clock, retry)
    provider.window("DE", T0 - timedelta(hours=1), T0, kind=CiKind.MARGINAL)
    fakes.wt_app.state.tokens.clear()  # the service forgets every token
    provider.window("DE", T0 - timedelta(hours=2), T0, kind=CiKind.MARGINAL)
    assert [p for p, _ in fakes.wt.requests].count("/login") == 2


def test_token_older_than_its_lifetime_is_not_used(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    provider = make(base_url, clock, retry)
    provider.window("DE", T0 - timedelta(hours=1), T0, kind=CiKind.MARGINAL)
    clock.advance(31 * 60)
    provider.window("DE", T0 - timedelta(hours=1), T0 - timedelta(minutes=30), kind=CiKind.MARGINAL)
    assert [p for p, _ in fakes.wt.requests].count("/login") == 2


def test_bad_password_is_an_auth_error_without_the_password(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    secret = "a-wrong-secret-password"
    with pytest.raises(AuthError, match="HTTP 401") as info:
        make(base_url, clock, retry, password=secret).window(
            "DE", T0 - timedelta(hours=1), T0, kind=CiKind.MARGINAL
        )
    assert secret not in str(info.value)
    assert WT_PASSWORD not in str(info.value)


@pytest.mark.parametrize(
    ("zone", "want_error", "want_match"),
    [
        pytest.param("NOWHERE", UnknownZoneError, "NOWHERE.*HTTP 400", id="unknown-region"),
        pytest.param(
            "US-MIDA-PJM",
            AuthError,
            "HTTP 403.*outside your WattTime plan",
            id="region-outside-plan",
        ),
    ],
)
def test_region_errors(
    fakes: Fakes,
    base_url: str,
    clock: ManualClock,
    retry: RetryPolicy,
    zone: str,
    want_error: type[Exception],
    want_match: str,
) -> None:
    with pytest.raises(want_error, match=want_match):
        make(base_url, clock, retry).window(zone, T0 - timedelta(hours=1), T0, kind=CiKind.MARGINAL)


def test_index_answers_the_current_point_only(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    provider = make(base_url, clock, retry)
    window = provider.window("DE", T0, T0 + timedelta(minutes=5), slot_minutes=5, kind=CiKind.INDEX)
    assert window.values_g_per_kwh.tolist() == [42.0]
    assert provider.latest("DE").value == 42.0
    with pytest.raises(DataRangeError, match="covers 'DE'"):
        provider.window("DE", T0, T0 + timedelta(hours=1), kind=CiKind.INDEX)


def test_average_kind_is_refused(base_url: str, clock: ManualClock, retry: RetryPolicy) -> None:
    with pytest.raises(InputError, match="serves kind index, marginal, not 'direct'"):
        make(base_url, clock, retry).window("DE", T0, T0 + timedelta(hours=1))
