"""The fall-back chain: same kind only, stale cache, embedded replay, clear final errors."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from carbonshift.carbon.embedded import load_series
from carbonshift.carbon.providers import (
    DiskCache,
    ElectricityMapsProvider,
    EmbeddedReplay,
    FallbackChain,
    GbCarbonIntensityProvider,
    ManualClock,
    NoSourceError,
    ProviderSettings,
    ProviderUnavailableError,
    RetryPolicy,
    Secret,
    SourcesRefusedError,
    WattTimeProvider,
    build_chains,
    single_source_chain,
)
from carbonshift.carbon.providers.chain import ChainSource
from carbonshift.carbon.quality import OutlierAction
from carbonshift.carbon.series import CiKind, SignalWindow
from carbonshift.errors import InputError
from tests.providers.fakes import EM_TOKEN, T0, WT_PASSWORD, WT_USER, Fakes, em_value


def em(
    base_url: str, clock: ManualClock, cache: DiskCache, retry: RetryPolicy
) -> ElectricityMapsProvider:
    return ElectricityMapsProvider(
        Secret(EM_TOKEN), base_url=base_url + "/em", clock=clock, cache=cache, retry=retry
    )


def test_chain_answers_from_the_first_live_source(
    fakes: Fakes, base_url: str, clock: ManualClock, cache: DiskCache, retry: RetryPolicy
) -> None:
    chain = FallbackChain(
        CiKind.DIRECT, [em(base_url, clock, cache, retry)], floor=EmbeddedReplay()
    )
    answer = chain.answer("DE", T0 - timedelta(hours=1), T0)
    assert [(a.source, a.outcome) for a in answer.attempts] == [("electricitymaps", "live")]
    assert answer.window.values_g_per_kwh[0] == em_value(T0 - timedelta(hours=1))
    assert answer.stale_age_s is None
    assert answer.unit == "gCO2eq/kWh"


def test_outage_falls_back_to_embedded_replay_with_a_stale_age(
    fakes: Fakes, base_url: str, clock: ManualClock, cache: DiskCache, retry: RetryPolicy
) -> None:
    fakes.em.always_fail = (503, {}, {"message": "maintenance"})
    chain = FallbackChain(
        CiKind.DIRECT, [em(base_url, clock, cache, retry)], floor=EmbeddedReplay()
    )
    answer = chain.answer("DE", T0, T0 + timedelta(hours=2))
    outcomes = [(a.source, a.outcome) for a in answer.attempts]
    assert outcomes == [("electricitymaps", "error"), ("embedded", "embedded")]
    assert "HTTP 503" in answer.attempts[0].detail
    series = load_series("DE")
    assert answer.window.stale_since == series.end
    assert answer.stale_age_s == (clock.now() - series.end).total_seconds()
    assert answer.window.replayed_from is not None
    replay_start = answer.window.replayed_from[0]
    assert replay_start.weekday() == T0.weekday()
    assert replay_start.hour == T0.hour
    want_index = int((replay_start - series.start) / timedelta(hours=1))
    np.testing.assert_allclose(
        answer.window.values_g_per_kwh, series.values_g_per_kwh[want_index : want_index + 2]
    )


def test_embedded_inside_its_range_is_not_replayed() -> None:
    start = datetime(2022, 6, 1, tzinfo=UTC)
    window = EmbeddedReplay().window("GB", start, start + timedelta(hours=3), kind=CiKind.LCA)
    series = load_series("GB", CiKind.LCA)
    index = int((start - series.start) / timedelta(hours=1))
    np.testing.assert_allclose(window.values_g_per_kwh, series.values_g_per_kwh[index : index + 3])
    assert window.replayed_from is None
    assert window.stale_since is None


def test_outage_after_the_ttl_answers_from_the_stale_cache_first(
    fakes: Fakes, base_url: str, clock: ManualClock, cache: DiskCache, retry: RetryPolicy
) -> None:
    provider = em(base_url, clock, cache, retry)
    chain = FallbackChain(CiKind.DIRECT, [provider], floor=EmbeddedReplay())
    chain.answer("DE", T0 - timedelta(hours=2), T0)
    fetched_at = clock.now()
    clock.advance(provider.ttl_s + 600)
    fakes.em.always_fail = (500, {}, "boom")
    answer = chain.answer("DE", T0 - timedelta(hours=2), T0)
    assert [a.outcome for a in answer.attempts] == ["error", "stale-cache"]
    assert answer.window.stale_since == fetched_at
    assert answer.stale_age_s == provider.ttl_s + 600 + sum(clock.slept_s)


def wt(base_url: str, clock: ManualClock, cache: DiskCache, retry: RetryPolicy) -> WattTimeProvider:
    return WattTimeProvider(
        WT_USER,
        Secret(WT_PASSWORD),
        base_url=base_url + "/wt",
        clock=clock,
        cache=cache,
        retry=retry,
    )


def test_marginal_chain_ends_in_the_cache_then_a_clear_error(
    fakes: Fakes, base_url: str, clock: ManualClock, cache: DiskCache, retry: RetryPolicy
) -> None:
    chain = FallbackChain(CiKind.MARGINAL, [wt(base_url, clock, cache, retry)])
    chain.answer("DE", T0 - timedelta(hours=1), T0)
    fakes.wt.always_fail = (503, {}, {"error": "down"})
    clock.advance(3600)
    stale = chain.answer("DE", T0 - timedelta(hours=1), T0)
    assert stale.attempts[-1].outcome == "stale-cache"
    with pytest.raises(
        ProviderUnavailableError, match=r"no marginal source.*watttime.*HTTP 503.*no offline"
    ) as info:
        chain.answer("DE", T0 - timedelta(hours=5), T0 - timedelta(hours=4))
    assert WT_PASSWORD not in str(info.value)


def test_permanent_failures_everywhere_are_an_input_error(
    fakes: Fakes, base_url: str, clock: ManualClock, cache: DiskCache, retry: RetryPolicy
) -> None:
    gb = GbCarbonIntensityProvider(base_url=base_url + "/gb", clock=clock, retry=retry)
    chain = FallbackChain(CiKind.DIRECT, [gb], floor=EmbeddedReplay())
    with pytest.raises(NoSourceError, match=r"'Atlantis'.*not in the embedded"):
        chain.answer("Atlantis", T0, T0 + timedelta(hours=1))


@pytest.mark.parametrize(
    ("kind", "want"),
    [
        pytest.param(
            CiKind.DIRECT,
            "serves index, marginal, not 'direct'",
            id="marginal-source-in-average-chain",
        ),
        pytest.param(
            CiKind.LCA, "serves index, marginal, not 'lca'", id="marginal-source-in-lca-chain"
        ),
    ],
)
def test_chain_refuses_sources_of_another_kind(
    base_url: str, clock: ManualClock, cache: DiskCache, retry: RetryPolicy, kind: CiKind, want: str
) -> None:
    with pytest.raises(InputError, match=want):
        FallbackChain(kind, [wt(base_url, clock, cache, retry)])


def test_marginal_chain_cannot_end_in_embedded_averages() -> None:
    with pytest.raises(InputError, match="cannot end in embedded data"):
        FallbackChain(CiKind.MARGINAL, [], floor=EmbeddedReplay())


def test_chain_window_refuses_another_kind() -> None:
    chain = FallbackChain(CiKind.DIRECT, [], floor=EmbeddedReplay())
    with pytest.raises(InputError, match="serves 'direct' values, not 'lca'"):
        chain.window("DE", T0, T0 + timedelta(hours=1), kind=CiKind.LCA)


def test_settings_and_default_chains(tmp_path: Path, base_url: str) -> None:
    key_file = tmp_path / "em.key"
    key_file.write_text(EM_TOKEN + "\n")
    env = {
        "CARBONSHIFT_ELECTRICITYMAPS_TOKEN_FILE": str(key_file),
        "CARBONSHIFT_ELECTRICITYMAPS_URL": base_url + "/em",
        "CARBONSHIFT_WATTTIME_USERNAME": WT_USER,
        "CARBONSHIFT_WATTTIME_PASSWORD": WT_PASSWORD,
        "CARBONSHIFT_CACHE_DIR": str(tmp_path / "c"),
        "CARBONSHIFT_CHAIN_LCA": "electricitymaps,embedded",
        "CARBONSHIFT_HTTP_ATTEMPTS": "2",
    }
    settings = ProviderSettings.from_env(env)
    assert settings.electricitymaps_token is not None
    assert settings.electricitymaps_token.reveal() == EM_TOKEN
    assert EM_TOKEN not in repr(settings)
    chains = build_chains(settings)
    assert chains.chain(CiKind.DIRECT).names == ["electricitymaps", "gb", "embedded"]
    assert chains.chain(CiKind.LCA).names == ["electricitymaps", "embedded"]
    assert chains.chain(CiKind.MARGINAL).names == ["watttime"]
    assert settings.retry.attempts == 2
    chains.close()


@pytest.mark.parametrize(
    ("env", "want"),
    [
        pytest.param(
            {"CARBONSHIFT_CHAIN_DIRECT": "embedded,gb"}, "put it last", id="embedded-not-last"
        ),
        pytest.param(
            {"CARBONSHIFT_CHAIN_DIRECT": "gb,nope"}, "unknown source 'nope'", id="unknown-source"
        ),
        pytest.param(
            {"CARBONSHIFT_CHAIN_MARGINAL": "carbon-aware-sdk"},
            "CARBON_AWARE_SDK_URL",
            id="sdk-without-url",
        ),
        pytest.param(
            {"CARBONSHIFT_HTTP_TIMEOUT_S": "soon"}, "HTTP_TIMEOUT_S is 'soon'", id="bad-number"
        ),
        pytest.param(
            {"CARBONSHIFT_OUTLIERS": "drop"}, "keep, flag or interpolate", id="bad-outlier-choice"
        ),
        pytest.param(
            {"CARBONSHIFT_ELECTRICITYMAPS_TOKEN_FILE": "/nonexistent/key"},
            "ELECTRICITYMAPS_TOKEN_FILE key file .* does not exist",
            id="missing-key-file",
        ),
    ],
)
def test_bad_settings_are_input_errors(env: dict[str, str], want: str) -> None:
    with pytest.raises(InputError, match=want):
        build_chains(ProviderSettings.from_env(env))


def test_offline_has_only_embedded_average_chains(tmp_path: Path) -> None:
    chains = build_chains(
        ProviderSettings.from_env(
            {"CARBONSHIFT_OFFLINE": "1", "CARBONSHIFT_CACHE_DIR": str(tmp_path)}
        )
    )
    assert chains.chain(CiKind.DIRECT).names == ["embedded"]
    with pytest.raises(InputError, match="no source is configured for 'marginal'"):
        chains.chain(CiKind.MARGINAL)


def test_secret_never_prints_itself() -> None:
    secret = Secret("hunter2-long")
    assert "hunter2" not in repr(secret)
    assert "hunter2" not in f"{secret}"
    assert secret.reveal() == "hunter2-long"


def test_cache_survives_a_corrupt_file(tmp_path: Path, clock: ManualClock) -> None:
    cache = DiskCache(tmp_path)
    (tmp_path / "electricitymaps_DE_direct.json").write_text("{not json")
    assert cache.get("electricitymaps", "DE", CiKind.DIRECT, T0, T0 + timedelta(hours=1)) is None


def test_sources_that_do_not_cover_the_zone_are_skipped_silently(
    fakes: Fakes, base_url: str, clock: ManualClock, retry: RetryPolicy
) -> None:
    gb = GbCarbonIntensityProvider(base_url=base_url + "/gb", clock=clock, retry=retry)
    chain = FallbackChain(CiKind.DIRECT, [gb], floor=EmbeddedReplay())
    answer = chain.answer("DE", T0, T0 + timedelta(hours=1))
    assert [(a.source, a.outcome) for a in answer.attempts] == [("embedded", "embedded")]
    assert not answer.fell_back


def test_a_failing_source_rests_for_the_cooldown_then_is_asked_again(
    fakes: Fakes, base_url: str, clock: ManualClock, cache: DiskCache, retry: RetryPolicy
) -> None:
    provider = em(base_url, clock, cache, retry)
    chain = FallbackChain(CiKind.DIRECT, [provider], floor=EmbeddedReplay(), cooldown_s=120)
    fakes.em.always_fail = (503, {}, {"message": "down"})
    chain.answer("DE", T0, T0 + timedelta(hours=1))
    asked = len(fakes.em.requests)
    resting = chain.answer("DE", T0, T0 + timedelta(hours=1))
    assert len(fakes.em.requests) == asked, "a resting source is not asked"
    assert resting.attempts[0].detail.startswith("resting until")
    assert resting.window.source == "embedded"
    fakes.em.always_fail = None
    clock.advance(121)
    back = chain.answer("DE", T0, T0 + timedelta(hours=1))
    assert back.window.source == "electricitymaps"


def test_single_source_chain_does_not_fall_back_to_other_sources(
    fakes: Fakes, base_url: str, clock: ManualClock, tmp_path: Path
) -> None:
    settings = ProviderSettings.from_env(
        {
            "CARBONSHIFT_GB_URL": base_url + "/gb",
            "CARBONSHIFT_CACHE_DIR": str(tmp_path),
            "CARBONSHIFT_HTTP_ATTEMPTS": "1",
        }
    )
    chain = single_source_chain("gb", CiKind.DIRECT, settings, clock=clock)
    assert chain.names == ["gb"]
    assert chain.answer("GB", T0, T0 + timedelta(hours=1)).window.source == "gb"
    with pytest.raises(NoSourceError, match="'DE'"):
        chain.answer("DE", T0, T0 + timedelta(hours=1))
    assert single_source_chain("embedded", CiKind.LCA, settings).names == ["embedded"]
    with pytest.raises(InputError, match="unknown source 'nope'"):
        single_source_chain("nope", CiKind.DIRECT, settings)


def test_refused_credentials_with_nothing_to_fall_back_on_blame_the_setup(
    fakes: Fakes, base_url: str, clock: ManualClock, cache: DiskCache, retry: RetryPolicy
) -> None:
    provider = ElectricityMapsProvider(
        Secret("bad-key-000"), base_url=base_url + "/em", clock=clock, cache=cache, retry=retry
    )
    chain = FallbackChain(CiKind.LCA, [provider])
    with pytest.raises(SourcesRefusedError, match=r"HTTP 401.*fix the credentials") as info:
        chain.answer("DE", T0 - timedelta(hours=1), T0)
    assert "bad-key-000" not in str(info.value)


#: A provider day like GB's 2023-06-07 glitch: 9 g/kWh for one hour between 149 and 140.
SPIKY_G_PER_KWH = [150.0, 152, 149, 151, 148, 150, 149, 9.0, 140, 142, 139, 141, 140, 138, 141]


class SpikySource:
    """A live source answering :data:`SPIKY_G_PER_KWH` hourly from ``start``."""

    name = "spiky"
    kinds = frozenset({CiKind.DIRECT})

    def __init__(self) -> None:
        self._clock = ManualClock(T0)

    @property
    def clock(self) -> ManualClock:
        return self._clock

    def covers(self, zone: str) -> bool:
        return True

    def supports(self, kind: CiKind) -> bool:
        return kind in self.kinds

    def window(
        self,
        zone: str,
        start: datetime,
        end: datetime,
        *,
        slot_minutes: int = 60,
        kind: CiKind = CiKind.DIRECT,
    ) -> SignalWindow:
        values = np.array(SPIKY_G_PER_KWH[: int((end - start) / timedelta(hours=1))])
        return SignalWindow(zone, kind, start, end, 60, values, source=self.name)

    def cached_window(self, *args: object, **kwargs: object) -> None:
        return None

    def close(self) -> None:
        return None


SPIKE_AT = T0 + timedelta(hours=7)


@pytest.mark.parametrize(
    ("outliers", "want_suspect", "want_value_at_spike"),
    [
        pytest.param(OutlierAction.FLAG, [(SPIKE_AT, 9.0)], 9.0, id="flag-lists-keeps-value"),
        pytest.param(
            OutlierAction.INTERPOLATE, [(SPIKE_AT, 9.0)], 144.5, id="interpolate-replaces"
        ),
        pytest.param(OutlierAction.KEEP, [], 9.0, id="keep-does-not-screen"),
    ],
)
def test_provider_answers_are_screened_for_implausible_points(
    outliers: OutlierAction,
    want_suspect: list[tuple[datetime, float]],
    want_value_at_spike: float,
    caplog: pytest.LogCaptureFixture,
) -> None:
    chain = FallbackChain(CiKind.DIRECT, [cast(ChainSource, SpikySource())], outliers=outliers)
    end = T0 + timedelta(hours=len(SPIKY_G_PER_KWH))
    with caplog.at_level(logging.WARNING, logger="carbonshift.carbon.providers.chain"):
        answer = chain.answer("GB", T0, end)
        again = chain.answer("GB", T0, end)
    assert list(answer.suspect) == want_suspect
    assert answer.outliers is outliers
    assert answer.window.values_g_per_kwh[7] == pytest.approx(want_value_at_spike)
    assert again.suspect == answer.suspect
    implausible = [r for r in caplog.records if "implausible" in r.getMessage()]
    assert len(implausible) == (1 if want_suspect else 0)  # once per zone and change
    if want_suspect:
        assert "2026-03-10T19:00:00Z 9 g/kWh" in implausible[0].getMessage()


def test_settings_default_to_flag_and_reach_the_chains(tmp_path: Path) -> None:
    assert ProviderSettings.from_env({}).outliers is OutlierAction.FLAG
    settings = ProviderSettings.from_env(
        {"CARBONSHIFT_OUTLIERS": "interpolate", "CARBONSHIFT_OFFLINE": "1"}
    )
    chains = build_chains(replace(settings, cache_dir=tmp_path))
    assert chains.chain(CiKind.DIRECT).outliers is OutlierAction.INTERPOLATE
