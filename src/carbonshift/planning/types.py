"""Result and context types shared by the planning layers (no solver, no policy logic).

A policy answers a :class:`PolicyResult`: the plan, a :class:`PlanStatus`, per-job notes for
``--explain`` and a few figures (LP bound, MIP gap, overloaded slots). Infeasible, partial or
time-limited answers are results with a status, never exceptions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from carbonshift.domain import JobId, Plan
from carbonshift.formats.plan import PlanBound

__all__ = ["PlanContext", "PlanStatus", "PolicyResult", "SolveStatus"]

FloatArray = npt.NDArray[np.float64]


class SolveStatus(StrEnum):
    """What a solver back end reports, in our words (each back end maps its codes here)."""

    OPTIMAL = "optimal"  #: proved optimal (MILP: within the requested gap)
    FEASIBLE = "feasible"  #: stopped (time or iteration limit) holding a feasible solution
    NO_SOLUTION = "no_solution"  #: stopped without a feasible solution
    INFEASIBLE = "infeasible"  #: the model has no feasible point
    UNBOUNDED = "unbounded"  #: the objective is unbounded (or the model infeasible or unbounded)


class PlanStatus(StrEnum):
    """How much a plan can be trusted."""

    OPTIMAL = "optimal"  #: an exact policy proved the plan optimal (within its gap)
    FEASIBLE = "feasible"  #: capacity is respected; no optimality claim
    TIME_LIMIT = "time_limit"  #: an exact policy stopped at its limit with a feasible plan
    NO_SOLUTION = "no_solution"  #: the solver found nothing; every job is unscheduled
    OVERLOADED = "overloaded"  #: the plan exceeds capacity somewhere (``rr`` may do this)


@dataclass(frozen=True, slots=True)
class PlanContext:
    """What a policy needs beyond the instance when it plans online.

    ``held_units`` has shape ``(clusters, resources, horizon_slots)`` in instance order: the
    units already held in each slot by work the policy may not move (running jobs). Every
    policy plans against ``capacity - held_units``. ``waited_slots`` says how many slots a
    pending job has already waited before slot 0 (the window rule releases a job that has
    waited 24 h). Both default to nothing held and nothing waited.
    """

    held_units: FloatArray | None = None
    waited_slots: Mapping[str, int] = field(default_factory=dict)
    origin_slot: int = 0
    """Slots from the caller's time origin to slot 0 (the simulator's slot index; 0 for a
    caller whose axis starts now, as the controller's and the hub's do): a round's
    phantoms of future work (planning/lookahead.py, ``reserve_shapes = stable``) keep
    their shapes from round to round by it."""
    incumbent: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    """Job id -> (cluster, start slot on this instance's axis) the round before planned it
    (the planning seam's ``Snapshot.previous``; empty for a static plan). ``carbonshift``
    with ``move_penalty_g`` / ``move_penalty_pct`` charges a start elsewhere
    (planning/incumbent.py); the other policies ignore it."""


@dataclass(frozen=True, slots=True)
class PolicyResult:
    """A policy's answer: the plan, its status, per-job notes and figures.

    ``notes`` maps a job id to why the policy did what it did with it (shown by ``--explain``).
    ``stats`` holds figures with units in their names, e.g. ``lp_bound_gru``, ``mip_gap``,
    ``overloaded_slots``, ``dropped_jobs``.
    """

    plan: Plan
    status: PlanStatus
    notes: Mapping[JobId, str] = field(default_factory=dict)
    stats: Mapping[str, float] = field(default_factory=dict)
    #: the plan's certified ``bound`` object (docs/formats.md (plan)), for the policies that
    #: prove one (``carbonshift``); None for the others
    bound: PlanBound | None = None
    #: units per (cluster, resource, slot) the plan keeps free for work that has not arrived
    #: (the phantoms of planning/lookahead.py); None: no reserve. The hold rule's hysteresis
    #: does not move a job back into them (planning/hold.py)
    reserved_units: npt.NDArray[np.float64] | None = field(default=None, compare=False)
