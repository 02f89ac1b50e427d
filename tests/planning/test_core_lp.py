"""The core of the class LP (``carbonshift`` above 3,000 jobs where the class LP is too
large; docs/design/0002-carbonshift-planner.md, step 2b): its columns, and the policy with
it on against it off. Small instances take the large path here because ``_SMALL_JOBS`` and
``core_small_jobs`` are set to 0 and the LP limits to 0, so that the class LP counts as too
large."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carbonshift.domain import Instance, check_feasibility, score_plan
from carbonshift.errors import SolverError
from carbonshift.planning import run_policy
from carbonshift.planning.aggregate import class_columns, class_lp_options, column_index
from carbonshift.planning.backends.highs import LpMethod, Solution, SolveOptions, solve
from carbonshift.planning.lagrangian import classes_of, shape_costs, unit_grams
from carbonshift.planning.policies import carbonshift as cs
from carbonshift.planning.problem import arrays_of
from carbonshift.planning.types import PolicyResult, SolveStatus
from tests.builders import cluster, instance, job
from tests.planning.strategies import instances
from tests.planning.test_carbonshift import congested

_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: the class LP "too large", no exact MILP: what is left is the greedy, the ascent and the core
_LARGE_PATH = {
    "lp_max_columns": 0,
    "lp_columns_per_job": 0,
    "exact_max_starts": 0,
    "core_small_jobs": 0,
}


def _plan(inst: Instance, **params: Any) -> PolicyResult:
    with mock.patch.object(cs, "_SMALL_JOBS", 0):
        return run_policy("carbonshift", inst, {**_LARGE_PATH, **params})


def _key(inst: Instance, result: PolicyResult) -> tuple[int, int, float]:
    """Jobs left out, total lateness (slots), grams: the order plans are compared in."""
    jobs = {j.id: j for j in inst.jobs}
    late = sum(
        max(0, a.start_slot + jobs[a.job].runtime_slots - jobs[a.job].deadline_slot)
        for a in result.plan.assignments
    )
    return len(result.plan.unscheduled), late, score_plan(inst, result.plan).carbon_g


def _spread(n_jobs: int, seed: int) -> Instance:
    """Ten-zone in small: three clusters, jobs of 1-3 units and 1-3 slots with spread
    releases and windows, some allowed on one cluster only; capacity for 60 % of the work."""
    rng = np.random.default_rng(seed)
    horizon = 12
    names = ["a", "b", "c"]
    runtime = rng.integers(1, 4, n_jobs)
    release = rng.integers(0, horizon - 3, n_jobs)
    demand = rng.integers(1, 4, n_jobs)
    deadline = np.minimum(release + np.ceil(rng.uniform(1.5, 3.0, n_jobs) * runtime), horizon)
    capacity = float(np.ceil(np.sum(demand * runtime) / (0.6 * len(names) * horizon)))
    carbon = {n: [float(v) for v in rng.integers(50, 500, horizon)] for n in names}
    jobs = [
        job(
            f"j{i}",
            gpu=float(demand[i]),
            runtime=int(runtime[i]),
            release=int(release[i]),
            deadline=int(deadline[i]),
            allowed=[names[i % 3]] if i % 4 == 0 else None,
        )
        for i in range(n_jobs)
    ]
    return instance(jobs, [cluster(n, gpu=capacity) for n in names], carbon, horizon=horizon)


@settings(max_examples=30, deadline=None)
@given(instances(max_jobs=7, max_horizon=6, future=False))
def test_column_index_finds_every_column(inst: Instance) -> None:
    """``column_index`` of each column's (class, cluster, start) is that column."""
    classes = classes_of(arrays_of(inst))
    columns = class_columns(classes)
    index = column_index(classes, columns.klass, columns.cluster, columns.start_slot)
    assert np.array_equal(index, np.arange(len(columns)))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(0, 5), min_size=1, max_size=6),
    st.integers(1, 20),
    st.integers(0, 2**32 - 1),
)
def test_ranks_in_class_are_the_ranks_of_a_sort_by_class_then_price(
    sizes: list[int], count: int, seed: int
) -> None:
    """Each column's rank by price within its class, ties to the earlier column, capped at
    ``count``: as a sort by (class, price); small integral prices and some infinite ones
    (ties), classes without columns too."""
    rng = np.random.default_rng(seed)
    klass = np.repeat(np.arange(len(sizes)), sizes)
    priced = rng.integers(0, 3, klass.shape[0]).astype(float)
    priced[rng.random(klass.shape[0]) < 0.2] = np.inf
    first = np.searchsorted(klass, np.arange(len(sizes)))
    order = np.lexsort((priced, klass))
    want = np.empty(klass.shape[0], dtype=np.int64)
    want[order] = np.arange(klass.shape[0]) - first[klass[order]]
    got = cs._ranks_in_class(priced, klass, first, count)
    assert np.array_equal(got, np.minimum(want, count))


