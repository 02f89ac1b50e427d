"""Plan JSON (docs/formats.md (plan), ``version: 1``), with optional ``scores`` and ``bound``.

Written as strict JSON: a non-finite number is refused (an undefined ratio is ``null``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
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

__all__ = [
    "PlanBound",
    "plan_from_dict",
    "plan_json",
    "plan_to_dict",
    "read_plan",
    "write_plan",
]


@dataclass(frozen=True, slots=True)
class PlanBound:
    """The optional ``bound`` object of a plan: ``lower_bound_g`` is a proven lower bound on
    ``operational_g + embodied_g`` over every feasible plan that puts every job on time
    (None when no such plan may exist); ``gap = (plan grams - lower_bound_g) /
    lower_bound_g`` (None when the bound is None or 0)."""

    lower_bound_g: float | None
    gap: float | None

    @classmethod
    def of(cls, lower_bound_g: float | None, plan_g: float) -> PlanBound:
        """The bound and the gap of a plan of ``plan_g`` grams (operational + embodied)."""
        if lower_bound_g is None or not math.isfinite(lower_bound_g):
            return cls(None, None)
        gap = (plan_g - lower_bound_g) / lower_bound_g if lower_bound_g > 0 else None
        return cls(lower_bound_g, gap)


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
    wire_extra.pop("bound", None)
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


def plan_to_dict(
    plan: Plan, scores: Scores | None = None, bound: PlanBound | None = None
) -> dict[str, Any]:
    """The docs/formats.md JSON object of ``plan``; ``scores`` and ``bound`` added when given."""
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
    if bound is not None:
        if scores is not None:
            # the file's gap is the one its own scores give (docs/formats.md (plan)); a
            # policy's figure comes from its own sums, which may differ in the last digits
            bound = PlanBound.of(bound.lower_bound_g, scores.operational_g + scores.embodied_g)
        out["bound"] = {"lower_bound_g": bound.lower_bound_g, "gap": bound.gap}
    result: dict[str, Any] = null_if_undefined(out)
    return result


def read_plan(path: Path) -> Plan:
    """Read a plan JSON file."""
    return plan_from_dict(read_json(path, "plan"), what=f"plan {str(path)!r}")


def plan_json(plan: Plan, scores: Scores | None = None, bound: PlanBound | None = None) -> str:
    """The text :func:`write_plan` writes: strict docs/formats.md JSON, one final newline."""
    return dumps_strict(plan_to_dict(plan, scores, bound), indent=1) + "\n"


def write_plan(
    plan: Plan, path: Path, scores: Scores | None = None, bound: PlanBound | None = None
) -> None:
    """Write ``plan`` (and optional ``scores`` and ``bound``) as strict docs/formats.md JSON."""
    text = plan_json(plan, scores, bound)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"cannot write the plan to {str(path)!r} ({exc.strerror}); choose a writable --out"
        ) from exc
