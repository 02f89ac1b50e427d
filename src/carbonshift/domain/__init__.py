"""The domain vocabulary: time grid, clusters, jobs, instances, plans and their scores. No I/O."""

from carbonshift.domain.model import (
    Assignment,
    Cluster,
    ClusterName,
    Instance,
    Job,
    JobId,
    Plan,
    TimeGrid,
)
from carbonshift.domain.scoring import (
    Scores,
    Violation,
    ViolationKind,
    check_feasibility,
    is_on_time,
    job_carbon_g,
    score_plan,
)

__all__ = [
    "Assignment",
    "Cluster",
    "ClusterName",
    "Instance",
    "Job",
    "JobId",
    "Plan",
    "Scores",
    "TimeGrid",
    "Violation",
    "ViolationKind",
    "check_feasibility",
    "is_on_time",
    "job_carbon_g",
    "score_plan",
]
