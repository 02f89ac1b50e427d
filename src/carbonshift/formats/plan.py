"""Plan JSON (CONTRACTS.md section 2, ``version: 1``), with optional ``scores``."""

from __future__ import annotations

from dataclasses import asdict
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

from carbonshift.domain import Assignment, ClusterName, JobId, Plan, Scores
from carbonshift.errors import InputError
from carbonshift.formats._common import (
    check_depth,
    describe_validation_error,
    dumps_strict,
    null_if_undefined,
    read_json,
    strict_number,
    warn_unknown_fields,
    whole_in,
    whole_number,
)

__all__ = ["plan_from_dict", "plan_to_dict", "read_plan", "write_plan"]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="allow")


class AssignmentWire(_Wire):
    job: str = Field(min_length=1)
    cluster: str = Field(min_length=1)
    start_slot: Annotated[
        int,
        BeforeValidator(whole_number),
        AfterValidator(whole_in(0, 1_000_000_000, "(a slot index)")),
    ]


class PlanWire(_Wire):
    version: Literal[1]
    policy: str
    assignments: list[AssignmentWire]
    unscheduled: list[str] = Field(default_factory=list)
    solve_seconds: Annotated[float, BeforeValidator(strict_number)] = 0.0


def plan_from_dict(data: Any, *, what: str = "plan") -> Plan:
    """Validate a decoded JSON object and build the domain plan (``scores`` are not read)."""
    check_depth(data, what)
    try:
        wire = PlanWire.model_validate(data)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, what)) from exc
    wire_extra = dict(wire.model_extra or {})
    wire_extra.pop("scores", None)
    wire.__pydantic_extra__ = wire_extra
    warn_unknown_fields(wire, what)
    return Plan(
        policy=wire.policy,
        assignments=tuple(
            Assignment(JobId(a.job), ClusterName(a.cluster), a.start_slot) for a in wire.assignments
        ),
        unscheduled=tuple(JobId(j) for j in wire.unscheduled),
        solve_seconds=wire.solve_seconds,
    )


def plan_to_dict(plan: Plan, scores: Scores | None = None) -> dict[str, Any]:
    """The CONTRACTS.md JSON object of ``plan``; ``scores`` added when given."""
    out: dict[str, Any] = {
        "version": 1,
        "policy": plan.policy,
        "assignments": [
            {"job": a.job, "cluster": a.cluster, "start_slot": a.start_slot}
            for a in plan.assignments
        ],
        "unscheduled": list(plan.unscheduled),
        "solve_seconds": plan.solve_seconds,
    }
    if scores is not None:
        out["scores"] = asdict(scores)
    result: dict[str, Any] = null_if_undefined(out)
    return result


def read_plan(path: Path) -> Plan:
    """Read a plan JSON file."""
    return plan_from_dict(read_json(path, "plan"), what=f"plan {str(path)!r}")


def write_plan(plan: Plan, path: Path, scores: Scores | None = None) -> None:
    """Write ``plan`` (and optional ``scores``) as CONTRACTS.md JSON."""
    path.write_text(dumps_strict(plan_to_dict(plan, scores), indent=1) + "\n", encoding="utf-8")
