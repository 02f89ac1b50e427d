"""Planning instance JSON (docs/formats.md (planning instance), ``version: 1``).

pydantic models check the wire shape at the edge; :func:`instance_from_dict` turns them into
the frozen :class:`~carbonshift.domain.Instance`, whose own checks cover the cross-field
rules. Unknown fields are ignored with a warning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
)

from carbonshift.domain import (
    MAX_CARBON_G_PER_KWH,
    Cluster,
    ClusterName,
    Instance,
    Job,
    JobId,
    TimeGrid,
)
from carbonshift.errors import InputError
from carbonshift.formats._common import (
    amount_in,
    check_depth,
    describe_validation_error,
    dumps_strict,
    read_json,
    strict_bool,
    strict_number,
    warn_unknown_fields,
    whole_in,
    whole_number,
)

__all__ = ["instance_from_dict", "instance_to_dict", "read_instance", "write_instance"]


def _version(value: Any) -> Any:
    if value != 1 or isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be 1 (this reader speaks format version 1 (docs/formats.md))")
    return 1


#: limits of every number in an instance (docs/reliability.md); inside them no score overflows
MAX_AMOUNT_UNITS = 1e12
MAX_WATTS_PER_UNIT = 1e6
MAX_PUE = 100.0
MAX_EMBODIED_G_PER_UNIT_HOUR = 1e6
MAX_SLOT_MINUTES = 7 * 24 * 60
MAX_HORIZON_SLOTS = 1_000_000
MAX_SLOT_INDEX = 1_000_000_000

_NUMBER = BeforeValidator(strict_number)
_WHOLE = BeforeValidator(whole_number)
Units = Annotated[float, _NUMBER, AfterValidator(amount_in("units", MAX_AMOUNT_UNITS))]
Watts = Annotated[float, _NUMBER, AfterValidator(amount_in("W per unit", MAX_WATTS_PER_UNIT))]
Pue = Annotated[float, _NUMBER, AfterValidator(amount_in("(PUE)", MAX_PUE))]
Embodied = Annotated[
    float, _NUMBER, AfterValidator(amount_in("g per unit hour", MAX_EMBODIED_G_PER_UNIT_HOUR))
]
Intensity = Annotated[float, _NUMBER, AfterValidator(amount_in("g/kWh", MAX_CARBON_G_PER_KWH))]
Minutes = Annotated[int, _WHOLE, AfterValidator(whole_in(1, MAX_SLOT_MINUTES, "minutes"))]
Slots = Annotated[int, _WHOLE, AfterValidator(whole_in(1, MAX_HORIZON_SLOTS, "slots"))]
Release = Annotated[int, _WHOLE, AfterValidator(whole_in(0, MAX_SLOT_INDEX, "(a slot index)"))]
Deadline = Annotated[
    int, _WHOLE, AfterValidator(whole_in(-MAX_SLOT_INDEX, MAX_SLOT_INDEX, "(a slot index)"))
]
StrictBool = Annotated[bool, BeforeValidator(strict_bool)]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="allow", strict=False)


class ClusterWire(_Wire):
    name: str = Field(min_length=1, max_length=256)
    zone: str | None = Field(None, max_length=256)
    capacity: dict[str, Units | list[Units]]
    watts_per_unit: dict[str, Watts]
    pue: Pue = 1.0
    embodied_g_per_unit_hour: dict[str, Embodied] = Field(default_factory=dict)


class JobWire(_Wire):
    id: str = Field(min_length=1, max_length=256)
    demand: dict[str, Units]
    runtime_slots: Slots
    release_slot: Release = 0
    deadline_slot: Deadline | None = None
    allowed_clusters: list[str] | None = None
    critical: StrictBool = False


class InstanceWire(_Wire):
    version: Annotated[Literal[1], BeforeValidator(_version)]
    slot_minutes: Minutes
    horizon_slots: Slots
    resources: list[str]
    clusters: list[ClusterWire]
    carbon_g_per_kwh: dict[str, list[Intensity]]
    jobs: list[JobWire]
    future_demand: dict[str, list[Units]] | None = None


def instance_from_dict(data: Any, *, what: str = "instance") -> Instance:
    """Validate a decoded JSON object and build the domain instance."""
    check_depth(data, what)
    try:
        wire = InstanceWire.model_validate(data)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, what)) from exc
    warn_unknown_fields(wire, what)
    grid = TimeGrid(slot_minutes=wire.slot_minutes, horizon_slots=wire.horizon_slots)
    clusters = tuple(
        Cluster(
            name=ClusterName(c.name),
            zone=c.zone,
            capacity={k: tuple(v) if isinstance(v, list) else v for k, v in c.capacity.items()},
            watts_per_unit=dict(c.watts_per_unit),
            pue=c.pue,
            embodied_g_per_unit_hour=dict(c.embodied_g_per_unit_hour),
        )
        for c in wire.clusters
    )
    jobs = tuple(
        Job(
            id=JobId(j.id),
            demand=dict(j.demand),
            runtime_slots=j.runtime_slots,
            release_slot=j.release_slot,
            deadline_slot=wire.horizon_slots if j.deadline_slot is None else j.deadline_slot,
            allowed_clusters=(
                None
                if j.allowed_clusters is None
                else frozenset(ClusterName(c) for c in j.allowed_clusters)
            ),
            critical=j.critical,
        )
        for j in wire.jobs
    )
    return Instance(
        grid=grid,
        resources=tuple(wire.resources),
        clusters=clusters,
        carbon_g_per_kwh={ClusterName(k): tuple(v) for k, v in wire.carbon_g_per_kwh.items()},
        jobs=jobs,
        future_demand=(
            None
            if wire.future_demand is None
            else {k: tuple(v) for k, v in wire.future_demand.items()}
        ),
    )


def instance_to_dict(instance: Instance) -> dict[str, Any]:
    """The docs/formats.md JSON object of ``instance`` (every default written out)."""
    out: dict[str, Any] = {
        "version": 1,
        "slot_minutes": instance.grid.slot_minutes,
        "horizon_slots": instance.grid.horizon_slots,
        "resources": list(instance.resources),
        "clusters": [
            {
                "name": c.name,
                **({"zone": c.zone} if c.zone is not None else {}),
                "capacity": {
                    k: list(v) if isinstance(v, tuple) else v for k, v in c.capacity.items()
                },
                "watts_per_unit": dict(c.watts_per_unit),
                "pue": c.pue,
                "embodied_g_per_unit_hour": dict(c.embodied_g_per_unit_hour),
            }
            for c in instance.clusters
        ],
        "carbon_g_per_kwh": {k: list(v) for k, v in instance.carbon_g_per_kwh.items()},
        "jobs": [
            {
                "id": j.id,
                "demand": dict(j.demand),
                "runtime_slots": j.runtime_slots,
                "release_slot": j.release_slot,
                "deadline_slot": j.deadline_slot,
                **(
                    {"allowed_clusters": sorted(j.allowed_clusters)}
                    if j.allowed_clusters is not None
                    else {}
                ),
                "critical": j.critical,
            }
            for j in instance.jobs
        ],
    }
    if instance.future_demand is not None:
        out["future_demand"] = {k: list(v) for k, v in instance.future_demand.items()}
    return out


def read_instance(path: Path) -> Instance:
    """Read an instance JSON file; errors name the file, the field, the value and the fix."""
    return instance_from_dict(read_json(path, "instance"), what=f"instance {str(path)!r}")


def write_instance(instance: Instance, path: Path) -> None:
    """Write ``instance`` as docs/formats.md JSON (full float precision)."""
    path.write_text(dumps_strict(instance_to_dict(instance), indent=1) + "\n", encoding="utf-8")
