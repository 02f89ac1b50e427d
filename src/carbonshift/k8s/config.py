"""The controller's configuration file: one root object of grouped sections (docs/controller.md).

Every field names its unit and documents its default. A file is YAML (``.yaml``/``.yml``)
or TOML (``.toml``); unknown keys are refused with a "did you mean" hint, and every bad value
raises :class:`~carbonshift.errors.InputError` naming the field, the value and the fix.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from carbonshift.carbon.forecast import forecaster_names
from carbonshift.errors import InputError
from carbonshift.files import read_input_text
from carbonshift.k8s.keys import GRID_ZONE_LABEL, WATTS_PER_CORE_LABEL
from carbonshift.planning.hold import HoldRule
from carbonshift.planning.limits import (
    CONTROLLER_MAX_HORIZON_CELLS,
    CONTROLLER_MAX_PLAN_CELLS,
    PlanLimits,
    PlanSize,
)
from carbonshift.planning.registry import parse_params

__all__ = [
    "ClientConnectionSection",
    "ClusterSection",
    "ControllerConfig",
    "DefaultsSection",
    "EventsSection",
    "ExtenderSection",
    "LeaderSection",
    "OptInSection",
    "PlanningSection",
    "ServerSection",
    "closest_field",
    "load_config",
    "parse_config",
]

#: Kubernetes resource names the planner can count, and the unit of one planning unit.
RESOURCE_UNITS: dict[str, str] = {
    "cpu": "core",
    "memory": "GiB",
    "nvidia.com/gpu": "device",
}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClusterSection(_Section):
    """The one cluster: where its power comes from and what it costs in carbon."""

    name: str = Field("local", description="cluster name in plans and metrics")
    zone: str = Field("DE", description="grid zone of the embedded carbon data (e.g. DE, GB)")
    resources: tuple[str, ...] = Field(
        ("cpu",), description="resources planned on: cpu (cores), memory (GiB), nvidia.com/gpu"
    )
    watts_per_unit: dict[str, float] = Field(
        default_factory=lambda: {"cpu": 10.0},
        description="power per unit in use, W (cpu: per core; memory: per GiB; gpu: per device)",
    )
    pue: float = Field(1.0, ge=1.0, description="power usage effectiveness (ratio >= 1)")
    embodied_g_per_unit_hour: dict[str, float] = Field(
        default_factory=dict, description="embodied carbon per unit-hour, g"
    )
    allow_replay: bool = Field(
        True, description="answer times past the embedded data (2021-2023) by seasonal replay"
    )

    @field_validator("resources")
    @classmethod
    def _known_resources(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("name at least one resource, like [cpu]")
        for resource in value:
            if resource not in RESOURCE_UNITS:
                raise ValueError(
                    f"resource {resource!r} is not one the controller counts; use "
                    f"{', '.join(RESOURCE_UNITS)}"
                )
        return value

    @field_validator("watts_per_unit", "embodied_g_per_unit_hour")
    @classmethod
    def _non_negative(cls, value: dict[str, float]) -> dict[str, float]:
        for resource, amount in value.items():
            if not amount >= 0:
                raise ValueError(f"{resource}: {amount} must be a number >= 0")
        return value


class PlanningSection(_Section):
    """Which policy plans, with what forecast, how often and how far ahead."""

    policy: str = Field(
        "carbonshift", description="planning policy (carbonshift plan --list-policies)"
    )
    params: dict[str, Any] = Field(default_factory=dict, description="policy parameters")
    forecast: str = Field(
        "seasonal-day", description="forecaster name (docs/formats.md (scenario))"
    )
    forecast_params: dict[str, Any] = Field(
        default_factory=dict, description="forecaster parameters"
    )
    carbon_source: Literal["embedded", "providers"] = Field(
        "embedded",
        description="embedded: the shipped data through the forecaster; providers: the live "
        "provider chain of docs/providers.md (CARBONSHIFT_* variables), ending in the embedded "
        "data",
    )
    slot_minutes: int = Field(60, ge=1, le=1440, description="slot length and period, minutes")
    horizon_slots: int = Field(
        24, ge=1, le=24 * 14, description="minimum look-ahead, slots (extended to fit the longest)"
    )
    max_horizon_hours: float = Field(
        168.0,
        gt=0,
        le=24 * 366,
        description="longest look-ahead, h: a workload whose expected runtime is longer is not "
        "held (planning it would cost time and memory without bound)",
    )
    plan_on_arrival: bool = Field(
        True,
        description="a new held workload triggers a planning pass at once (false: it waits "
        "for the next slot boundary, exactly as the simulator)",
    )
    min_saving_g: float = Field(
        1.0,
        ge=0,
        le=1e12,
        description="hold a workload only when its planned saving against starting now is at "
        "least this many grams (and min_saving_pct); otherwise it starts now, g (0: off)",
    )
    min_saving_pct: float = Field(
        1.0,
        ge=0,
        le=100,
        description="... and at least this share of its grams if started now, % (0: off)",
    )
    replan_min_improvement_g: float = Field(
        1.0,
        ge=0,
        le=1e12,
        description="a re-plan moves an already planned start only when the new start saves "
        "at least this many grams more (and replan_min_improvement_pct), g (0: off)",
    )
    replan_min_improvement_pct: float = Field(
        1.0, ge=0, le=100, description="... and at least this share more, % (0: off)"
    )
    max_releases_per_slot: int = Field(
        0,
        ge=0,
        le=1_000_000,
        description="release at most this many planned workloads per slot, the most "
        "deadline-urgent first; one that waiting would make late is released anyway (0: no "
        "limit)",
    )

    max_plan_cells: int | None = Field(
        CONTROLLER_MAX_PLAN_CELLS,
        description="most weighted cells of one planning call (pending workloads, or their "
        "classes under carbonshift, x clusters x slots x the policy's cost weight; "
        "docs/reliability.md, limits of a solve): past it a pass plans the most urgent "
        "workloads that fit and leaves the rest to a later pass, released at their latest "
        "start at the latest; cells (0 or null: no limit)",
    )
    max_horizon_cells: int | None = Field(
        CONTROLLER_MAX_HORIZON_CELLS,
        description="most cluster x slot x resource cells of one planning call: a "
        "configuration whose longest look-ahead passes it is refused; a hub pass with more "
        "spokes than fit plans nothing and holds every workload until its latest start; "
        "cells (0 or null: no limit)",
    )

    @field_validator("max_plan_cells", "max_horizon_cells")
    @classmethod
    def _cells(cls, value: int | None) -> int | None:
        if value is not None and not 0 <= value <= 10**15:
            raise ValueError(
                f"{value!r} cells is not a limit between 0 and 10^15; use e.g. "
                f"{CONTROLLER_MAX_PLAN_CELLS} (max_plan_cells' default), "
                f"{CONTROLLER_MAX_HORIZON_CELLS} "
                "(max_horizon_cells') or 0 for no limit"
            )
        return value

    def plan_limits(self) -> PlanLimits:
        """``max_plan_cells`` and ``max_horizon_cells`` as the seam's limits (0: none)."""
        return PlanLimits(self.max_plan_cells or None, self.max_horizon_cells or None)

    def longest_horizon_slots(self) -> int:
        """The most slots one planning call may look ahead (:func:`horizon_slots` of
        k8s/planner.py at its cap, or ``horizon_slots`` when that is longer)."""
        return max(self.horizon_slots, math.ceil(self.max_horizon_hours * 60 / self.slot_minutes))

    def check_horizon(self, resources: int, what: str) -> None:
        """Refuse (:class:`~carbonshift.errors.InputError`) a look-ahead whose horizon cells
        on one cluster pass ``max_horizon_cells``; ``what`` names where the resources are
        configured."""
        size = PlanSize(0, 0, 1, self.longest_horizon_slots(), resources)
        if self.plan_limits().horizon_fits(size):
            return
        raise InputError(
            f"planning looks ahead up to {size.slots:,} slots (max_horizon_hours "
            f"{self.max_horizon_hours:g} h at slot_minutes {self.slot_minutes}) x {resources} "
            f"resources ({what}) = {size.horizon_cells:,} cluster x slot x resource cells per "
            f"cluster, more than planning.max_horizon_cells {self.max_horizon_cells:,}; lower "
            "max_horizon_hours, raise slot_minutes, or raise max_horizon_cells (0: no limit)"
        )

    def hold_rule(self) -> HoldRule:
        """The seam's hold rule (docs/controller.md, "Holding only when it pays")."""
        return HoldRule(
            min_saving_g=self.min_saving_g,
            min_saving_pct=self.min_saving_pct,
            replan_min_improvement_g=self.replan_min_improvement_g,
            replan_min_improvement_pct=self.replan_min_improvement_pct,
            max_releases_per_slot=self.max_releases_per_slot,
        )

    @field_validator("forecast")
    @classmethod
    def _known_forecaster(cls, value: str) -> str:
        names = forecaster_names()
        if value not in names:
            close = difflib.get_close_matches(value, names, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"unknown forecaster {value!r}; {hint}choose one of {names}")
        return value


