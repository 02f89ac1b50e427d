"""Step 8b of the ``carbonshift`` policy (docs/design/0002): when no plan puts every job on
time, the least total lateness (slots), checked against the independent checker's
lexicographic MILP (``tests/planning/independent.py``: fewest left out, then least lateness,
with the critical jobs where the plan put them), on overloaded instances beyond step 8's
400 starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from carbonshift.cli.app import main
from carbonshift.formats.instance import instance_from_dict
from carbonshift.planning.lagrangian import classes_of
from carbonshift.planning.policies import carbonshift as carbonshift_policy
from carbonshift.planning.registry import POLICIES, run_policy
from tests.planning import independent


def overloaded(seed: int, *, critical: bool) -> dict[str, Any]:
    """An instance file (CONTRACTS.md section 1) with more work than room before the
    deadlines: 24 jobs on 3 clusters over 16 slots (about 700 starts)."""
    rng = np.random.default_rng(seed)
    horizon, names = 16, ["c0", "c1", "c2"]
    jobs = []
    for i in range(24):
        runtime = int(rng.integers(1, 6))
        release = int(rng.integers(0, 8))
        job: dict[str, Any] = {
            "id": f"j{i}",
            "demand": {"gpu": float(rng.integers(1, 5))},
            "runtime_slots": runtime,
            "release_slot": release,
            "deadline_slot": min(horizon, release + runtime + int(rng.integers(0, 3))),
            "critical": bool(critical and rng.random() < 0.15),
        }
        if rng.random() < 0.3:
            job["allowed_clusters"] = [names[int(rng.integers(0, 3))]]
        jobs.append(job)
    return {
        "version": 1,
        "slot_minutes": 60,
        "horizon_slots": horizon,
        "resources": ["gpu"],
        "clusters": [
            {
                "name": n,
                "zone": "XX",
                "capacity": {"gpu": float(rng.integers(3, 5))},
                "watts_per_unit": {"gpu": 200.0},
                "pue": 1.2,
            }
            for n in names
        ],
        "carbon_g_per_kwh": {n: [float(v) for v in rng.integers(20, 400, horizon)] for n in names},
        "jobs": jobs,
    }


def least_late(doc: dict[str, Any], plan: dict[str, Any]) -> independent.Optimum:
    """The checker's MILP: fewest left out, then least lateness, with the critical jobs
    where ``plan`` put them (as ``independent.check(optimal=True)``, without its grams)."""
    inst = independent.parse_instance(doc)
    index = {job.id: i for i, job in enumerate(inst.jobs)}
    where = {index[a["job"]]: (a["cluster"], a["start_slot"]) for a in plan["assignments"]}
    fixed = {i: where.get(i) for i, job in enumerate(inst.jobs) if job.critical}
    return independent.milp_optimum(inst, fixed, grams_level=False)


def plan_of(tmp: Path, doc: dict[str, Any], *params: str) -> dict[str, Any]:
    inst, out = tmp / "instance.json", tmp / "plan.json"
    inst.write_text(json.dumps(doc), encoding="utf-8")
    args = ["plan", "-i", str(inst), "-p", "carbonshift", "-o", str(out), "--format", "json"]
    for p in params:
        args += ["--param", p]
    assert main(args) == 0
    plan: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return plan


@pytest.mark.parametrize(("seed", "critical"), [(0, False), (1, False), (2, True), (3, True)])
def test_a_late_plan_is_least_late(tmp_path: Path, seed: int, critical: bool) -> None:
    doc = overloaded(seed, critical=critical)
    plan = plan_of(tmp_path, doc)
    report = independent.check(doc, plan)
    assert report.ok, str(report)  # every rule the policy promises
    best = least_late(doc, plan)
    assert best.lateness > 0, "the instance must have no on-time plan"
    assert (report.unscheduled, report.lateness_slots) == (best.left_out, best.lateness)
    assert plan["bound"] == {"lower_bound_g": None, "gap": None}


def test_the_step_says_what_it_proved(tmp_path: Path) -> None:
    doc = overloaded(0, critical=False)
    result = run_policy("carbonshift", instance_from_dict(doc), {})
    stats = result.stats
    assert stats["late_milp_proven"] == 1.0
    assert stats["late_milp_columns"] > 0
    plan = plan_of(tmp_path, doc)
    report = independent.check(doc, plan)
    assert report.lateness_slots == least_late(doc, plan).lateness
    assert stats["late_milp_from_slots"] >= report.lateness_slots


def test_off_keeps_the_plan_of_before() -> None:
    doc = overloaded(1, critical=False)
    result = run_policy("carbonshift", instance_from_dict(doc), {"late_milp_columns": 0})
    assert "late_milp_columns" not in result.stats


def test_the_rounds_leave_it_out() -> None:
    # the simulator's, controller's and hub's rounds keep their plans (not measured there)
    online = POLICIES["carbonshift"].online
    assert online is not None
    assert online.round_params["late_milp_columns"] == 0


def test_no_job_is_left_out_that_fits_beside_a_stopped_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step stopped by its limits may return a plan that leaves room for a job it left
    out (caspian 500 seed 0: 7 of 16 jobs left out fitted beside the plan); the policy
    places every such job before it answers. Here step 8b's plan loses 3 placed jobs."""
    real = carbonshift_policy._late_milp

    def stopped(*args: Any, **kwargs: Any) -> carbonshift_policy.LateMilp:
        found = real(*args, **kwargs)
        assert found.state is not None
        arrays = args[0]
        placer = carbonshift_policy._Placer(arrays, classes_of(arrays), found.state)
        dropped = [j for j in np.flatnonzero(found.state.cluster >= 0) if not arrays.critical[j]]
        for j in dropped[:3]:
            placer.remove(int(j))
        return found

    monkeypatch.setattr(carbonshift_policy, "_late_milp", stopped)
    doc = overloaded(0, critical=False)
    plan = plan_of(tmp_path, doc)
    report = independent.check(doc, plan)
    assert report.ok, str(report)  # its left_out rule: no unscheduled job fits beside the plan
    assert report.unscheduled == least_late(doc, plan).left_out


def test_a_job_left_out_says_whether_it_fits_alone() -> None:
    doc = overloaded(0, critical=False)
    doc["clusters"] = doc["clusters"][:1]
    doc["clusters"][0]["capacity"] = {"gpu": 4.0}
    doc["carbon_g_per_kwh"] = {"c0": doc["carbon_g_per_kwh"]["c0"]}
    for job in doc["jobs"]:
        job.pop("allowed_clusters", None)
    doc["jobs"][0]["demand"] = {"gpu": 5.0}  # more than the cluster has
    result = run_policy("carbonshift", instance_from_dict(doc), {})
    out = set(result.plan.unscheduled)
    assert "j0" in out
    assert len(out) > 1, out
    assert "no start of it fits" in result.notes["j0"]
    for job in out - {"j0"}:
        assert "taken by the jobs placed" in result.notes[job], result.notes[job]
