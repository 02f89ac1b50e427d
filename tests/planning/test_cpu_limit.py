"""The CPU-seconds limit of a HiGHS solve (``SolveOptions.cpu_limit_s``, issue 13): it stops
a long solve as the wall limit does, and counts only the solving thread's CPU."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp

from carbonshift.errors import InputError
from carbonshift.planning.backends.highs import SolveOptions, solve
from carbonshift.planning.problem import LinearProgram
from carbonshift.planning.types import SolveStatus


def hard_knapsack(n_items: int = 80, n_rows: int = 5, seed: int = 0) -> LinearProgram:
    """A multi-dimensional 0-1 knapsack that HiGHS does not prove optimal (gap 0) within
    seconds: thousands of nodes (80 items, 5 rows: 700 nodes in 1.2 s of CPU, unproved)."""
    rng = np.random.default_rng(seed)
    weights = rng.integers(1, 1000, (n_rows, n_items)).astype(float)
    return LinearProgram(
        objective=weights.sum(axis=0) + rng.integers(0, 500, n_items),
        matrix=sp.csc_matrix(weights),
        row_upper=weights.sum(axis=1) / 2,
        maximise=True,
        n_integer=n_items,
    )


def test_cpu_limit_stops_a_long_milp_with_its_incumbent_and_bound() -> None:
    """Fails on the old code: ``SolveOptions`` has no ``cpu_limit_s``."""
    began_cpu_s = time.thread_time()
    solution = solve(
        hard_knapsack(), SolveOptions(integer=True, mip_gap=0.0, time_limit_s=60.0, cpu_limit_s=0.2)
    )
    spent_cpu_s = time.thread_time() - began_cpu_s
    assert solution.status is SolveStatus.FEASIBLE
    assert solution.detail == "Time limit reached"  # the answer a time limit gives
    assert solution.values.shape == (80,)
    assert solution.objective <= solution.bound  # maximising: the dual bound is above
    assert solution.gap > 0
    assert spent_cpu_s < 2.0  # not the 60 s wall limit (model building is ~10 ms)


def test_no_cpu_limit_leaves_the_solve_to_the_wall_limit() -> None:
    solution = solve(hard_knapsack(20, 2), SolveOptions(integer=True, mip_gap=0.0))
    assert solution.status is SolveStatus.OPTIMAL


@pytest.mark.parametrize("limit", [0.0, -1.0], ids=["zero", "negative"])
def test_cpu_limit_must_be_positive(limit: float) -> None:
    with pytest.raises(InputError, match="cpu_limit_s is"):
        SolveOptions(cpu_limit_s=limit)


def test_cpu_limit_counts_the_solving_thread_not_wall_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Wall time and other threads' CPU do not count: the solve runs its 0.15 s of this
    thread's CPU, whatever the wall time, and a busy second thread is not seen. Fails on the
    old code (no ``cpu_limit_s``), and with ``time.process_time`` in the guard."""
    reads: list[int] = []
    real = time.thread_time

    def traced() -> float:
        reads.append(threading.get_ident())
        return real()

    monkeypatch.setattr(time, "thread_time", traced)  # the module the guard reads
    stop = threading.Event()

    def spin() -> None:  # CPU without the GIL: numpy's matrix product releases it
        square = np.random.default_rng(0).random((120, 120))
        while not stop.is_set():
            square = square @ square
            square /= np.abs(square).max()

    busy = threading.Thread(target=spin, daemon=True)
    busy.start()
    try:
        began_cpu_s = real()
        solution = solve(
            hard_knapsack(),
            SolveOptions(integer=True, mip_gap=0.0, time_limit_s=600.0, cpu_limit_s=0.15),
        )
        spent_cpu_s = real() - began_cpu_s
    finally:
        stop.set()
        busy.join()
    assert solution.status is SolveStatus.FEASIBLE
    # every read of the guard's clock was on the thread that called solve
    assert set(reads) == {threading.get_ident()}
    assert len(reads) > 10
    # the solve ran its 0.15 s of CPU on this thread: a guard on the process's CPU (the
    # spinning thread's too) or on wall time would have stopped it earlier
    assert spent_cpu_s >= 0.15