class DefaultsSection(_Section):
    """What an opted-in workload gets when it does not say."""

    deadline_hours: float = Field(
        24.0, gt=0, le=24 * 366, description="deadline from creation when none is annotated, h"
    )
    expected_runtime_minutes: float = Field(
        60.0, gt=0, le=60 * 24 * 366, description="expected runtime when none is annotated, min"
    )


class OptInSection(_Section):
    """Which workloads the controller manages."""

    namespaces: tuple[str, ...] = Field(
        (), description="namespaces whose every Pod and Job is managed (besides the label)"
    )
    not_critical_priority_class: str = Field(
        "not-critical",
        description="priority class that opts a Pod in as shiftable (CO2 scheduler convention)",
    )
    manage_jobs: bool = Field(True, description="hold batch/v1 Jobs by spec.suspend")
    manage_pods: bool = Field(True, description="hold Pods by the scheduling gate")


class ServerSection(_Section):
    """An HTTPS server (webhook or extender) or the plain metrics server."""

    enabled: bool = Field(True, description="serve it")
    host: str = Field("127.0.0.1", description="bind address (0.0.0.0 in a pod)")
    port: int = Field(8443, ge=0, le=65535, description="TCP port (0: any free port)")
    cert_file: str | None = Field(
        None, description="PEM certificate; required by the webhook and the extender (https)"
    )
    key_file: str | None = Field(None, description="PEM private key of cert_file")


