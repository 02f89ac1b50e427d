"""A policy's plan is checked where it enters (run_policy): a buggy or third-party policy
cannot make plan, the simulator, the controller or the hub use an invalid plan silently.
The policies below are reached by their ``module:function`` names, as a user's would be."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from carbonshift.domain import Assignment, ClusterName, Instance, JobId, Plan
from carbonshift.errors import InputError
from carbonshift.planning import run_policy
from carbonshift.planning.output_check import PolicyOutputError, check_policy_output
from carbonshift.planning.types import PlanContext
from tests.builders import cluster, instance, job

HERE = "tests.planning.test_policy_output"


def _a(job_id: str, cluster_name: str = "c1", start: Any = 0) -> Assignment:
    return Assignment(JobId(job_id), ClusterName(cluster_name), start)


def _instance() -> Instance:
    return instance(
        [job("j1", runtime=2), job("j2", release=1), job("j3", allowed=["c1"])],
        [cluster("c1"), cluster("c2")],
        horizon=4,
    )


def _plan(*assignments: Assignment, unscheduled: tuple[str, ...] = ()) -> Plan:
    return Plan.of("buggy", assignments, [JobId(j) for j in unscheduled])


GOOD = (_a("j1"), _a("j2", start=1), _a("j3"))


@pytest.mark.parametrize(
    ("plan", "want_in_message"),
    [
        pytest.param(_plan(*GOOD, _a("ghost")), "unknown job 'ghost'", id="unknown-job"),
        pytest.param(_plan(_a("j1", "nowhere"), *GOOD[1:]), "unknown cluster 'nowhere'",
                     id="unknown-cluster"),
        pytest.param(_plan(GOOD[0], _a("j2", start=0), GOOD[2]), "before its release_slot 1",
                     id="start-before-release"),
        pytest.param(_plan(_a("j1", start=3), *GOOD[1:]), "past the horizon of 4 slots",
                     id="runs-past-the-horizon"),
        pytest.param(_plan(*GOOD, unscheduled=("j1",)), "job 'j1' appears 2 times",
                     id="assigned-and-unscheduled"),
        pytest.param(_plan(*GOOD, GOOD[0]), "job 'j1' appears 2 times", id="assigned-twice"),
        pytest.param(_plan(*GOOD[:2]), "'j3' is neither assigned nor unscheduled",
                     id="job-left-out"),
        pytest.param(_plan(*GOOD[:2], _a("j3", "c2")), "not one of its allowed_clusters",
                     id="not-allowed"),
        pytest.param(_plan(*GOOD, unscheduled=("ghost",)), "unscheduled names unknown job",
                     id="unknown-unscheduled"),
        pytest.param(_plan(_a("j1", start=2**63), *GOOD[1:]), "outside the horizon",
                     id="start-beyond-int64"),  # found by the fuzzer: an OverflowError before
    ],
)  # fmt: skip
def test_an_invalid_plan_is_refused_naming_the_policy_and_the_fix(
    plan: Plan, want_in_message: str
) -> None:
    with pytest.raises(PolicyOutputError) as caught:
        check_policy_output("buggy", _instance(), plan)
    message = str(caught.value)
    assert "policy 'buggy'" in message
    assert want_in_message in message
    assert "fix the policy" in message


def test_a_valid_plan_passes() -> None:
    check_policy_output("fine", _instance(), _plan(*GOOD))
    check_policy_output("fine", _instance(), _plan(unscheduled=("j1", "j2", "j3")))


@pytest.mark.parametrize(
    ("start", "want"),
    [
        pytest.param(math.nan, "NaN", id="nan"),
        pytest.param(1.5, "not a fraction", id="fraction"),
        pytest.param("2", "a str", id="string"),
        pytest.param(True, "a bool", id="boolean"),
    ],
)
def test_an_assignment_refuses_a_start_that_is_not_a_slot_index(start: Any, want: str) -> None:
    with pytest.raises(InputError, match=want):
        _a("j1", start=start)


def test_an_assignment_keeps_whole_numbers_as_int() -> None:
    assert type(_a("j1", start=np.int64(3)).start_slot) is int
    assert _a("j1", start=2.0).start_slot == 2
    with pytest.raises(InputError, match="must be strings"):
        Assignment(JobId("j1"), 7, 0)  # type: ignore[arg-type]


# --- the same, through run_policy, by module:function name ---------------------------------


def leaves_a_job_out(inst: Instance, context: PlanContext | None = None) -> Plan:
    return Plan.of("leaves_a_job_out", [_a(inst.jobs[0].id)])


def returns_a_dict(inst: Instance, context: PlanContext | None = None) -> Plan:
    return {"assignments": []}  # type: ignore[return-value]


def test_run_policy_refuses_a_plugin_policys_invalid_plan() -> None:
    inst = instance([job("j1"), job("j2")])
    with pytest.raises(PolicyOutputError, match=r"policy '.*leaves_a_job_out'.*'j2' is neither"):
        run_policy(f"{HERE}:leaves_a_job_out", inst)
    with pytest.raises(InputError, match="returned dict"):
        run_policy(f"{HERE}:returns_a_dict", inst)


def test_run_policy_passes_the_builtin_policies_plans() -> None:
    inst = _instance()
    for name in ("asap", "carbonshift", "srr"):
        assert run_policy(name, inst).plan.assignments
