"""Fixtures: one loopback server holding the four fake services, and a manual clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from carbonshift.carbon.providers import DiskCache, ManualClock, RetryPolicy
from tests.providers.fakes import T0, Fakes
from tests.providers.loopback import LoopbackServer


@pytest.fixture(scope="session")
def fake_services() -> Iterator[tuple[Fakes, str]]:
    fakes = Fakes()
    with LoopbackServer(fakes.app()) as server:
        yield fakes, server.url


@pytest.fixture
def fakes(fake_services: tuple[Fakes, str]) -> Iterator[Fakes]:
    fakes, _ = fake_services
    fakes.reset()
    yield fakes
    fakes.reset()


@pytest.fixture
def base_url(fake_services: tuple[Fakes, str]) -> str:
    return fake_services[1]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def cache(tmp_path: Path) -> DiskCache:
    return DiskCache(tmp_path / "cache")


@pytest.fixture
def retry() -> RetryPolicy:
    return RetryPolicy(attempts=3, timeout_s=5.0, backoff_s=0.5, backoff_factor=2.0)
