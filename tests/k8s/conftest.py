"""Fixtures of the controller's tests: the fake API server and a controller wired to it."""

from __future__ import annotations

import pytest

from fakekube.pytest_plugin import fakekube  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fakekube_config(**kwargs): settings of the fakekube fixture"
    )
