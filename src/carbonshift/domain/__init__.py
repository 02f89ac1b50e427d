"""The domain vocabulary: time grid, clusters, jobs, instances, plans and their scores; the
slot rules (:mod:`carbonshift.domain.slots`) and the grams of a run. No I/O."""

from carbonshift.domain.grams import PowerModel, embodied_g, grams_of, operational_g, run_grams
from carbonshift.domain.model import (
    MAX_CARBON_G_PER_KWH,
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
    "MAX_CARBON_G_PER_KWH",
    "Assignment",
    "Cluster",
    "ClusterName",
    "Instance",
    "Job",
    "JobId",
    "Plan",
    "PowerModel",
    "Scores",
    "TimeGrid",
    "Violation",
    "ViolationKind",
    "check_feasibility",
    "embodied_g",
    "grams_of",
    "is_on_time",
    "job_carbon_g",
    "operational_g",
    "run_grams",
    "score_plan",
]
