"""CP-SAT on the time-indexed model of the ``carbonshift`` objective (issue 13: what is
attainable). An optional benchmark tool: it needs Google OR-Tools (``pip install ortools``
into your own environment), which is **not** a carbonshift dependency.

The model is ``bench/planner_milp.py``'s: one Boolean per on-time start of every job,
exactly one start per job, capacity per cluster, resource and slot, least grams (the
planner's own shape table x weight). CP-SAT takes integers, so each capacity row's
demands are rounded up and its room down (``SCALE`` units per unit: a CP-SAT plan fits
the real capacity), and the grams are rounded to ``GRAM_SCALE`` per gram (its objective is
re-scored in floats). ``carbonshift``'s plan is CP-SAT's hint (``--no-hint``: none). One
worker by default (``num_workers``) with ``interleave_search`` on: CP-SAT's subsolvers
take turns on one thread; ``--plain`` turns that off. The time limit counts wall seconds,
so on a loaded machine a run does less work (and may find another plan) than on an idle
one: read the reported CPU seconds beside it.

Run: ``python bench/planner_cpsat.py FAMILY N SEED [TIME_LIMIT_S] [WORKERS] [--save=PATH] [--plain]
[--no-hint]``
(bench_planner families). Prints one JSON row: the LP optimum, our plan and CP-SAT's plan
(grams and % above the LP), CP-SAT's bound and status. ``--save=PATH`` writes both plans
as ``.npz`` (``ours_cluster``, ``ours_start``, ``cpsat_cluster``, ``cpsat_start`` per job,
and the per-job grams ``ours_g``, ``cpsat_g``, ``own_best_g``) for a job-by-job comparison.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.time_indexed import time_indexed

#: integer units per unit of demand and room in CP-SAT's capacity rows
SCALE = 1000
#: integer units per gram in CP-SAT's objective
GRAM_SCALE = 100


def _ortools() -> Any:
    try:
        from ortools.sat.python import cp_model
    except ImportError:
        sys.exit(
            "bench/planner_cpsat.py needs Google OR-Tools, which carbonshift does not "
            "depend on: run `.venv/bin/python -m pip install ortools` in your own "
            "environment, then run this again"
        )
    return cp_model


def cpsat(
    family: str,
    n_jobs: int,
    seed: int,
    time_limit_s: float,
    workers: int = 1,
    save: str | None = None,
    interleave: bool = True,
    hint: bool = True,
) -> dict[str, object]:
    cp_model = _ortools()
    read = time_indexed(family, n_jobs, seed)
    plan_g, plan_cpu_s = read.plan_g, read.plan_cpu_s
    arrays, problem, starts = read.arrays, read.problem, read.starts
    grams, ours = read.grams, read.ours
    model = cp_model.CpModel()
    x = [model.NewBoolVar(f"x{k}") for k in range(len(starts))]
    by_job: list[list[int]] = [[] for _ in range(arrays.n_jobs)]
    for k, j in enumerate(starts.job):
        by_job[int(j)].append(k)
    for cols in by_job:
        model.AddExactlyOne(x[k] for k in cols)
    n_cap = problem.capacity_key.shape[0]
    cap = problem.matrix[:n_cap].tocsr()
    for row in range(n_cap):
        lo, hi = cap.indptr[row], cap.indptr[row + 1]
        cols, vals = cap.indices[lo:hi], np.ceil(cap.data[lo:hi] * SCALE - 1e-6).astype(int)
        room = int(np.floor(problem.row_upper[row] * SCALE + 1e-6))
        if int(vals.sum()) <= room:
            continue  # the row can never bind
        model.Add(sum(int(v) * x[int(c)] for c, v in zip(cols, vals, strict=True)) <= room)
    cost = np.round(grams * GRAM_SCALE).astype(int)
    model.Minimize(sum(int(c) * x[k] for k, c in enumerate(cost)))
    if hint:
        for k in range(len(starts)):
            model.AddHint(x[k], bool(ours[k]))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit_s
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = 0
    # one thread that takes turns among CP-SAT's subsolvers (its LNS among them), so the
    # search is deterministic for a given work; one plain worker runs no LNS at all
    solver.parameters.interleave_search = interleave
    wall = time.perf_counter()
    cpu = time.process_time()
    status = solver.Solve(model)
    cpu_s = time.process_time() - cpu
    wall_s = time.perf_counter() - wall
    found = status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    chosen = np.array([solver.Value(v) for v in x], dtype=bool) if found else ours
    cpsat_g = float(grams[chosen].sum())
    ours_model_g = float(grams[ours].sum())
    if save:
        n = arrays.n_jobs
        own_best = np.full(n, np.inf)
        np.minimum.at(own_best, starts.job, grams)

        def per_job(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            m = np.full(n, -1)
            s = np.full(n, -1)
            g = np.zeros(n)
            m[starts.job[mask]] = starts.cluster[mask]
            s[starts.job[mask]] = starts.start_slot[mask]
            g[starts.job[mask]] = grams[mask]
            return m, s, g

        om, os_, og = per_job(ours)
        cm, cs, cg = per_job(chosen)
        np.savez(
            save,
            ours_cluster=om,
            ours_start=os_,
            ours_g=og,
            cpsat_cluster=cm,
            cpsat_start=cs,
            cpsat_g=cg,
            own_best_g=own_best,
            release=arrays.release_slot,
            deadline=arrays.deadline_slot,
            runtime=arrays.runtime_slots,
            demand=arrays.demand_units,
            free=arrays.free_units,
            allowed=arrays.allowed,
        )

    pct = read.above_lp_pct
    return {
        **read.row(),
        "cpsat_status": solver.StatusName(status),
        "cpsat_g": round(cpsat_g, 3),
        "cpsat_bound_g": round(solver.BestObjectiveBound() / GRAM_SCALE, 3),
        "cpsat_above_lp_pct": pct(cpsat_g),
        "cpsat_cpu_s": round(cpu_s, 1),
        "cpsat_wall_s": round(wall_s, 1),
        "workers": workers,
        "interleave": interleave,
        "hint": hint,
        "carbonshift_g": round(plan_g, 3),
        "carbonshift_model_g": round(ours_model_g, 3),
        "carbonshift_above_lp_pct": pct(plan_g),
        "carbonshift_cpu_s": round(plan_cpu_s, 2),
        "jobs_moved": int((chosen != ours).sum() // 2),
    }


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    plain = "--plain" in sys.argv[1:]
    no_hint = "--no-hint" in sys.argv[1:]
    save_at = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--save=")), None)
    fam, n, sd = args[0], int(args[1]), int(args[2])
    limit = float(args[3]) if len(args) > 3 else 120.0
    n_workers = int(args[4]) if len(args) > 4 else 1
    print(
        json.dumps(cpsat(fam, n, sd, limit, n_workers, save_at, not plain, not no_hint)),
        flush=True,
    )
