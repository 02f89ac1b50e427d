"""A late plan's bound (CONTRACTS.md section 2): null only when no all-on-time plan may exist.

The all-on-time LP over the starts that fit alone decides it, solved over job classes at
any size (it was solved over jobs up to 3,000 jobs and 200,000 starts, and a late plan
above either had a null bound though that LP was feasible)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from carbonshift.formats.instance import instance_from_dict, instance_to_dict
from carbonshift.planning import run_policy
from carbonshift.planning.lagrangian import classes_of
from carbonshift.planning.policies.carbonshift import _fitting_on_time_lp, _overloaded
from carbonshift.planning.problem import arrays_of, balanced_units
from tests.builders import cluster, instance, job
from tests.planning import independent

WINDOW_SLOTS = 200
CLUSTERS = 10
DEMAND_GPU = 1.2
CAPACITY_GPU = 2.0


def _crowded(n_jobs: int):
    """``n_jobs`` jobs of 1.2 GPU for one slot, due by slot 200, on ten clusters of 2 GPUs:
    one job per cluster and slot fits, so at most 2,000 are on time, while the LP (jobs
    split across slots) holds 2 x 10 x 200 / 1.2 = 3,333 of them."""
    clusters = [
        cluster(f"c{i}", gpu=CAPACITY_GPU, watts=200.0, pue=1.2, embodied=5.0)
        for i in range(CLUSTERS)
    ]
    horizon = 2 * WINDOW_SLOTS
    carbon = {
        f"c{i}": [float(100 + 50 * ((s * 7 + i * 3) % 11)) for s in range(horizon)]
        for i in range(CLUSTERS)
    }
    jobs = [
        job(f"j{i}", gpu=DEMAND_GPU, runtime=1, release=0, deadline=WINDOW_SLOTS)
        for i in range(n_jobs)
    ]
    return instance(jobs, clusters, carbon, horizon=horizon)


def _lp_optimum_g(inst, n_jobs: int) -> float:
    """The all-on-time LP's optimum, by hand: identical one-slot jobs fill the cheapest
    on-time (cluster, slot) cells, 2 GPUs each, fractionally."""
    cells = []
    for c in inst.clusters:
        pue, watts = c.pue, c.watts_per_unit["gpu"]
        embodied = c.embodied_g_per_unit_hour["gpu"]
        for s in range(WINDOW_SLOTS):
            cells.append(watts / 1000 * pue * inst.carbon_g_per_kwh[c.name][s] + embodied)
    need = DEMAND_GPU * n_jobs
    total = 0.0
    for per_gpu_g in sorted(cells):
        take = min(CAPACITY_GPU, need)
        total += take * per_gpu_g
        need -= take
        if need <= 0:
            break
    assert need <= 1e-9
    return total


@pytest.mark.parametrize("n_jobs", [2_900, 3_100])
def test_a_late_plan_carries_the_lp_bound_when_the_lp_is_feasible(n_jobs: int) -> None:
    inst = _crowded(n_jobs)
    result = run_policy("carbonshift", inst, {})
    late = sum(1 for a in result.plan.assignments if a.start_slot + 1 > WINDOW_SLOTS)
    assert late == n_jobs - 2_000  # the least lateness: 2,000 on time, the rest one by one
    assert result.bound is not None
    assert result.bound.lower_bound_g is not None
    lp_g = _lp_optimum_g(inst, n_jobs)
    assert result.bound.lower_bound_g <= lp_g * (1 + 1e-9)
    assert result.bound.lower_bound_g >= lp_g * (1 - 1e-6)


def test_a_late_plan_has_no_bound_when_the_lp_is_infeasible() -> None:
    inst = _crowded(3_400)  # 3,400 x 1.2 = 4,080 GPU-slots > 4,000
    result = run_policy("carbonshift", inst, {})
    assert result.bound is not None
    assert result.bound.lower_bound_g is None
    assert result.bound.gap is None


def test_the_class_lp_decides_as_the_job_lp_where_sizes_in_a_class_fit_apart() -> None:
    """Jobs of one demand mix but several sizes share a class; a 3-GPU job fits alone only
    where capacity is 3 or more, a 1-GPU job everywhere. Random such instances: the class
    LP's answer is the independent job-level LP's (tests/planning/independent.py)."""
    rng = np.random.default_rng(20261129)
    seen = {True: 0, False: 0}
    for trial in range(120):
        horizon = int(rng.integers(3, 7))
        clusters = [
            cluster(f"c{i}", gpu=tuple(float(v) for v in rng.integers(0, 5, horizon)))
            for i in range(int(rng.integers(1, 3)))
        ]
        jobs = []
        for i in range(int(rng.integers(2, 9))):
            runtime = int(rng.integers(1, 3))
            release = int(rng.integers(0, horizon - runtime + 1))
            # two releases and deadlines only: jobs of one window and several sizes meet
            jobs.append(
                job(
                    f"j{trial}-{i}",
                    gpu=float(rng.integers(1, 4)),
                    runtime=runtime,
                    release=release if rng.random() < 0.3 else 0,
                    deadline=horizon,
                )
            )
        inst = instance(jobs, clusters, horizon=horizon)
        ours = _fitting_on_time_lp(arrays_of(inst), 30.0)
        theirs = independent.lp_on_time(independent.parse_instance(instance_to_dict(inst)))
        assert ours is (theirs is not None), (trial, instance_to_dict(inst))
        seen[bool(ours)] += 1
    assert seen[True] >= 10
    assert seen[False] >= 10


def test_late_bound_false_skips_the_lp_and_gives_null() -> None:
    """The rounds of the simulator, the controller and the hub pass ``late_bound = false``
    (``round_params``): nobody reads a round's bound, and the LP costs seconds at scale."""
    result = run_policy("carbonshift", _crowded(3_100), {"late_bound": False})
    assert result.bound is not None
    assert result.bound.lower_bound_g is None
    assert "lp_feasibility_cpu_seconds" not in result.stats