def test_the_core_keeps_the_cheapest_priced_columns_and_the_plans_starts() -> None:
    """Per class the ``per_class`` columns of least priced cost, and every on-time start of
    the plan given, whatever its price."""
    inst = _spread(40, 1)
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    columns = class_columns(classes)
    state = cs._place_all(arrays, classes, table, table)
    want_per_class = 2
    keep = cs._core_columns(arrays, classes, columns, table, state, want_per_class)
    kept = np.zeros(len(columns), dtype=bool)
    kept[keep] = True
    priced = table[classes.class_shape[columns.klass], columns.cluster, columns.start_slot]
    for c in range(classes.class_shape.shape[0]):
        mine = np.flatnonzero(columns.klass == c)
        cheapest = mine[np.argsort(priced[mine], kind="stable")[:want_per_class]]
        assert kept[cheapest].all()
    on_time = np.flatnonzero(
        (state.cluster >= 0) & (state.start + arrays.runtime_slots <= arrays.deadline_slot)
    )
    assert on_time.size > 0
    for j in on_time:
        hit = (
            (columns.klass[keep] == classes.klass[j])
            & (columns.cluster[keep] == state.cluster[j])
            & (columns.start_slot[keep] == state.start[j])
        )
        assert hit.sum() == 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_core_fixes_each_class_the_plan_puts_wholly_at_its_cheapest_priced_column(
    seed: int,
) -> None:
    """With ``fix_cheapest`` a class whose jobs the plan puts all, on time, at its column
    of least priced cost keeps that column only; every other class keeps what it keeps
    without it."""
    inst = _spread(40, seed)
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    table = shape_costs(classes, unit_grams(arrays))
    columns = class_columns(classes)
    state = cs._place_all(arrays, classes, table, table)
    plain = set(cs._core_columns(arrays, classes, columns, table, state, 2).tolist())
    fixed = set(
        cs._core_columns(arrays, classes, columns, table, state, 2, fix_cheapest=True).tolist()
    )
    priced = table[classes.class_shape[columns.klass], columns.cluster, columns.start_slot]
    n_fixed = n_kept = 0
    for c in range(classes.class_shape.shape[0]):
        mine = np.flatnonzero(columns.klass == c)
        cheapest = int(mine[np.argsort(priced[mine], kind="stable")[0]])
        jobs = np.flatnonzero(classes.klass == c)
        at = column_index(classes, classes.klass[jobs], state.cluster[jobs], state.start[jobs])
        on_time = state.start[jobs] + arrays.runtime_slots[jobs] <= arrays.deadline_slot[jobs]
        want_fixed = bool(np.all((state.cluster[jobs] >= 0) & on_time & (at == cheapest)))
        got = fixed & set(mine.tolist())
        if want_fixed:
            n_fixed += 1
            assert got == {cheapest}
        else:
            n_kept += 1
            assert got == plain & set(mine.tolist())
    assert n_fixed > 0
    assert n_kept > 0


def test_fixing_the_cheapest_classes_shrinks_the_core_lp_and_keeps_the_plan_feasible() -> None:
    """``core_fix_cheapest`` (on by default above 3,000 jobs) gives the core fewer columns;
    the plan stays feasible with every job on time, as with it off."""
    inst = _spread(60, 4)
    on = _plan(inst)
    off = _plan(inst, core_fix_cheapest=False)
    assert on.stats["core_columns"] < off.stats["core_columns"]
    for result in (on, off):
        assert check_feasibility(inst, result.plan) == []
        assert _key(inst, result)[:2] == (0, 0)


@_SETTINGS
@given(
    st.one_of(instances(max_jobs=7, max_horizon=6, future=False), congested()),
    st.sampled_from(cs.CORE_LP_METHODS),
    st.booleans(),
)
def test_the_core_path_is_feasible_and_never_worse_than_without_it(
    inst: Instance, method: str, fallback_last: bool
) -> None:
    """With the core on and off: plans that keep capacity, place every job that the plan
    without the core places, and never rise in (jobs left out, lateness); nor in grams,
    except with ``core_fallback_last`` by at most its 1 % (the fallback is skipped only for
    an on-time plan within 1 % of the certified bound)."""
    on = _plan(inst, core_lp_method=method, core_fallback_last=fallback_last)
    off = _plan(inst, core_columns=0)
    assert check_feasibility(inst, on.plan) == []
    assert check_feasibility(inst, off.plan) == []
    want_on, want_off = _key(inst, on), _key(inst, off)
    assert want_on[:2] <= want_off[:2]
    slack = cs._FALLBACK_GAP if fallback_last else 0.0
    if want_on[:2] == want_off[:2]:
        assert want_on[2] <= want_off[2] * (1 + slack + 1e-9) + 1e-9
    if on.bound is not None and on.bound.lower_bound_g is not None and want_on[:2] == (0, 0):
        # the bound is on plans with every job on time: a late plan may weigh less
        assert on.bound.lower_bound_g <= want_on[2] * (1 + 1e-9) + 1e-9


