"""One adapter per workload kind: each reads its kind's fields, and no other."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from carbonshift.k8s.config import ControllerConfig
from carbonshift.k8s.intent import Intent, NotHeld, read_intent, read_intent_from
from carbonshift.k8s.keys import (
    HOLD_GATE,
    HUB_LABEL,
    HUB_UID_LABEL,
    MANAGED_LABEL,
    PLACED_CLUSTER,
    RUNTIME,
)
from carbonshift.k8s.kinds import (
    ADAPTERS,
    APPWRAPPER,
    HUB_JOB,
    HUB_KINDS,
    JOB,
    POD,
    WORKLOAD,
    KindAdapter,
)
from tests.k8s.objects import job, pod

Obj = dict[str, Any]
NOW = "2023-11-14T00:00:00Z"
AT = datetime(2023, 11, 14, tzinfo=UTC)
UPSTREAM = Path(__file__).resolve().parents[2] / "packages/fakekube/src/fakekube/plugins/upstream"


def _pod_template(cpu: str = "2") -> Obj:
    return {
        "spec": {
            "containers": [{"name": "m", "image": "x", "resources": {"requests": {"cpu": cpu}}}]
        }
    }


def workload(*, owner_uid: str = "uid-j1", admitted: bool = False, finished: bool = False) -> Obj:
    status: Obj = {"admissionChecks": [{"name": "carbonshift", "state": "Pending"}]}
    if admitted:
        status["admission"] = {"clusterQueue": "cq"}
        status["clusterName"] = "east"
    if finished:
        status["conditions"] = [{"type": "Finished", "status": "True"}]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "job-j1-abcde",
            "namespace": "batch",
            "uid": "uid-wl",
            "ownerReferences": [{"kind": "Job", "name": "j1", "uid": owner_uid}],
        },
        "spec": {"podSets": [{"name": "main", "count": 2, "template": _pod_template("3")}]},
        "status": status,
    }


def appwrapper(
    *,
    gated: bool = True,
    target: str | None = None,
    phase: str = "",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    state: str = "",
) -> Obj:
    spec: Obj = {
        "resources": {
            "GenericItems": [
                {
                    "generictemplate": {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "metadata": {"name": "inner"},
                        "spec": {"parallelism": 2, "template": _pod_template("1")},
                    }
                }
            ]
        },
        "dispatchingGates": ["other"] + ([HOLD_GATE] if gated else []),
    }
    if target:
        spec["schedulingSpec"] = {
            "clusterScheduling": {"policyResult": {"targetCluster": {"name": target}}}
        }
    if phase:
        spec["dispatcherStatus"] = {"phase": phase}
    return {
        "apiVersion": "workload.codeflare.dev/v1beta1",
        "kind": "AppWrapper",
        "metadata": {
            "name": "aw1",
            "namespace": "batch",
            "uid": "uid-aw",
            "creationTimestamp": NOW,
            "labels": labels or {},
            "annotations": {"carbonshift.io/deadline": "12h", **(annotations or {})},
        },
        "spec": spec,
        **({"status": {"state": state, "restarts": 0}} if state else {}),
    }


def _served(crd_file: str) -> tuple[str, set[str], str]:
    crd = yaml.safe_load((UPSTREAM / crd_file).read_text())
    spec = crd["spec"]
    return (
        spec["group"],
        {v["name"] for v in spec["versions"] if v["served"]},
        spec["names"]["plural"],
    )


@pytest.mark.parametrize(
    ("adapter", "crd_file"),
    [
        pytest.param(WORKLOAD, "kueue/kueue.x-k8s.io_workloads.yaml", id="kueue-workload"),
        pytest.param(APPWRAPPER, "mcad/workload.codeflare.dev_appwrappers.yaml", id="appwrapper"),
    ],
)
def test_a_custom_kind_is_addressed_at_a_version_its_real_crd_serves(
    adapter: KindAdapter, crd_file: str
) -> None:
    group, served, plural = _served(crd_file)
    want_group, _, want_version = adapter.api_version.partition("/")
    assert (want_group, plural) == (group, adapter.plural)
    assert want_version in served
    assert adapter.path("batch", "x") == f"/apis/{adapter.api_version}/namespaces/batch/{plural}/x"


@pytest.mark.parametrize(
    ("adapter", "obj", "want_held", "want_finished", "want_runs_on"),
    [
        pytest.param(POD, pod(gates=[HOLD_GATE]), True, False, None, id="gated-pod"),
        pytest.param(POD, pod(gates=["other"]), False, False, None, id="pod-with-another-gate"),
        pytest.param(
            POD,
            {**pod(), "spec": {**pod()["spec"], "nodeName": "n1"}, "status": {"phase": "Failed"}},
            False,
            True,
            "n1",
            id="failed-pod-on-a-node",
        ),
        pytest.param(
            JOB,
            {**job(), "spec": {**job()["spec"], "suspend": True}},
            True,
            False,
            None,
            id="suspended-job",
        ),
        pytest.param(
            JOB,
            {
                **job(annotations={PLACED_CLUSTER: "east"}),
                "status": {"conditions": [{"type": "Complete", "status": "True"}]},
            },
            False,
            True,
            "east",
            id="complete-hub-job-placed-east",
        ),
        pytest.param(WORKLOAD, workload(), True, False, None, id="unadmitted-workload"),
        pytest.param(
            WORKLOAD,
            workload(admitted=True, finished=True),
            False,
            True,
            "east",
            id="finished-workload-in-east",
        ),
        pytest.param(APPWRAPPER, appwrapper(), True, False, None, id="gated-appwrapper"),
        pytest.param(
            APPWRAPPER,
            appwrapper(gated=False, target="west", phase="Succeeded"),
            False,
            True,
            "west",
            id="dispatched-appwrapper",
        ),
        pytest.param(
            APPWRAPPER,
            appwrapper(gated=False, labels={HUB_LABEL: "true"}),
            True,
            False,
            None,
            id="appwrapper-labelled-for-the-hub-not-yet-copied",
        ),
        pytest.param(
            APPWRAPPER,
            appwrapper(
                gated=False,
                labels={HUB_LABEL: "true"},
                annotations={PLACED_CLUSTER: "east"},
                state="Completed",
            ),
            False,
            True,
            "east",
            id="appwrapper-copied-to-east-and-completed-there",
        ),
    ],
)
def test_each_adapter_reads_held_finished_and_where_from_its_own_fields(
    adapter: KindAdapter, obj: Obj, want_held: bool, want_finished: bool, want_runs_on: str | None
) -> None:
    assert adapter.is_held(obj) is want_held
    assert adapter.is_finished(obj) is want_finished
    assert adapter.runs_on(obj) == want_runs_on


def test_the_pod_adapter_gates_at_admission_or_says_why_not() -> None:
    assert POD.admission_ops(pod()) == [
        {"op": "add", "path": "/spec/schedulingGates", "value": [{"name": HOLD_GATE}]}
    ]
    assert POD.admission_ops(pod(gates=["other"])) == [
        {"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": HOLD_GATE}}
    ]
    assert POD.admission_ops(pod(gates=[HOLD_GATE])) is None
    bound = {**pod(), "spec": {**pod()["spec"], "nodeName": "n1"}}
    assert isinstance(POD.admission_ops(bound), str)
    assert POD.release_spec(pod(gates=["other", HOLD_GATE]), None) == {
        "schedulingGates": [{"name": "other"}]
    }
    assert POD.release_spec(pod(gates=[HOLD_GATE]), {"a": 1}) == {
        "schedulingGates": None,
        "affinity": {"a": 1},
    }
    assert POD.late_hold is False


def test_the_job_adapter_suspends_and_unsuspends() -> None:
    assert JOB.admission_ops(job()) == [{"op": "add", "path": "/spec/suspend", "value": True}]
    assert JOB.admission_ops({**job(), "spec": {**job()["spec"], "suspend": True}}) == []
    assert JOB.hold_spec(job()) == {"suspend": True}
    assert JOB.release_spec(job(), {"a": 1}) == {
        "suspend": False,
        "template": {"spec": {"affinity": {"a": 1}}},
    }
    assert JOB.shared_hold is True  # a user may suspend a Job too


def test_the_appwrapper_adapter_swaps_its_gate_for_a_target_and_back() -> None:
    released = APPWRAPPER.release_spec(appwrapper(), "west")
    assert released["dispatchingGates"] == ["other"]
    assert APPWRAPPER.runs_on({"spec": released}) == "west"
    held = APPWRAPPER.hold_spec({**appwrapper(gated=False, target="west")})
    assert held["dispatchingGates"] == ["other", HOLD_GATE]
    assert held["schedulingSpec"]["clusterScheduling"]["policyResult"] is None
    assert APPWRAPPER.spoke_jobs(appwrapper()) == {("batch", "inner")}


def test_an_appwrapper_labelled_for_the_hub_is_copied_without_the_hubs_own_fields() -> None:
    hub_aw = appwrapper(target="west", phase="Queued", labels={HUB_LABEL: "true", "team": "a"})
    assert APPWRAPPER.copied(hub_aw)
    assert APPWRAPPER.hub_owns(hub_aw, ())
    copy_ = APPWRAPPER.spoke_copy(hub_aw, "east", 5400)
    meta, spec = copy_["metadata"], copy_["spec"]
    assert (meta["name"], meta["namespace"]) == ("aw1", "batch")
    want_labels = {"team": "a", HUB_UID_LABEL: "uid-aw", MANAGED_LABEL: "false"}
    assert meta["labels"] == want_labels
    assert meta["annotations"] == {"carbonshift.io/deadline": "12h", PLACED_CLUSTER: "east"}
    assert spec["dispatchingGates"] == ["other"]  # ours stays on the hub object
    assert "dispatcherStatus" not in spec
    assert "clusterScheduling" not in spec["schedulingSpec"]
    wrapped = spec["resources"]["GenericItems"][0]["generictemplate"]
    assert wrapped["metadata"]["labels"] == {MANAGED_LABEL: "false"}
    inner = wrapped["spec"]
    assert inner["template"]["metadata"]["annotations"][RUNTIME] == "5400s"
    assert inner["parallelism"] == 2
    # the hub object is not changed by copying it
    assert hub_aw["spec"]["dispatchingGates"] == ["other", HOLD_GATE]
    assert (
        "labels"
        not in hub_aw["spec"]["resources"]["GenericItems"][0]["generictemplate"]["metadata"]
    )
    assert (
        "metadata"
        not in hub_aw["spec"]["resources"]["GenericItems"][0]["generictemplate"]["spec"]["template"]
    )
    # a copy is never the hub's own (a hub that is also a spoke sees its copies)
    assert not APPWRAPPER.copied(copy_)
    assert not APPWRAPPER.hub_owns(copy_, ())
    assert APPWRAPPER.copy_status(hub_aw, {"status": {"state": "Completed", "restarts": 0}}) == {
        "state": "Completed",
        "restarts": 0,
    }
    assert APPWRAPPER.succeeded(appwrapper(state="Completed"))
    assert not APPWRAPPER.succeeded(appwrapper(state="Failed"))


def test_a_workload_reads_its_intent_from_its_owner_job_and_runs_its_pod_sets() -> None:
    owner = job(managed=None, annotations={"carbonshift.io/deadline": "12h"})
    assert (
        WORKLOAD.intent_source(workload(owner_uid="gone"), {owner["metadata"]["uid"]: owner})
        is None
    )
    source = WORKLOAD.intent_source(workload(), {owner["metadata"]["uid"]: owner})
    assert source is not None
    assert source.metadata is owner["metadata"]
    assert WORKLOAD.pod_specs(workload()) == [_pod_template("3")["spec"]]
    assert WORKLOAD.spoke_jobs(workload()) == {("batch", "j1")}
    assert WORKLOAD.our_check(workload(), {"carbonshift"}) == {
        "name": "carbonshift",
        "state": "Pending",
    }
    assert WORKLOAD.our_check(workload(), {"someone-else"}) is None


def _config() -> ControllerConfig:
    return ControllerConfig()


@pytest.mark.parametrize(
    ("adapter", "obj", "owners", "want_kind", "want_cpu"),
    [
        pytest.param(
            HUB_JOB,
            job(managed=None, annotations={"carbonshift.io/deadline": "12h"}),
            {},
            "Job",
            None,
            id="hub-job-by-hub-label",
        ),
        pytest.param(APPWRAPPER, appwrapper(), {}, "AppWrapper", 2.0, id="appwrapper-by-its-gate"),
    ],
)
def test_hub_kinds_read_their_intent_without_being_dressed_as_a_job(
    adapter: KindAdapter, obj: Obj, owners: dict[str, Obj], want_kind: str, want_cpu: float | None
) -> None:
    if adapter is HUB_JOB:
        obj["metadata"]["labels"][HUB_LABEL] = "true"
    source = adapter.intent_source(obj, owners)
    assert source is not None
    intent = read_intent_from(source, _config(), AT)
    assert isinstance(intent, Intent), intent
    assert intent.kind == want_kind
    if want_cpu is not None:
        assert intent.demand["cpu"] == want_cpu  # 1 cpu x parallelism 2
    assert "kind" not in source.metadata  # nothing was rewritten on the way


def test_the_controller_refuses_a_hub_job_and_the_hub_takes_it() -> None:
    now = AT
    hub_job = job(managed=None)
    hub_job["metadata"]["labels"][HUB_LABEL] = "true"
    assert isinstance(read_intent(hub_job, _config(), now), NotHeld)
    source = HUB_JOB.intent_source(hub_job, {})
    assert source is not None
    assert isinstance(read_intent_from(source, _config(), now), Intent)
    hub_job["metadata"]["labels"][MANAGED_LABEL] = "false"  # the label still opts it out
    source = HUB_JOB.intent_source(hub_job, {})
    assert source is not None
    assert isinstance(read_intent_from(source, _config(), now), NotHeld)


def test_every_kind_has_one_adapter() -> None:
    assert sorted(ADAPTERS) == ["AppWrapper", "Job", "Pod", "Workload"]
    assert [a.kind for a in HUB_KINDS] == ["Job", "Workload", "AppWrapper"]
    assert all(ADAPTERS[a.kind].kind == a.kind for a in HUB_KINDS)


@pytest.mark.parametrize(
    ("obj", "opt_in", "want_reason"),
    [
        pytest.param(
            pod(), {"manage_pods": False}, "Pods are not managed (opt_in.manage_pods = false)",
            id="pods-switched-off",
        ),
        pytest.param(
            job(), {"manage_jobs": False}, "Jobs are not managed (opt_in.manage_jobs = false)",
            id="jobs-switched-off",
        ),
        pytest.param(
            pod(owner_job="j1"), {}, "a Job's pod: the Job is held, not its pods",
            id="a-jobs-pod",
        ),
    ],
)  # fmt: skip
def test_the_controller_asks_each_kinds_adapter_whether_it_holds_it(
    obj: Obj, opt_in: dict[str, bool], want_reason: str
) -> None:
    config = ControllerConfig.model_validate({"opt_in": opt_in})
    got = read_intent(obj, config, AT)
    assert isinstance(got, NotHeld)
    assert got.reason == want_reason
