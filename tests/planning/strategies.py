"""Hypothesis strategies and an exhaustive solver for small planning instances."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from hypothesis import strategies as st

from carbonshift.domain import (
    Assignment,
    Cluster,
    ClusterName,
    Instance,
    Job,
    JobId,
    Plan,
    TimeGrid,
    check_feasibility,
    is_on_time,
    score_plan,
)


@st.composite
def instances(
    draw: st.DrawFn,
    *,
    max_jobs: int = 5,
    max_horizon: int = 6,
    max_clusters: int = 2,
    future: bool = True,
) -> Instance:
    """Small random valid instances: 1-2 resources, constant or per-slot capacity."""
    horizon = draw(st.integers(1, max_horizon))
    resources = ("gpu", "mem")[: draw(st.integers(1, 2))]
    n_clusters = draw(st.integers(1, max_clusters))
    clusters = []
    for c in range(n_clusters):
        capacity: dict[str, float | tuple[float, ...]] = {}
        for r in resources:
            if draw(st.booleans()):
                capacity[r] = float(draw(st.integers(0, 5)))
            else:
                capacity[r] = tuple(
                    float(v)
                    for v in draw(st.lists(st.integers(0, 5), min_size=horizon, max_size=horizon))
                )
        clusters.append(
            Cluster(
                name=ClusterName(f"c{c}"),
                capacity=capacity,
                watts_per_unit={r: float(draw(st.integers(0, 400))) for r in resources},
                pue=draw(st.sampled_from([1.0, 1.2, 1.5])),
                embodied_g_per_unit_hour={resources[0]: float(draw(st.integers(0, 20)))},
            )
        )
    carbon = {
        ClusterName(f"c{c}"): tuple(
            float(v)
            for v in draw(st.lists(st.integers(0, 600), min_size=horizon, max_size=horizon))
        )
        for c in range(n_clusters)
    }
    jobs = []
    for i in range(draw(st.integers(0, max_jobs))):
        demand = {r: float(draw(st.integers(0, 3))) for r in resources}
        if not any(v > 0 for v in demand.values()):
            demand[resources[0]] = 1.0
        allowed = draw(
            st.one_of(
                st.none(),
                st.sets(st.sampled_from([f"c{c}" for c in range(n_clusters)])),
            )
        )
        jobs.append(
            Job(
                id=JobId(f"j{i}"),
                demand=demand,
                runtime_slots=draw(st.integers(1, max(1, horizon))),
                release_slot=draw(st.integers(0, horizon)),
                deadline_slot=draw(st.integers(-1, horizon + 2)),
                allowed_clusters=None
                if allowed is None
                else frozenset(ClusterName(c) for c in allowed),
                critical=draw(st.booleans()),
            )
        )
    future_demand = None
    if future and draw(st.booleans()):
        future_demand = {
            resources[0]: tuple(
                float(v)
                for v in draw(st.lists(st.integers(0, 3), min_size=horizon, max_size=horizon))
            )
        }
    return Instance(
        grid=TimeGrid(slot_minutes=draw(st.sampled_from([30, 60])), horizon_slots=horizon),
        resources=resources,
        clusters=tuple(clusters),
        carbon_g_per_kwh=carbon,
        jobs=tuple(jobs),
        future_demand=future_demand,
    )


def on_time_part(instance: Instance, plan: Plan) -> Plan:
    """The plan restricted to its on-time assignments (the rest unscheduled)."""
    jobs = {job.id: job for job in instance.jobs}
    keep = [a for a in plan.assignments if is_on_time(jobs[a.job], a.start_slot)]
    kept = {a.job for a in keep}
    return Plan.of(plan.policy, keep, [j.id for j in instance.jobs if j.id not in kept])


def all_plans(instance: Instance, *, on_time_only: bool) -> Iterator[Plan]:
    """Every feasible plan (each job unscheduled or at one legal start), by brute force."""
    horizon = instance.grid.horizon_slots
    options: list[list[Assignment | None]] = []
    for job in instance.jobs:
        mine: list[Assignment | None] = [None]
        for cluster in instance.clusters:
            if not job.allows(cluster.name):
                continue
            for s in range(job.release_slot, horizon - job.runtime_slots + 1):
                if on_time_only and not is_on_time(job, s):
                    continue
                mine.append(Assignment(job.id, cluster.name, s))
        options.append(mine)
    for combo in itertools.product(*options):
        assigned = [a for a in combo if a is not None]
        done = {a.job for a in assigned}
        plan = Plan.of("brute", assigned, [j.id for j in instance.jobs if j.id not in done])
        if not check_feasibility(instance, plan):
            yield plan


def best_on_time_gru(instance: Instance) -> float:
    """The CJPS optimum without future demand, by exhaustive search."""
    return max(score_plan(instance, p).gru for p in all_plans(instance, on_time_only=True))
