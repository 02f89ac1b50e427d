"""The zone table: Electricity Maps zone ids -> WattTime regions, GB regions, SDK locations.

Zones inside carbonshift are Electricity Maps zone ids (``DE``, ``GB``, ``US-CAL-CISO``).
Each live service names places its own way; this table translates. The defaults below are a
starting point (WattTime grants regions per plan: see ``/v3/my-access``); extend or override
them with a JSON file named by ``$CARBONSHIFT_ZONE_TABLE``::

    {"watttime": {"US-CAL-CISO": "CAISO_NORTH"},
     "gb": {"GB-LONDON": 13},
     "carbon_aware_sdk": {"DE": "germanywestcentral"}}

A zone missing from the WattTime or SDK table is passed through unchanged (so a native region
name works too); a zone missing from the GB table is not a GB zone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from carbonshift.errors import InputError
from carbonshift.files import read_input_text

__all__ = ["GB_REGIONS", "ZONE_PATTERN", "ZoneTable", "check_zone_name"]

#: What a zone name may look like wherever one enters carbonshift (API query, request body,
#: CLI flag, CSV folder lookup): Electricity Maps ids (``US-CAL-CISO``, ``DE-LU``, ``IN-WE``),
#: WattTime regions (``CAISO_NORTH``) and Carbon Aware SDK locations (``westus2``). No dots,
#: slashes or spaces, so a zone name can never name a path.
ZONE_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def check_zone_name(zone: object, what: str = "zone") -> str:
    """``zone`` when it matches :data:`ZONE_PATTERN`, else an :class:`InputError`.

    The message shows at most 40 characters of the refused value, never a file's content.
    """
    if isinstance(zone, str) and ZONE_PATTERN.fullmatch(zone):
        return zone
    shown = (
        repr(zone[:40] + ("..." if len(zone) > 40 else ""))
        if isinstance(zone, str)
        else (type(zone).__name__)
    )
    raise InputError(
        f"{what} {shown} is not a zone name; use 1-64 letters, digits, '-' or '_' starting "
        "with a letter or digit, like DE, US-CAL-CISO or IN-WE"
    )


#: GB Carbon Intensity API region ids (``/regional/regionid/{id}``) and their short names.
GB_REGIONS: dict[int, str] = {
    1: "North Scotland",
    2: "South Scotland",
    3: "North West England",
    4: "North East England",
    5: "Yorkshire",
    6: "North Wales & Merseyside",
    7: "South Wales",
    8: "West Midlands",
    9: "East Midlands",
    10: "East England",
    11: "South West England",
    12: "South England",
    13: "London",
    14: "South East England",
    15: "England",
    16: "Scotland",
    17: "Wales",
}

_DEFAULT_WATTTIME: dict[str, str] = {
    "US-CAL-CISO": "CAISO_NORTH",
    "US-NE-ISNE": "ISONE_WCMA",
    "US-NY-NYIS": "NYISO_NYC",
    "US-MIDA-PJM": "PJM_NJ",
    "GB": "UK",
    "DE": "DE",
    "FR": "FR",
    "IE": "IE",
}

#: ``None`` is the national (Great Britain) signal.
_DEFAULT_GB: dict[str, int | None] = {
    "GB": None,
    "GB-ORK": 1,  # Orkney lies in the North Scotland distribution region
    **{f"GB-R{region_id}": region_id for region_id in GB_REGIONS},
}


@dataclass(frozen=True, slots=True)
class ZoneTable:
    """Translations of zone ids into each service's place names."""

    watttime: Mapping[str, str] = field(default_factory=lambda: dict(_DEFAULT_WATTTIME))
    gb: Mapping[str, int | None] = field(default_factory=lambda: dict(_DEFAULT_GB))
    carbon_aware_sdk: Mapping[str, str] = field(default_factory=dict)

    def watttime_region(self, zone: str) -> str:
        """The WattTime ``region`` for ``zone`` (the zone itself when the table lacks it)."""
        return self.watttime.get(zone.upper(), self.watttime.get(zone, zone))

    def is_gb(self, zone: str) -> bool:
        """Whether the GB Carbon Intensity API covers ``zone``."""
        return zone.upper() in self.gb

    def gb_region(self, zone: str) -> int | None:
        """The GB region id of ``zone`` (None: national); call :meth:`is_gb` first."""
        return self.gb[zone.upper()]

    def sdk_location(self, zone: str) -> str:
        """The Carbon Aware SDK ``location`` for ``zone`` (the zone itself by default)."""
        return self.carbon_aware_sdk.get(zone, zone)

    @classmethod
    def from_file(cls, path: Path) -> ZoneTable:
        """The defaults, extended and overridden by the JSON file at ``path``."""
        text = read_input_text(path, "zone table (CARBONSHIFT_ZONE_TABLE)")
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"zone table {str(path)!r} is not JSON ({exc.msg} at line {exc.lineno}); fix it"
            ) from exc
        if not isinstance(data, dict):
            raise InputError(f"zone table {str(path)!r} must be a JSON object of sections")
        unknown = set(data) - {"watttime", "gb", "carbon_aware_sdk"}
        if unknown:
            raise InputError(
                f"zone table {str(path)!r} has unknown sections {sorted(unknown)}; use "
                "watttime, gb, carbon_aware_sdk"
            )
        gb: dict[str, int | None] = dict(_DEFAULT_GB)
        for zone, region in dict(data.get("gb", {})).items():
            if region is not None and (not isinstance(region, int) or region not in GB_REGIONS):
                raise InputError(
                    f"zone table gb[{zone!r}] is {region!r}; use null (national) or a region "
                    f"id 1-{max(GB_REGIONS)}"
                )
            gb[str(zone).upper()] = region
        return cls(
            watttime={
                **_DEFAULT_WATTTIME,
                **{str(k).upper(): str(v) for k, v in dict(data.get("watttime", {})).items()},
            },
            gb=gb,
            carbon_aware_sdk={
                str(k): str(v) for k, v in dict(data.get("carbon_aware_sdk", {})).items()
            },
        )
