"""Cloud region names (Azure, AWS) -> grid zones, for Carbon Aware SDK clients.

A Carbon Aware SDK client names places by cloud region (``eastus``, ``westeurope``,
``us-east-1``); carbonshift's sources name them by Electricity Maps zone id (``US-MIDA-PJM``).
:data:`BUILT_IN` maps every Azure and AWS region whose data centres lie in a zone of the
embedded data set (``carbonshift data zones``). Each row says where the region is and why it
belongs to the zone; ``approximate`` marks rows where the region's city is known but the grid
boundary or the exact site is not (docs/api.md shows the table).

Where a region is comes from the providers' public region lists: Azure's "Azure geographies"
page and ``az account list-locations`` (which also gives the coordinates used here), AWS's
"Regions and Availability Zones" page (city only; coordinates are of that city). Which zone a
city lies in comes from the Electricity Maps zone map (app.electricitymaps.com) and, for the
US, the ISO/RTO footprint maps of FERC (ferc.gov "Electric Power Markets").

Custom names: :meth:`RegionTable.with_file` reads a JSON or YAML mapping ``name -> zone``
(``carbonshift serve --region-map FILE`` or ``$CARBONSHIFT_REGION_MAP``); a custom name
overrides a built-in one. Zone ids are checked against a strict pattern, so no request can
name a file path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from carbonshift.carbon.providers import check_zone_name
from carbonshift.errors import InputError
from carbonshift.files import read_input_text

__all__ = ["BUILT_IN", "ZONE_PATTERN", "Region", "RegionTable", "check_zone_id"]

#: An Electricity Maps-style zone id: a two-letter country code and dash-separated parts
#: (``DE``, ``US-CAL-CISO``, ``AU-NSW``). Never a path: no dots, slashes or spaces.
ZONE_PATTERN = re.compile(r"^[A-Z]{2}(?:-[A-Z0-9]{1,12}){0,4}$")

_NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")


@dataclass(frozen=True, slots=True)
class Region:
    """One cloud region: its zone, where it is, and how sure the mapping is."""

    name: str
    zone: str
    provider: str
    place: str
    latitude: float | None = None
    longitude: float | None = None
    approximate: bool = False
    note: str = ""


def _r(
    name: str,
    zone: str,
    provider: str,
    place: str,
    lat_lon: tuple[float, float],
    *,
    approximate: bool = False,
    note: str = "",
) -> Region:
    return Region(name, zone, provider, place, lat_lon[0], lat_lon[1], approximate, note)


#: Built-in regions, by provider and zone. Coordinates: Azure's ``az account list-locations``;
#: for AWS (which publishes none) the region's city.
BUILT_IN: tuple[Region, ...] = (
    # Australia, NEM New South Wales region (which also covers the ACT)
    _r("australiaeast", "AU-NSW", "azure", "New South Wales (Sydney)", (-33.86, 151.2094)),
    _r(
        "australiacentral",
        "AU-NSW",
        "azure",
        "Canberra (ACT)",
        (-35.3075, 149.1244),
        approximate=True,
        note="the ACT is inside the NEM's NSW region; Electricity Maps' AU-NSW covers it",
    ),
    _r(
        "australiacentral2",
        "AU-NSW",
        "azure",
        "Canberra (ACT)",
        (-35.3075, 149.1244),
        approximate=True,
        note="as australiacentral",
    ),
    _r("ap-southeast-2", "AU-NSW", "aws", "Sydney", (-33.87, 151.21)),
    # Brazil, Central-South subsystem (South-East / Centre-West)
    _r("brazilsouth", "BR-CS", "azure", "Sao Paulo State", (-23.55, -46.633)),
    _r("brazilsoutheast", "BR-CS", "azure", "Rio de Janeiro", (-22.90278, -43.2075)),
    _r("sa-east-1", "BR-CS", "aws", "Sao Paulo", (-23.55, -46.63)),
    # Canada, Ontario (AWS ca-central-1 is Montreal, Quebec: not CA-ON)
    _r("canadacentral", "CA-ON", "azure", "Toronto", (43.653, -79.383)),
    # Chile, Sistema Electrico Nacional
    _r(
        "chilecentral",
        "CL-SEN",
        "azure",
        "Santiago",
        (-33.45, -70.67),
        approximate=True,
        note="a 2025 region; coordinates are Santiago's, not from list-locations",
    ),
    # Germany
    _r("germanywestcentral", "DE", "azure", "Frankfurt", (50.110924, 8.682127)),
    _r("germanynorth", "DE", "azure", "Berlin", (53.073635, 8.806422)),
    _r("eu-central-1", "DE", "aws", "Frankfurt", (50.11, 8.68)),
    # Great Britain (the GB grid: England, Scotland, Wales)
    _r("uksouth", "GB", "azure", "London", (50.941, -0.799)),
    _r("ukwest", "GB", "azure", "Cardiff", (53.427, -3.084)),
    _r("eu-west-2", "GB", "aws", "London", (51.51, -0.13)),
    # India, Western region (Maharashtra)
    _r("westindia", "IN-WE", "azure", "Mumbai", (19.088, 72.868)),
    _r("centralindia", "IN-WE", "azure", "Pune", (18.5822, 73.9197)),
    _r("ap-south-1", "IN-WE", "aws", "Mumbai", (19.08, 72.88)),
    # Japan, Tokyo area (TEPCO); Osaka regions (japanwest, ap-northeast-3) are JP-KN
    _r("japaneast", "JP-TK", "azure", "Tokyo, Saitama", (35.68, 139.77)),
    _r("ap-northeast-1", "JP-TK", "aws", "Tokyo", (35.68, 139.77)),
    # US, California ISO
    _r("westus", "US-CAL-CISO", "azure", "California", (37.783, -122.417)),
    _r("us-west-1", "US-CAL-CISO", "aws", "N. California", (37.77, -122.42)),
    # US, PJM Interconnection (Virginia, Ohio, northern Illinois)
    _r("eastus", "US-MIDA-PJM", "azure", "Virginia", (37.3719, -79.8164)),
    _r("eastus2", "US-MIDA-PJM", "azure", "Virginia", (36.6681, -78.3889)),
    _r(
        "northcentralus",
        "US-MIDA-PJM",
        "azure",
        "Illinois (Chicago)",
        (41.8819, -87.6278),
        approximate=True,
        note="northern Illinois (ComEd) is in PJM; the site is not published",
    ),
    _r("us-east-1", "US-MIDA-PJM", "aws", "N. Virginia", (38.9, -77.45)),
    _r(
        "us-east-2",
        "US-MIDA-PJM",
        "aws",
        "Ohio",
        (39.96, -83.0),
        approximate=True,
        note="most of Ohio (AEP, FirstEnergy, Dayton) is in PJM; the site is not published",
    ),
    # US, ERCOT (Texas)
    _r("southcentralus", "US-TEX-ERCO", "azure", "Texas (San Antonio)", (29.4167, -98.5)),
    # Zones outside the embedded data: only a live source (Electricity Maps) answers for them
    _r("westeurope", "NL", "azure", "Netherlands", (52.3667, 4.9)),
    _r("northeurope", "IE", "azure", "Ireland", (53.3478, -6.2597)),
    _r("eu-west-1", "IE", "aws", "Ireland (Dublin)", (53.35, -6.26)),
    _r("francecentral", "FR", "azure", "Paris", (46.3772, 2.373)),
    _r("eu-west-3", "FR", "aws", "Paris", (48.86, 2.35)),
    _r("swedencentral", "SE-SE3", "azure", "Gavle", (60.67488, 17.14127)),
    _r("eu-north-1", "SE-SE3", "aws", "Stockholm", (59.33, 18.07)),
    _r("canadaeast", "CA-QC", "azure", "Quebec City", (46.817, -71.217)),
    _r("ca-central-1", "CA-QC", "aws", "Montreal", (45.5, -73.57)),
    _r("japanwest", "JP-KN", "azure", "Osaka", (34.6939, 135.5022)),
    _r("ap-northeast-3", "JP-KN", "aws", "Osaka", (34.69, 135.5)),
    _r("southindia", "IN-SO", "azure", "Chennai", (12.9822, 80.1636)),
)
# No Azure or AWS region lies in New York ISO (US-NY-NYIS): that zone has none.


@dataclass(frozen=True, slots=True)
class RegionTable:
    """Region names (lower case) -> :class:`Region`; built-in rows plus custom ones."""

    regions: Mapping[str, Region] = field(default_factory=lambda: {r.name: r for r in BUILT_IN})

    def with_mapping(self, mapping: Mapping[str, object], *, origin: str) -> RegionTable:
        """This table plus ``name -> zone`` rows (overriding built-ins of the same name)."""
        rows = dict(self.regions)
        for raw_name, raw_zone in mapping.items():
            name = str(raw_name).strip().lower()
            if not _NAME_PATTERN.match(name):
                raise InputError(
                    f"region name {raw_name!r} in {origin} is not a region name; use lower-case "
                    "letters, digits, '-' and '_' (at most 64), like eastus or us-east-1"
                )
            if not isinstance(raw_zone, str):
                raise InputError(
                    f"region {name!r} in {origin} maps to {raw_zone!r}; give a zone id string, "
                    "like DE"
                )
            zone = check_zone_id(raw_zone, what=f"the zone of region {name!r} in {origin}")
            rows[name] = Region(name, zone, "custom", origin)
        return RegionTable(rows)

    def with_file(self, path: Path) -> RegionTable:
        """This table plus the JSON or YAML mapping ``name: zone`` in ``path``."""
        text = read_input_text(path, "region map (JSON or YAML, region name: zone id)")
        if path.suffix.lower() == ".json":
            try:
                document = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"region map {str(path)!r} is not valid JSON ({exc.msg}, line {exc.lineno})"
                ) from None
        else:
            import yaml  # type: ignore[import-untyped]  # pyproject lists pyyaml

            try:
                document = yaml.safe_load(text)
            except yaml.YAMLError:
                raise InputError(
                    f"region map {str(path)!r} is not valid YAML; write lines like 'eastus: "
                    "US-MIDA-PJM'"
                ) from None
        if not isinstance(document, dict):
            raise InputError(
                f"region map {str(path)!r} holds no mapping; write name: zone pairs, like "
                "'eastus: US-MIDA-PJM'"
            )
        return self.with_mapping(document, origin=str(path))

    def names(self) -> list[str]:
        """Every region name, sorted."""
        return sorted(self.regions)

    def get(self, name: str) -> Region | None:
        """The region called ``name`` (any case), if any."""
        return self.regions.get(name.strip().lower())


def check_zone_id(zone: str, *, what: str = "zone") -> str:
    """``zone`` (stripped) when it is a well-formed zone id, else :class:`InputError`.

    The safety rule every zone name passes (:func:`check_zone_name`: never a path) comes
    first; the SDK routes then ask for the stricter Electricity Maps shape.
    """
    text = zone.strip()
    try:
        check_zone_name(text, what)
    except InputError:
        text = ""  # refused below with the SDK routes' own message
    if not ZONE_PATTERN.match(text):
        raise InputError(
            f"{what} {zone!r} is not a zone id; give an Electricity Maps zone id in capitals, "
            "like DE or US-CAL-CISO"
        )
    return text
