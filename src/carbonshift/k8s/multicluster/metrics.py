"""The hub's Prometheus metrics (docs/observability.md lists them).

The controller records what it does and times where it happens (each release, suspension,
recall, spoke copy, conflict and error; each pipeline phase and planning call);
:class:`~carbonshift.k8s.multicluster.observe.HubObserver` sets the gauges from the
controller's state and the hub objects after each pass, and times the whole pass.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from carbonshift.carbon.freshness import freshness_gauges
from carbonshift.k8s.metrics import RATE_LIMIT_WAIT_BUCKETS_S

__all__ = ["PHASE_BUCKETS_S", "PLAN_BUCKETS_S", "HubMetrics"]

PLAN_BUCKETS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
"""Buckets of one planning call, s."""
PHASE_BUCKETS_S = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
"""Buckets of one pipeline phase, s (most phases are a few API calls)."""


class HubMetrics:
    """The hub's Prometheus metrics, in a registry of their own (one per hub process)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.held = Gauge(
            "carbonshift_hub_held_workloads",
            "Hub workloads held now (planned, not yet released), by kind",
            ["kind"],
            registry=r,
        )
        self.placed = Gauge(
            "carbonshift_hub_placed_workloads",
            "Hub workloads released to a spoke and not finished, by kind and spoke",
            ["kind", "cluster"],
            registry=r,
        )
        self.releases = Counter(
            "carbonshift_hub_releases",
            "Hub workloads released to a spoke, by kind and spoke",
            ["kind", "cluster"],
            registry=r,
        )
        self.recalls = Counter(
            "carbonshift_hub_recalls",
            "Placed hub workloads planned again because their spoke stayed unreachable, by "
            "the spoke they left",
            ["cluster"],
            registry=r,
        )
        self.suspensions = Counter(
            "carbonshift_hub_suspensions",
            "Interruptible hub workloads suspended (spoke copy deleted) because the plan moved "
            "them, by the spoke they left",
            ["cluster"],
            registry=r,
        )
        self.spoke_healthy = Gauge(
            "carbonshift_hub_spoke_healthy",
            "1 while a spoke answers and is usable, else 0",
            ["spoke"],
            registry=r,
        )
        self.spoke_capacity = Gauge(
            "carbonshift_hub_spoke_capacity",
            "Allocatable of a spoke's Ready, schedulable nodes (cpu: cores, memory: GiB, "
            "nvidia.com/gpu: devices)",
            ["spoke", "resource"],
            registry=r,
        )
        self.forecast_age = Gauge(
            "carbonshift_hub_forecast_age_seconds",
            "Age of the forecast the last plan used for a spoke's zone",
            ["spoke"],
            registry=r,
        )
        self.data_age, self.replayed = freshness_gauges(r)
        self.plans = Counter("carbonshift_hub_plans", "Planning calls made", registry=r)
        self.plan_duration = Histogram(
            "carbonshift_hub_plan_duration_seconds",
            "Duration of one planning call",
            buckets=PLAN_BUCKETS_S,
            registry=r,
        )
        self.phase_duration = Histogram(
            "carbonshift_hub_phase_duration_seconds",
            "Duration of one phase of a hub reconcile pass (the phases of "
            "carbonshift.k8s.multicluster.hub.PHASES), recorded as each phase ends",
            ["phase"],
            buckets=PHASE_BUCKETS_S,
            registry=r,
        )
        self.rate_limit_wait = Histogram(
            "carbonshift_client_rate_limiter_wait_seconds",
            "Seconds each request of the hub's own client waited for the client-side rate "
            "limit (client_connection.qps / .burst; as client-go's "
            "rest_client_rate_limiter_duration)",
            buckets=RATE_LIMIT_WAIT_BUCKETS_S,
            registry=r,
        )
        self.reconcile_duration = Histogram(
            "carbonshift_hub_reconcile_duration_seconds",
            "Duration of one hub reconcile (all its passes)",
            registry=r,
        )
        self.conflicts = Counter(
            "carbonshift_hub_write_conflicts", "409 answers to the hub's writes", registry=r
        )
        self.errors = Counter(
            "carbonshift_hub_errors",
            "Failed hub steps (spoke or hub API errors, unusable annotations, failed passes)",
            registry=r,
        )
        self.spoke_copies = Counter(
            "carbonshift_hub_spoke_copies",
            "Spoke copies of hub Jobs by what happened to them (created, adopted, cleaned)",
            ["action"],
            registry=r,
        )
        self.mirrored = Counter(
            "carbonshift_hub_mirrored", "Final spoke statuses written on hub Jobs", registry=r
        )
        self.observer_errors = Counter(
            "carbonshift_hub_observer_errors",
            "Event writes or state lists that failed (logged, not retried)",
            ["stage"],
            registry=r,
        )
        self.events_dropped = Counter(
            "carbonshift_hub_events_dropped",
            "Events not written because the Event budget (events.qps / .burst) was spent, by "
            "reason (the hub object's annotations say the same)",
            ["reason"],
            registry=r,
        )
        self.holds_deferred = Gauge(
            "carbonshift_hub_holds_deferred",
            "Held hub workloads whose plan the last pass left to the next "
            "(hold_writes_per_pass): held as they arrived, not yet labelled held",
            registry=r,
        )
        self.plan_truncated = Counter(
            "carbonshift_hub_plan_truncated",
            "Planning calls that left pending hub workloads out because of the plan-size "
            "limits (planning.max_plan_cells, planning.max_horizon_cells)",
            registry=r,
        )
        self.plan_left_out = Gauge(
            "carbonshift_hub_plan_left_out_workloads",
            "Pending hub workloads the last planning call left out (plan-size limits): held "
            "until a later call plans them or their latest start",
            registry=r,
        )
        self.leader = Gauge("carbonshift_hub_leader", "1 while this replica leads", registry=r)
