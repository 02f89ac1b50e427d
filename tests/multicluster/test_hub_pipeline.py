"""The hub's pass is a numbered pipeline of timed phases, and each kind is read through its
adapter, never dressed up as a Job."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import cast

from carbonshift.k8s.client import ApiKube
from carbonshift.k8s.clock import SystemClock
from carbonshift.k8s.intent import NotHeld
from carbonshift.k8s.keys import HUB_LABEL, MANAGED_LABEL
from carbonshift.k8s.kinds import APPWRAPPER, HUB_JOB, WORKLOAD
from carbonshift.k8s.multicluster import HubConfig, HubController
from carbonshift.k8s.multicluster.api import HubApi
from carbonshift.k8s.multicluster.hub import PHASES
from carbonshift.k8s.multicluster.workloads import HubWorkload, read_workload
from tests.multicluster.harness import HOLD_OFF, fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)
CONFIG = HubConfig().controller_config()
FLUIDOS = HubConfig.model_validate(
    {"planning": {"policy": "fluidos", "forecast": "oracle", **HOLD_OFF}}
)


def _phase_count(registry: object, phase: str) -> float:
    value = registry.get_sample_value(  # type: ignore[attr-defined]
        "carbonshift_hub_phase_duration_seconds_count", {"phase": phase}
    )
    return float(value or 0.0)


async def test_every_phase_of_every_pass_is_timed_in_order_and_planning_once_per_plan() -> None:
    async with fleet(START, config=FLUIDOS) as f:
        await f.create(f.hub, hub_job("train", cpu=4, runtime_h=2, deadline_h=16))
        controller = await f.start_controller()
        registry = controller.metrics.registry
        await controller.reconcile(max_passes=1)
        assert list(controller.last_phase_s) == list(PHASES)
        assert all(s >= 0 for s in controller.last_phase_s.values())
        assert [_phase_count(registry, p) for p in PHASES] == [1.0] * len(PHASES)
        await controller.reconcile(max_passes=1)
        assert [_phase_count(registry, p) for p in PHASES] == [2.0] * len(PHASES)
        want_plans = float(controller.counters.plans)
        assert want_plans >= 1
        got_plans = registry.get_sample_value("carbonshift_hub_plan_duration_seconds_count")
        assert got_plans == want_plans


def _workload_of(owner: dict) -> dict:  # type: ignore[type-arg]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "job-train",
            "namespace": "batch",
            "uid": "uid-wl",
            "ownerReferences": [{"kind": "Job", "name": "train", "uid": owner["metadata"]["uid"]}],
        },
        "spec": {"podSets": [{"name": "main", "count": 1, "template": owner["spec"]["template"]}]},
        "status": {"admissionChecks": [{"name": "carbon", "state": "Pending"}]},
    }


def _owner(**labels: str) -> dict:  # type: ignore[type-arg]
    job = hub_job("train", queue="batch")
    job["metadata"]["uid"] = "uid-train"
    job["metadata"]["labels"].update(labels)
    return job


def test_a_workload_is_read_as_a_workload_from_its_owner_job_untouched() -> None:
    owner = _owner()
    before = copy.deepcopy(owner)
    got = read_workload("Workload", _workload_of(owner), CONFIG, START, {"uid-train": owner})
    assert isinstance(got, HubWorkload)
    assert got.intent.kind == "Workload"
    assert got.intent.name == "train"  # the owner Job's name, where the intent is written
    assert owner == before


def test_a_workload_whose_owner_job_also_carries_the_hub_label_is_planned() -> None:
    # changed with the adapters: the Job-shaped view refused it as "a hub Job" before
    owner = _owner(**{HUB_LABEL: "true"})
    got = read_workload("Workload", _workload_of(owner), CONFIG, START, {"uid-train": owner})
    assert isinstance(got, HubWorkload)


def test_a_workload_whose_owner_job_opts_out_is_left_alone() -> None:
    owner = _owner(**{MANAGED_LABEL: "false"})
    got = read_workload("Workload", _workload_of(owner), CONFIG, START, {"uid-train": owner})
    assert isinstance(got, NotHeld)


async def test_a_release_is_counted_where_it_happens_without_an_observer() -> None:
    async with fleet(START, config=FLUIDOS) as f:
        # no slack: the plan must start it at once
        await f.create(f.hub, hub_job("urgent", cpu=2, runtime_h=2, deadline_h=2))
        controller = await f.start_controller()
        await controller.reconcile(max_passes=1)
        want_cluster = next(e.cluster for e in controller.events if e.what == "released")
        registry = controller.metrics.registry
        got_releases = registry.get_sample_value(
            "carbonshift_hub_releases_total", {"kind": "Job", "cluster": want_cluster}
        )
        got_copies = registry.get_sample_value(
            "carbonshift_hub_spoke_copies_total", {"action": "created"}
        )
        assert (got_releases, got_copies) == (1.0, 1.0)
        assert controller.counters.releases == 1


def test_the_kind_steps_are_built_once_per_controller() -> None:
    # they were three dicts of bound methods built again for every workload acted on
    controller = HubController(HubConfig(), HubApi(cast(ApiKube, None)), SystemClock())
    steps = controller._kind_steps
    assert steps is controller._kind_steps
    want_kinds = {HUB_JOB.kind, WORKLOAD.kind, APPWRAPPER.kind}
    assert [set(table) for table in steps] == [want_kinds] * 3