class ExtenderSection(ServerSection):
    """The kube-scheduler extender: ranks nodes by watts per unit and zone carbon."""

    port: int = Field(8444, ge=0, le=65535, description="TCP port (0: any free port)")
    node_watts_label: str = Field(
        WATTS_PER_CORE_LABEL,
        description="node label or annotation with its power per core, W (absent: cluster value)",
    )
    node_zone_label: str = Field(
        GRID_ZONE_LABEL,
        description="node label naming its grid zone (absent: the cluster's zone)",
    )
    max_g_per_kwh: float | None = Field(
        None,
        ge=0,
        description="filter: shiftable pods avoid nodes whose zone is dirtier now, g/kWh "
        "(None: filter nothing)",
    )
    carbon_wait_s: float = Field(
        1.0,
        description="longest a request waits for a zone's intensity now, s, from the lookup's "
        "start (kept well under kube-scheduler's httpTimeout); a slower zone is answered as "
        "one with no data while its lookup goes on in the background (0: never wait)",
    )

    @field_validator("carbon_wait_s")
    @classmethod
    def _wait(cls, value: float) -> float:
        if not 0 <= value <= 30:
            raise ValueError(
                f"{value} s is not between 0 and 30 s; keep it well under kube-scheduler's "
                "extender httpTimeout (5s as shipped), e.g. 1"
            )
        return value


