"""The last step of ``carbonshift`` up to 3,000 jobs: the job-level MILP restricted to the
class LP's support and the plan's starts (``_support_milp``). The class LP's quotas mix jobs
of different weights; that MILP packs whole jobs into them, and never returns a plan that is
heavier or over capacity."""

from __future__ import annotations

import numpy as np
import pytest

from carbonshift.domain import score_plan
from carbonshift.errors import InputError
from carbonshift.planning import run_policy
from carbonshift.planning.aggregate import class_columns
from carbonshift.planning.lagrangian import classes_of, shape_costs, unit_grams
from carbonshift.planning.policies import carbonshift as cs
from carbonshift.planning.problem import arrays_of
from tests.builders import cluster, instance, job


def _mixed_class() -> tuple[object, ...]:
    """Four jobs of one class (gpu 3, 1, 2, 2; one slot each, any of three slots) on 4 gpu
    per slot, slots ever dirtier: the LP fills the first two slots, 4 gpu each, and so does
    the integral optimum ({3, 1} and {2, 2})."""
    jobs = [job(f"j{i}", gpu=g, deadline=3) for i, g in enumerate((3.0, 1.0, 2.0, 2.0))]
    inst = instance(jobs, [cluster(gpu=4.0)], {"c1": [100.0, 200.0, 300.0]}, horizon=3)
    arrays = arrays_of(inst)
    classes = classes_of(arrays)
    base = unit_grams(arrays)
    table = shape_costs(classes, base)
    lp = cs._solve_class_lp(arrays, classes, base, table, class_columns(classes), 10.0, flow=False)
    return inst, arrays, classes, table, lp


def _state(arrays: object, classes: object, where: list[tuple[int, int]]) -> cs._State:
    state = cs._State(
        free=arrays.free_units.copy(),  # type: ignore[attr-defined]
        cluster=np.full(len(where), -1, dtype=np.int64),
        start=np.full(len(where), -1, dtype=np.int64),
    )
    placer = cs._Placer(arrays, classes, state)  # type: ignore[arg-type]
    for j, at in enumerate(where):
        placer.place(j, at)
    return state


def test_packs_the_lp_quotas_by_whole_jobs() -> None:
    _, arrays, classes, table, lp = _mixed_class()
    assert int(np.max(classes.klass)) == 0  # one class: its quotas mix the four weights
    # on time but heavy: slots 0, 1, 2, 1 (3, 3 and 2 gpu)
    heavy = _state(arrays, classes, [(0, 0), (0, 1), (0, 1), (0, 2)])
    packed = cs._support_milp(
        arrays, classes, table, lp.columns, lp.share, heavy, max_nodes=50, cpu_limit_s=10.0
    )
    assert packed is not None
    slots = [int(s) for s in packed.start]
    # {3, 1} in one of the two clean slots, {2, 2} in the other
    assert slots[0] == slots[1]
    assert slots[2] == slots[3]
    assert {slots[0], slots[2]} == {0, 1}
    assert cs._grams(arrays, classes, packed, table) == pytest.approx(lp.optimum_g)
    assert float(packed.free.min()) >= -1e-9


def test_reports_its_size_time_and_gap() -> None:
    _, arrays, classes, table, lp = _mixed_class()
    best = _state(arrays, classes, [(0, 0), (0, 0), (0, 1), (0, 1)])
    stats: dict[str, float] = {}
    cs._support_milp(
        arrays,
        classes,
        table,
        lp.columns,
        lp.share,
        best,
        max_nodes=50,
        cpu_limit_s=10.0,
        stats=stats,
    )
    # four jobs, each at the class's two LP starts (slots 0 and 1); the plan's starts are
    # among them
    want_columns = 8.0
    assert stats["support_columns"] == want_columns
    assert stats["support_seconds"] >= 0.0
    assert stats["support_gap"] == pytest.approx(0.0, abs=1e-4)


def test_no_plan_when_nothing_is_gained() -> None:
    _, arrays, classes, table, lp = _mixed_class()
    best = _state(arrays, classes, [(0, 0), (0, 0), (0, 1), (0, 1)])
    got = cs._support_milp(
        arrays, classes, table, lp.columns, lp.share, best, max_nodes=50, cpu_limit_s=10.0
    )
    assert got is None


@pytest.mark.parametrize(
    ("params", "want_in_message"),
    [
        pytest.param({"support_nodes": -1}, "support_nodes", id="negative-nodes"),
        pytest.param({"support_time_limit_s": 0}, "support_time_limit_s", id="zero-seconds"),
    ],
)
def test_options_are_checked(params: dict[str, object], want_in_message: str) -> None:
    inst, *_ = _mixed_class()
    with pytest.raises(InputError, match=want_in_message):
        run_policy("carbonshift", inst, params)


def test_the_policy_keeps_every_job_on_time_with_the_step_on_or_off() -> None:
    inst, *_ = _mixed_class()
    on = run_policy("carbonshift", inst, {})
    off = run_policy("carbonshift", inst, {"support_nodes": 0})
    for result in (on, off):
        assert score_plan(inst, result.plan).carbon_g > 0
    assert score_plan(inst, on.plan).carbon_g <= score_plan(inst, off.plan).carbon_g + 1e-9