@pytest.mark.parametrize("fallback_last", [True, False], ids=["fallback-last", "fallback-first"])
@pytest.mark.parametrize("method", cs.CORE_LP_METHODS)
def test_the_core_path_runs_and_gains_on_a_spread_instance(
    method: str, fallback_last: bool
) -> None:
    """On ten-zone in small the core LP is solved (by either method, the price-guided
    placements before or after it), its rounding put on time, and the plan has fewer grams
    than without it, every job on time in both; the bound stays below the plan and below
    the whole class LP's optimum."""
    inst = _spread(150, 0)
    on = _plan(inst, core_lp_method=method, core_fallback_last=fallback_last)
    off = _plan(inst, core_columns=0)
    assert on.stats["core_columns"] > 0
    assert "core_columns" not in off.stats
    want_on, want_off = _key(inst, on), _key(inst, off)
    assert want_on[:2] == (0, 0)
    assert want_off[:2] == (0, 0)
    assert want_on[2] < want_off[2]
    assert on.bound is not None
    assert on.bound.lower_bound_g is not None
    assert on.bound.lower_bound_g <= want_on[2]
    # a bound on every on-time plan, so at most the whole class LP's optimum
    assert on.bound.lower_bound_g <= _whole_lp_optimum_g(inst) * (1 + 1e-9)


@pytest.mark.parametrize(
    ("bound_gap", "repair_columns"),
    [(0.0, 1600), (0.005, 800), (0.5, 2)],
    ids=["ascent-to-the-end-wide-repair", "defaults", "no-second-ascent-narrowest-repair"],
)
def test_the_second_ascent_and_the_repair_width_keep_the_bound_valid(
    bound_gap: float, repair_columns: int
) -> None:
    """Whether the second ascent runs to the end, stops within ``core_bound_gap`` or is
    skipped, and however narrow the late-job repair's windows: every job on time, the
    bound below the plan and below the whole class LP's optimum, and the plan within
    ``core_bound_gap`` of the bound whenever the ascent could have stopped early."""
    inst = _spread(150, 0)
    planned = _plan(inst, core_bound_gap=bound_gap, core_repair_columns=repair_columns)
    assert check_feasibility(inst, planned.plan) == []
    got = _key(inst, planned)
    assert got[:2] == (0, 0)
    assert planned.bound is not None
    lower = planned.bound.lower_bound_g
    assert lower is not None
    assert lower <= got[2] * (1 + 1e-9)
    assert lower <= _whole_lp_optimum_g(inst) * (1 + 1e-9)


def test_a_bound_within_core_bound_gap_skips_the_second_ascent() -> None:
    """With ``core_bound_gap`` 1 (any bound is near enough) the only ascent is the first;
    with 0 the second runs too, and its bound is at least as high on the same plan."""
    inst = _spread(150, 0)
    skipped = _plan(inst, core_bound_gap=1.0)
    full = _plan(inst, core_bound_gap=0.0)
    assert _key(inst, skipped) == _key(inst, full)
    assert skipped.stats["dual_iterations"] < full.stats["dual_iterations"]
    assert skipped.bound is not None
    assert full.bound is not None
    assert skipped.bound.lower_bound_g is not None
    assert full.bound.lower_bound_g is not None
    assert full.bound.lower_bound_g >= skipped.bound.lower_bound_g


def test_the_core_path_stays_off_above_its_size_limit() -> None:
    """``core_max_jobs`` below the jobs: the plan of ``core_columns = 0``."""
    inst = _spread(60, 2)
    limited = _plan(inst, core_max_jobs=59)
    off = _plan(inst, core_columns=0)
    assert "core_columns" not in limited.stats
    assert _key(inst, limited) == _key(inst, off)


def _lp_inputs(inst: Instance) -> tuple[Any, ...]:
    """``cs._solve_class_lp``'s inputs for the whole class LP of ``inst``: arrays, classes,
    unit grams, their shape costs and every column."""
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    base = unit_grams(arrays)
    return arrays, classes, base, shape_costs(classes, base), class_columns(classes)


def _whole_lp_optimum_g(inst: Instance, solve_lp: Any = None) -> float:
    """The whole class LP's optimum for ``inst`` (by ``solve_lp``, default
    ``cs._solve_class_lp``), asserted found."""
    whole = (solve_lp or cs._solve_class_lp)(*_lp_inputs(inst), 60.0)
    assert whole.optimum_g is not None
    return float(whole.optimum_g)


def _failing_interior_point(real: Any, status: SolveStatus | None) -> Any:
    """``solve`` that answers ``status`` (no vertex) whenever interior point is asked for,
    or raises a solver error there when ``status`` is None."""

    def fake(program: Any, options: SolveOptions | None = None, **kwargs: Any) -> Solution:
        if options is not None and options.method is LpMethod.IPM_VERTEX:
            if status is None:
                raise SolverError("HiGHS failed with model status 'Solve error'")
            return Solution(status, np.zeros(0), float("nan"), float("nan"), float("nan"), 0.0)
        result: Solution = real(program, options, **kwargs)
        return result

    return fake


