"""HiGHS through highspy: LP (simplex, interior point, PDLP) and MILP with time limits and gap.

The only module of carbonshift that imports highspy. It takes a
:class:`~carbonshift.planning.problem.LinearProgram`, hands HiGHS the column-wise matrix as
arrays, and maps HiGHS's model status to :class:`~carbonshift.planning.types.SolveStatus`.
An infeasible or time-limited model is a status; only a solver failure (load, presolve,
solve or memory error) raises :class:`~carbonshift.errors.SolverError`.
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import highspy
import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from carbonshift.errors import InputError, SolverError, SolverMemoryError
from carbonshift.planning.problem import LinearProgram
from carbonshift.planning.types import SolveStatus

__all__ = ["AUTO_VERTEX_MAX_COLUMNS", "LpMethod", "Solution", "SolveOptions", "solve"]

FloatArray = npt.NDArray[np.float64]


class LpMethod(StrEnum):
    """HiGHS's LP algorithm.

    ``ipm`` is interior point WITHOUT crossover or presolve: an interior (not vertex)
    optimum, the fastest on the large start-time LPs (measured: 2,000 CJPS jobs, 137k
    columns, 10-15 s against > 100 s for dual or primal simplex). ``ipm-vertex`` adds
    crossover to a vertex: fewer fractional values, so better roundings (srr on CJPS n = 100,
    5 seeds: GRU 73.0 against 70.1) at little cost on small models. ``auto`` (the policies'
    default) takes ``ipm-vertex`` up to :data:`AUTO_VERTEX_MAX_COLUMNS` columns and ``ipm``
    above. ``choose`` lets HiGHS pick.
    """

    AUTO = "auto"
    CHOOSE = "choose"
    SIMPLEX = "simplex"
    IPM = "ipm"
    IPM_VERTEX = "ipm-vertex"
    PDLP = "pdlp"


#: ``auto`` crosses over to a vertex up to this many columns (70k columns took 2.6 s
#: without crossover and noticeably longer with it on the development machine).
AUTO_VERTEX_MAX_COLUMNS = 50_000


@dataclass(frozen=True, slots=True)
class SolveOptions:
    """``time_limit_s`` (seconds, wall: HiGHS's ``time_limit``), ``cpu_limit_s`` (CPU seconds
    of the thread that calls :func:`solve`, ``time.thread_time``; None: none), ``mip_gap``
    (relative), ``threads`` (1 keeps runs reproducible and leaves cores to others; the CPU
    limit assumes HiGHS solves on the calling thread, as it does with 1), ``max_nodes`` (MILP
    branch-and-bound nodes; None: no limit; a limit that binds before the time limits keeps
    the answer independent of the machine), ``mip_restart`` (whether HiGHS may restart a
    MILP's search after fixing columns at the root: off, small MILPs solve several times
    faster, measured), ``mip_rens`` (HiGHS's RENS heuristic at the root; on one 792-column
    sub-MILP of ten-zone 300, 12,131 of the root's 14,503 simplex iterations were RENS's
    and RINS's sub-MIPs; with RENS off and RINS on, 60 s of step 7h's sub-MILPs saved
    5,213 g there against 643 g with both on, bench/planner.md (y)).
    ``presolve``, ``scaling`` (HiGHS's own simplex scaling) and ``row_scaling`` (ours: each
    row by the power of two that brings its largest coefficient near 1, so that HiGHS's
    absolute tolerances act relative to the row) may be turned off for a model scaled by
    construction on which they cost more than they save (the class LP's flow form,
    planning/aggregate.py: trace 10,000 jobs, 1.3 s of dual simplex with them against 0.4 s
    without).
    ``ipm_tolerance`` (relative; None: HiGHS's own), with ``ipm-vertex`` only: the interior
    point stops at this optimality tolerance without crossing over, and HiGHS's crossover
    then runs from its solution (``Highs.crossover``). With crossover on, IPX first runs on
    to a tighter tolerance of its own: on the core LP of ten-zone 10,000 jobs, 1e-7 takes
    31-39 interior point iterations instead of 35-47 and 8-18 % less CPU, to the same
    optimum (bench/planner.md (q)). Where that crossover ends off an optimal vertex the
    answer says so: ``feasible`` with ``vertex`` (a basic feasible solution that HiGHS
    does not call optimal: on one core LP of five, dual infeasibilities up to 3.5e-7 and
    the objective within 1e-9 of the optimum), or no vertex where it fails."""

    integer: bool = False
    method: LpMethod = LpMethod.CHOOSE
    time_limit_s: float = 60.0
    cpu_limit_s: float | None = None
    mip_gap: float = 1e-4
    threads: int = 1
    presolve: bool = True
    scaling: bool = True
    row_scaling: bool = True
    max_nodes: int | None = None
    mip_restart: bool = True
    mip_rens: bool = True
    ipm_tolerance: float | None = None

    def __post_init__(self) -> None:
        if not self.time_limit_s > 0:
            raise InputError(f"time_limit_s is {self.time_limit_s} s; give a number of seconds > 0")
        if self.cpu_limit_s is not None and not self.cpu_limit_s > 0:
            raise InputError(
                f"cpu_limit_s is {self.cpu_limit_s} s; give a number of CPU seconds > 0, or None"
            )
        if not 0 <= self.mip_gap < 1:
            raise InputError(f"mip_gap is {self.mip_gap}; give a relative gap in [0, 1)")
        if self.ipm_tolerance is not None and not 1e-12 <= self.ipm_tolerance < 1:
            raise InputError(
                f"ipm_tolerance is {self.ipm_tolerance}; give a relative tolerance in "
                "[1e-12, 1), or None for HiGHS's own"
            )


@dataclass(frozen=True, slots=True, eq=False)
class Solution:
    """A back end's answer. ``values`` is empty unless the status is OPTIMAL or FEASIBLE.

    ``bound`` is the proved bound on the objective (the LP optimum, or the MILP dual bound);
    ``gap`` the relative MIP gap HiGHS reports (0 for an LP at optimum); ``lp_iterations``
    the simplex iterations spent (a MILP's over all its LPs): a measure of work that, with
    one thread, does not depend on the machine. ``reduced_costs`` and ``row_duals`` (LP
    only, when HiGHS has a dual solution; else empty): per column and per row of the model
    as given (our row scaling undone), in the objective's units, HiGHS's sign convention
    (reduced cost ``c - A^T y``, row dual ``y``). ``vertex``: an LP's solution (optimal or
    feasible) is basic (HiGHS holds a valid basis: simplex, or interior point with
    crossover), not interior.
    """

    status: SolveStatus
    values: FloatArray
    objective: float
    bound: float
    gap: float
    seconds: float
    detail: str = ""
    reduced_costs: FloatArray = field(default_factory=lambda: np.zeros(0))
    row_duals: FloatArray = field(default_factory=lambda: np.zeros(0))
    lp_iterations: int = 0
    vertex: bool = False


_STATUS = {
    highspy.HighsModelStatus.kOptimal: SolveStatus.OPTIMAL,
    highspy.HighsModelStatus.kInfeasible: SolveStatus.INFEASIBLE,
    highspy.HighsModelStatus.kUnbounded: SolveStatus.UNBOUNDED,
    highspy.HighsModelStatus.kUnboundedOrInfeasible: SolveStatus.UNBOUNDED,
    highspy.HighsModelStatus.kTimeLimit: SolveStatus.NO_SOLUTION,
    highspy.HighsModelStatus.kIterationLimit: SolveStatus.NO_SOLUTION,
    highspy.HighsModelStatus.kSolutionLimit: SolveStatus.NO_SOLUTION,
    highspy.HighsModelStatus.kInterrupt: SolveStatus.NO_SOLUTION,
    highspy.HighsModelStatus.kObjectiveBound: SolveStatus.NO_SOLUTION,
    highspy.HighsModelStatus.kObjectiveTarget: SolveStatus.NO_SOLUTION,
    highspy.HighsModelStatus.kUnknown: SolveStatus.NO_SOLUTION,
}


#: HiGHS's interrupt callbacks: each simplex iteration of an LP, each step of IPX (interior
#: point and crossover), and a MILP's checks of its limits (at every node and in the root's
#: loops; a MILP's own LPs do not call the simplex one).
_MIP_INTERRUPT = highspy.cb.HighsCallbackType.kCallbackMipInterrupt
_INTERRUPTS = (
    highspy.cb.HighsCallbackType.kCallbackSimplexInterrupt,
    highspy.cb.HighsCallbackType.kCallbackIpmInterrupt,
    _MIP_INTERRUPT,
)


class _CpuGuard:
    """Interrupts a HiGHS solve once the thread that runs it has spent ``limit_s`` CPU
    seconds (``time.thread_time``) since :meth:`arm`. Not wall time, which on a loaded
    machine runs far ahead of CPU time (a clairvoyant Caspian plan at load 7: 53 s of wall
    for 7.6 s of CPU), nor the process's CPU, which counts a server's other threads too.
    HiGHS calls the callback on the thread that called ``run`` (``threads = 1``; measured,
    HiGHS 1.16), so ``thread_time`` there is the solve's own CPU."""

    __slots__ = ("calls", "fired", "limit_s", "stop_at_s")

    #: An LP's callbacks read the clock once in this many (``thread_time`` is a system call,
    #: 2 us on the development VM, and HiGHS calls back at each simplex iteration and, in
    #: IPX, each crossover step: 24k times in a 10,000-job plan); a MILP's, each time.
    LP_STRIDE = 16

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.stop_at_s = math.inf
        self.fired = False
        self.calls = 0

    def attach(self, highs: Any) -> None:
        # highspy's own wrapper (Highs.cbSimplexInterrupt += ...) builds an event object per
        # call; the callback runs every simplex iteration, so it is set on the core directly
        highspy._Highs.setCallback(highs, self._callback, None)  # type: ignore[attr-defined]
        for kind in _INTERRUPTS:
            highs.startCallback(kind)

    def arm(self) -> None:
        self.stop_at_s = time.thread_time() + self.limit_s

    def _callback(self, kind: Any, _message: str, _out: Any, data_in: Any, _user: Any) -> None:
        if kind != _MIP_INTERRUPT:
            self.calls += 1
            if self.calls % self.LP_STRIDE:
                return
        if time.thread_time() >= self.stop_at_s:
            data_in.user_interrupt = True
            self.fired = True


_FIRST_MADE = threading.Lock()
_made_one = False


def _new_highs() -> Any:
    """A ``highspy.Highs``; the first one of the process is made with C stdout sent to stderr.

    HiGHS prints its banner ("Running HiGHS ...") on stdout when the first instance is made,
    before any option can silence it, which would corrupt ``--format json`` output. Later
    instances print nothing, so fd 1 is redirected only once.
    """
    global _made_one
    with _FIRST_MADE:
        if _made_one:
            return highspy.Highs()  # type: ignore[no-untyped-call]
        _made_one = True
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            os.dup2(2, 1)
            highs = highspy.Highs()  # type: ignore[no-untyped-call]
            ctypes.CDLL(None).fflush(None)  # the C buffer, before fd 1 is put back
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        return highs


#: HiGHS's limits: matrix entries of magnitude >= ``large_matrix_value`` (1e15) make it refuse
#: the model, entries at or below ``small_matrix_value`` (set to 1e-12, its lowest) are dropped,
#: and costs or bounds >= ``infinite_cost`` (1e20) count as infinite. Objectives are scaled by a
#: power of two so their largest coefficient stays at most :data:`_LARGEST_COST` (grams of huge
#: but valid instances reach 1e20), and the objective and bound are scaled back.
_LARGEST_COEFFICIENT = 1e15
_SMALLEST_COEFFICIENT = 1e-12
_LARGEST_COST = 1e12

#: What each part of a :class:`LinearProgram` holds, for messages (see planning/problem.py).
_PARTS = {
    "matrix": "demands (matrix coefficients, resource units per job)",
    "row_upper": "free capacities (row bounds, resource units)",
    "objective": "objective coefficients (grams, or weights derived from grams)",
    "column_upper": "column upper bounds (shares, or resource units)",
}


def _span(values: FloatArray) -> str:
    magnitudes = np.abs(values[np.isfinite(values) & (values != 0)])
    if magnitudes.size == 0:
        return "0"
    return f"{float(magnitudes.min()):.3g}..{float(magnitudes.max()):.3g}"


def _ranges(lp: LinearProgram) -> str:
    parts = {
        "matrix": np.asarray(lp.matrix.data, dtype=float),
        "row_upper": np.asarray(lp.row_upper, dtype=float),
        "objective": np.asarray(lp.objective, dtype=float),
    }
    return ", ".join(f"{_PARTS[name]} spanning {_span(v)}" for name, v in parts.items())


def _check_scaling(lp: LinearProgram) -> None:
    """Refuse, with the offending range and the fix, a model HiGHS would refuse or misread.

    The input formats already bound every number, so this catches callers of the Python API
    and combinations the per-field limits let through (grams beyond 1e20 from huge watts,
    intensities, demands and runtimes together).
    """
    fix = "rescale units (e.g. cpu not millicpu, kW not W) so values lie within 1e-9..1e12"
    checks = [
        ("matrix", np.asarray(lp.matrix.data, dtype=float), _LARGEST_COEFFICIENT, False),
        ("row_upper", np.asarray(lp.row_upper, dtype=float), np.inf, True),
        ("objective", np.asarray(lp.objective, dtype=float), np.inf, False),
    ]
    if lp.column_upper is not None:
        checks.append(("column_upper", np.asarray(lp.column_upper, dtype=float), np.inf, True))
    for name, values, most, inf_ok in checks:
        finite = np.isfinite(values)
        bad_nan = np.isnan(values)
        if bad_nan.any() or (not inf_ok and not finite.all()):
            shown = values[~finite][0]
            raise InputError(
                f"the planning model's {_PARTS[name]} contain {shown}; give finite numbers"
            )
        magnitudes = np.abs(values[finite])
        if magnitudes.size and float(magnitudes.max()) >= most:  # row bounds: never
            raise InputError(
                f"the planning model's {_PARTS[name]} span {_span(values)}, beyond the solver's "
                f"limit of {most:.0e}; {fix}"
            )
        small = magnitudes[(magnitudes > 0) & (magnitudes <= _SMALLEST_COEFFICIENT)]
        if name == "matrix" and small.size:
            raise InputError(
                f"the planning model's {_PARTS[name]} span {_span(values)}, below the solver's "
                f"smallest coefficient {_SMALLEST_COEFFICIENT:.0e}; {fix}"
            )


def _row_scale(matrix: sp.csc_matrix) -> FloatArray:
    """Per row, a power of two bringing its largest coefficient near 1.

    HiGHS's feasibility tolerance is absolute (1e-7), so a row of 1e-9 demands against a 1e-9
    capacity would be met by any plan; scaled, the tolerance is relative to the row.
    """
    rows = sp.csr_matrix(matrix)
    largest = np.zeros(rows.shape[0])
    if rows.nnz:
        counts = np.diff(rows.indptr)
        filled = counts > 0
        largest[filled] = np.maximum.reduceat(np.abs(rows.data), rows.indptr[:-1][filled])
    scale = np.ones(rows.shape[0])
    used = largest > 0
    scale[used] = np.exp2(-np.round(np.log2(largest[used])))
    return scale


def _cost_scale(objective: FloatArray) -> float:
    """A power of two (exact in floating point) bringing the largest cost to at most 1e12."""
    largest = float(np.max(np.abs(objective))) if objective.size else 0.0
    if largest <= _LARGEST_COST:
        return 1.0
    return float(2.0 ** -math.ceil(math.log2(largest / _LARGEST_COST)))


def solve(
    lp: LinearProgram, options: SolveOptions | None = None, *, start: FloatArray | None = None
) -> Solution:
    """Solve ``lp`` (as a MILP when ``options.integer``) and map the outcome to our status.

    ``start``: a feasible value of every column, handed to HiGHS as the MILP's first
    incumbent (ignored for an LP), so that the answer is never worse than it.

    ``options.cpu_limit_s`` stops HiGHS as its wall ``time_limit_s`` does (the same status:
    ``feasible`` with the best incumbent, the MILP's dual bound kept, or ``no_solution``),
    but counts the CPU seconds of this thread: the same solve stops at the same point
    whatever else the machine runs. HiGHS checks it at each simplex or interior point
    iteration and at each MILP node, not inside a MILP's root LP or crossover."""
    options = options or SolveOptions()
    began = time.perf_counter()
    n_col = lp.n_columns
    if n_col == 0:
        return Solution(SolveStatus.OPTIMAL, np.zeros(0), 0.0, 0.0, 0.0, 0.0)
    _check_scaling(lp)
    highs = _new_highs()
    highs.setOptionValue("output_flag", False)
    # Keep demands down to 1e-9 units in the matrix (HiGHS drops |a| <= 1e-9 by default).
    highs.setOptionValue("small_matrix_value", _SMALLEST_COEFFICIENT)
    highs.setOptionValue("time_limit", float(options.time_limit_s))
    highs.setOptionValue("threads", int(options.threads))
    if not options.presolve:
        highs.setOptionValue("presolve", "off")
    if not options.scaling:
        highs.setOptionValue("simplex_scale_strategy", 0)
    # with ipm_tolerance the interior point stops there and HiGHS's crossover runs apart
    apart_tolerance = (
        options.ipm_tolerance
        if not options.integer and options.method is LpMethod.IPM_VERTEX
        else None
    )
    if options.integer:
        highs.setOptionValue("mip_rel_gap", float(options.mip_gap))
        if options.max_nodes is not None:
            highs.setOptionValue("mip_max_nodes", int(options.max_nodes))
        if not options.mip_restart:
            highs.setOptionValue("mip_allow_restart", False)
        if not options.mip_rens:
            highs.setOptionValue("mip_heuristic_run_rens", False)
    elif options.method is LpMethod.IPM or (
        options.method is LpMethod.AUTO and n_col > AUTO_VERTEX_MAX_COLUMNS
    ):
        _interior_point(highs)
        highs.setOptionValue("run_crossover", "off")
        highs.setOptionValue("presolve", "off")
    elif options.method in (LpMethod.IPM_VERTEX, LpMethod.AUTO):
        _interior_point(highs)
        highs.setOptionValue("run_crossover", "on" if apart_tolerance is None else "off")
        if apart_tolerance is not None:  # crossover apart, after the interior point (below)
            highs.setOptionValue("ipm_optimality_tolerance", float(apart_tolerance))
    else:
        highs.setOptionValue("solver", str(options.method.value))
    model = highspy.HighsLp()
    model.num_col_ = n_col
    model.num_row_ = int(lp.matrix.shape[0])
    cost_scale = _cost_scale(lp.objective)
    model.col_cost_ = np.ascontiguousarray(lp.objective * cost_scale, dtype=np.float64)
    model.col_lower_ = np.zeros(n_col)
    model.col_upper_ = (
        np.ones(n_col)
        if lp.column_upper is None
        else np.ascontiguousarray(lp.column_upper, dtype=np.float64)
    )
    row_scale = _row_scale(lp.matrix) if options.row_scaling else np.ones(lp.matrix.shape[0])
    if lp.row_lower is None:
        model.row_lower_ = np.full(model.num_row_, -highspy.kHighsInf)
    else:
        lower = np.asarray(lp.row_lower, dtype=np.float64) * row_scale
        model.row_lower_ = np.where(np.isfinite(lower), lower, -highspy.kHighsInf)
    model.row_upper_ = np.ascontiguousarray(lp.row_upper * row_scale, dtype=np.float64)
    model.sense_ = highspy.ObjSense.kMaximize if lp.maximise else highspy.ObjSense.kMinimize
    matrix = (sp.diags(row_scale) @ lp.matrix).tocsc()
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.num_col_ = n_col
    model.a_matrix_.num_row_ = model.num_row_
    model.a_matrix_.start_ = matrix.indptr.astype(np.int32)
    model.a_matrix_.index_ = matrix.indices.astype(np.int32)
    model.a_matrix_.value_ = matrix.data.astype(np.float64)
    if options.integer:
        integrality = [highspy.HighsVarType.kContinuous] * n_col
        integrality[: lp.n_integer] = [highspy.HighsVarType.kInteger] * lp.n_integer
        model.integrality_ = integrality
    if highs.passModel(model) == highspy.HighsStatus.kError:
        raise InputError(
            f"HiGHS refused the model ({n_col} columns) with {_ranges(lp)}; "
            "rescale units so that these lie within 1e-9..1e12"
        )
    if options.integer and start is not None:
        if start.shape != (n_col,):
            raise InputError(f"start has shape {start.shape}; give one value per column ({n_col})")
        given = highspy.HighsSolution()
        given.col_value = np.ascontiguousarray(start, dtype=np.float64)
        given.value_valid = True
        highs.setSolution(given)
    guard = None if options.cpu_limit_s is None else _CpuGuard(options.cpu_limit_s)
    if guard is not None:
        guard.attach(highs)
        guard.arm()
    highs.run()
    model_status = highs.getModelStatus()
    if apart_tolerance is not None and model_status == highspy.HighsModelStatus.kOptimal:
        highs.crossover(highs.getSolution())
        model_status = highs.getModelStatus()
    if guard is not None and guard.fired and model_status == highspy.HighsModelStatus.kInterrupt:
        model_status = highspy.HighsModelStatus.kTimeLimit  # our limit, not a user's stop
    info = highs.getInfo()
    seconds = time.perf_counter() - began
    status = _STATUS.get(model_status)
    if status is None:
        if model_status == highspy.HighsModelStatus.kModelEmpty:
            return Solution(SolveStatus.OPTIMAL, np.zeros(n_col), 0.0, 0.0, 0.0, seconds)
        if model_status == highspy.HighsModelStatus.kMemoryLimit:
            raise SolverMemoryError(
                f"HiGHS ran out of memory on a model of {n_col} columns; give the process "
                "more memory or plan fewer jobs at once"
            )
        raise SolverError(
            f"HiGHS failed with model status {highs.modelStatusToString(model_status)!r} on a "
            f"model of {n_col} columns; retry with another method or report it"
        )
    has_primal = info.primal_solution_status == highspy.kSolutionStatusFeasible
    if status is SolveStatus.NO_SOLUTION and has_primal:
        status = SolveStatus.FEASIBLE
    values = np.zeros(0)
    reduced = np.zeros(0)
    row_duals = np.zeros(0)
    objective = float("nan")
    if status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        solution = highs.getSolution()
        values = np.asarray(solution.col_value, dtype=float)
        objective = float(info.objective_function_value) / cost_scale
        if not options.integer and solution.dual_valid:
            # column scaling is ours only through the objective's power of two
            reduced = np.asarray(solution.col_dual, dtype=float) / cost_scale
            row_duals = np.asarray(solution.row_dual, dtype=float) * row_scale / cost_scale
    vertex = (
        not options.integer
        and status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE)
        and info.basis_validity == highspy.kBasisValidityValid
    )
    if options.integer:
        bound = float(info.mip_dual_bound) / cost_scale
        gap = float(info.mip_gap)
    else:
        bound = objective if status is SolveStatus.OPTIMAL else float("nan")
        gap = 0.0 if status is SolveStatus.OPTIMAL else float("nan")
    return Solution(
        status=status,
        values=values,
        objective=objective,
        bound=bound,
        gap=gap,
        seconds=seconds,
        detail=highs.modelStatusToString(model_status),
        reduced_costs=reduced,
        row_duals=row_duals,
        lp_iterations=max(0, int(info.simplex_iteration_count)),
        vertex=vertex,
    )


def _interior_point(highs: Any) -> None:
    """HiGHS's interior point: IPX by name where HiGHS knows the name (1.12 and later:
    ``ipm`` may pick its newer HiPO solver, which can run threads of its own where built
    with it), else ``ipm``. With ``threads = 1`` IPX and its crossover run on the calling
    thread (measured, HiGHS 1.16: CPU seconds equal wall seconds, no thread added)."""
    if highs.setOptionValue("solver", "ipx") != highspy.HighsStatus.kOk:
        highs.setOptionValue("solver", "ipm")
