"""The catalogue of the zones whose data ship inside the package, and zone-name resolution.

Zones are named by their Electricity Maps zone id as found inside the source files (``DE``,
``GB``, ``CA-ON``, ``BR-CS``, ``CL-SEN``, ...). The file-name prefixes of the source exports
(``DE-LU``, ``BR-SP``, ``CL-SIC``) are accepted as aliases; matching ignores case.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from importlib import resources
from typing import Any

from carbonshift.errors import InputError
from carbonshift.units import parse_utc

__all__ = ["EmbeddedMeta", "ZoneInfo", "embedded_meta", "resolve_zone", "zone_catalogue"]

_PACKAGE = "carbonshift.carbon"
ZONES_FILE = "zones.json"


@dataclass(frozen=True, slots=True)
class ZoneInfo:
    """One zone of the embedded data set.

    ``estimated_share`` is the fraction (0..1) of hours Electricity Maps flagged as model
    estimates rather than measurements (1.0 for JP-TK and IN-WE).
    """

    id: str
    name: str
    country: str
    aliases: tuple[str, ...]
    estimated_share: float
    data_sources: tuple[str, ...]
    start: datetime
    end: datetime
    step_minutes: int


@dataclass(frozen=True, slots=True)
class EmbeddedMeta:
    """Where the embedded arrays are and what span they cover (all zones share it)."""

    data_file: str
    start: datetime
    step_minutes: int
    hours: int
    attribution: str

    @property
    def end(self) -> datetime:
        """End (exclusive) of the last hour."""
        return self.start + timedelta(minutes=self.step_minutes * self.hours)


def _read_document() -> dict[str, Any]:
    text = resources.files(_PACKAGE).joinpath("data", ZONES_FILE).read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


@cache
def embedded_meta() -> EmbeddedMeta:
    """The span and file of the embedded data set."""
    doc = _read_document()
    return EmbeddedMeta(
        data_file=str(doc["data_file"]),
        start=parse_utc(str(doc["start"])),
        step_minutes=int(doc["step_minutes"]),
        hours=int(doc["hours"]),
        attribution=str(doc["attribution"]),
    )


@cache
def _catalogue() -> tuple[ZoneInfo, ...]:
    meta = embedded_meta()
    zones = []
    for raw in _read_document()["zones"]:
        zones.append(
            ZoneInfo(
                id=str(raw["id"]),
                name=str(raw["name"]),
                country=str(raw["country"]),
                aliases=tuple(str(a) for a in raw["aliases"]),
                estimated_share=float(raw["estimated_share"]),
                data_sources=tuple(str(s) for s in raw["data_sources"]),
                start=meta.start,
                end=meta.end,
                step_minutes=meta.step_minutes,
            )
        )
    return tuple(zones)


def zone_catalogue() -> list[ZoneInfo]:
    """Every embedded zone, sorted by id."""
    return list(_catalogue())


@cache
def _names() -> dict[str, ZoneInfo]:
    names: dict[str, ZoneInfo] = {}
    for info in _catalogue():
        names[info.id.upper()] = info
        for alias in info.aliases:
            names[alias.upper()] = info
    return names


def resolve_zone(zone: str) -> ZoneInfo:
    """The embedded zone called ``zone`` (its id or an alias, any case).

    Raises :class:`~carbonshift.errors.InputError` naming the known zones when there is none.
    """
    info = _names().get(zone.strip().upper())
    if info is None:
        known = ", ".join(
            z.id + (f" (alias {', '.join(z.aliases)})" if z.aliases else "") for z in _catalogue()
        )
        raise InputError(
            f"zone {zone!r} is not in the embedded carbon data; use one of: {known} "
            "(or give a CSV file in the Electricity Maps hourly export format)"
        )
    return info
