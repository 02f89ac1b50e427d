"""The HiGHS back end: optimum values and the status map."""

from __future__ import annotations

import highspy
import numpy as np
import pytest
import scipy.sparse as sp

from carbonshift.errors import InputError
from carbonshift.planning.backends.highs import LpMethod, SolveOptions, solve
from carbonshift.planning.problem import LinearProgram
from carbonshift.planning.types import SolveStatus


def _lp(
    objective: list[float], rows: list[list[float]], upper: list[float], maximise: bool = True
) -> LinearProgram:
    return LinearProgram(
        objective=np.array(objective, dtype=float),
        matrix=sp.csc_matrix(np.array(rows, dtype=float)),
        row_upper=np.array(upper, dtype=float),
        maximise=maximise,
        n_integer=len(objective),
    )


# max 3a + 2b + 2c  s.t. 2a + b + 1.5c <= 2. LP: b = 1, a = 0.5 -> 3.5; binary: a alone -> 3.
KNAPSACK = _lp([3.0, 2.0, 2.0], [[2.0, 1.0, 1.5]], [2.0])


@pytest.mark.parametrize("method", list(LpMethod), ids=lambda m: f"lp-{m.value}")
def test_lp_methods_agree_on_the_optimum(method: LpMethod) -> None:
    solution = solve(KNAPSACK, SolveOptions(method=method))
    # PDLP may stop with HiGHS status "unknown" holding a solution: FEASIBLE, not OPTIMAL
    assert solution.status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE)
    assert solution.objective == pytest.approx(3.5, rel=1e-3)
    assert solution.values == pytest.approx([0.5, 1.0, 0.0], abs=1e-3)


@pytest.mark.parametrize(
    ("method", "want_vertex"),
    [
        (LpMethod.SIMPLEX, True),
        (LpMethod.IPM_VERTEX, True),
        (LpMethod.IPM, False),
    ],
    ids=["simplex-vertex", "crossover-vertex", "interior-not-vertex"],
)
def test_lp_solutions_say_whether_they_are_a_vertex(method: LpMethod, want_vertex: bool) -> None:
    """Simplex and interior point with crossover end at a basis; interior point alone does
    not (the core LP retries by simplex when it asked for a vertex and got none)."""
    solution = solve(KNAPSACK, SolveOptions(method=method))
    assert solution.status is SolveStatus.OPTIMAL
    assert solution.vertex is want_vertex


