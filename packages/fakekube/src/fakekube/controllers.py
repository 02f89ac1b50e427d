"""Emulated cluster components, each a small level-triggered function over the store.

- :func:`schedule`: the default scheduler. Binds Pending, ungated, unbound pods to a Ready,
  schedulable node whose labels satisfy ``nodeSelector`` and required node affinity, whose
  ``NoSchedule``/``NoExecute`` taints are tolerated, and whose allocatable cpu, memory,
  ``nvidia.com/gpu`` and pod count still fit the pod's requests; among those, the least
  allocated node wins (ties by name). Unfit pods get ``PodScheduled=False/Unschedulable`` and
  a ``FailedScheduling`` Event, and are tried again when room may have been freed (a bound
  pod ends or goes, a Node is written); gated pods are left alone.
- :func:`kubelet`: moves bound Pending pods to Running, and Running pods to Succeeded once
  their ``carbonshift.io/expected-runtime`` (``90m``, ``2h``; or
  ``carbonshift.io/remaining-runtime`` when set, the rest of a resumed piece) has passed on
  the cluster's clock (to Failed when ``fakekube.carbonshift.io/exit-code`` is non-zero).
  Pods without either annotation run until deleted.
- :func:`job_controller`: creates pods for unsuspended Jobs up to ``parallelism`` and the
  remaining ``completions``, counts them, marks the Job ``Complete`` (or ``Failed`` past
  ``backoffLimit``), and on suspension deletes active pods and resets ``startTime``. Jobs
  whose ``spec.managedBy`` names another controller than ``kubernetes.io/job-controller``
  are left entirely alone (no pods, no status), as the real Job controller leaves them.
- :func:`namespace_controller`: empties a terminating namespace, then removes it.

All writes go through :class:`~fakekube.api.FakeApi`, so they obey the
same validation and are seen by watches, like the real components' writes. Which pods and
Jobs each run looks at comes from :class:`~fakekube.podindex.PodIndex`, kept from the
store's commits, so a run costs what changed, not every object.
"""

from __future__ import annotations

import contextlib
import copy
from decimal import Decimal
from typing import Any

from fakekube._errors import ApiError
from fakekube.api import FakeApi
from fakekube.clock import format_time
from fakekube.jobs import managed_elsewhere
from fakekube.podindex import (
    RESOURCES,
    RUNTIME_ANNOTATION,
    TERMINAL,
    ends,
    requests,
)
from fakekube.resources import ResourceType
from fakekube.selection import node_matches_pod, parse_quantity, tolerates

__all__ = ["EXIT_CODE_ANNOTATION", "RUNTIME_ANNOTATION", "run_controllers"]

Obj = dict[str, Any]

EXIT_CODE_ANNOTATION = "fakekube.carbonshift.io/exit-code"
_TERMINAL = TERMINAL
_RESOURCES = RESOURCES


def _ready(node: Obj) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _set_condition(status: Obj, condition: Obj) -> None:
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != condition["type"]]
    conditions.append(condition)
    status["conditions"] = conditions


async def _write_status(api: FakeApi, old: Obj, new: Obj) -> None:
    rt = api.kind(old["kind"], old["apiVersion"])
    meta = old["metadata"]
    try:
        await api.update(rt, meta.get("namespace", ""), meta["name"], new, subresource="status")
    except ApiError as exc:
        if exc.code not in (404, 409):
            raise


async def schedule(api: FakeApi) -> None:
    index = api.pods
    # every waiting Pod when room may have been freed since the last run, else only those
    # that arrived since (the others were found unfit and still are)
    retry_all = index.scheduled_epoch != index.epoch
    keys = set(index.unbound) if retry_all else index.fresh & index.unbound
    index.fresh.clear()
    index.scheduled_epoch = index.epoch
    if not keys:
        return
    try:
        await _schedule(api, keys)
    except BaseException:
        index.scheduled_epoch = -1  # a failed run: try every waiting Pod next time
        raise


