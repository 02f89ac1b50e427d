"""The polish never solves the same window on the same plan twice (planning/policies/
_polish.py, ``tried``): on the stress shape ``horizon_long`` (12 jobs, 504 slots) its 120
sub-MILPs were a few windows solved again and again (7.8 s of CPU; 1.3 s now), and the
plan is the one of solving them (bench/planner.md, "Repeated polish windows")."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from carbonshift.formats import instance_from_dict
from carbonshift.planning import run_policy
from carbonshift.planning.policies import _polish
from tests.planning.stress_shapes import SHAPES


def _horizon_long(seed: int, k: int) -> Any:
    rng = np.random.default_rng([seed, sorted(SHAPES).index("horizon_long")])
    docs = [SHAPES["horizon_long"](rng) for _ in range(k + 1)]
    return instance_from_dict(docs[k])


def test_a_window_is_solved_once_per_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    solved: list[tuple[tuple[int, ...], bytes]] = []
    real = _polish.resolve_jobs

    def counting(*args: Any, **kwargs: Any) -> Any:
        cluster, start, chosen = args[4], args[5], args[6]
        if len(args) < 9 and "columns" not in kwargs:  # the polish's windows, not bands
            solved.append((tuple(int(j) for j in chosen), cluster.tobytes() + start.tobytes()))
        return real(*args, **kwargs)

    monkeypatch.setattr(_polish, "resolve_jobs", counting)
    result = run_policy("carbonshift", _horizon_long(0, 4))
    assert result.stats["polish_steps"] == 120  # the steps are counted as before
    want_most = 40
    assert 0 < len(solved) <= want_most, len(solved)
    assert len(set(solved)) == len(solved), "a window was solved twice on the same plan"
