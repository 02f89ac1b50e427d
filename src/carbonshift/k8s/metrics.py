"""The controller's Prometheus metrics, in a registry of their own (one per controller)."""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from carbonshift.carbon.freshness import Freshness, freshness_gauges

__all__ = ["RATE_LIMIT_WAIT_BUCKETS_S", "Metrics", "record_left_out"]

_DELAY_BUCKETS_S = (
    0,
    900,
    1800,
    3600,
    2 * 3600,
    4 * 3600,
    8 * 3600,
    12 * 3600,
    24 * 3600,
    48 * 3600,
)

RATE_LIMIT_WAIT_BUCKETS_S = (0, 0.005, 0.025, 0.1, 0.25, 1, 4, 15, 60, 300, 900)
"""Buckets of one request's wait for the client-side rate limit, s (the hub's too)."""


class Metrics:
    """Held workloads, planned delay, carbon saved, forecast age, errors, durations, releases."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.held = Gauge("carbonshift_held_workloads", "Workloads held now", ["kind"], registry=r)
        self.planned_delay = Histogram(
            "carbonshift_planned_delay_seconds",
            "Planned start minus now for held workloads, at each planning round",
            buckets=_DELAY_BUCKETS_S,
            registry=r,
        )
        self.carbon_saved = Counter(
            "carbonshift_estimated_carbon_saved_grams",
            "Estimated grams saved vs running at arrival, counted at release (forecast-based)",
            registry=r,
        )
        self.forecast_age = Gauge(
            "carbonshift_forecast_age_seconds", "Age of the forecast used last", registry=r
        )
        self.provider_errors = Counter(
            "carbonshift_provider_errors", "Carbon forecast failures (fallback used)", registry=r
        )
        self.reconcile_duration = Histogram(
            "carbonshift_reconcile_duration_seconds", "Duration of a planning pass", registry=r
        )
        self.released = Counter(
            "carbonshift_released", "Workloads released", ["kind", "why"], registry=r
        )
        self.failed_open = Counter(
            "carbonshift_failed_open",
            "Workloads released at their latest start (the plan would have held them longer)",
            registry=r,
        )
        self.unusable = Counter(
            "carbonshift_unusable_intent",
            "Opted-in workloads left unheld because of an unusable value (once per workload "
            "and reason, counted by the controller)",
            ["annotation"],
            registry=r,
        )
        self.not_held = Counter(
            "carbonshift_not_held",
            "Opted-in workloads left unheld on purpose (why: critical, opted-out), once each",
            ["why"],
            registry=r,
        )
        self.errors = Counter(
            "carbonshift_errors",
            "Errors contained to one object or one pass (logged; the controller goes on)",
            ["stage"],
            registry=r,
        )
        self.write_conflicts = Counter(
            "carbonshift_write_conflicts", "409 answers to the controller's writes", registry=r
        )
        self.watch_restarts = Counter(
            "carbonshift_watch_restarts", "Watches restarted", ["reason"], registry=r
        )
        self.rate_limit_wait = Histogram(
            "carbonshift_client_rate_limiter_wait_seconds",
            "Seconds each API request waited for the client-side rate limit "
            "(client_connection.qps / .burst; as client-go's rest_client_rate_limiter_duration)",
            buckets=RATE_LIMIT_WAIT_BUCKETS_S,
            registry=r,
        )
        self.rate_limited = Gauge(
            "carbonshift_release_rate_limited_workloads",
            "Workloads due now that wait for the next slot because of the release budget the "
            "API request rate limit allows per slot",
            registry=r,
        )
        self.events_dropped = Counter(
            "carbonshift_events_dropped",
            "Events not posted because the Event budget (events.qps / .burst) was spent, by "
            "the Event's reason; the object's annotations still say what the Event would have",
            ["reason"],
            registry=r,
        )
        self.plan_truncated = Counter(
            "carbonshift_plan_truncated",
            "Planning passes that left pending workloads out of the plan because of the "
            "plan-size limit (planning.max_plan_cells); they wait for a later pass",
            registry=r,
        )
        self.plan_left_out = Gauge(
            "carbonshift_plan_left_out_workloads",
            "Pending workloads the last planning pass left out of the plan (plan-size limit, "
            "planning.max_plan_cells): held until a later pass plans them or their latest start",
            registry=r,
        )
        self.is_leader = Gauge("carbonshift_leader", "1 while this replica leads", registry=r)
        self.data_age, self.replayed = freshness_gauges(r)
        self._sources: dict[str, str] = {}

    def record_freshness(self, fresh: Freshness | None) -> None:
        """The freshness gauges of ``fresh``'s zone; a source no longer used is removed."""
        if fresh is None:
            return
        before = self._sources.get(fresh.zone)
        if before is not None and before != fresh.source:
            self.data_age.remove(fresh.zone, before)
        self._sources[fresh.zone] = fresh.source
        self.data_age.labels(fresh.zone, fresh.source).set(fresh.data_age_s)
        self.replayed.labels(fresh.zone).set(1.0 if fresh.replayed else 0.0)


def record_left_out(
    gauge: Gauge, counter: Counter, log: logging.Logger, left_out: int, pending: int, why: str
) -> None:
    """One planning call's count of the workloads the plan-size limits left out, as the
    controller and the hub keep it: ``gauge`` always, ``counter`` and one warning line on
    ``log`` (not one per workload) when any was left out; ``why`` names the limit."""
    gauge.set(left_out)
    if left_out:
        counter.inc()
        log.warning(
            "plan-size limit: %d of %d pending workloads left out of this planning call: %s",
            left_out,
            pending,
            why,
        )
