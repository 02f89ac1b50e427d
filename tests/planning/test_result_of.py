"""``_common.result_of``: the plan's assignments by start, then job index; the jobs left out
in index order (the plan JSON's order; built from arrays since 2026-11-28, branch tzone2)."""

from __future__ import annotations

import pytest

from carbonshift.planning.policies._common import result_of
from tests.builders import cluster, instance, job

CASES = [
    pytest.param(
        {0: (1, 3), 1: (0, 0), 2: (0, 3), 3: (1, 0)},
        [("j1", "c1", 0), ("j3", "c2", 0), ("j0", "c2", 3), ("j2", "c1", 3)],
        [],
        id="ties-of-start-go-by-job-index",
    ),
    pytest.param(
        {3: (0, 2), 0: (1, 2)},
        [("j0", "c2", 2), ("j3", "c1", 2)],
        ["j1", "j2"],
        id="jobs-left-out-in-index-order-whatever-the-mapping-order",
    ),
    pytest.param({}, [], ["j0", "j1", "j2", "j3"], id="nothing-placed"),
]


@pytest.mark.parametrize(("chosen", "want_assignments", "want_unscheduled"), CASES)
def test_assignments_by_start_then_index(
    chosen: dict[int, tuple[int, int]],
    want_assignments: list[tuple[str, str, int]],
    want_unscheduled: list[str],
) -> None:
    inst = instance([job(f"j{i}") for i in range(4)], [cluster("c1"), cluster("c2")], horizon=6)
    plan = result_of(inst, "test", chosen, seconds=0.5).plan
    got = [(a.job, a.cluster, a.start_slot) for a in plan.assignments]
    assert got == want_assignments
    assert list(plan.unscheduled) == want_unscheduled
    assert all(type(a.start_slot) is int for a in plan.assignments)