@pytest.mark.parametrize(
    ("capacity_gpu", "overloaded"),
    [
        pytest.param((2.0, 2.0, 2.0, 2.0), False, id="fits"),
        # slots 1-2 hold 2 units; the two jobs due there need 2 x 1.5
        pytest.param((4.0, 1.0, 1.0, 4.0), True, id="a-window-inside-the-horizon"),
        pytest.param((1.0, 1.0, 1.0, 1.0), True, id="the-whole-horizon"),
    ],
)
def test_an_overloaded_window_settles_infeasibility_without_an_lp(
    capacity_gpu: tuple[float, ...], overloaded: bool
) -> None:
    jobs = [
        job("early", gpu=1.0, runtime=1, release=0, deadline=1),
        job("mid-a", gpu=1.5, runtime=1, release=1, deadline=3),
        job("mid-b", gpu=1.5, runtime=1, release=1, deadline=3),
        job("late", gpu=1.0, runtime=1, release=3, deadline=4),
    ]
    inst = instance(jobs, [cluster("c", gpu=capacity_gpu)], horizon=4)
    arrays = arrays_of(inst)
    assert _overloaded(arrays, classes_of(arrays)) is overloaded
    # a necessary condition: where it says overloaded, the LP agrees
    theirs = independent.lp_on_time(independent.parse_instance(instance_to_dict(inst)))
    if overloaded:
        assert theirs is None
    assert _fitting_on_time_lp(arrays, 30.0) is (theirs is not None)


def test_the_feasibility_lp_answers_where_the_dual_simplex_stalls() -> None:
    """``data/feasibility_lp_degenerate.json`` (200 jobs on five clusters, three resources,
    a random scan's instance): the zero-cost feasibility LP over job classes (3,738
    columns) got no answer from HiGHS's dual simplex in 60 s of CPU, so a late plan's
    bound was null though the all-on-time LP is feasible (the checker's `bound` rule).
    The interior point goes first at every size now and answers."""
    path = Path(__file__).parent / "data" / "feasibility_lp_degenerate.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert independent.lp_on_time(independent.parse_instance(doc)) is not None
    arrays = balanced_units(arrays_of(instance_from_dict(doc)))
    assert _fitting_on_time_lp(arrays, 20.0) is True