async def _schedule(api: FakeApi, keys: set[tuple[str, str]]) -> None:
    pod_rt, node_rt = api.kind("Pod"), api.kind("Node")
    index = api.pods
    nodes = [api.get(node_rt, "", n["metadata"]["name"]) for n in api.store.items(node_rt)]
    # what each node holds, kept by the index as the store's writes land (counting every
    # bound Pod here on every run made the fake quadratic in Pods)
    used: dict[str, dict[str, Decimal]] = {
        n["metadata"]["name"]: dict(index.used[n["metadata"]["name"]]) for n in nodes
    }
    count: dict[str, int] = {name: index.count[name] for name in used}
    pending: list[Obj] = []
    for key in keys:
        stored = api.store.peek(pod_rt, *key)
        if stored is not None:
            pending.append(stored)
    pending.sort(
        key=lambda p: (
            -int(p["spec"].get("priority") or 0),
            p["metadata"]["creationTimestamp"],
            int(p["metadata"]["resourceVersion"]),
        )
    )
    for stored in pending:
        pod = api.get(pod_rt, stored["metadata"]["namespace"], stored["metadata"]["name"])
        want = requests(pod)
        best: tuple[Decimal, str] | None = None
        reasons: dict[str, int] = {}
        for node in nodes:
            name = node["metadata"]["name"]
            allocatable = (node.get("status") or {}).get("allocatable") or {}
            why = None
            if not _ready(node):
                why = "node(s) were unschedulable or not ready"
            elif not node_matches_pod(pod["spec"], node):
                why = "node(s) didn't match Pod's node affinity/selector"
            elif any(
                t.get("effect") in ("NoSchedule", "NoExecute")
                and not tolerates(pod["spec"].get("tolerations") or [], t)
                for t in (node.get("spec") or {}).get("taints") or []
            ):
                why = "node(s) had untolerated taint"
            elif count[name] + 1 > int(parse_quantity(allocatable.get("pods", "110")) or 0):
                why = "Too many pods"
            else:
                for res in _RESOURCES:
                    cap = parse_quantity(allocatable.get(res, "0")) or Decimal(0)
                    if want[res] > 0 and used[name][res] + want[res] > cap:
                        why = f"Insufficient {res}"
                        break
            if why is not None:
                reasons[why] = reasons.get(why, 0) + 1
                continue
            load = sum(
                (
                    used[name][r] / (parse_quantity(allocatable.get(r, "0")) or Decimal(1))
                    for r in ("cpu", "memory")
                ),
                Decimal(0),
            )
            if best is None or (load, name) < best:
                best = (load, name)
        meta = pod["metadata"]
        if best is not None:
            node_name = best[1]
            api.bind(
                meta["namespace"], meta["name"], {"target": {"kind": "Node", "name": node_name}}
            )
            for res, qty in want.items():
                used[node_name][res] += qty
            count[node_name] += 1
            api.record_event(
                pod,
                "Scheduled",
                f"Successfully assigned {meta['namespace']}/{meta['name']} to {node_name}",
                component="default-scheduler",
            )
            continue
        detail = ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
        message = (
            f"0/{len(nodes)} nodes are available: {detail}."
            if nodes
            else "no nodes available to schedule pods"
        )
        current: Obj = next(
            (
                c
                for c in (pod.get("status") or {}).get("conditions") or []
                if c.get("type") == "PodScheduled"
            ),
            {},
        )
        if current.get("reason") == "Unschedulable" and current.get("message") == message:
            continue
        new = copy.deepcopy(pod)
        _set_condition(
            new.setdefault("status", {}),
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": format_time(api.clock.now()),
            },
        )
        await _write_status(api, pod, new)
        api.record_event(
            pod, "FailedScheduling", message, type_="Warning", component="default-scheduler"
        )


def _exit_code(pod: Obj) -> int:
    """The exit code the test asked for (a value that is no integer exits 1, like a crash)."""
    raw = (pod["metadata"].get("annotations") or {}).get(EXIT_CODE_ANNOTATION)
    try:
        return max(-(2**31), min(2**31 - 1, int(str(raw or 0).strip())))
    except ValueError:
        return 1