@pytest.mark.parametrize(
    "status",
    [SolveStatus.NO_SOLUTION, SolveStatus.FEASIBLE, SolveStatus.OPTIMAL, None],
    ids=["ipm-fails", "ipm-stops-early", "ipm-optimal-but-no-vertex", "ipm-raises"],
)
def test_the_core_lp_falls_back_to_simplex_when_interior_point_gives_no_vertex(
    status: SolveStatus | None,
) -> None:
    """Interior point failing, stopping early, ending off a vertex, or ending in a solver
    error (HiGHS 1.16's "Solve error" on a 13-column core LP, found by a property test): the
    same LP again by dual simplex, the same optimum as simplex alone, ``retried`` set; the
    policy says so in its stats and still plans every job on time."""
    inst = _spread(80, 3)
    inputs = _lp_inputs(inst)
    want = cs._solve_class_lp(*inputs, 60.0, method="simplex")
    assert want.optimum_g is not None
    assert not want.retried
    with mock.patch.object(cs, "solve", _failing_interior_point(solve, status)):
        got = cs._solve_class_lp(*inputs, 60.0, method="ipm-vertex")
        planned = _plan(inst, core_lp_method="ipm-vertex")
    assert got.retried
    assert got.optimum_g is not None
    assert got.optimum_g == pytest.approx(want.optimum_g, rel=1e-9)
    assert planned.stats["core_lp_retried"] == 1.0
    assert _key(inst, planned)[:2] == (0, 0)


def test_a_failed_crossover_apart_is_retried_with_highs_own_crossover_before_simplex() -> None:
    """Interior point with the crossover apart (``ipm_tolerance``) ending with no vertex
    (two resources, ten-zone-mr 10,000 with 6 core columns: "no solution"): the interior
    point again with HiGHS's own crossover, which ends at the optimal vertex, and no dual
    simplex; the simplex's optimum."""
    inputs = _lp_inputs(_spread(80, 3))
    want = cs._solve_class_lp(*inputs, 60.0, method="simplex")
    asked: list[tuple[LpMethod, float | None]] = []

    def fake(program: Any, options: SolveOptions | None = None, **kwargs: Any) -> Solution:
        assert options is not None
        asked.append((options.method, options.ipm_tolerance))
        if options.ipm_tolerance is not None:
            return Solution(
                SolveStatus.NO_SOLUTION, np.zeros(0), float("nan"), float("nan"), 0.0, 0.0
            )
        result: Solution = solve(program, options, **kwargs)
        return result

    with mock.patch.object(cs, "solve", fake):
        got = cs._solve_class_lp(*inputs, 60.0, method="ipm-vertex", ipm_tolerance=1e-7)
    assert asked == [(LpMethod.IPM_VERTEX, 1e-7), (LpMethod.IPM_VERTEX, None)]
    assert not got.retried
    assert want.optimum_g is not None
    assert got.optimum_g == pytest.approx(want.optimum_g, rel=1e-6)


def test_interior_point_with_a_vertex_is_not_retried() -> None:
    """A vertex optimum by interior point and crossover stands: no simplex retry, the
    simplex's optimum."""
    inputs = _lp_inputs(_spread(80, 3))
    simplex = cs._solve_class_lp(*inputs, 60.0, method="simplex")
    ipm = cs._solve_class_lp(*inputs, 60.0, method="ipm-vertex")
    assert not ipm.retried
    assert simplex.optimum_g is not None
    assert ipm.optimum_g == pytest.approx(simplex.optimum_g, rel=1e-6)


@pytest.mark.parametrize(
    ("core_small_jobs", "want_core"),
    [(59, True), (60, False)],
    ids=["above-core-small-jobs-the-core", "at-core-small-jobs-the-whole-lp"],
)
def test_core_small_jobs_picks_the_core_or_the_whole_lp(
    core_small_jobs: int, want_core: bool
) -> None:
    """Up to 3,000 jobs, where the class LP is beyond its limits: above ``core_small_jobs``
    jobs its core, up to it the whole LP (rounded and repaired); on time either way, and
    the bound below the whole LP's optimum."""
    inst = _spread(60, 2)
    limits = {k: v for k, v in _LARGE_PATH.items() if k != "core_small_jobs"}
    result = run_policy("carbonshift", inst, {**limits, "core_small_jobs": core_small_jobs})
    assert ("core_columns" in result.stats) is want_core
    assert ("lp_optimum_g" in result.stats) is not want_core
    assert _key(inst, result)[:2] == (0, 0)
    whole_g = _whole_lp_optimum_g(inst)
    assert result.bound is not None
    assert result.bound.lower_bound_g is not None
    assert result.bound.lower_bound_g <= whole_g * (1 + 1e-9)


def _core_lp_calls(fail: int) -> tuple[Any, list[int]]:
    """``cs._solve_class_lp`` whose first ``fail`` calls give no LP (as a failed solve), and
    the column counts it was called with."""
    real = cs._solve_class_lp
    sizes: list[int] = []

    def solve_lp(*args: Any, **kwargs: Any) -> Any:
        sizes.append(len(args[4]))
        result = real(*args, **kwargs)
        if len(sizes) <= fail:
            return cs._ClassLp(None, None, None, False, result.columns, np.zeros(0), 0.0)
        return result

    return solve_lp, sizes


