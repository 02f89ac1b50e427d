"""The CPU guards of the MIP neighbourhood searches (``_polish``: the polish, the bands,
the late-job repair) count the planning thread's CPU (``time.thread_time``), not the
process's: the controller and the hub plan in a process whose other threads are busy, and
their CPU must neither stop a search early nor change its plan (issue 13)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from carbonshift.planning.lagrangian import classes_of
from carbonshift.planning.policies import _polish
from tests.planning.test_polish import _big_for_two_small, _greedy, _run_polish
from tests.planning.test_polish_bands import _two_jobs_crossed

#: CPU seconds the other threads burn between two reads of a clock, as emulated here
OTHER_THREADS_CPU_S = 100.0


def _clock_racing_ahead(real: Callable[[], float]) -> Callable[[], float]:
    """A clock that runs ``OTHER_THREADS_CPU_S`` ahead of ``real`` at every read."""
    reads = itertools.count(1)
    return lambda: real() + OTHER_THREADS_CPU_S * next(reads)


def _polish_case() -> tuple[Any, Callable[[], Any]]:
    arrays, classes, table, own, state = _greedy(_big_for_two_small())
    return state, lambda: _run_polish(arrays, classes, table, own, state, cpu_limit_s=30.0)


def _bands_case() -> tuple[Any, Callable[[], Any]]:
    arrays, classes, table, state = _two_jobs_crossed()

    def run() -> Any:
        return _polish.polish_bands(
            arrays,
            classes,
            table,
            state.free,
            state.cluster,
            state.start,
            table,
            np.zeros(0, dtype=np.int64),
            max_columns=100,
            max_nodes=20,
            lp_iterations=10_000,
            cpu_limit_s=30.0,
        )

    return state, run


def _late_case() -> tuple[Any, Callable[[], Any]]:
    arrays, classes, table, state = _two_jobs_crossed()
    # job a at slot 2, one slot late with a deadline of 2 (b holds slot 1, slot 0 is free)
    arrays = replace(arrays, deadline_slot=np.array([2, 3], dtype=np.int64))
    classes = classes_of(arrays)

    def run() -> Any:
        return _polish.repair_late(
            arrays,
            classes,
            table,
            state.free,
            state.cluster,
            state.start,
            max_jobs=4,
            max_columns=200,
            max_nodes=20,
            rounds=2,
            cpu_limit_s=30.0,
            seed=0,
        )

    return state, run


CASES = [
    pytest.param(_polish_case, id="polish"),
    pytest.param(_bands_case, id="bands"),
    pytest.param(_late_case, id="late-repair"),
]


def _outcome(case: Callable[[], tuple[Any, Callable[[], Any]]]) -> tuple[Any, ...]:
    state, run = case()
    done = run()
    return (done.steps, list(state.cluster), list(state.start))


@pytest.mark.parametrize("case", CASES)
def test_other_threads_cpu_does_not_stop_the_search(
    case: Callable[[], tuple[Any, Callable[[], Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails with ``time.process_time`` in the guards: the process's CPU, 100 s more at
    every read here (the other threads'), ends the 30 s guard before the first sub-MILP."""
    want = _outcome(case)
    assert want[0] > 0, "the case should solve a sub-MILP"
    clocks = SimpleNamespace(
        thread_time=time.thread_time, process_time=_clock_racing_ahead(time.process_time)
    )
    monkeypatch.setattr(_polish, "time", clocks)
    assert _outcome(case) == want


@pytest.mark.parametrize("case", CASES)
def test_the_planning_thread_s_cpu_is_the_guard(
    case: Callable[[], tuple[Any, Callable[[], Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard still binds on the planning thread's own CPU: with its clock 100 s ahead at
    every read, the 30 s guard ends the search before any sub-MILP, the plan as it was."""
    state, run = case()
    want = (list(state.cluster), list(state.start))
    clocks = SimpleNamespace(
        thread_time=_clock_racing_ahead(time.thread_time), process_time=time.process_time
    )
    monkeypatch.setattr(_polish, "time", clocks)
    done = run()
    assert done.steps == 0
    assert (list(state.cluster), list(state.start)) == want
