"""carbonshift.planning: turn a snapshot (pending and running jobs, clusters, forecast) into a plan.

Three layers kept apart (DESIGN.md): :mod:`.problem` builds the start-time formulation as
arrays (no solver imports); :mod:`.backends.highs` solves LPs and MILPs with HiGHS; the
policies (:mod:`.policies`) decide. :data:`POLICIES` names them; :func:`run_policy` runs
one on a static instance and :func:`plan_snapshot` answers the online question (what starts
now, and the tentative plan for the rest). See docs/design/0001-planning-core.md.
"""

from carbonshift.planning.explain import explain
from carbonshift.planning.registry import (
    POLICIES,
    ParamSpec,
    PolicySpec,
    parse_params,
    policy_spec,
    run_policy,
)
from carbonshift.planning.snapshot import (
    Decision,
    HeldWork,
    PendingWork,
    RunningJob,
    Snapshot,
    build_snapshot,
    held_units,
    plan_snapshot,
)
from carbonshift.planning.types import PlanContext, PlanStatus, PolicyResult, SolveStatus

__all__ = [
    "POLICIES",
    "Decision",
    "HeldWork",
    "ParamSpec",
    "PendingWork",
    "PlanContext",
    "PlanStatus",
    "PolicyResult",
    "PolicySpec",
    "RunningJob",
    "Snapshot",
    "SolveStatus",
    "build_snapshot",
    "explain",
    "held_units",
    "parse_params",
    "plan_snapshot",
    "policy_spec",
    "run_policy",
]
