"""The controller's live carbon source: the provider chain's answer, last-good on failure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from carbonshift.carbon.embedded import load_series
from carbonshift.carbon.providers import FallbackChain, single_source_chain
from carbonshift.carbon.providers.config import ProviderSettings
from carbonshift.carbon.series import CiKind
from carbonshift.carbon.signal import integral_g_h_per_kwh
from carbonshift.errors import TemporaryError
from carbonshift.k8s.config import parse_config
from carbonshift.k8s.planner import CarbonSource, ProviderCarbonSource, carbon_source_for

RAW: dict[str, Any] = {
    "cluster": {"zone": "GB", "watts_per_unit": {"cpu": 10}},
    "planning": {"carbon_source": "providers"},
}


class FlakyChain:
    """Answers like the embedded chain until told to fail."""

    def __init__(self) -> None:
        self.inner = single_source_chain("embedded", CiKind.DIRECT, ProviderSettings())
        self.failing = False

    def answer(self, zone: str, start: datetime, end: datetime, *, slot_minutes: int) -> Any:
        if self.failing:
            raise TemporaryError("provider down; retry later", delay_s=30)
        return self.inner.answer(zone, start, end, slot_minutes=slot_minutes)


def test_providers_source_answers_from_the_chain_then_falls_back() -> None:
    config = parse_config(RAW)
    chain = FlakyChain()
    source = ProviderCarbonSource(config, cast(FallbackChain, chain))
    slot0 = datetime(2023, 6, 1, tzinfo=UTC)
    first = source.forecast(slot0, 4)
    series = load_series("GB")
    want = [
        integral_g_h_per_kwh(series, slot0 + timedelta(hours=h), slot0 + timedelta(hours=h + 1))
        for h in range(4)
    ]
    assert list(first.values_g_per_kwh) == pytest.approx(want)
    assert not first.fallback
    chain.failing = True
    later = source.forecast(slot0 + timedelta(hours=1), 4)
    assert later.fallback
    assert source.errors == 1
    assert list(later.values_g_per_kwh[:3]) == pytest.approx(want[1:])


def test_the_configuration_picks_the_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARBONSHIFT_OFFLINE", "1")
    assert isinstance(carbon_source_for(parse_config(RAW)), ProviderCarbonSource)
    embedded = parse_config({**RAW, "planning": {}})
    source = carbon_source_for(embedded)
    assert type(source) is CarbonSource