def test_up_to_3000_jobs_both_wide_cores_are_rounded() -> None:
    """Up to 3,000 jobs the core is solved with 20 and with 15 columns per class, each
    rounded and repaired, and the better plan kept, even when the first is on time; the
    plan is on time with the bound below the whole LP's optimum."""
    inst = _spread(60, 2)
    limits = {k: v for k, v in _LARGE_PATH.items() if k != "core_small_jobs"}
    solve_lp, sizes = _core_lp_calls(fail=0)
    with mock.patch.object(cs, "_solve_class_lp", solve_lp):
        result = run_policy("carbonshift", inst, {**limits, "core_small_jobs": 0})
    assert result.stats["core_attempts"] == 2.0
    assert len(sizes) == 2
    assert _key(inst, result)[:2] == (0, 0)
    whole_g = _whole_lp_optimum_g(inst)
    assert result.bound is not None
    assert result.bound.lower_bound_g is not None
    assert result.bound.lower_bound_g <= whole_g * (1 + 1e-9)


@_SETTINGS
@given(st.one_of(instances(max_jobs=7, max_horizon=6, future=False), congested()))
def test_up_to_3000_jobs_the_cores_keep_capacity_and_the_bound_valid(inst: Instance) -> None:
    """The path up to 3,000 jobs with the cores (the class LP made "too large"): plans that
    keep capacity, and a bound, when given, below the whole LP's optimum and, when the plan
    is on time, its grams."""
    limits = {k: v for k, v in _LARGE_PATH.items() if k != "core_small_jobs"}
    result = run_policy("carbonshift", inst, {**limits, "core_small_jobs": 0})
    assert check_feasibility(inst, result.plan) == []
    if result.bound is not None and result.bound.lower_bound_g is not None:
        key = _key(inst, result)
        if key[:2] == (0, 0):  # the bound is on on-time plans: a late plan may weigh less
            assert result.bound.lower_bound_g <= key[2] * (1 + 1e-9) + 1e-9
        assert result.bound.lower_bound_g <= _whole_lp_optimum_g(inst) * (1 + 1e-9) + 1e-9


def test_up_to_3000_jobs_when_both_wide_cores_fail_the_narrow_one_is_tried() -> None:
    """When neither wide core gives a plan on time (here: their LPs made to fail), the
    ``core_columns`` one (3 per class) is tried, and the plan is on time with the bound
    below the whole LP's optimum."""
    inst = _spread(60, 2)
    limits = {k: v for k, v in _LARGE_PATH.items() if k != "core_small_jobs"}
    real = cs._solve_class_lp
    solve_lp, sizes = _core_lp_calls(fail=2)
    with mock.patch.object(cs, "_solve_class_lp", solve_lp):
        result = run_policy("carbonshift", inst, {**limits, "core_small_jobs": 0})
    assert result.stats["core_attempts"] == 3.0
    assert len(sizes) == 3
    assert sizes[2] < sizes[1] <= sizes[0]  # 3 columns per class, then, against 15 and 20
    assert _key(inst, result)[:2] == (0, 0)
    whole_g = _whole_lp_optimum_g(inst, real)
    assert result.bound is not None
    assert result.bound.lower_bound_g is not None
    assert result.bound.lower_bound_g <= whole_g * (1 + 1e-9)


def test_up_to_3000_jobs_the_cores_repair_takes_core_repair_columns() -> None:
    """Up to 3,000 jobs as above: the late-job repair of a core's rounding works in windows
    of at most ``core_repair_columns`` starts, not the whole LP's ``late_repair_columns``
    (at 1,000 jobs the wider windows took up to 3 s of CPU)."""
    inst = _spread(40, 1)  # the core's rounding leaves jobs late here
    limits = {k: v for k, v in _LARGE_PATH.items() if k != "core_small_jobs"}
    real = cs.repair_late
    widths: list[int] = []

    def recorded(*args: Any, **kwargs: Any) -> Any:
        widths.append(kwargs["max_columns"])
        return real(*args, **kwargs)

    params = {**limits, "core_small_jobs": 0, "core_repair_columns": 123}
    with mock.patch.object(cs, "repair_late", recorded):
        result = run_policy("carbonshift", inst, {**params, "late_repair_columns": 1600})
    assert "core_columns" in result.stats
    assert widths
    assert set(widths) == {123}
    assert _key(inst, result)[:2] == (0, 0)


@pytest.mark.parametrize(
    ("columns_per_job", "want_core"),
    [(0, True), (1_000_000, False)],
    ids=["more-columns-per-job-the-core", "fewer-the-whole-lp"],
)
def test_up_to_3000_jobs_the_core_stands_in_for_an_lp_of_many_columns_per_job(
    columns_per_job: int, want_core: bool
) -> None:
    """Above ``core_small_jobs`` up to 3,000 jobs, a class LP within its limits is solved
    whole when it has at most ``_SMALL_CORE_COLUMNS_PER_JOB`` columns per job, and its core
    stands in for it when it has more (its classes gather few jobs); on time either way,
    the bound below the whole LP's optimum."""
    inst = _spread(60, 2)
    with mock.patch.object(cs, "_SMALL_CORE_COLUMNS_PER_JOB", columns_per_job):
        result = run_policy("carbonshift", inst, {"core_small_jobs": 0, "exact_max_starts": 0})
    assert ("core_columns" in result.stats) is want_core
    assert ("lp_optimum_g" in result.stats) is not want_core
    assert _key(inst, result)[:2] == (0, 0)
    assert result.bound is not None
    assert result.bound.lower_bound_g is not None
    assert result.bound.lower_bound_g <= _whole_lp_optimum_g(inst) * (1 + 1e-9)


