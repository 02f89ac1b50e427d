"""The zone catalogue of the embedded data."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from carbonshift.carbon.zones import resolve_zone, zone_catalogue

WANT_ZONES = [
    "AU-NSW", "BR-CS", "CA-ON", "CL-SEN", "DE", "GB", "IN-WE", "JP-TK",
    "US-CAL-CISO", "US-MIDA-PJM", "US-NY-NYIS", "US-TEX-ERCO",
]  # fmt: skip


def test_catalogue_lists_the_twelve_zones_by_id() -> None:
    assert [z.id for z in zone_catalogue()] == WANT_ZONES


@pytest.mark.parametrize(
    ("zone", "want_name", "want_country", "want_aliases"),
    [
        pytest.param("DE", "Germany", "Germany", ("DE-LU",), id="germany"),
        pytest.param("BR-CS", "Central Brazil", "Brazil", ("BR-SP",), id="brazil"),
        pytest.param("JP-TK", "Tōkyō", "Japan", (), id="tokyo-unicode-name"),
    ],
)
def test_catalogue_entries(
    zone: str, want_name: str, want_country: str, want_aliases: tuple[str, ...]
) -> None:
    info = resolve_zone(zone)
    assert (info.name, info.country, info.aliases) == (want_name, want_country, want_aliases)
    assert info.start == datetime(2021, 1, 1, tzinfo=UTC)
    assert info.end == datetime(2024, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("zone", "want_low", "want_high"),
    [
        pytest.param("JP-TK", 1.0, 1.0, id="tokyo-is-all-model-estimates"),
        pytest.param("IN-WE", 1.0, 1.0, id="western-india-is-all-model-estimates"),
        pytest.param("DE", 0.0001, 0.05, id="germany-mostly-measured"),
    ],
)
def test_estimated_share(zone: str, want_low: float, want_high: float) -> None:
    assert want_low <= resolve_zone(zone).estimated_share <= want_high
