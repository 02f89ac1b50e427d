"""Shared fixtures: where ../shared/ data lives, and builders for domain objects."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """``../shared`` beside the checkout, or ``$CARBONSHIFT_SHARED``."""
    return Path(os.environ.get("CARBONSHIFT_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data folder of ../shared; skips (never under CI) when it is absent."""
    data = shared_dir() / "data"
    if not data.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"../shared/data is missing at {data} under CI")
        pytest.skip(f"../shared/data not found at {data}; set CARBONSHIFT_SHARED to run this test")
    return data