def test_with_the_core_on_an_lp_within_its_limits_is_still_repaired() -> None:
    """Above ``core_small_jobs``, where the class LP is within its limits, it is solved as
    without the core, and its rounding's late jobs are repaired alike (until 2026-11-27 the
    core's switch turned that repair off: ten-zone 500 ended 0.5-0.9 points higher): the
    same plan as with the core off."""
    inst = _spread(60, 3)
    on = run_policy("carbonshift", inst, {"core_small_jobs": 0})
    off = run_policy("carbonshift", inst, {"core_small_jobs": 3000})
    assert "late_repair_steps" in off.stats  # the instance: its rounding is late
    assert "late_repair_steps" in on.stats
    assert "core_columns" not in on.stats
    assert _key(inst, on) == _key(inst, off)


@pytest.mark.parametrize("method", [LpMethod.SIMPLEX, LpMethod.IPM_VERTEX])
def test_the_class_lp_asks_highs_for_one_thread(method: LpMethod) -> None:
    """Either method of the core LP runs HiGHS with one thread (reproducible, and the
    machine's other cores left to others)."""
    assert class_lp_options(60.0, method=method).threads == 1
    assert class_lp_options(60.0, flow=False, method=method).threads == 1


def _late_the_first_time(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[list[int] | None], list[int], list[Any]]:
    """``_place_from_lp`` patched so that its first rounding (no jobs first) moves one job
    to a late start with room. Returns the lists it fills: each call's jobs first, the job
    moved, the roundings made with jobs first."""
    rounding = cs._place_from_lp
    calls: list[list[int] | None] = []
    moved: list[int] = []
    again: list[Any] = []

    def late_the_first_time(*args: Any) -> Any:
        state = rounding(*args)
        first = args[6] if len(args) > 6 else None
        calls.append(None if first is None else [int(j) for j in first])
        if first is not None:
            again.append(state)
        if first is None and not moved:
            arrays, classes = args[0], args[1]
            placer = cs._Placer(arrays, classes, state)
            for j in np.flatnonzero(state.cluster >= 0).tolist():
                where = (int(state.cluster[j]), int(state.start[j]))
                placer.remove(j)
                lo = int(arrays.deadline_slot[j] - arrays.runtime_slots[j] + 1)
                hi = arrays.horizon_slots - int(arrays.runtime_slots[j])
                if lo <= hi:
                    ok = placer.room(j, lo, hi)
                    if ok.any():
                        m, s = np.argwhere(ok)[0]
                        placer.place(j, (int(m), lo + int(s)))
                        moved.append(j)
                        break
                placer.place(j, where)
        return state

    monkeypatch.setattr(cs, "_place_from_lp", late_the_first_time)
    return calls, moved, again


def test_a_core_rounding_left_late_is_rounded_again_with_its_late_jobs_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Above 3,000 jobs (here forced), when the core's rounding leaves jobs late, it is
    rounded again with the late jobs first (ten-zone 10,000 seed 9: one job 3 slots late,
    and the fallback's plan, 5.5 % above the bound, replaced the core's). The first
    rounding is made late on purpose: one job moved to a late start with room, the
    sub-MILP repair off; the second puts that job on time."""
    inst = _spread(60, 0)
    calls, moved, again = _late_the_first_time(monkeypatch)
    result = _plan(inst, late_repair_jobs=0)
    assert moved, "no job could be made late: change the instance"
    want_calls = [None, moved]
    assert calls == want_calls
    assert result.stats["core_rounded_again"] == 1.0
    j = moved[0]
    arrays = arrays_of(inst)
    assert again[0].start[j] + arrays.runtime_slots[j] <= arrays.deadline_slot[j]
    assert _key(inst, result)[:2] == (0, 0)
    assert not check_feasibility(inst, result.plan)


def test_a_late_core_rounding_is_rounded_again_before_any_sub_milp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Above 3,000 jobs (here forced) the late jobs of the core's rounding go first in a
    new rounding before the sub-MILP repair is tried: on ten-zone 10,000 seeds 11 and 16
    one repair window took 0.7-0.8 s of CPU where a rounding takes 0.04 s (bench/planner.md
    (p)). With the repair on, the rounding made late on purpose is rounded again with its
    late job first, which puts it on time, and no sub-MILP runs (until 2026-11-27 the
    repair ran first)."""
    inst = _spread(60, 0)
    calls, moved, again = _late_the_first_time(monkeypatch)
    # the repair would run whatever the rounding's grams (here more than 5 % above the LP)
    monkeypatch.setattr(cs, "_LATE_REPAIR_NEAR", 1e9)
    result = _plan(inst)
    assert moved, "no job could be made late: change the instance"
    want_calls = [None, moved]
    assert calls == want_calls
    assert result.stats["core_rounded_again"] == 1.0
    assert "late_repair_steps" not in result.stats
    j = moved[0]
    arrays = arrays_of(inst)
    assert again[0].start[j] + arrays.runtime_slots[j] <= arrays.deadline_slot[j]
    assert _key(inst, result)[:2] == (0, 0)