async def kubelet(api: FakeApi) -> None:
    pod_rt = api.kind("Pod")
    now = api.clock.now()
    stamp = format_time(now)
    # only the Pods to start and those due to end, from the index (a look at every Pod per
    # run made the fake quadratic in the number of Pods); in name order, as a scan would be
    for key in sorted(api.pods.starting | api.pods.due(now)):
        stored = api.store.peek(pod_rt, *key)
        if stored is None:
            continue
        spec, status = stored.get("spec") or {}, stored.get("status") or {}
        if not spec.get("nodeName") or status.get("phase") in _TERMINAL:
            continue
        if status.get("phase", "Pending") != "Pending":
            end = ends(stored, status.get("startTime"))
            if end is None or now < end:
                continue
        pod = api.get(pod_rt, stored["metadata"]["namespace"], stored["metadata"]["name"])
        new = copy.deepcopy(pod)
        st = new.setdefault("status", {})
        containers = [c.get("name", "") for c in spec.get("containers") or []]
        if status.get("phase", "Pending") == "Pending":
            index = len(api.store.bucket(pod_rt)) % 250 + 1
            st.update(
                {
                    "phase": "Running",
                    "startTime": stamp,
                    "hostIP": "10.0.0.1",
                    "podIP": f"10.244.0.{index}",
                }
            )
            st["containerStatuses"] = [
                {
                    "name": c,
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "image": "",
                    "imageID": "",
                    "state": {"running": {"startedAt": stamp}},
                }
                for c in containers
            ]
            for kind in ("Initialized", "Ready", "ContainersReady"):
                _set_condition(
                    st,
                    {
                        "type": kind,
                        "status": "True",
                        "lastProbeTime": None,
                        "lastTransitionTime": stamp,
                    },
                )
            await _write_status(api, pod, new)
            api.record_event(pod, "Started", "Started container", component="kubelet")
            continue
        end = ends(pod, status.get("startTime"))
        if end is None or now < end:
            continue
        started = status.get("startTime")
        code = _exit_code(pod)
        st["phase"] = "Succeeded" if code == 0 else "Failed"
        st["containerStatuses"] = [
            {
                "name": c,
                "ready": False,
                "restartCount": 0,
                "started": False,
                "image": "",
                "imageID": "",
                "state": {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Completed" if code == 0 else "Error",
                        "startedAt": started,
                        "finishedAt": stamp,
                    }
                },
            }
            for c in containers
        ]
        for kind in ("Ready", "ContainersReady"):
            _set_condition(
                st,
                {
                    "type": kind,
                    "status": "False",
                    "reason": "PodCompleted",
                    "lastProbeTime": None,
                    "lastTransitionTime": stamp,
                },
            )
        await _write_status(api, pod, new)


def _condition(job: Obj, kind: str) -> Obj | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


async def job_controller(api: FakeApi) -> None:
    job_rt, pod_rt = api.kind("Job", "batch/v1"), api.kind("Pod")
    stamp = format_time(api.clock.now())
    index = api.pods
    keys = sorted(index.dirty_jobs)  # the Jobs written, or whose Pods were, since last time
    index.dirty_jobs.clear()
    try:
        for key in keys:
            stored = api.store.peek(job_rt, *key)
            if stored is not None:
                await _sync_job(api, stored, job_rt, pod_rt, stamp)
    except BaseException:
        index.dirty_jobs.update(keys)  # a failed run: look at them again next time
        raise


