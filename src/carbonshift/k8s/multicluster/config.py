"""The hub controller's configuration: planning, defaults and the names it answers to."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from carbonshift.errors import InputError
from carbonshift.k8s.config import (
    ClusterSection,
    ControllerConfig,
    DefaultsSection,
    OptInSection,
    PlanningSection,
)

__all__ = ["HubConfig", "load_hub_config"]


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
    spoke_lost_timeout_s: int = Field(
        900,
        ge=0,
        description=(
            "seconds a spoke may stay unreachable before the Jobs and AppWrappers placed there"
            " are planned again elsewhere (MultiKueue's workerLostTimeout; 0: never)"
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
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(f"cannot read hub configuration {path}: {exc.strerror}") from exc
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
        return HubConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(
            f"hub configuration {path}: {where}: {first['msg']} (got {first.get('input')!r}); "
            "see docs/multicluster.md for the fields"
        ) from None