class LeaderSection(_Section):
    """Leader election with a coordination.k8s.io/v1 Lease."""

    enabled: bool = Field(True, description="elect a leader; only the leader writes")
    namespace: str = Field("carbonshift-system", description="namespace of the Lease")
    lease_name: str = Field("carbonshift-controller", description="name of the Lease")
    lease_duration_s: float = Field(15.0, gt=0, description="how long a lease holds, s")
    renew_every_s: float = Field(5.0, gt=0, description="how often the leader renews, s")


def _bucket_rate(value: float, said: str, examples: str) -> float:
    """A token bucket's rate, ``said`` with its unit, between 0 and 100,000 per second."""
    if not 0 <= value <= 100_000:
        raise ValueError(f"{said} is not a rate between 0 and 100000; use e.g. {examples}")
    return value


def _bucket_burst(value: int, said: str, examples: str) -> int:
    """A token bucket's burst, ``said`` with its unit, between 1 and 1,000,000."""
    if not 1 <= value <= 1_000_000:
        raise ValueError(
            f"{said} is not a burst between 1 and 1000000; use e.g. {examples}, at least 1"
        )
    return value


class ClientConnectionSection(_Section):
    """The client-side rate limit of the controller's API requests (a token bucket, as
    client-go's ``--kube-api-qps`` / ``--kube-api-burst``; watches are not limited).

    The defaults are kube-scheduler's and Kueue's (50 / 100): a release period can be
    thousands of writes at a slot boundary, and client-go's own default (5 / 10) would take
    2,000 s to release 5,000 workloads (docs/controller.md, "API request budget").
    """

    qps: float = Field(
        50.0,
        description="average API requests per second (0: no client-side limit), requests/s",
    )
    burst: int = Field(
        100, description="requests that may go at once after a quiet spell, requests (>= 1)"
    )

    @field_validator("qps")
    @classmethod
    def _rate(cls, value: float) -> float:
        return _bucket_rate(
            value,
            f"{value!r} requests/s",
            "50 (kube-scheduler's default), 5 (client-go's) or 0 for no client-side limit",
        )

    @field_validator("burst")
    @classmethod
    def _burst(cls, value: int) -> int:
        return _bucket_burst(
            value, f"{value!r} requests", "100 (kube-scheduler's default) or 10 (client-go's)"
        )


class EventsSection(_Section):
    """The budget of the controller's Events: a token bucket of its own, in front of the
    client's (``client_connection``); an Event that finds it empty is dropped, not delayed,
    and counted in ``carbonshift_events_dropped_total{reason}``.

    Events say what the annotations on the object already say (``carbonshift.io/state``,
    ``planned-start``, ``reason``), which are always written: 10,000 workloads arriving at
    once would otherwise cost 10,000 ``Held`` Events on top of their 10,000 annotation writes
    (bench/controller.md). The defaults let a few thousand through in a mass release of a
    minute, and every Event through in quiet periods.
    """

    qps: float = Field(
        50.0,
        description="Events posted per second on average (0: no budget: every Event is posted), "
        "Events/s",
    )
    burst: int = Field(
        100, description="Events that may go at once after a quiet spell, Events (>= 1)"
    )

    @field_validator("qps")
    @classmethod
    def _rate(cls, value: float) -> float:
        return _bucket_rate(
            value, f"{value:g} Events/s", "50 (the default), or 0 to post every Event"
        )

    @field_validator("burst")
    @classmethod
    def _burst(cls, value: int) -> int:
        return _bucket_burst(value, f"{value!r} Events", "100 (the default)")