def test_roundings_made_again_stop_at_their_limit_and_keep_the_least_late() -> None:
    """``_round_late_first`` rounds again at most ``rounds`` times, each with every job
    late so far first, and returns the rounding of least (lateness, grams): here every
    rounding made again is made later on purpose, so the first one is kept."""
    inst = _spread(60, 0)
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    columns = class_columns(classes)
    base = unit_grams(arrays, embodied=True)
    table = shape_costs(classes, base)
    lp = cs._solve_class_lp(arrays, classes, base, table, columns, 60.0)
    first = cs._place_from_lp(arrays, classes, columns, lp.share, table, table)
    # one job late in the first rounding, as in the tests above
    placer = cs._Placer(arrays, classes, first)
    for j in np.flatnonzero(first.cluster >= 0).tolist():
        lo = int(arrays.deadline_slot[j] - arrays.runtime_slots[j] + 1)
        hi = arrays.horizon_slots - int(arrays.runtime_slots[j])
        if lo <= hi:
            where = (int(first.cluster[j]), int(first.start[j]))
            placer.remove(j)
            ok = placer.room(j, lo, hi)
            if ok.any():
                m, s = np.argwhere(ok)[0]
                placer.place(j, (int(m), lo + int(s)))
                break
            placer.place(j, where)
    want_late = cs._lateness_slots(arrays, first)
    assert want_late > 0
    seen: list[list[int]] = []

    def later(ahead: Any) -> Any:
        state = cs._place_from_lp(arrays, classes, columns, lp.share, table, table, ahead)
        seen.append([int(j) for j in ahead])
        # every job of this rounding at its last start in the horizon: as late as can be
        placed = state.cluster >= 0
        state.start[placed] = (arrays.horizon_slots - arrays.runtime_slots)[placed]
        return state

    kept, made = cs._round_late_first(arrays, classes, table, first, later, 2)
    assert made == 2
    assert len(seen) == 2
    assert set(seen[0]) <= set(seen[1])  # every job late so far stays first
    assert seen[1][: len(seen[0])] == seen[0]
    assert kept is first


def test_the_fallback_after_an_on_time_core_still_tries_the_fewest_options_first() -> None:
    """Above 3,000 jobs (here forced) the price-guided placements that the core stood in
    for run as without the core: when the first of them is late, the second (fewest
    options first) runs too, even where the core's plan is on time. The instance is the
    one hypothesis found for the property test above: the core's plan on time at 4 g, the
    fallback's first placement 1 slot late, its second on time at 3 g; until 2026-11-27 the
    second was skipped, and the plan kept 4 g (without the core: 3 g)."""
    inst = instance(
        [
            job("j0", gpu=1.0, runtime=2, deadline=2),
            job("j1", gpu=2.0, runtime=2, deadline=2),
            job("j2", gpu=1.0, runtime=1, deadline=1),
            job("j3", gpu=1.0, runtime=1, deadline=1, allowed=["c1", "c2"]),
            job("j4", gpu=1.0, runtime=2, deadline=2),
        ],
        [cluster("c0", gpu=1.0), cluster("c1", gpu=2.0), cluster("c2", gpu=3.0)],
        {"c0": [1.0, 2.0], "c1": [0.0, 0.0], "c2": [0.0, 1.0]},
        horizon=2,
    )
    on = _plan(inst, core_lp_method="simplex", core_fallback_last=True)
    off = _plan(inst, core_columns=0)
    assert on.stats["core_fallback"] == 1.0
    want_g = _key(inst, off)[2]
    assert _key(inst, on) == (0, 0, want_g)
    assert not check_feasibility(inst, on.plan)


def _feasible_not_optimal(real: Any) -> Any:
    """``solve`` whose interior point with ``ipm_tolerance`` answers as HiGHS's crossover
    does when it ends at a basic feasible solution it does not call optimal: the real
    answer, ``feasible``, still a vertex with its duals."""

    def fake(program: Any, options: SolveOptions | None = None, **kwargs: Any) -> Solution:
        result: Solution = real(program, options, **kwargs)
        if options is not None and options.ipm_tolerance is not None:
            return replace(result, status=SolveStatus.FEASIBLE)
        return result

    return fake


