"""An independent checker of plans and bounds: CONTRACTS.md read afresh, no carbonshift code.

Outside evaluators score our plans against bounds they compute themselves, on instances we
have not seen. This module is our own such evaluator. It imports nothing from
``carbonshift`` (a test keeps it so): it reads the planning instance and the plan as the JSON
that CONTRACTS.md sections 1 and 2 define, recomputes every number from the instance alone,
and solves its own time-indexed LP and MILP with highspy.

:func:`check` returns a :class:`Report`: the rules broken (``violations``, each a sentence
naming the job, cluster, slot and value) and the figures it computed. The rules:

- ``listing``: every job once, in ``assignments`` or ``unscheduled``; no unknown job;
- ``placement``: a known, allowed cluster; ``release_slot <= s`` and ``s + runtime <=
  horizon`` (CONTRACTS.md section 1);
- ``capacity``: per cluster, resource and slot, the summed demand at most the capacity
  (constant or per slot);
- ``critical``: a critical job starts at its earliest start that fits over all its allowed
  clusters, with the other critical jobs' room held (ties: fewer grams), and is left out
  only when no start of it fits (issue 13). Holding every other critical job, not only the
  ones placed before it, makes the rule independent of the order a policy placed them in:
  a job placed earlier did not fit earlier with less held, so it does not with more;
- ``left_out``: no unscheduled job has a start that fits beside the plan's jobs;
- ``optimal`` (small instances, ``optimal=True``): with the critical jobs where the plan put
  them, the plan leaves out no more jobs, is no later (slots summed) and, with both equal,
  is no heavier (operational + embodied grams) than the MILP optimum of that order;
- ``bound``: ``bound.lower_bound_g`` is at most the all-on-time LP optimum, and null exactly
  when that LP is infeasible; ``gap`` is ``(grams - B) / B`` (null when B is null or 0);
- ``scores``: a plan's optional ``scores`` agree with the recomputation.

Tolerances are CONTRACTS.md's: relative 1e-6 on recomputed numbers, 1e-9 on zeros.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import highspy
import numpy as np
import scipy.sparse as sp

__all__ = [
    "Instance",
    "Report",
    "check",
    "grams_of",
    "lp_on_time",
    "parse_instance",
]

REL = 1e-6
ZERO = 1e-9
#: "fits" (left out, critical, the LP's and MILP's capacity rows) is near exact: a start
#: that needs 1 unit more than 1e12 free does not fit, though the capacity rule forgives a
#: plan that relative 1e-9 over (stress shape huge_demand: window was blamed for leaving
#: out a job that fitted only by that forgiveness)
FIT = 1e-13
_INF = highspy.kHighsInf


@dataclass(frozen=True, slots=True)
class Job:
    id: str
    demand: dict[str, float]
    runtime: int
    release: int
    deadline: int
    allowed: frozenset[str]
    critical: bool


@dataclass(frozen=True, slots=True)
class Instance:
    """CONTRACTS.md section 1 with its defaults filled in."""

    horizon: int
    slot_h: float
    resources: tuple[str, ...]
    clusters: tuple[str, ...]
    capacity: dict[str, dict[str, list[float]]]  # cluster -> resource -> per slot
    watts: dict[str, dict[str, float]]
    pue: dict[str, float]
    embodied: dict[str, dict[str, float]]
    carbon: dict[str, list[float]]
    jobs: tuple[Job, ...]

    def grams(self, job: Job, cluster: str, start: int) -> tuple[float, float]:
        """(operational, embodied) grams of ``job`` started at ``start`` on ``cluster``."""
        kw = sum(
            d * self.watts[cluster].get(k, 0.0) / 1000.0 * self.pue[cluster]
            for k, d in job.demand.items()
        )
        ci = sum(self.carbon[cluster][start : start + job.runtime])
        embodied = sum(d * self.embodied[cluster].get(k, 0.0) for k, d in job.demand.items())
        return kw * self.slot_h * ci, embodied * job.runtime * self.slot_h

    def starts(self, job: Job, *, on_time: bool = False) -> list[tuple[str, int]]:
        """Every (cluster, start) the contract allows, that fits on an empty cluster."""
        out = []
        last = self.horizon - job.runtime
        if on_time:
            last = min(last, job.deadline - job.runtime)
        for c in self.clusters:
            if c not in job.allowed:
                continue
            for s in range(job.release, last + 1):
                if self.fits(job, c, s, None):
                    out.append((c, s))
        return out

    def fits(self, job: Job, cluster: str, start: int, used: Usage | None) -> bool:
        for k, d in job.demand.items():
            if d <= 0:
                continue
            cap = self.capacity[cluster].get(k)
            for t in range(start, start + job.runtime):
                room = 0.0 if cap is None else cap[t]
                if used is not None:
                    room -= used.get((cluster, k, t), 0.0)
                if d > room + FIT * max(1.0, abs(room)):
                    return False
        return True


Usage = dict[tuple[str, str, int], float]


def _capacity(value: Any, horizon: int) -> list[float]:
    if isinstance(value, list):
        return [float(v) for v in value]
    return [float(value)] * horizon


def parse_instance(doc: Mapping[str, Any]) -> Instance:
    """The instance JSON (CONTRACTS.md section 1) with its defaults."""
    horizon = int(doc["horizon_slots"])
    clusters = tuple(c["name"] for c in doc["clusters"])
    jobs = []
    for j in doc["jobs"]:
        allowed = j.get("allowed_clusters")
        jobs.append(
            Job(
                id=str(j["id"]),
                demand={k: float(v) for k, v in j["demand"].items()},
                runtime=int(j["runtime_slots"]),
                release=int(j.get("release_slot", 0)),
                deadline=int(j.get("deadline_slot", horizon)),
                allowed=frozenset(clusters if allowed is None else allowed),
                critical=bool(j.get("critical", False)),
            )
        )
    return Instance(
        horizon=horizon,
        slot_h=float(doc["slot_minutes"]) / 60.0,
        resources=tuple(doc["resources"]),
        clusters=clusters,
        capacity={
            c["name"]: {k: _capacity(v, horizon) for k, v in c["capacity"].items()}
            for c in doc["clusters"]
        },
        watts={
            c["name"]: {k: float(v) for k, v in c["watts_per_unit"].items()}
            for c in doc["clusters"]
        },
        pue={c["name"]: float(c.get("pue", 1.0)) for c in doc["clusters"]},
        embodied={
            c["name"]: {k: float(v) for k, v in (c.get("embodied_g_per_unit_hour") or {}).items()}
            for c in doc["clusters"]
        },
        carbon={c: [float(v) for v in doc["carbon_g_per_kwh"][c]] for c in clusters},
        jobs=tuple(jobs),
    )


def grams_of(inst: Instance, assignments: Iterable[tuple[Job, str, int]]) -> tuple[float, float]:
    """(operational_g, embodied_g) of assignments, as CONTRACTS.md section 2 writes them."""
    operational = embodied = 0.0
    for job, cluster, start in assignments:
        o, e = inst.grams(job, cluster, start)
        operational += o
        embodied += e
    return operational, embodied


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL * max(abs(a), abs(b)) + ZERO


# --- the LP and MILP, built here with scipy and solved with highspy ----------------------


@dataclass(frozen=True, slots=True)
class _Solved:
    status: str  # "optimal", "infeasible", "other"
    objective: float
    x: np.ndarray


def _solve(
    cost: np.ndarray,
    matrix: sp.csc_matrix,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray,
    *,
    integer: bool,
) -> _Solved:
    n_col = len(cost)
    highs = highspy.Highs()  # type: ignore[no-untyped-call]
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", 1)
    highs.setOptionValue("time_limit", 60.0)
    if integer:
        highs.setOptionValue("mip_rel_gap", 0.0)
        highs.setOptionValue("mip_abs_gap", 0.0)
    model = highspy.HighsLp()
    model.num_col_ = n_col
    model.num_row_ = len(row_lower)
    model.col_cost_ = np.asarray(cost, dtype=np.float64)
    model.col_lower_ = np.asarray(col_lower, dtype=np.float64)
    model.col_upper_ = np.ones(n_col)
    model.row_lower_ = np.asarray(row_lower, dtype=np.float64)
    model.row_upper_ = np.asarray(row_upper, dtype=np.float64)
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.num_col_ = n_col
    model.a_matrix_.num_row_ = len(row_lower)
    model.a_matrix_.start_ = matrix.indptr.astype(np.int32)
    model.a_matrix_.index_ = matrix.indices.astype(np.int32)
    model.a_matrix_.value_ = matrix.data.astype(np.float64)
    if integer:
        model.integrality_ = [highspy.HighsVarType.kInteger] * n_col
    highs.passModel(model)
    highs.run()
    status = highs.getModelStatus()
    if status == highspy.HighsModelStatus.kOptimal:
        value = float(highs.getInfo().objective_function_value)
        return _Solved("optimal", value, np.asarray(highs.getSolution().col_value))
    if status in (highspy.HighsModelStatus.kInfeasible,):
        return _Solved("infeasible", math.nan, np.zeros(0))
    if status == highspy.HighsModelStatus.kModelEmpty:
        return _Solved("optimal", 0.0, np.zeros(n_col))
    return _Solved("other:" + highs.modelStatusToString(status), math.nan, np.zeros(0))


@dataclass(frozen=True, slots=True)
class _Columns:
    job: list[int]
    cluster: list[str]
    start: list[int]


def _rows(
    inst: Instance,
    cols: _Columns,
    job_sum: tuple[float, float],
    extra: Sequence[tuple[np.ndarray, float, float]],
) -> tuple[sp.csc_matrix, np.ndarray, np.ndarray]:
    """One row per job (its columns sum within ``job_sum``), one per (cluster, resource,
    slot) with capacity, then ``extra`` rows (coefficients, lower, upper)."""
    n_col = len(cols.job)
    rows: list[int] = []
    colidx: list[int] = []
    vals: list[float] = []
    lower: list[float] = []
    upper: list[float] = []
    for i in range(len(inst.jobs)):
        r = len(lower)
        for col in range(n_col):
            if cols.job[col] == i:
                rows.append(r)
                colidx.append(col)
                vals.append(1.0)
        lower.append(job_sum[0])
        upper.append(job_sum[1])
    key_row: dict[tuple[str, str, int], int] = {}
    for col in range(n_col):
        job = inst.jobs[cols.job[col]]
        c, s = cols.cluster[col], cols.start[col]
        for k, d in job.demand.items():
            if d <= 0:
                continue
            for t in range(s, s + job.runtime):
                key = (c, k, t)
                if key not in key_row:
                    key_row[key] = len(lower)
                    cap = inst.capacity[c].get(k)
                    lower.append(-_INF)
                    room = 0.0 if cap is None else cap[t]
                    upper.append(room + FIT * max(1.0, room))
                rows.append(key_row[key])
                colidx.append(col)
                vals.append(d)
    for coef, lo, hi in extra:
        r = len(lower)
        for col in np.flatnonzero(coef).tolist():
            rows.append(r)
            colidx.append(col)
            vals.append(float(coef[col]))
        lower.append(lo)
        upper.append(hi)
    matrix = sp.csc_matrix((vals, (rows, colidx)), shape=(len(lower), n_col))
    return matrix, np.array(lower), np.array(upper)


def _columns(
    inst: Instance, *, on_time: bool, fixed: Mapping[int, tuple[str, int] | None]
) -> _Columns:
    cols = _Columns([], [], [])
    for i, job in enumerate(inst.jobs):
        if i in fixed:
            where = fixed[i]
            options = [] if where is None else [where]
        else:
            options = inst.starts(job, on_time=on_time)
        for c, s in options:
            cols.job.append(i)
            cols.cluster.append(c)
            cols.start.append(s)
    return cols


def _column_grams(inst: Instance, cols: _Columns) -> np.ndarray:
    return np.array(
        [
            sum(inst.grams(inst.jobs[j], c, s))
            for j, c, s in zip(cols.job, cols.cluster, cols.start, strict=True)
        ]
    )


def lp_on_time(inst: Instance) -> float | None:
    """The all-on-time time-indexed LP optimum (grams), None when it is infeasible: every
    job one unit over its on-time starts, capacity per cluster, resource and slot."""
    cols = _columns(inst, on_time=True, fixed={})
    if not inst.jobs:
        return 0.0
    if any(i not in set(cols.job) for i in range(len(inst.jobs))):
        return None
    matrix, lo, hi = _rows(inst, cols, (1.0, 1.0), ())
    out = _solve(_column_grams(inst, cols), matrix, lo, hi, np.zeros(len(cols.job)), integer=False)
    if out.status == "infeasible":
        return None
    if out.status != "optimal":
        raise RuntimeError(f"the independent LP ended {out.status}")
    return out.objective


@dataclass(frozen=True, slots=True)
class Optimum:
    """The lexicographic MILP optimum with some jobs fixed: fewest left out, then least
    lateness (slots), then least grams."""

    left_out: int
    lateness: int
    grams: float


def milp_optimum(
    inst: Instance, fixed: Mapping[int, tuple[str, int] | None], *, grams_level: bool = True
) -> Optimum:
    """Three MILPs, each keeping the previous level's optimum (without ``grams_level`` the
    first two: its grams are NaN)."""
    cols = _columns(inst, on_time=False, fixed=fixed)
    n_col = len(cols.job)
    if n_col == 0:
        return Optimum(len(inst.jobs), 0, 0.0)
    ones = np.ones(n_col)
    late = np.array(
        [
            max(0, s + inst.jobs[j].runtime - inst.jobs[j].deadline)
            for j, s in zip(cols.job, cols.start, strict=True)
        ],
        dtype=float,
    )
    grams = _column_grams(inst, cols)
    col_lower = np.array([1.0 if j in fixed else 0.0 for j in cols.job])

    def run(cost: np.ndarray, extra: list[tuple[np.ndarray, float, float]]) -> _Solved:
        matrix, lo, hi = _rows(inst, cols, (0.0, 1.0), extra)
        out = _solve(cost, matrix, lo, hi, col_lower, integer=True)
        if out.status != "optimal":
            raise RuntimeError(f"the independent MILP ended {out.status}")
        return out

    placed = round(-run(-ones, []).objective)
    extra = [(ones, placed - 0.5, _INF)]
    lateness = round(run(late, extra).objective)
    if not grams_level:
        return Optimum(len(inst.jobs) - placed, lateness, float("nan"))
    extra.append((late, -_INF, lateness + 0.5))
    return Optimum(len(inst.jobs) - placed, lateness, run(grams, extra).objective)


# --- the check -----------------------------------------------------------------------------


@dataclass(slots=True)
class Report:
    """What :func:`check` found: rule -> sentences, and the figures it computed."""

    violations: dict[str, list[str]] = field(default_factory=dict)
    operational_g: float = 0.0
    embodied_g: float = 0.0
    on_time: int = 0
    late: int = 0
    unscheduled: int = 0
    lateness_slots: int = 0
    lp_g: float | None = None
    optimum: Optimum | None = None

    def add(self, rule: str, text: str) -> None:
        self.violations.setdefault(rule, []).append(text)

    @property
    def ok(self) -> bool:
        return not self.violations

    def __str__(self) -> str:
        return "; ".join(f"{rule}: {' | '.join(texts)}" for rule, texts in self.violations.items())


def check(
    instance_doc: Mapping[str, Any],
    plan_doc: Mapping[str, Any],
    *,
    capacity: bool = True,
    critical: bool = True,
    left_out: bool = True,
    optimal: bool = False,
    bound: bool = True,
) -> Report:
    """Check ``plan_doc`` against ``instance_doc`` (both CONTRACTS.md JSON). The keyword
    switches turn off rules a policy does not promise (``rr`` may overload; ``asap`` gives
    critical jobs no precedence); ``optimal`` solves MILPs (small instances only)."""
    inst = parse_instance(instance_doc)
    report = Report()
    index = {job.id: i for i, job in enumerate(inst.jobs)}
    where: dict[int, tuple[str, int]] = {}
    seen: dict[str, int] = {}
    for a in plan_doc.get("assignments", []):
        seen[a["job"]] = seen.get(a["job"], 0) + 1
    for name in plan_doc.get("unscheduled", []):
        seen[name] = seen.get(name, 0) + 1
    for name, count in seen.items():
        if name not in index:
            report.add("listing", f"job {name!r} is not in the instance")
        elif count != 1:
            report.add("listing", f"job {name!r} is listed {count} times")
    for job in inst.jobs:
        if job.id not in seen:
            report.add("listing", f"job {job.id!r} is neither assigned nor unscheduled")

    used: Usage = {}
    for a in plan_doc.get("assignments", []):
        i = index.get(a["job"])
        if i is None:
            continue
        job, c, s = inst.jobs[i], a["cluster"], a["start_slot"]
        if c not in inst.clusters:
            report.add("placement", f"job {job.id!r} on unknown cluster {c!r}")
            continue
        if c not in job.allowed:
            report.add("placement", f"job {job.id!r} on {c!r}, not among its allowed clusters")
        if not isinstance(s, int) or s < job.release or s + job.runtime > inst.horizon:
            report.add(
                "placement",
                f"job {job.id!r} starts at slot {s}: release {job.release}, runtime "
                f"{job.runtime}, horizon {inst.horizon}",
            )
            continue
        where[i] = (c, s)
        for k, d in job.demand.items():
            for t in range(s, s + job.runtime):
                used[(c, k, t)] = used.get((c, k, t), 0.0) + d

    for (c, k, t), amount in sorted(used.items()):
        cap = inst.capacity[c].get(k)
        room = 0.0 if cap is None else cap[t]
        if capacity and amount > room + ZERO * max(1.0, room) and amount > 0:
            report.add("capacity", f"{c!r} slot {t}: {amount:g} {k} used of {room:g}")

    placed = [(inst.jobs[i], c, s) for i, (c, s) in where.items()]
    report.operational_g, report.embodied_g = grams_of(inst, placed)
    for job, _, s in placed:
        lateness = max(0, s + job.runtime - job.deadline)
        report.lateness_slots += lateness
        report.late += lateness > 0
    report.on_time = len(placed) - report.late
    report.unscheduled = len(inst.jobs) - len(placed)

    if critical:
        _check_critical(inst, where, report)
    if left_out:
        for i, job in enumerate(inst.jobs):
            if i in where:
                continue
            fitting = [(c, s) for c, s in inst.starts(job) if inst.fits(job, c, s, used)]
            if fitting:
                c, s = fitting[0]
                report.add(
                    "left_out", f"job {job.id!r} is unscheduled but fits on {c!r} at slot {s}"
                )
    if bound:
        _check_bound(inst, plan_doc, report)
    if optimal and "placement" not in report.violations and "listing" not in report.violations:
        fixed = {i: where.get(i) for i, job in enumerate(inst.jobs) if job.critical}
        best = milp_optimum(inst, fixed)
        report.optimum = best
        mine = (report.unscheduled, report.lateness_slots, report.operational_g + report.embodied_g)
        if mine[:2] > (best.left_out, best.lateness) or (
            mine[:2] == (best.left_out, best.lateness) and mine[2] > best.grams * (1 + REL) + ZERO
        ):
            report.add(
                "optimal",
                f"plan (left out, late slots, grams) = ({mine[0]}, {mine[1]}, {mine[2]:.9g}); "
                f"the MILP reaches ({best.left_out}, {best.lateness}, {best.grams:.9g})",
            )
    _check_scores(inst, plan_doc, report)
    return report


def _check_critical(inst: Instance, where: Mapping[int, tuple[str, int]], report: Report) -> None:
    for i, job in enumerate(inst.jobs):
        if not job.critical:
            continue
        others: Usage = {}
        for o, (c, s) in where.items():
            other = inst.jobs[o]
            if o == i or not other.critical:
                continue
            for k, d in other.demand.items():
                for t in range(s, s + other.runtime):
                    others[(c, k, t)] = others.get((c, k, t), 0.0) + d
        fitting = [(c, s) for c, s in inst.starts(job) if inst.fits(job, c, s, others)]
        if not fitting:
            continue  # left out is right (placed anyway: the capacity rule judges it)
        earliest = min(s for _, s in fitting)
        least = min(sum(inst.grams(job, c, s)) for c, s in fitting if s == earliest)
        if i not in where:
            report.add(
                "critical", f"critical job {job.id!r} is unscheduled but fits at slot {earliest}"
            )
            continue
        c, s = where[i]
        if s != earliest:
            report.add(
                "critical",
                f"critical job {job.id!r} starts at slot {s}; it fits at slot {earliest}",
            )
        elif sum(inst.grams(job, c, s)) > least * (1 + REL) + ZERO:
            report.add(
                "critical",
                f"critical job {job.id!r} at slot {s} on {c!r}: "
                f"{sum(inst.grams(job, c, s)):.9g} g where {least:.9g} g fits then",
            )


def _check_bound(inst: Instance, plan_doc: Mapping[str, Any], report: Report) -> None:
    given = plan_doc.get("bound")
    report.lp_g = lp_on_time(inst)
    if given is None:
        return
    b = given.get("lower_bound_g")
    gap = given.get("gap")
    grams = report.operational_g + report.embodied_g
    if report.lp_g is None:
        if b is not None:
            report.add("bound", f"lower_bound_g {b} g but the all-on-time LP is infeasible")
    elif b is None:
        report.add(
            "bound",
            f"lower_bound_g is null but the all-on-time LP is feasible ({report.lp_g:.9g} g)",
        )
    elif b > report.lp_g * (1 + REL) + 1e-6:
        report.add("bound", f"lower_bound_g {b:.9g} g is above the LP optimum {report.lp_g:.9g} g")
    if b is None or b == 0:
        if gap is not None:
            report.add("bound", f"gap {gap} with lower_bound_g {b}: should be null")
    elif gap is None or not _close(gap, (grams - b) / b):
        report.add("bound", f"gap {gap}; (grams - B) / B is {(grams - b) / b:.9g}")


def _check_scores(inst: Instance, plan_doc: Mapping[str, Any], report: Report) -> None:
    scores = plan_doc.get("scores")
    if not scores:
        return
    for key, want in (
        ("operational_g", report.operational_g),
        ("embodied_g", report.embodied_g),
    ):
        if key in scores and not _close(float(scores[key]), want):
            report.add("scores", f"{key} {scores[key]} where {want:.9g} is recomputed")
    for key, count in (
        ("on_time", report.on_time),
        ("late", report.late),
        ("unscheduled", report.unscheduled),
    ):
        if key in scores and int(scores[key]) != count:
            report.add("scores", f"{key} {scores[key]} where {count} is counted")
