"""No wall clock decides a ``carbonshift`` plan (issue 13): on a loaded machine wall time
runs far ahead of CPU time (a clairvoyant Caspian plan at load 7: 53 s of wall for 7.6 s of
CPU), and a limit in wall seconds bound earlier there, so the plan depended on the load."""

from __future__ import annotations

import itertools
import time
from dataclasses import replace

import numpy as np
import pytest

from carbonshift.domain import Instance
from carbonshift.planning import run_policy
from carbonshift.planning.backends.highs import Solution, SolveOptions
from carbonshift.planning.policies import _polish
from carbonshift.planning.policies import carbonshift as cs
from carbonshift.planning.problem import LinearProgram
from tests.builders import cluster, crowded_gpu_jobs, instance

#: The load emulated: wall time runs this many times as fast as CPU time.
WALL_PER_CPU = 20.0


def crowded(seed: int, *, horizon: int = 16, n_jobs: int = 14) -> Instance:
    """Two clusters of 4 and 3 gpu, jobs of 1-3 gpu and 1-4 slots with 0-3 slots of slack:
    308-362 starts, so the exact MILP runs; it took 0.07-1.9 s of CPU on the development
    machine (seed 3: 0.2 s, one node), and under load its former 2 s wall limit bound."""
    rng = np.random.default_rng(seed)
    jobs = crowded_gpu_jobs(
        rng, n_jobs, horizon, max_gpu=3, release_below=horizon // 3, slack=(0, 3)
    )
    clusters = [cluster("a", gpu=4.0), cluster("b", gpu=3.0, watts=1200.0)]
    carbon = {name: list(rng.uniform(50, 500, horizon)) for name in ("a", "b")}
    return instance(jobs, clusters, carbon, horizon=horizon)


def placements(inst: Instance) -> tuple[list[tuple[str, str, int]], list[str], float | None]:
    result = run_policy("carbonshift", inst)
    assert result.stats.get("exact_used") == 1.0  # the exact MILP decided the plan
    chosen = sorted((a.job, a.cluster, a.start_slot) for a in result.plan.assignments)
    bound = None if result.bound is None else result.bound.lower_bound_g
    return chosen, sorted(result.plan.unscheduled), bound


def test_the_plan_is_the_same_when_wall_time_runs_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails on the old code (da78419): there the exact MILP's 2 s counted wall seconds,
    and with wall time 20 times as fast HiGHS stopped it at 0.1 s of CPU with a worse plan.
    Now its limit counts CPU seconds; HiGHS's wall limit, a guard against a hang at 10 wall
    seconds per CPU second (at least 60 s), leaves room for a wall time up to 15 times the
    solve's CPU time here, even under this emulated load."""
    inst = crowded(3)
    want = placements(inst)
    real_solve = cs.solve

    def loaded_solve(
        lp: LinearProgram, options: SolveOptions | None = None, **kwargs: object
    ) -> Solution:
        options = options or SolveOptions()
        fast = replace(options, time_limit_s=options.time_limit_s / WALL_PER_CPU)
        return real_solve(lp, fast, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cs, "solve", loaded_solve)
    monkeypatch.setattr(_polish, "solve", loaded_solve)
    # and Python's wall clocks jump an hour at every read
    for name in ("perf_counter", "monotonic", "time"):
        ticks = itertools.count(getattr(time, name)(), 3600.0)
        monkeypatch.setattr(time, name, lambda ticks=ticks: float(next(ticks)))
    got = placements(inst)
    assert got == want
