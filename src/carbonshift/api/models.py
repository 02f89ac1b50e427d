# ruff: noqa: N815 - the Carbon Aware SDK names its wire fields in camelCase
"""Wire models of the advice API: Carbon Aware SDK shapes, and carbonshift's own.

Carbon Aware SDK fields keep their camelCase names (``dataStartAt``, ``optimalDataPoints``);
the extensions every answer carries (``kind``, ``unit``, ``source``, ``staleSince``,
``staleAgeSeconds``, ``replayed``, ``fallback``, ``outliers``, ``suspect``) are extra fields SDK
clients ignore.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from carbonshift.carbon.providers.zones import ZONE_PATTERN
from carbonshift.carbon.quality import OutlierAction
from carbonshift.carbon.series import CiKind
from carbonshift.formats import whole_number

__all__ = [
    "AdviseRequest",
    "AdviseResponse",
    "EmissionsData",
    "EmissionsDataPoint",
    "EmissionsForecast",
    "Problem",
    "Provenance",
    "RunOption",
    "SuspectPoint",
]


class Problem(BaseModel):
    """An error: ``detail`` names the value and the fix, on one line."""

    title: str
    status: int
    detail: str
    errors: list[dict[str, object]] | None = Field(
        None, description="for 422: every schema problem"
    )


class SuspectPoint(BaseModel):
    """A point the outlier rule found implausible (docs/providers.md, "Implausible points")."""

    timestamp: datetime = Field(description="start of the data point")
    value: float = Field(description="the value as the source gave it, in the answer's unit")


class Provenance(BaseModel):
    """Where an answer came from, how old its data are and which of its points are suspect."""

    kind: CiKind = Field(description="signal kind: direct, lca, marginal or index")
    unit: str = Field(description="unit of every value, e.g. gCO2eq/kWh")
    source: str = Field(description="the source that answered (after any fall-back)")
    staleSince: datetime | None = Field(
        None, description="when the data were fetched (cache) or when replayed data end"
    )
    staleAgeSeconds: float | None = Field(None, description="seconds since staleSince")
    replayed: bool = Field(False, description="values replayed from earlier weeks")
    fallback: list[str] = Field(
        default_factory=list, description="sources that failed before this one, with reasons"
    )
    outliers: OutlierAction = Field(
        OutlierAction.KEEP,
        description="what the server did with implausible points: keep (not screened), flag "
        "(listed in suspect, values as given) or interpolate (listed in suspect, values replaced "
        "from their neighbours)",
    )
    suspect: list[SuspectPoint] = Field(
        default_factory=list,
        description="the answer's points the outlier rule found implausible, with the values "
        "the source gave",
    )


class EmissionsDataPoint(BaseModel):
    """A Carbon Aware SDK forecast point: ``duration`` in minutes, ``value`` in ``unit``."""

    location: str
    timestamp: datetime
    duration: int
    value: float


class EmissionsForecast(Provenance):
    """The Carbon Aware SDK ``EmissionsForecast`` (``windowSize`` in minutes)."""

    generatedAt: datetime
    requestedAt: datetime
    location: str
    dataStartAt: datetime
    dataEndAt: datetime
    windowSize: int
    optimalDataPoints: list[EmissionsDataPoint]
    forecastData: list[EmissionsDataPoint]


class EmissionsData(Provenance):
    """The Carbon Aware SDK ``EmissionsData``: ``duration`` is a TimeSpan ``hh:mm:ss``."""

    location: str
    time: datetime
    rating: float
    duration: str


#: a zone name: letters, digits, '-' and '_' (never a path; see ``ZONE_PATTERN``)
Zone = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^" + ZONE_PATTERN.pattern + "$")]


def _iso_time(value: object) -> object:
    """An ISO 8601 text (or null): numbers, and texts of digits, are not times here."""
    if value is None or isinstance(value, datetime):
        return value
    if (
        not isinstance(value, str)
        or not value.strip()
        or value.strip().lstrip("-").replace(".", "", 1).isdigit()
    ):
        raise ValueError("must be an ISO 8601 time text like 2026-11-22T14:00Z")
    return value


class AdviseRequest(BaseModel):
    """When and where should a job of this length and size run?"""

    model_config = ConfigDict(extra="forbid")

    duration: str = Field(
        description="run time, a number and a unit s, m, h or d", examples=["3h"], max_length=32
    )
    zones: list[Zone] = Field(min_length=1, max_length=50, examples=[["DE", "GB", "CA-ON"]])
    within: str | None = Field(
        None, description="finish within this long from earliest (default 24h)", examples=["24h"]
    )
    deadline: Annotated[datetime | None, BeforeValidator(_iso_time)] = Field(
        None, description="finish by this time (instead of within)"
    )
    earliest: Annotated[datetime | None, BeforeValidator(_iso_time)] = Field(
        None, description="start no earlier (default now)"
    )
    demand: dict[str, Annotated[float, Field(ge=0, le=1e9, strict=True)]] = Field(
        default_factory=dict, examples=[{"cpu": 4}], max_length=32
    )
    watts_per_unit: dict[str, Annotated[float, Field(ge=0, le=1e9, strict=True)]] = Field(
        default_factory=dict, description="W per unit of each demanded resource", max_length=32
    )
    power_w: float | None = Field(
        None,
        ge=0,
        le=1e12,
        strict=True,
        description="total power in W (default: demand x watts_per_unit, else 1000)",
    )
    kind: CiKind | None = Field(None, description="signal kind (default: the server's)")
    slot_minutes: Annotated[int, BeforeValidator(whole_number)] = Field(
        60, ge=5, le=1440, description="start times are slot starts"
    )


class RunOption(BaseModel):
    """A run of the job: where, when, mean intensity and emissions."""

    zone: str
    start: datetime
    end: datetime
    ci_g_per_kwh: float
    emissions_g: float
    source: str
    stale_since: datetime | None = None
    replayed: bool = False


class AdviseResponse(BaseModel):
    """The advised run, running now for comparison, and the best run in each zone."""

    best: RunOption
    now: RunOption
    saving_g: float
    saving_pct: float | None
    energy_kwh: float
    power_w: float
    kind: CiKind
    unit: str
    per_zone: list[RunOption]
    provenance: dict[str, Provenance]