def test_ipm_tolerance_crosses_over_apart_to_the_simplex_vertex(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ipm_tolerance`` with ``ipm-vertex``: the interior point stops at that tolerance
    without its own crossover, and HiGHS's crossover runs once from its solution, to the
    vertex optimum simplex finds; without the option no separate crossover runs."""
    calls: list[int] = []
    crossover = highspy.Highs.crossover

    def counted(highs: object, solution: object) -> object:
        calls.append(1)
        return crossover(highs, solution)

    monkeypatch.setattr(highspy.Highs, "crossover", counted)
    want = solve(KNAPSACK, SolveOptions(method=LpMethod.SIMPLEX))
    plain = solve(KNAPSACK, SolveOptions(method=LpMethod.IPM_VERTEX))
    assert calls == []
    got = solve(KNAPSACK, SolveOptions(method=LpMethod.IPM_VERTEX, ipm_tolerance=1e-7))
    assert calls == [1]
    for solution in (plain, got):
        assert solution.status is SolveStatus.OPTIMAL
        assert solution.vertex
        assert solution.objective == pytest.approx(want.objective, rel=1e-9)
        assert solution.values == pytest.approx(want.values, abs=1e-9)
        assert solution.row_duals == pytest.approx(want.row_duals, abs=1e-9)


def test_milp_finds_the_integer_optimum_and_proves_it() -> None:
    solution = solve(KNAPSACK, SolveOptions(integer=True))
    assert solution.status is SolveStatus.OPTIMAL
    assert solution.objective == pytest.approx(3.0)
    assert solution.values.round().tolist() == [1.0, 0.0, 0.0]
    assert solution.bound == pytest.approx(3.0, abs=1e-6)


def test_infeasible_model_is_a_status_not_an_exception() -> None:
    lp = LinearProgram(
        objective=np.array([1.0]),
        matrix=sp.csc_matrix(np.array([[1.0]])),
        row_upper=np.array([-1.0]),  # x <= -1 with 0 <= x
        maximise=True,
        n_integer=1,
    )
    assert solve(lp).status is SolveStatus.INFEASIBLE
    assert solve(lp, SolveOptions(integer=True)).status is SolveStatus.INFEASIBLE


def test_empty_model_is_optimal_at_zero() -> None:
    lp = _lp([], [[]], [1.0])
    solution = solve(LinearProgram(np.zeros(0), sp.csc_matrix((1, 0)), np.ones(1), True, 0))
    assert lp.n_columns == 0
    assert solution.status is SolveStatus.OPTIMAL
    assert solution.objective == 0.0


@pytest.mark.parametrize(
    ("kwargs", "want_message"),
    [
        ({"time_limit_s": 0.0}, "time_limit_s is 0.0 s"),
        ({"mip_gap": 1.0}, "mip_gap is 1.0"),
        ({"ipm_tolerance": 0.0}, "ipm_tolerance is 0.0"),
        ({"ipm_tolerance": 1.0}, "ipm_tolerance is 1.0"),
    ],
    ids=["zero-time-limit", "gap-of-one", "zero-ipm-tolerance", "ipm-tolerance-of-one"],
)
def test_bad_options_are_input_errors(kwargs: dict[str, float], want_message: str) -> None:
    with pytest.raises(InputError, match=want_message):
        SolveOptions(**kwargs)  # type: ignore[arg-type]


BADLY_SCALED = [
    pytest.param(
        _lp([1.0, 1.0], [[1e16, 1.0]], [1.0]), "demands", "span 1..1e+16", id="demand-1e16-refused"
    ),
    pytest.param(
        _lp([1.0, 1.0], [[1e-300, 1.0]], [1.0]), "demands", "1e-300..1", id="demand-1e-300-dropped"
    ),
    pytest.param(
        _lp([1.0, 1.0], [[float("nan"), 1.0]], [1.0]), "demands", "contain nan", id="nan-demand"
    ),
    pytest.param(
        _lp([float("inf"), 1.0], [[1.0, 1.0]], [1.0]), "objective", "contain inf", id="inf-grams"
    ),
    pytest.param(
        _lp([1.0, 1.0], [[1.0, 1.0]], [float("nan")]),
        "capacities",
        "contain nan",
        id="nan-capacity",
    ),
]


@pytest.mark.parametrize(("lp", "want_part", "want_range"), BADLY_SCALED)
def test_badly_scaled_model_names_the_range_and_the_fix(
    lp: LinearProgram, want_part: str, want_range: str
) -> None:
    with pytest.raises(InputError) as caught:
        solve(lp)
    message = str(caught.value)
    assert want_part in message
    assert want_range in message
    assert "bug" not in message


def test_huge_grams_are_scaled_for_the_solver_and_back() -> None:
    # HiGHS reads costs >= 1e20 as infinite; the back end scales them and scales the result back.
    huge = _lp([3e25, 2e25, 2e25], [[2.0, 1.0, 1.5]], [2.0])
    solution = solve(huge, SolveOptions(integer=True))
    assert solution.status is SolveStatus.OPTIMAL
    assert solution.values.round().tolist() == [1.0, 0.0, 0.0]
    assert solution.objective == pytest.approx(3e25)
    assert solution.bound == pytest.approx(3e25, rel=1e-6)


def test_smallest_valid_demand_still_uses_capacity() -> None:
    # HiGHS drops |a| <= 1e-9 by default; a 1e-9 demand must still count against 1e-9 capacity.
    lp = _lp([1.0, 1.0], [[1e-9, 1e-9]], [1e-9])
    solution = solve(lp, SolveOptions(integer=True))
    assert solution.values.round().sum() == 1.0
