"""The hub controller's configuration: planning, defaults and the names it answers to."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from carbonshift.k8s.config import (
    ClusterSection,
    ControllerConfig,
    DefaultsSection,
    OptInSection,
    PlanningSection,
)

__all__ = ["HubConfig"]


class HubConfig(BaseModel):
    """Root of the hub's configuration; every field has a usable default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    planning: PlanningSection = Field(
        default_factory=lambda: PlanningSection(policy="caspian", forecast="seasonal-day")
    )
    defaults: DefaultsSection = Field(default_factory=lambda: DefaultsSection())
    resources: tuple[str, ...] = Field(
        ("cpu",), description="resources planned on: cpu (cores), memory (GiB), nvidia.com/gpu"
    )
    namespace: str = Field(
        "carbonshift-system", description="hub namespace of the spokes' kubeconfig Secrets"
    )
    admission_check_controller: str = Field(
        "carbonshift.io/carbon-aware",
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

    def controller_config(self, zone: str = "DE") -> ControllerConfig:
        """The one-cluster configuration that the shared parsers and forecasts read."""
        return ControllerConfig(
            cluster=ClusterSection(zone=zone, resources=self.resources),
            planning=self.planning,
            defaults=self.defaults,
            opt_in=OptInSection(),
        )