async def _sync_job(
    api: FakeApi, stored: Obj, job_rt: ResourceType, pod_rt: ResourceType, stamp: str
) -> None:
    finished = any(
        (_condition(stored, k) or {}).get("status") == "True" for k in ("Complete", "Failed")
    )
    if finished or stored["metadata"].get("deletionTimestamp") or managed_elsewhere(stored):
        return
    job = api.get(job_rt, stored["metadata"]["namespace"], stored["metadata"]["name"])
    meta, spec = job["metadata"], job.get("spec") or {}
    uid = meta["uid"]
    pods = [
        p
        for key in sorted(api.pods.owned.get(uid, ()))
        if key[0] == meta["namespace"] and (p := api.store.peek(pod_rt, *key)) is not None
    ]
    active = [
        p
        for p in pods
        if (p.get("status") or {}).get("phase") not in _TERMINAL
        and not p["metadata"].get("deletionTimestamp")
    ]
    succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
    failed = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed")
    new = copy.deepcopy(job)
    status = new.setdefault("status", {})
    completions = int(spec.get("completions") or 1)
    if spec.get("suspend"):
        for pod in active:
            api.delete(pod_rt, meta["namespace"], pod["metadata"]["name"])
        active = []
        if (_condition(job, "Suspended") or {}).get("status") != "True":
            _set_condition(
                status,
                {
                    "type": "Suspended",
                    "status": "True",
                    "reason": "JobSuspended",
                    "message": "Job suspended",
                    "lastProbeTime": stamp,
                    "lastTransitionTime": stamp,
                },
            )
            status.pop("startTime", None)
            api.record_event(job, "Suspended", "Job suspended", component="job-controller")
    else:
        if (_condition(job, "Suspended") or {}).get("status") == "True":
            _set_condition(
                status,
                {
                    "type": "Suspended",
                    "status": "False",
                    "reason": "JobResumed",
                    "message": "Job resumed",
                    "lastProbeTime": stamp,
                    "lastTransitionTime": stamp,
                },
            )
            api.record_event(job, "Resumed", "Job resumed", component="job-controller")
        status.setdefault("startTime", stamp)
        if succeeded >= completions:
            for kind, reason, message in (
                (
                    "SuccessCriteriaMet",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                ),
                ("Complete", "CompletionsReached", "Reached expected number of succeeded pods"),
            ):
                _set_condition(
                    status,
                    {
                        "type": kind,
                        "status": "True",
                        "reason": reason,
                        "message": message,
                        "lastProbeTime": stamp,
                        "lastTransitionTime": stamp,
                    },
                )
            status["completionTime"] = stamp
            api.record_event(job, "Completed", "Job completed", component="job-controller")
        elif failed > int(spec.get("backoffLimit", 6)):
            for pod in active:
                api.delete(pod_rt, meta["namespace"], pod["metadata"]["name"])
            active = []
            for kind in ("FailureTarget", "Failed"):
                _set_condition(
                    status,
                    {
                        "type": kind,
                        "status": "True",
                        "reason": "BackoffLimitExceeded",
                        "message": "Job has reached the specified backoff limit",
                        "lastProbeTime": stamp,
                        "lastTransitionTime": stamp,
                    },
                )
            api.record_event(
                job,
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
                type_="Warning",
                component="job-controller",
            )
        else:
            missing = min(int(spec.get("parallelism", 1)), completions - succeeded) - len(active)
            for _ in range(max(0, missing)):
                created = await _create_job_pod(api, job)
                if created is not None:
                    active.append(created)
    status["active"] = len(active)
    # The real controller tracks finished pods with finalizers, so its counters never
    # go down; a /status write that lowers them is refused (ValidateJobStatusUpdate).
    old_status = job.get("status") or {}
    status["succeeded"] = max(succeeded, int(old_status.get("succeeded") or 0))
    status["failed"] = max(failed, int(old_status.get("failed") or 0))
    status["ready"] = sum(1 for p in active if (p.get("status") or {}).get("phase") == "Running")
    status["terminating"] = 0
    status["uncountedTerminatedPods"] = {}
    if status != (job.get("status") or {}):
        await _write_status(api, job, new)


async def _create_job_pod(api: FakeApi, job: Obj) -> Obj | None:
    meta = job["metadata"]
    template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    pod_meta = template.get("metadata") or {}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{meta['name']}-",
            "namespace": meta["namespace"],
            "labels": pod_meta.get("labels") or {},
            "annotations": pod_meta.get("annotations") or {},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": template.get("spec") or {},
    }
    try:
        pod = await api.create(api.kind("Pod"), meta["namespace"], body)
    except ApiError as exc:
        api.record_event(
            job,
            "FailedCreate",
            f"Error creating: {exc.message}",
            type_="Warning",
            component="job-controller",
        )
        return None
    api.record_event(
        job,
        "SuccessfulCreate",
        f"Created pod: {pod['metadata']['name']}",
        component="job-controller",
    )
    return pod


async def namespace_controller(api: FakeApi) -> None:
    ns_rt = api.kind("Namespace")
    for ns in list(api.store.items(ns_rt)):
        if not ns["metadata"].get("deletionTimestamp"):
            continue
        name = ns["metadata"]["name"]
        remaining = 0
        for rt in api.registry.all():
            if not rt.namespaced:
                continue
            for obj in list(api.store.items(rt, name)):
                remaining += 1
                if not obj["metadata"].get("deletionTimestamp"):
                    with contextlib.suppress(ApiError):
                        api.delete(rt, name, obj["metadata"]["name"], propagation="Background")
        if remaining == 0 or not any(
            any(True for _ in api.store.items(rt, name))
            for rt in api.registry.all()
            if rt.namespaced
        ):
            current = api.store.peek(ns_rt, "", name)
            if current is not None:
                api.store.commit(ns_rt, "DELETED", copy.deepcopy(current), current)


async def run_controllers(api: FakeApi, *, max_rounds: int = 50) -> int:
    """Run every controller until none writes (a fixed point); return the rounds taken."""
    for round_ in range(1, max_rounds + 1):
        before = api.store.rv
        await namespace_controller(api)
        await job_controller(api)
        await schedule(api)
        await kubelet(api)
        if api.store.rv == before:
            return round_
    return max_rounds