def test_with_ipm_tolerance_a_basic_feasible_crossover_answer_is_kept() -> None:
    """With ``ipm_tolerance`` a vertex that the crossover calls feasible, not optimal (one
    core LP of ten-zone 10,000 seeds 0-4, dual infeasibilities up to 3.5e-7), is rounded as
    it is: no simplex retry, and the bound is still L at its prices, at most the LP
    optimum. Without the option the same answer is retried by simplex."""
    inputs = _lp_inputs(_spread(80, 3))
    want = cs._solve_class_lp(*inputs, 60.0, method="simplex")
    assert want.optimum_g is not None
    with mock.patch.object(cs, "solve", _feasible_not_optimal(solve)):
        kept = cs._solve_class_lp(*inputs, 60.0, method="ipm-vertex", ipm_tolerance=1e-7)
    assert not kept.retried
    assert kept.optimum_g == pytest.approx(want.optimum_g, rel=1e-6)
    assert kept.bound_g is not None
    assert kept.bound_g <= want.optimum_g * (1 + 1e-9)
    assert kept.share.sum() == pytest.approx(want.share.sum())

    def feasible_always(program: Any, options: SolveOptions | None = None, **kw: Any) -> Any:
        result = solve(program, options, **kw)
        if options is not None and options.method is LpMethod.IPM_VERTEX:
            return replace(result, status=SolveStatus.FEASIBLE)
        return result

    with mock.patch.object(cs, "solve", feasible_always):
        retried = cs._solve_class_lp(*inputs, 60.0, method="ipm-vertex")
    assert retried.retried
    assert retried.optimum_g == pytest.approx(want.optimum_g, rel=1e-9)


@pytest.mark.parametrize(
    ("small_jobs", "want_tolerance"),
    [(0, cs._CORE_IPM_TOLERANCE), (3000, None)],
    ids=["above-3000-jobs-crossover-apart", "up-to-3000-jobs-as-before"],
)
def test_the_core_lp_stops_its_interior_point_early_only_above_3000_jobs(
    small_jobs: int, want_tolerance: float | None
) -> None:
    """Above 3,000 jobs the core LP's interior point stops at ``_CORE_IPM_TOLERANCE`` and
    crosses over apart; up to 3,000 jobs it asks for HiGHS's own (those plans unchanged)."""
    asked: list[float | None] = []

    def spy(program: Any, options: SolveOptions | None = None, **kwargs: Any) -> Solution:
        if options is not None and options.method is LpMethod.IPM_VERTEX:
            asked.append(options.ipm_tolerance)
        result: Solution = solve(program, options, **kwargs)
        return result

    inst = _spread(80, 3)
    with mock.patch.object(cs, "_SMALL_JOBS", small_jobs), mock.patch.object(cs, "solve", spy):
        planned = run_policy("carbonshift", inst, _LARGE_PATH)
    assert asked
    # each core LP asks first for want_tolerance; a crossover apart that finds no vertex is
    # asked again with HiGHS's own crossover (None), as on this instance
    assert asked[0] == want_tolerance
    assert set(asked) <= {want_tolerance, None}
    assert _key(inst, planned)[:2] == (0, 0)


def _with_memory(inst: Instance, asked: bool) -> Instance:
    """``inst`` with a second resource, memory: 2 GiB per unit of gpu asked by every job
    (``asked``) or by none, clusters of 2.5 GiB per unit of gpu."""
    return replace(
        inst,
        resources=("gpu", "memory"),
        jobs=tuple(
            replace(j, demand={"gpu": j.demand["gpu"], "memory": 2.0 * j.demand["gpu"] * asked})
            for j in inst.jobs
        ),
        clusters=tuple(
            replace(
                c,
                capacity={"gpu": c.capacity["gpu"], "memory": 2.5 * float(c.capacity["gpu"])},
                watts_per_unit={"gpu": c.watts_per_unit["gpu"], "memory": 0.5},
            )
            for c in inst.clusters
        ),
    )


@pytest.mark.parametrize(
    ("memory", "cap", "want_per_class"),
    [(None, 60_000, 2), (False, 60_000, 2), (True, 60_000, 4), (True, 10, 2)],
    ids=["one-resource", "memory-asked-by-none", "memory-asked-too", "over-the-cap"],
)
def test_the_core_takes_core_columns_per_resource_the_jobs_ask_for(
    memory: bool | None, cap: int, want_per_class: int
) -> None:
    """Above 3,000 jobs the core keeps ``core_columns`` columns per class for each resource
    some job asks for (a basic solution's support per class grows with the binding rows),
    but no more than ``core_columns`` where that would pass ``_CORE_COLUMNS_CAP`` columns;
    the plan puts every job on time."""
    inst = _spread(60, 4)
    if memory is not None:
        inst = _with_memory(inst, memory)
    kept: list[int] = []
    real = cs._core_columns

    def spy(*args: Any, **kwargs: Any) -> Any:
        kept.append(args[5])
        return real(*args, **kwargs)

    with (
        mock.patch.object(cs, "_core_columns", spy),
        mock.patch.object(cs, "_CORE_COLUMNS_CAP", cap),
    ):
        planned = _plan(inst, core_columns=2)
    assert kept == [want_per_class]
    assert _key(inst, planned)[:2] == (0, 0)
    assert not check_feasibility(inst, planned.plan)
