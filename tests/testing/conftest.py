"""Fixtures for the fake API server's own tests."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from fakekube import FakeKube
from fakekube.pytest_plugin import fakekube  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fakekube_config(**kwargs): settings of the fakekube fixture"
    )


@pytest.fixture
def http(fakekube: FakeKube) -> Iterator[httpx.Client]:  # noqa: F811
    with httpx.Client(base_url=fakekube.base_url, timeout=10) as client:
        yield client
