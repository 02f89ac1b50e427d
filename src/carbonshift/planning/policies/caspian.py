"""``caspian``: Caspian's optimizer (Bahreini, Tantawi, Tardieu), Algorithms 2 and 3.

Differences between the paper and its published code (we implement the paper):

- rounding: the code takes the LAST start with a positive LP value for a job, where
  Algorithm 3 scans the job's (cluster, slot) pairs in decreasing combined coefficient and
  takes the first that fits;
- capacity: the code charges a job for ``runtime + 2`` slots in its capacity rows; the
  paper's constraint 5 (and this module) charges exactly the occupied slots;
- carbon: the code's sustainability term is zero for jobs that ask for no GPUs; here Z1 uses
  the first resource of the instance (``resources[0]``), whatever it is called;
- weights: the paper prints ``theta_k = 1 / Zbar_k`` beside ``omega_k / theta_k``; its text
  says objectives are normalised by the magnitude of their optima, so we divide by the LP
  optimum (ALGORITHMS.md), and give weight 0 to an objective whose optimum is 0.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from carbonshift.domain import Instance
from carbonshift.errors import InputError
from carbonshift.planning.backends.highs import LpMethod, SolveOptions, solve
from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.policies._common import result_of
from carbonshift.planning.problem import (
    arrays_of,
    build_problem,
    caspian_z1,
    caspian_z2,
    caspian_z3,
    linear_program,
)
from carbonshift.planning.types import PlanContext, PlanStatus, PolicyResult, SolveStatus

#: LP answers a policy can use (PDLP may stop "unknown" holding a near-optimal point).
_USABLE = (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE)

__all__ = ["caspian"]

_LOG = logging.getLogger("carbonshift.planning.caspian")


def caspian(
    instance: Instance,
    context: PlanContext | None = None,
    *,
    omega1: float = 1.0,
    omega2: float = 1.0,
    omega3: float = 1.0,
    lp_method: LpMethod = LpMethod.AUTO,
    lp_time_limit_s: float = 60.0,
) -> PolicyResult:
    """Caspian section III, Algorithm 2 (optimizer) and Algorithm 3 (allocation).

    1. ``theta_k`` = optimum of the LP relaxation with ``Z_k`` alone (Alg. 2 line 1; eqs. 1-3:
       Z1 sustainability, Z2 lateness ``1/max(1, l+s-d)``, Z3 completion ``1/(s+l)``);
    2. weights ``omega_k / theta_k`` (line 2) and the LP of the weighted sum (lines 3-4);
    3. ``b_i`` = the job's total LP allocation; jobs in non-increasing ``b_i`` (lines 7-8);
    4. each job takes the first (cluster, start) that fits, in decreasing combined
       coefficient (Alg. 3); a job that fits nowhere is unscheduled (it waits for a later
       round). Online, only jobs whose start is slot 0 are released (lines 11-13).

    ``omega1 = 0`` is the paper's carbon-agnostic baseline mode. Starts may be late (Z2
    penalises lateness); capacity covers every resource.
    """
    for name, value in (("omega1", omega1), ("omega2", omega2), ("omega3", omega3)):
        if not value >= 0:
            raise InputError(f"{name} is {value}; give a weight >= 0")
    began = time.perf_counter()
    arrays = arrays_of(instance, context)
    problem = build_problem(arrays, on_time_only=False)
    starts = problem.starts
    objectives = [
        caspian_z1(arrays, starts),
        caspian_z2(arrays, starts),
        caspian_z3(arrays, starts),
    ]
    omegas = (omega1, omega2, omega3)
    options = SolveOptions(method=lp_method, time_limit_s=lp_time_limit_s)
    weights = []
    stats: dict[str, float] = {}
    for k, (omega, coef) in enumerate(zip(omegas, objectives, strict=True), start=1):
        if omega == 0:
            weights.append(0.0)
            continue
        theta = solve(linear_program(problem, coef), options)
        if theta.status not in _USABLE:
            return _failed(instance, began, f"LP of Z{k} alone ended {theta.detail}")
        stats[f"theta{k}"] = theta.objective
        if theta.objective <= 0:
            _LOG.warning("caspian: optimum of Z%d is 0; its weight is set to 0", k)
            weights.append(0.0)
        else:
            weights.append(omega / theta.objective)
    combined = sum(
        (w * coef for w, coef in zip(weights, objectives, strict=True)), np.zeros(len(starts))
    )
    if len(starts) and np.any(combined > 0):
        relaxed = solve(linear_program(problem, combined), options)
        if relaxed.status not in _USABLE:
            return _failed(instance, began, f"weighted LP ended {relaxed.detail}")
        x_bar = relaxed.values
        stats["lp_objective"] = relaxed.objective
    else:
        x_bar = np.zeros(len(starts))
    b = np.bincount(starts.job, weights=x_bar, minlength=arrays.n_jobs)
    order = np.lexsort((np.arange(arrays.n_jobs), -b))
    bounds = np.searchsorted(starts.job, np.arange(arrays.n_jobs + 1))
    ledger = CapacityLedger(arrays)
    chosen: dict[int, tuple[int, int]] = {}
    notes: dict[int, str] = {}
    for rank, i in enumerate(order):
        i = int(i)
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        cluster, start = starts.cluster[lo:hi], starts.start_slot[lo:hi]
        # decreasing coefficient; ties: earlier start, then the cluster listed first
        scan = np.lexsort((cluster, start, -combined[lo:hi]))
        fit = np.zeros(hi - lo, dtype=bool)  # Algorithm 3's fit(), for all pairs at once
        for c in np.unique(cluster):
            mask = cluster == c
            fit[mask] = ledger.fitting_starts(i, int(c))[start[mask]]
        hits = scan[fit[scan]]
        if hits.size:
            pos = int(hits[0])
            c, s = int(cluster[pos]), int(start[pos])
            ledger.place(i, c, s)
            chosen[i] = (c, s)
            notes[i] = (
                f"caspian: rank {rank + 1} by LP allocation b={b[i]:.3g}; first fitting "
                f"start in decreasing Z (coefficient {combined[lo + pos]:.4g})"
            )
        else:
            notes[i] = (
                "caspian: no (cluster, start) with room before the horizon; waits for a later round"
            )
    return result_of(
        instance,
        "caspian",
        chosen,
        seconds=time.perf_counter() - began,
        notes=notes,
        stats=stats,
    )


def _failed(instance: Instance, began: float, why: str) -> PolicyResult:
    notes = dict.fromkeys(range(len(instance.jobs)), f"caspian: {why}")
    return result_of(
        instance,
        "caspian",
        {},
        seconds=time.perf_counter() - began,
        status=PlanStatus.NO_SOLUTION,
        notes=notes,
    )
