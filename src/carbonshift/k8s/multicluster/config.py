"""The hub controller's configuration: planning, defaults, the names it answers to, and the
process around it (the ``/metrics`` server and leader election among hub replicas)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from carbonshift.errors import InputError
from carbonshift.files import read_input_text
from carbonshift.k8s.config import (
    ClientConnectionSection,
    ClusterSection,
    ControllerConfig,
    DefaultsSection,
    EventsSection,
    LeaderSection,
    OptInSection,
    PlanningSection,
    ServerSection,
    closest_field,
)
from carbonshift.k8s.keys import CARBON_AWARE_LABEL

__all__ = ["HubConfig", "HubLeaderSection", "load_hub_config"]


class HubLeaderSection(LeaderSection):
    """Leader election among hub replicas: only the holder of the Lease reconciles."""

    lease_name: str = Field("carbonshift-hub", description="name of the coordination.k8s.io Lease")
    identity: str = Field(
        "", description="this replica's holder identity (empty: host name and process id)"
    )

    @model_validator(mode="after")
    def _renew_within_lease(self) -> HubLeaderSection:
        if self.renew_every_s >= self.lease_duration_s:
            raise ValueError(
                f"renew_every_s {self.renew_every_s} s must be shorter than lease_duration_s "
                f"{self.lease_duration_s} s, or the leader loses the lease between renewals; "
                "e.g. lease_duration_s: 15, renew_every_s: 5"
            )
        return self


class HubConfig(BaseModel):
    """Root of the hub's configuration; every field has a usable default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    planning: PlanningSection = Field(
        default_factory=lambda: PlanningSection(policy="carbonshift", forecast="seasonal-day")
    )
    defaults: DefaultsSection = Field(default_factory=lambda: DefaultsSection())
    resources: tuple[str, ...] = Field(
        ("cpu",), description="resources planned on: cpu (cores), memory (GiB), nvidia.com/gpu"
    )
    namespace: str = Field(
        "carbonshift-system", description="hub namespace of the spokes' kubeconfig Secrets"
    )
    admission_check_controller: str = Field(
        CARBON_AWARE_LABEL,
        description="spec.controllerName of the Kueue AdmissionCheck this hub answers",
    )
    max_requeue_s: int = Field(
        3600, ge=1, description="longest requeueAfterSeconds written on a held Kueue workload, s"
    )
    field_manager: str = Field(
        "kueue-admission",
        description="field manager of the nominatedClusterNames apply (Kueue requires this one)",
    )
    spoke_timeout_failures: int = Field(
        1, ge=1, description="failed contacts in a row before a spoke is marked Unreachable"
    )
    metrics: ServerSection = Field(
        default_factory=lambda: ServerSection(port=9090),
        description="Prometheus /metrics (plain HTTP; host 0.0.0.0 in a pod), served by "
        "`carbonshift hub` without --once",
    )
    leader_election: HubLeaderSection = Field(
        default_factory=lambda: HubLeaderSection(),
        description="Lease election among hub replicas (without --once); only the leader "
        "reconciles",
    )
    client_connection: ClientConnectionSection = Field(
        default_factory=lambda: ClientConnectionSection(),
        description="client-side rate limit of the hub's API requests, as the controller's "
        "(qps requests/s on average, bursts of burst; watches are not limited): one bucket "
        "for the hub cluster's client and one of the same size for each spoke's",
    )
    events: EventsSection = Field(
        default_factory=lambda: EventsSection(),
        description="the budget of the hub's Events, as the controller's (qps Events/s on "
        "average, bursts of burst; 0: every Event): an Event past it is dropped and counted "
        "in carbonshift_hub_events_dropped_total{reason}; the hub objects' annotations and the "
        "CarbonClusters' conditions say the same",
    )
    hold_writes_per_pass: int = Field(
        2000,
        ge=0,
        description=(
            "most plan writes (planned cluster and start on a held workload) of one pass, "
            "nearest planned start first; the rest stay held as they arrived and are written "
            "by the next pass, which the hub runs soon after (0: no limit). Releases are "
            "never deferred, and leave before any plan write. 2,000 (4,000 before "
            "2026-11-29): a first pass over 10,000 hub Jobs makes 6,089 requests, not 8,089, "
            "and labels every held Job within 4 passes (bench/hub.md)"
        ),
    )
    spoke_lost_timeout_s: int = Field(
        900,
        ge=0,
        description=(
            "seconds a spoke may stay unreachable before the hub Jobs placed there are planned"
            " again elsewhere (MultiKueue's workerLostTimeout; 0: never)"
        ),
    )

    def controller_config(self, zone: str = "DE") -> ControllerConfig:
        """The one-cluster configuration that the shared parsers and forecasts read."""
        return ControllerConfig(
            cluster=ClusterSection(zone=zone, resources=self.resources),
            planning=self.planning,
            defaults=self.defaults,
            opt_in=OptInSection(),
        )


def load_hub_config(path: Path) -> HubConfig:
    """A hub configuration from a YAML (``.yaml``/``.yml``) or TOML file; InputError if bad."""
    text = read_input_text(path, "hub configuration")
    try:
        if path.suffix == ".toml":
            raw: Any = tomllib.loads(text)
        else:
            import yaml  # type: ignore[import-untyped]  # kubernetes-asyncio depends on PyYAML

            raw = yaml.safe_load(text) or {}
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        raise InputError(f"hub configuration {path} does not parse: {exc}") from exc
    if not isinstance(raw, dict):
        raise InputError(f"hub configuration {path} is not a mapping of sections")
    try:
        config = HubConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        where = ".".join(str(p) for p in loc) or "(root)"
        if first["type"] == "extra_forbidden":
            raise InputError(
                f"hub configuration {path}: unknown key {where!r}{_did_you_mean(loc)}; "
                "see docs/multicluster.md for the fields"
            ) from None
        raise InputError(
            f"hub configuration {path}: {where}: {first['msg']} (got {first.get('input')!r}); "
            "see docs/multicluster.md for the fields"
        ) from None
    try:  # per spoke: a pass over more spokes than fit plans nothing (docs/multicluster.md)
        config.planning.check_horizon(len(config.resources), "resources")
    except InputError as exc:
        raise InputError(f"hub configuration {path}: {exc}") from None
    return config


def _did_you_mean(loc: tuple[int | str, ...]) -> str:
    """`` (did you mean 'x'?)`` for an unknown key of HubConfig or one of its sections."""
    close = closest_field(HubConfig, loc)
    return f" (did you mean {close!r}?)" if close else ""