class ControllerConfig(_Section):
    """Root of the controller's configuration (docs/controller.md lists every field)."""

    cluster: ClusterSection = Field(default_factory=lambda: ClusterSection())
    planning: PlanningSection = Field(default_factory=lambda: PlanningSection())
    defaults: DefaultsSection = Field(default_factory=lambda: DefaultsSection())
    opt_in: OptInSection = Field(default_factory=lambda: OptInSection())
    webhook: ServerSection = Field(default_factory=lambda: ServerSection())
    extender: ExtenderSection = Field(default_factory=lambda: ExtenderSection())
    metrics: ServerSection = Field(
        default_factory=lambda: ServerSection(port=9090),
        description="Prometheus /metrics (plain HTTP)",
    )
    leader_election: LeaderSection = Field(default_factory=lambda: LeaderSection())
    client_connection: ClientConnectionSection = Field(
        default_factory=lambda: ClientConnectionSection(),
        description="client-side rate limit of API requests",
    )
    events: EventsSection = Field(
        default_factory=lambda: EventsSection(),
        description="budget of the controller's Events (dropped past it; annotations stay)",
    )
    dry_run: bool = Field(False, description="plan and report in logs and metrics; write nothing")
    pin_nodes: bool = Field(
        False, description="on release, require the nodes that have room now (node affinity)"
    )
    identity: str = Field("", description="leader identity (empty: host name and process id)")

    def slot_seconds(self) -> float:
        """Slot length and planning period in seconds."""
        return self.planning.slot_minutes * 60.0

    def release_budget_per_slot(self, requests_per_release: int = 2) -> int:
        """How many releases the request rate limit lets through in one slot (0: no limit):
        ``qps`` x the slot's seconds / ``requests_per_release`` (the release patch and its
        Event), at least 1."""
        qps = self.client_connection.qps
        if qps <= 0:
            return 0
        return max(1, int(qps * self.slot_seconds() / requests_per_release))


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(root)"


def closest_field(root: type[BaseModel], loc: tuple[int | str, ...]) -> str | None:
    """The field name of ``root`` (or of the section ``loc`` leads to) closest to the unknown
    key ``loc[-1]``; None when none is close."""
    model = root
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1)
    return close[0] if close else None


def _did_you_mean(loc: tuple[int | str, ...]) -> str:
    close = closest_field(ControllerConfig, loc)
    return f"; did you mean {close!r}?" if close else ""


def parse_config(raw: Mapping[str, Any], *, source: str = "configuration") -> ControllerConfig:
    """Validate a mapping into a :class:`ControllerConfig` (policy and its parameters too)."""
    try:
        config = ControllerConfig.model_validate(dict(raw))
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        if first["type"] == "extra_forbidden":
            raise InputError(
                f"{source}: unknown key {_where(loc)!r}{_did_you_mean(loc)} "
                "(docs/controller.md lists the keys)"
            ) from None
        raise InputError(
            f"{source}: {_where(loc)} = {first.get('input')!r} is invalid: {first['msg']}"
        ) from None
    try:
        parse_params(config.planning.policy, config.planning.params)
    except InputError as exc:
        raise InputError(f"{source}: planning: {exc}") from None
    for section in ("watts_per_unit", "embodied_g_per_unit_hour"):
        extra = set(getattr(config.cluster, section)) - set(config.cluster.resources)
        if extra:
            raise InputError(
                f"{source}: cluster.{section} names {sorted(extra)}, not in cluster.resources "
                f"{list(config.cluster.resources)}; add them there or remove them"
            )
    try:
        config.planning.check_horizon(len(config.cluster.resources), "cluster.resources")
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None
    return config


def load_config(path: Path) -> ControllerConfig:
    """Read a YAML or TOML configuration file."""
    if path.suffix not in (".toml", ".yaml", ".yml"):
        raise InputError(
            f"configuration {str(path)!r} has suffix {path.suffix!r}; use .yaml, .yml or .toml"
        )
    text = read_input_text(path, "configuration")
    raw: Any
    if path.suffix == ".toml":
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"{path}: not valid TOML: {exc}") from None
    else:
        import yaml  # type: ignore[import-untyped]  # kubernetes-asyncio depends on PyYAML

        try:
            raw = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise InputError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise InputError(f"{path}: the top level must be a mapping of sections")
    return parse_config(raw, source=str(path))
