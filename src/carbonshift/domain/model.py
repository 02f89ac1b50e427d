"""The vocabulary of carbonshift: time grid, clusters, jobs, instances and plans.

All values are frozen dataclasses with units in their names. Slot indexes are integers on
the instance's time grid: a job started at slot ``s`` occupies ``s .. s + runtime_slots - 1``.
Construction validates every invariant of docs/formats.md (planning instance) and raises
:class:`~carbonshift.errors.InputError` naming the field, the value and the fix.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NewType

import numpy as np

from carbonshift.errors import InputError

__all__ = [
    "MAX_CARBON_G_PER_KWH",
    "Assignment",
    "Cluster",
    "ClusterName",
    "Instance",
    "Job",
    "JobId",
    "Plan",
    "TimeGrid",
]

#: the highest carbon intensity any input may give, g/kWh (real grids stay under 2,000):
#: the instance format's limit and the carbon CSV reader's, so that no score overflows
MAX_CARBON_G_PER_KWH = 1e5

JobId = NewType("JobId", str)
ClusterName = NewType("ClusterName", str)

#: A resource's capacity: one number for every slot, or one number per slot.
Capacity = float | tuple[float, ...]


def _non_negative(value: float, where: str, unit: str) -> None:
    kind = type(value)
    if kind is not float and kind is not int and not _is_real(value):
        raise InputError(
            f"{where} is {_shown(value)}, a {kind.__name__}; it must be a number >= 0 in {unit} "
            "(not a string or a boolean)"
        )
    if not 0 <= value < math.inf:  # also catches NaN
        raise InputError(f"{where} is {value!r} {unit}; it must be a finite number >= 0")


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _whole(value: int, where: str, unit: str, least: int | None) -> int:
    """``value`` as an int: an integer (``4.0`` reads as 4), never a boolean, a string, a
    fraction or a non-finite number; at least ``least`` when given."""
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InputError(
                f"{where} is {_shown(value)}, a {type(value).__name__}; it must be a whole number "
                f"of {unit} (not a string or a boolean)"
            )
        if not isinstance(value, numbers.Integral) and (
            not math.isfinite(value) or not float(value).is_integer()
        ):
            raise InputError(
                f"{where} is {value!r}; it must be a whole number of {unit}, not a fraction "
                "or Infinity/NaN (round it)"
            )
        value = int(value)
    if least is not None and value < least:
        raise InputError(f"{where} is {value}; it must be a whole number of {unit} >= {least}")
    return value


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True, slots=True)
class TimeGrid:
    """Slots of ``slot_minutes`` each; a plan looks ``horizon_slots`` slots ahead."""

    slot_minutes: int
    horizon_slots: int

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "slot_minutes", _whole(self.slot_minutes, "slot_minutes", "minutes", 1)
        )
        object.__setattr__(
            self, "horizon_slots", _whole(self.horizon_slots, "horizon_slots", "slots", 1)
        )

    @property
    def slot_hours(self) -> float:
        """Length of one slot in hours."""
        return self.slot_minutes / 60.0


@dataclass(frozen=True, slots=True)
class Cluster:
    """A place to run work: capacity per resource, power per unit, PUE and embodied carbon.

    ``capacity`` maps a resource to a constant or to one value per slot; a resource not
    listed has capacity 0. ``watts_per_unit`` and ``embodied_g_per_unit_hour`` count 0 for a
    resource they do not list.
    """

    name: ClusterName
    capacity: Mapping[str, Capacity]
    watts_per_unit: Mapping[str, float]
    pue: float = 1.0
    embodied_g_per_unit_hour: Mapping[str, float] = field(default_factory=dict)
    zone: str | None = None

    def __post_init__(self) -> None:
        where = f"cluster {self.name!r}"
        for resource, cap in self.capacity.items():
            values = cap if isinstance(cap, tuple) else (cap,)
            for value in values:
                _non_negative(value, f"{where} capacity[{resource!r}]", "units")
        for resource, watts in self.watts_per_unit.items():
            _non_negative(watts, f"{where} watts_per_unit[{resource!r}]", "W per unit")
        for resource, grams in self.embodied_g_per_unit_hour.items():
            _non_negative(
                grams, f"{where} embodied_g_per_unit_hour[{resource!r}]", "g per unit-hour"
            )
        _non_negative(self.pue, f"{where} pue", "(ratio)")

    def capacity_at(self, resource: str, slot: int) -> float:
        """Capacity of ``resource`` available in ``slot`` (0 if the cluster lacks it)."""
        cap = self.capacity.get(resource, 0.0)
        if isinstance(cap, tuple):
            return cap[slot]
        return cap


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """A unit of batch work: demand per resource, held for ``runtime_slots`` slots.

    ``deadline_slot`` is the slot by which the job should have finished (on time when
    ``start + runtime_slots <= deadline_slot``); it may lie in the past. ``allowed_clusters``
    of ``None`` means every cluster. A critical job should start as early as possible.
    """

    id: JobId
    demand: Mapping[str, float]
    runtime_slots: int
    deadline_slot: int
    release_slot: int = 0
    allowed_clusters: frozenset[ClusterName] | None = None
    critical: bool = False

    def __post_init__(self) -> None:
        where = f"job {self.id!r}"
        if type(self.runtime_slots) is not int or self.runtime_slots < 1:
            runtime = _whole(self.runtime_slots, f"runtime_slots of {where}", "slots", None)
            if runtime < 1:
                raise InputError(
                    f"runtime_slots is {runtime} for {where}; it must be a whole number of "
                    "slots >= 1"
                )
            object.__setattr__(self, "runtime_slots", runtime)
        if type(self.release_slot) is not int or self.release_slot < 0:
            release = _whole(self.release_slot, f"release_slot of {where}", "slots", None)
            if release < 0:
                raise InputError(
                    f"release_slot is {release} for {where}; it must be >= 0 (a job that "
                    "arrived earlier has release 0)"
                )
            object.__setattr__(self, "release_slot", release)
        if type(self.deadline_slot) is not int:  # any whole number: it may lie in the past
            object.__setattr__(
                self,
                "deadline_slot",
                _whole(self.deadline_slot, f"deadline_slot of {where}", "slots", None),
            )
        if type(self.critical) is not bool:
            if not isinstance(self.critical, np.bool_):  # "false" would read as true
                raise InputError(
                    f"critical of {where} is {_shown(self.critical)}; it must be true or false"
                )
            object.__setattr__(self, "critical", bool(self.critical))
        for resource, amount in self.demand.items():
            _non_negative(amount, f"{where} demand[{resource!r}]", "units")
        if not any(amount > 0 for amount in self.demand.values()):
            raise InputError(f"{where} has no demand > 0; give it at least one resource amount")

    def allows(self, cluster: ClusterName) -> bool:
        """Whether the job may run on ``cluster``."""
        return self.allowed_clusters is None or cluster in self.allowed_clusters


@dataclass(frozen=True, slots=True)
class Instance:
    """One static planning problem: jobs x clusters x slots, with the carbon the planner sees.

    ``carbon_g_per_kwh`` has ``horizon_slots`` values per cluster. ``future_demand`` (CJPS)
    has ``horizon_slots`` values per resource: the forecast demand arriving in each slot.
    """

    grid: TimeGrid
    resources: tuple[str, ...]
    clusters: tuple[Cluster, ...]
    carbon_g_per_kwh: Mapping[ClusterName, tuple[float, ...]]
    jobs: tuple[Job, ...]
    future_demand: Mapping[str, tuple[float, ...]] | None = None

    def __post_init__(self) -> None:
        horizon = self.grid.horizon_slots
        known = set(self.resources)
        if not self.resources:
            raise InputError("resources is empty; name at least one resource, like ['gpu']")
        if len(known) != len(self.resources):
            raise InputError(f"resources {list(self.resources)} has duplicates; name each once")
        names = [c.name for c in self.clusters]
        if not names:
            raise InputError("clusters is empty; give at least one cluster")
        if len(set(names)) != len(names):
            raise InputError(f"cluster names {names} have duplicates; give each a unique name")
        for cluster in self.clusters:
            _check_resources(cluster.capacity, known, f"cluster {cluster.name!r} capacity")
            _check_resources(cluster.watts_per_unit, known, f"cluster {cluster.name!r} watts")
            _check_resources(
                cluster.embodied_g_per_unit_hour, known, f"cluster {cluster.name!r} embodied"
            )
            for resource, cap in cluster.capacity.items():
                if isinstance(cap, tuple) and len(cap) != horizon:
                    raise InputError(
                        f"cluster {cluster.name!r} capacity[{resource!r}] has {len(cap)} values; "
                        f"give one number or exactly horizon_slots = {horizon} values"
                    )
            series = self.carbon_g_per_kwh.get(cluster.name)
            if series is None:
                raise InputError(
                    f"carbon_g_per_kwh has no series for cluster {cluster.name!r}; add "
                    f"{horizon} values in g/kWh"
                )
            if len(series) != horizon:
                raise InputError(
                    f"carbon_g_per_kwh[{cluster.name!r}] has {len(series)} values; it needs "
                    f"exactly horizon_slots = {horizon} values in g/kWh"
                )
            for slot, value in enumerate(series):
                _non_negative(value, f"carbon_g_per_kwh[{cluster.name!r}][{slot}]", "g/kWh")
        extra = set(self.carbon_g_per_kwh) - set(names)
        if extra:
            raise InputError(
                f"carbon_g_per_kwh names unknown clusters {sorted(extra)}; known: {names}"
            )
        seen: set[str] = set()
        name_set = set(names)
        for job in self.jobs:
            if job.id in seen:
                raise InputError(f"job id {job.id!r} appears twice; give each job a unique id")
            seen.add(job.id)
            _check_resources(job.demand, known, f"job {job.id!r} demand")
            if job.allowed_clusters is not None:
                unknown = set(job.allowed_clusters) - name_set
                if unknown:
                    raise InputError(
                        f"job {job.id!r} allowed_clusters names unknown clusters "
                        f"{sorted(unknown)}; known: {names}"
                    )
        if self.future_demand is not None:
            _check_resources(self.future_demand, known, "future_demand")
            for resource, values in self.future_demand.items():
                if len(values) != horizon:
                    raise InputError(
                        f"future_demand[{resource!r}] has {len(values)} values; it needs exactly "
                        f"horizon_slots = {horizon}"
                    )
                for slot, value in enumerate(values):
                    _non_negative(value, f"future_demand[{resource!r}][{slot}]", "units")

    def cluster(self, name: str) -> Cluster:
        """The cluster called ``name``."""
        for cluster in self.clusters:
            if cluster.name == name:
                return cluster
        raise InputError(f"unknown cluster {name!r}; known: {[c.name for c in self.clusters]}")

    def job(self, job_id: str) -> Job:
        """The job with id ``job_id``."""
        for job in self.jobs:
            if job.id == job_id:
                return job
        raise InputError(f"unknown job {job_id!r}")


def _check_resources(mapping: Mapping[str, object], known: set[str], where: str) -> None:
    unknown = set(mapping) - known
    if unknown:
        raise InputError(
            f"{where} names resources {sorted(unknown)} that are not in resources "
            f"{sorted(known)}; add them to resources or remove them"
        )


@dataclass(frozen=True, slots=True)
class Assignment:
    """Job ``job`` starts on ``cluster`` at ``start_slot``.

    ``start_slot`` is a whole slot index (a numpy integer or ``4.0`` reads as 4; NaN, a
    fraction, a string or a boolean is an :class:`InputError`); ``job`` and ``cluster`` are
    strings. Whether they name a known job and cluster, and whether the start respects the
    release and the horizon, is the instance's question (planning/output_check.py).
    """

    job: JobId
    cluster: ClusterName
    start_slot: int

    def __post_init__(self) -> None:
        if not isinstance(self.job, str) or not isinstance(self.cluster, str):
            raise InputError(
                f"assignment of job {_shown(self.job)} to cluster {_shown(self.cluster)}: job "
                "and cluster must be strings (a job id and a cluster name)"
            )
        if type(self.start_slot) is not int:
            where = f"start_slot of job {self.job!r}"
            object.__setattr__(self, "start_slot", _whole(self.start_slot, where, "slots", None))


@dataclass(frozen=True, slots=True)
class Plan:
    """A policy's answer: where and when each job starts, and which jobs it left out."""

    policy: str
    assignments: tuple[Assignment, ...]
    unscheduled: tuple[JobId, ...] = ()
    solve_seconds: float = 0.0

    @classmethod
    def of(
        cls,
        policy: str,
        assignments: Sequence[Assignment],
        unscheduled: Sequence[JobId] = (),
        solve_seconds: float = 0.0,
    ) -> Plan:
        """Build a plan from any sequences."""
        return cls(policy, tuple(assignments), tuple(unscheduled), solve_seconds)
