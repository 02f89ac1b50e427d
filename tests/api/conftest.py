"""Fixtures: the advice API over fall-back chains whose live sources are loopback fakes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from carbonshift.api import ApiSettings, create_app
from carbonshift.carbon.providers import (
    ChainSet,
    DiskCache,
    ElectricityMapsProvider,
    EmbeddedReplay,
    FallbackChain,
    GbCarbonIntensityProvider,
    ManualClock,
    RetryPolicy,
    Secret,
    WattTimeProvider,
)
from carbonshift.carbon.series import CiKind
from tests.providers.conftest import base_url, cache, clock, fake_services, fakes, retry
from tests.providers.fakes import EM_TOKEN, WT_PASSWORD, WT_USER

__all__ = ["base_url", "cache", "clock", "fake_services", "fakes", "retry"]


@pytest.fixture
def chains(base_url: str, clock: ManualClock, cache: DiskCache, retry: RetryPolicy) -> ChainSet:
    em = ElectricityMapsProvider(
        Secret(EM_TOKEN), base_url=base_url + "/em", clock=clock, cache=cache, retry=retry
    )
    gb = GbCarbonIntensityProvider(base_url=base_url + "/gb", clock=clock, cache=cache, retry=retry)
    wt = WattTimeProvider(
        WT_USER,
        Secret(WT_PASSWORD),
        base_url=base_url + "/wt",
        clock=clock,
        cache=cache,
        retry=retry,
    )
    return ChainSet(
        chains={
            CiKind.DIRECT: FallbackChain(
                CiKind.DIRECT, [em, gb], floor=EmbeddedReplay(), clock=clock
            ),
            CiKind.MARGINAL: FallbackChain(CiKind.MARGINAL, [wt], clock=clock),
        },
        providers={"electricitymaps": em, "gb": gb, "watttime": wt},
    )


@pytest.fixture
def client(fakes: object, chains: ChainSet, clock: ManualClock) -> Iterator[TestClient]:
    app = create_app(chains, settings=ApiSettings(max_body_bytes=200_000, max_jobs=50), clock=clock)
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client
    chains.close()
