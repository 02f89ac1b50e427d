"""The polish and the bands end on deterministic limits, not on their CPU guard (issue 13):
each sub-MILP on its HiGHS node limit, each search on its simplex-iteration budget, so
that the plan is the same on a slower machine. Until 2026-11-27 (branch ``polish``) the
guard (``polish_cpu_s``, 10 s) sat below the polish's deterministic work on cjps-small 100
(13.8 s of CPU on seed 1 at load 5): a machine a little slower got another plan."""

from __future__ import annotations

import time
import types

import numpy as np
import pytest

from carbonshift.domain import Instance
from carbonshift.planning import run_policy
from carbonshift.planning.backends import highs
from carbonshift.planning.backends.highs import solve
from carbonshift.planning.lagrangian import classes_of, shape_costs, unit_grams
from carbonshift.planning.policies import _polish
from carbonshift.planning.problem import arrays_of, build_problem, on_time_program
from carbonshift.planning.types import SolveStatus
from tests.builders import cluster, crowded_gpu_jobs, instance

#: The machine emulated: the polish's CPU clock runs this many times as fast as ours.
SLOWER = 5.0


def crowded(seed: int, n_jobs: int = 30, horizon: int = 24) -> Instance:
    """Three clusters of 5-8 gpu, jobs of 1-4 gpu and 1-4 slots with 2-9 slots of slack:
    the polish's sub-MILPs are hard (seed 1, 50 jobs: 37,445 simplex iterations, 4.1-4.4 s
    of CPU on the development machine at load 5; seed 2, 30 jobs: 570 on-time starts)."""
    rng = np.random.default_rng(seed)
    jobs = crowded_gpu_jobs(
        rng, n_jobs, horizon, max_gpu=4, release_below=horizon // 2, slack=(2, 9)
    )
    clusters = [cluster("a", gpu=8.0), cluster("b", gpu=6.0, watts=1200.0), cluster("c", gpu=5.0)]
    carbon = {n: list(rng.uniform(50, 500, horizon)) for n in ("a", "b", "c")}
    return instance(jobs, clusters, carbon, horizon=horizon)


def placed(
    inst: Instance, params: dict[str, float]
) -> tuple[list[tuple[str, str, int]], dict[str, float]]:
    """The plan's assignments (job, cluster, start) and its stats."""
    result = run_policy("carbonshift", inst, params)
    return sorted((a.job, a.cluster, a.start_slot) for a in result.plan.assignments), dict(
        result.stats
    )


def test_the_plan_is_the_same_on_a_slower_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails on 6283f69: there the polish's 10 s guard bound on a machine 5 times slower
    (about 21 s of its CPU) and stopped the search halfway (17,998 of 37,445 simplex
    iterations) with another plan. Now the guard (60 s) leaves the plan to the node limits
    and budgets, as a guard 100 times larger does (on a machine up to about 2.8 times
    slower than the development machine, where this test would bind it again)."""
    inst = crowded(1, n_jobs=50)
    want, want_stats = placed(inst, {"polish_cpu_s": 6000.0, "support_time_limit_s": 6000.0})
    assert want_stats["polish_steps"] >= 3  # the polish did work worth a guard
    slow = types.SimpleNamespace(
        thread_time=lambda: SLOWER * time.thread_time(), perf_counter=time.perf_counter
    )
    monkeypatch.setattr(_polish, "time", slow)
    monkeypatch.setattr(highs, "time", slow)  # the support MILP's and the LPs' guards
    got, stats = placed(inst, {})
    assert got == want
    assert stats["polish_guard_bound"] == 0.0
    assert stats.get("support_guard_bound", 0.0) == 0.0
    assert stats["polish_lp_iterations"] == want_stats["polish_lp_iterations"]


def test_the_guard_is_reported_where_it_binds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan's stats say when the CPU guard, not the budget, ended the polish."""
    slow = types.SimpleNamespace(thread_time=lambda: 1e6 * time.thread_time())
    monkeypatch.setattr(_polish, "time", slow)
    _, stats = placed(crowded(2), {})
    assert stats["polish_guard_bound"] == 1.0


def test_a_sub_milp_stops_at_its_node_limit_whatever_its_time() -> None:
    """HiGHS 1.16 offers no iteration limit on a MILP (``simplex_iteration_limit`` bounds
    each LP, not the MILP: a cjps-small sub-MILP spent 34,736 iterations under a limit of
    5,000), so a sub-MILP ends on its node limit: the same iterations and answer with a
    wall guard of 30 s or of 10,000 s (here 570 columns, one node: 0.6 s of CPU)."""
    arrays = arrays_of(crowded(2))
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    problem = build_problem(arrays, on_time_only=True)
    starts = problem.starts
    grams = table[classes.shape[starts.job], starts.cluster, starts.start_slot]
    program = on_time_program(problem, grams * classes.weight[starts.job])
    answers = [
        solve(program, _polish.sub_milp_options(left_s, max_nodes=1, restart=False))
        for left_s in (10_000.0, 30.0)
    ]
    for answer in answers:
        assert answer.detail == "Solution limit reached"  # HiGHS's status at mip_max_nodes
        assert answer.status in (SolveStatus.FEASIBLE, SolveStatus.OPTIMAL)
    assert answers[0].lp_iterations == answers[1].lp_iterations > 0
    assert np.array_equal(answers[0].values, answers[1].values)
