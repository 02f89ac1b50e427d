"""Step 0b of the ``carbonshift`` policy (docs/design/0002): the critical jobs first, each at
its earliest start with room; the other jobs planned as an instance of their own on the
room the critical jobs leave; the certified bound still of every all-on-time plan."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carbonshift.domain import Instance
from carbonshift.formats import instance_to_dict, plan_to_dict
from carbonshift.planning import run_policy
from carbonshift.planning.types import PlanContext
from tests.builders import cluster, instance, job
from tests.planning import independent


def _mixed(seed: int, n_jobs: int = 14, share_critical: float = 0.3) -> Instance:
    """Jobs on three clusters of differing carbon over 12 slots, some of them critical;
    room for every job on time."""
    rng = np.random.default_rng(seed)
    horizon, names = 12, ["a", "b", "c"]
    jobs = []
    for i in range(n_jobs):
        runtime = int(rng.integers(1, 4))
        release = int(rng.integers(0, 6))
        jobs.append(
            job(
                f"j{i}",
                gpu=float(rng.integers(1, 3)),
                runtime=runtime,
                release=release,
                deadline=min(horizon, release + runtime + int(rng.integers(1, 6))),
                allowed=None if rng.random() < 0.7 else [names[int(rng.integers(0, 3))]],
                critical=bool(rng.random() < share_critical),
            )
        )
    carbon = {n: [float(v) for v in rng.integers(20, 500, horizon)] for n in names}
    return instance(jobs, [cluster(n, gpu=4.0) for n in names], carbon, horizon=horizon)


def _docs(inst: Instance, params: dict[str, Any] | None = None) -> tuple[dict, dict, Any]:
    result = run_policy("carbonshift", inst, params or {})
    plan = plan_to_dict(result.plan, bound=result.bound)
    return instance_to_dict(inst), plan, result


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_other_jobs_are_planned_on_the_room_the_critical_jobs_leave(seed: int) -> None:
    """The plan is the critical jobs at their earliest starts plus the plan of the other
    jobs alone, with the critical jobs' room held as running work is."""
    inst = _mixed(seed)
    result = run_policy("carbonshift", inst, {})
    critical = {j.id for j in inst.jobs if j.critical}
    assert critical
    assert len(critical) < len(inst.jobs)
    at = {a.job: a for a in result.plan.assignments}
    names = [c.name for c in inst.clusters]
    held = np.zeros((len(names), 1, inst.grid.horizon_slots))
    for j in inst.jobs:
        if j.id in critical and j.id in at:
            a = at[j.id]
            held[names.index(a.cluster), 0, a.start_slot : a.start_slot + j.runtime_slots] += (
                j.demand["gpu"]
            )
    rest = dataclasses.replace(inst, jobs=tuple(j for j in inst.jobs if j.id not in critical))
    alone = run_policy("carbonshift", rest, {}, PlanContext(held_units=held))
    assert {a for a in result.plan.assignments if a.job not in critical} == set(
        alone.plan.assignments
    )
    assert result.stats["critical_held_jobs"] == len(critical & set(at))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_every_rule_holds_and_the_bound_is_of_every_on_time_plan(seed: int) -> None:
    """The independent checker's rules (critical jobs at their earliest starts, the least
    grams with them where they are, a bound at most the all-on-time LP, which moves the
    critical jobs too), and the bound of plans with the critical jobs held is no lower."""
    inst_doc, plan_doc, result = _docs(_mixed(seed))
    report = independent.check(inst_doc, plan_doc, optimal=True)
    assert report.ok, str(report)
    bound = plan_doc["bound"]["lower_bound_g"]
    assert bound is not None
    lp = independent.lp_on_time(independent.parse_instance(inst_doc))
    assert lp is not None
    assert bound <= lp * (1 + 1e-9)
    assert result.stats["critical_held_lower_bound_g"] >= bound * (1 - 1e-9)


def test_all_critical_or_none_plan_as_before() -> None:
    """Step 0b runs only where some jobs but not all are critical."""
    inst = _mixed(0)
    for flag in (True, False):
        same = dataclasses.replace(
            inst, jobs=tuple(dataclasses.replace(j, critical=flag) for j in inst.jobs)
        )
        _, plan_doc, result = _docs(same)
        assert "critical_held_jobs" not in result.stats
        assert independent.check(instance_to_dict(same), plan_doc).ok


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), share=st.sampled_from([0.1, 0.5, 0.9]))
def test_random_mixes_keep_every_rule(seed: int, share: float) -> None:
    inst_doc, plan_doc, _ = _docs(_mixed(seed, n_jobs=10, share_critical=share))
    report = independent.check(inst_doc, plan_doc)
    assert report.ok, str(report)
