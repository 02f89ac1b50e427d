"""A small emulation of Kueue v0.19 (``kueue.x-k8s.io/v1beta2``: core, Job integration,
MultiKueue manager) for tests.

It is a client of a fake hub and its fake workers, and makes the state changes that real
Kueue makes in response to what carbonshift writes. Kinds and fields read, all
``kueue.x-k8s.io/v1beta2`` (the CRDs of :mod:`.crds`):

- ``LocalQueue`` (namespaced) ``spec.clusterQueue``; a Workload's ``spec.queueName`` names a
  LocalQueue in the Workload's namespace;
- ``ClusterQueue`` ``spec.admissionChecksStrategy.admissionChecks[].name`` (``onFlavors`` is
  ignored: one flavor) and ``spec.resourceGroups[].flavors[].resources[].nominalQuota``;
- ``AdmissionCheck`` ``spec.controllerName`` and ``spec.parameters`` (a ``MultiKueueConfig``
  for MultiKueue's check);
- ``MultiKueueConfig`` ``spec.clusters``; ``MultiKueueCluster``
  ``spec.clusterSource.kubeConfig.location`` (or ``clusterProfileRef``): a worker is used
  when a MultiKueueCluster of its name has one and the emulator was given a client for it
  (the kubeconfig itself is not read);
- ``Workload`` status as in ``apis/kueue/v1beta2/workload_types.go``; admission check states
  carry ``requeueAfterSeconds`` and ``retryCount`` (feature gate ``ACRequeueAfter``, KEP-3258).

**Emulated, per pass** (time is the hub's virtual clock, ``/fakekube/clock``):

1. *Job integration*: a hub ``batch/v1`` Job labelled ``kueue.x-k8s.io/queue-name`` gets a
   ``Workload`` named ``job-<job>`` (owner reference to the Job; one pod set ``main`` with the
   Job's template and ``count = parallelism``). The Job must be created suspended (real
   Kueue's webhook suspends it; here nothing does) and it stays suspended: real MultiKueue
   relies on ``spec.managedBy``, which the fake hub does not have.
2. *Queues*: a Workload whose LocalQueue or ClusterQueue is missing, or whose ClusterQueue is
   inactive, gets ``QuotaReserved=False`` reason ``Inadmissible`` ("LocalQueue batch doesn't
   exist", ...). A ClusterQueue is ``Active`` when every check it names exists and is Active;
   MultiKueue's check is Active when its MultiKueueConfig exists.
3. *Quota reservation*: a Workload without ``status.admission``, with no check in ``Retry``
   and past ``status.requeueState.requeueAt``, gets ``status.admission`` (clusterQueue,
   podSetAssignments with resourceUsage), ``QuotaReserved=True`` and one
   ``status.admissionChecks`` entry per check of the ClusterQueue (kept if present, else
   ``Pending``), when its pod sets' requests fit the ClusterQueue's unreserved nominal quota
   (one flavor, quota = the sum of ``nominalQuota`` per resource); else
   ``QuotaReserved=False`` reason ``Pending``. No cohorts, borrowing, preemption or fair
   sharing.
4. *Retry = eviction* (KEP-3258): a reserved Workload with a check in ``Retry`` is evicted at
   once: admission, ``clusterName`` and ``nominatedClusterNames`` removed (quota freed),
   ``QuotaReserved=False``, ``Evicted=True`` reason ``AdmissionCheck``, ``Admitted=False``,
   ``Requeued=False``, ``requeueState.count`` + 1. If it was admitted, the time since
   ``Admitted`` turned True is added to ``accumulatedPastExecutionTimeSeconds``, the remote
   Job in the worker is deleted and the hub Job is (kept) suspended. The check states are
   **not** reset yet: checks may still write (e.g. a longer ``requeueAfterSeconds``).
   ``requeueState.requeueAt`` = max over the Retry checks of ``lastTransitionTime +
   requeueAfterSeconds`` (0 when absent); once reached, every check goes back to ``Pending``
   (``retryCount`` + 1 on those that were Retry, podSetUpdates dropped) and ``Requeued=True``
   reason ``BackoffFinished``; the next pass reserves quota again.
   :attr:`KueueEmulator.evictions` and :attr:`KueueEmulator.evicted` count evictions.
5. *MultiKueue, external dispatcher*: a reserved Workload with ``status.nominatedClusterNames``
   and no ``status.clusterName`` is taken by the first nominated usable worker (the emulated
   worker admits at once): ``clusterName`` set, ``nominatedClusterNames`` cleared, the
   MultiKueue check ``Ready`` ("The workload got reservation on ...").
6. *Admission*: a reserved Workload whose checks are all ``Ready`` gets ``Admitted=True``.
7. *Remote run and sync*: an admitted Workload's Job is created in its worker, unsuspended,
   labelled ``kueue.x-k8s.io/multikueue-origin``, with the ``podSetUpdates`` of every check
   applied to the template (labels, annotations, nodeSelector, tolerations); when it
   finishes, its status is copied to the hub Job's status, the Workload gets
   ``Finished=True`` and the remote Job is deleted.
8. *Worker lost* (``multiKueue.workerLostTimeout``): when the worker holding an admitted
   Workload does not answer, the first observation is written in the annotation
   ``kueue.x-k8s.io/multikueue-worker-lost-since``; once ``worker_lost_timeout_s`` has passed
   since then, the MultiKueue check goes ``Retry`` ("Reserving remote lost") and step 4 evicts
   and requeues it, as real Kueue does (``pkg/controller/admissionchecks/multikueue/
   workload.go``, ``reconcileGroup`` step 6a; the Evicted reason is ``AdmissionCheck``).
9. *Garbage collection*: a remote Job with the origin label whose Workload is not reserved on
   that worker (evicted, finished, gone) is deleted when the worker answers.

Not emulated: ResourceFlavors, cohorts, preemption, partial admission, ``onFlavors``,
``Rejected`` checks (real Kueue deactivates the Workload), ``retryDelayMinutes``, Workload
priority, TAS, pods-ready timeouts, remote Workload objects, ``spec.managedBy``, the
admission webhook that stamps ``lastTransitionTime`` on check writes, CEL rules (e.g.
``clusterName`` immutable once set: this emulation never changes it except by eviction).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from fakekube._time import parse_utc
from fakekube.clock import format_time
from fakekube.plugins._client import (
    Emulator,
    FakeClient,
    TransientError,
    WriteConflictError,
    api_path,
)
from fakekube.plugins.crds import KUEUE_API
from fakekube.selection import parse_quantity

__all__ = [
    "MULTIKUEUE_CONTROLLER",
    "ORIGIN_LABEL",
    "QUEUE_LABEL",
    "WORKER_LOST_SINCE",
    "KueueEmulator",
    "admission_check",
    "cluster_queue",
    "local_queue",
    "multikueue_cluster",
    "multikueue_config",
    "setup_objects",
]

Obj = dict[str, Any]
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
PREBUILT_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
WORKER_LOST_SINCE = "kueue.x-k8s.io/multikueue-worker-lost-since"
#: ``multiKueue.origin`` of Kueue's Configuration (default)
ORIGIN = "multikueue"
ADMISSION_MANAGER = "kueue-admission"
_WL = "workloads"


# -- builders of the v1beta2 objects ---------------------------------------------------------


def local_queue(name: str, namespace: str, cluster_queue: str) -> Obj:
    """A ``LocalQueue``: what a Workload's ``spec.queueName`` (and a Job's queue label) names."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    }


def cluster_queue(
    name: str,
    *,
    checks: Sequence[str] = (),
    quota: Mapping[str, int | str],
    flavor: str = "default-flavor",
    cohort: str | None = None,
) -> Obj:
    """A ``ClusterQueue`` with one resource group of one flavor (``quota``: resource -> nominal)."""
    spec: Obj = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": list(quota),
                "flavors": [
                    {
                        "name": flavor,
                        "resources": [{"name": r, "nominalQuota": q} for r, q in quota.items()],
                    }
                ],
            }
        ],
    }
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    if cohort:
        spec["cohortName"] = cohort
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def admission_check(name: str, controller: str, *, multikueue_config: str | None = None) -> Obj:
    """An ``AdmissionCheck``; ``multikueue_config`` names MultiKueue's parameters object."""
    spec: Obj = {"controllerName": controller}
    if multikueue_config:
        spec["parameters"] = {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "MultiKueueConfig",
            "name": multikueue_config,
        }
    return {
        "apiVersion": KUEUE_API,
        "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "spec": spec,
    }


def multikueue_config(name: str, clusters: Sequence[str]) -> Obj:
    """A ``MultiKueueConfig`` listing MultiKueueCluster names."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "MultiKueueConfig",
        "metadata": {"name": name},
        "spec": {"clusters": list(clusters)},
    }


def multikueue_cluster(name: str, secret: str) -> Obj:
    """A ``MultiKueueCluster`` whose kubeconfig is the Secret ``secret`` (key ``kubeconfig``)
    in Kueue's namespace."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "MultiKueueCluster",
        "metadata": {"name": name},
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret}}},
    }


def setup_objects(
    workers: Sequence[str],
    *,
    quota_cpu: int = 64,
    namespace: str = "batch",
    check_controller: str = "carbonshift.io/carbon-aware",
) -> list[Obj]:
    """The hub's Kueue objects for carbon-aware MultiKueue (``deploy/hub/kueue.yaml``): our
    AdmissionCheck ``carbon``, MultiKueue's ``multikueue`` with MultiKueueConfig ``spokes``, a
    MultiKueueCluster per worker (Secret ``spoke-<name>``), ClusterQueue ``batch`` and
    LocalQueue ``batch`` in ``namespace``."""
    return [
        admission_check("carbon", check_controller),
        admission_check("multikueue", MULTIKUEUE_CONTROLLER, multikueue_config="spokes"),
        multikueue_config("spokes", workers),
        *(multikueue_cluster(name, f"spoke-{name}") for name in workers),
        cluster_queue("batch", checks=("carbon", "multikueue"), quota={"cpu": quota_cpu}),
        local_queue("batch", namespace, "batch"),
    ]


# -- status helpers --------------------------------------------------------------------------


def _cond(obj: Obj, kind: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def _true(obj: Obj, kind: str) -> bool:
    return (_cond(obj, kind) or {}).get("status") == "True"


def _set_cond(status: Obj, kind: str, value: bool, reason: str, message: str, now: str) -> None:
    conditions = [dict(c) for c in status.get("conditions") or []]
    for c in conditions:
        if c.get("type") == kind:
            if c.get("status") != ("True" if value else "False"):
                c["lastTransitionTime"] = now
            c.update({"status": "True" if value else "False", "reason": reason, "message": message})
            break
    else:
        conditions.append(
            {
                "type": kind,
                "status": "True" if value else "False",
                "reason": reason,
                "message": message,
                "lastTransitionTime": now,
            }
        )
    status["conditions"] = conditions


def _requests(template: Obj) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for container in (template.get("spec") or {}).get("containers") or []:
        asked = (container.get("resources") or {}).get("requests") or {}
        for name, value in asked.items():
            total[name] = total.get(name, Decimal(0)) + (parse_quantity(str(value)) or Decimal(0))
    return total


def _usage(workload: Obj) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for ps in (workload.get("spec") or {}).get("podSets") or []:
        for name, value in _requests(ps.get("template") or {}).items():
            total[name] = total.get(name, Decimal(0)) + value * int(ps.get("count", 1))
    return total


def _quota(cq: Obj) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for group in (cq.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for res in flavor.get("resources") or []:
                value = parse_quantity(str(res.get("nominalQuota", "0"))) or Decimal(0)
                total[res["name"]] = total.get(res["name"], Decimal(0)) + value
    return total


def _check_names(cq: Obj) -> list[str]:
    """``spec.admissionChecksStrategy.admissionChecks[].name`` (v1beta2 has no
    ``spec.admissionChecks``)."""
    strategy = (cq.get("spec") or {}).get("admissionChecksStrategy") or {}
    return [str(c["name"]) for c in strategy.get("admissionChecks") or [] if c.get("name")]


def _kubeconfig_source(mkc: Obj) -> bool:
    source = (mkc.get("spec") or {}).get("clusterSource") or {}
    kubeconfig = source.get("kubeConfig") or {}
    return bool(kubeconfig.get("location") or (source.get("clusterProfileRef") or {}).get("name"))


def _requeue_at(states: list[Obj]) -> datetime | None:
    """KEP-3258: max over the Retry checks of lastTransitionTime + requeueAfterSeconds."""
    due = [
        parse_utc(str(c["lastTransitionTime"]))
        + timedelta(seconds=int(c.get("requeueAfterSeconds") or 0))
        for c in states
        if c.get("state") == "Retry" and c.get("lastTransitionTime")
    ]
    return max(due) if due else None


@dataclass
class _Pass:
    """What one pass reads once, before it looks at the Workloads."""

    now: datetime
    stamp: str
    checks: dict[str, Obj]
    cqs: dict[str, Obj]
    active: set[str]
    lqs: dict[tuple[str, str], Obj]
    #: MultiKueue check name -> usable worker names (its MultiKueueConfig's clusters)
    mk_workers: dict[str, set[str]]
    jobs: dict[str, Obj]
    used: dict[str, dict[str, Decimal]] = field(default_factory=dict)


class KueueEmulator(Emulator):
    """Kueue as a client of a fake hub (``hub_url``) and workers (MultiKueueCluster name ->
    base URL); ``worker_lost_timeout_s`` is ``multiKueue.workerLostTimeout`` (default 15 min)."""

    max_passes = 20

    def __init__(
        self,
        hub_url: str,
        workers: Mapping[str, str],
        *,
        worker_lost_timeout_s: float = 900.0,
        tokens: Mapping[str, str] | None = None,
        ca_files: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(hub_url, workers, tokens, ca_files)
        self.worker_lost_timeout_s = worker_lost_timeout_s
        self.remote_creates = 0
        self.evictions = 0
        self.evicted: dict[str, int] = {}
        """Evictions per Workload (``namespace/name``)."""
        self.requeues = 0

    async def reconcile(self) -> int:
        """One pass (module doc); answers the writes made."""
        before = self.writes()
        now = await self.hub.now()
        stamp = format_time(now)
        checks = {
            c["metadata"]["name"]: c
            for c in await self.hub.list(api_path(KUEUE_API, "admissionchecks"))
        }
        configs = {
            c["metadata"]["name"]: c
            for c in await self.hub.list(api_path(KUEUE_API, "multikueueconfigs"))
        }
        await self._multikueue_checks_active(checks, configs, stamp)
        cqs = {
            c["metadata"]["name"]: c
            for c in await self.hub.list(api_path(KUEUE_API, "clusterqueues"))
        }
        active = await self._cluster_queues(cqs, checks, stamp)
        lqs = {
            (q["metadata"]["namespace"], q["metadata"]["name"]): q
            for q in await self.hub.list(api_path(KUEUE_API, "localqueues"))
        }
        usable = {
            c["metadata"]["name"]
            for c in await self.hub.list(api_path(KUEUE_API, "multikueueclusters"))
            if _kubeconfig_source(c)
        } & set(self.workers)
        mk_workers = {}
        for name, check in checks.items():
            spec = check.get("spec") or {}
            if spec.get("controllerName") != MULTIKUEUE_CONTROLLER:
                continue
            config = configs.get(str((spec.get("parameters") or {}).get("name", "")))
            clusters = ((config or {}).get("spec") or {}).get("clusters") or []
            mk_workers[name] = {str(c) for c in clusters} & usable
        jobs = await self.hub.list("/apis/batch/v1/jobs")
        await self._job_integration(jobs)
        workloads = await self.hub.list(api_path(KUEUE_API, _WL))
        p = _Pass(now, stamp, checks, cqs, active, lqs, mk_workers, {})
        p.jobs = {j["metadata"]["uid"]: j for j in jobs}
        for wl in workloads:
            adm = (wl.get("status") or {}).get("admission")
            if adm and not _true(wl, "Finished"):
                cq_use = p.used.setdefault(adm["clusterQueue"], {})
                for r, v in _usage(wl).items():
                    cq_use[r] = cq_use.get(r, Decimal(0)) + v
        for wl in sorted(workloads, key=lambda w: w["metadata"].get("creationTimestamp", "")):
            if _true(wl, "Finished"):
                continue
            try:
                await self._workload(wl, p)
            except TransientError:  # this one waits (e.g. a conflict-free retry); not the others
                self.failures += 1
        await self._collect_garbage(workloads)
        return self.writes() - before

    # -- queues and checks -------------------------------------------------------------------

    async def _multikueue_checks_active(
        self, checks: dict[str, Obj], configs: dict[str, Obj], stamp: str
    ) -> None:
        for name, check in checks.items():
            spec = check.get("spec") or {}
            if spec.get("controllerName") != MULTIKUEUE_CONTROLLER:
                continue
            config = str((spec.get("parameters") or {}).get("name", ""))
            ok = config in configs
            current = _cond(check, "Active")
            if current is not None and (current.get("status") == "True") == ok:
                continue
            body = copy.deepcopy(check)
            status = body.setdefault("status", {})
            message = (
                "The admission check is active"
                if ok
                else f'Cannot load the AdmissionChecks parameters: MultiKueueConfig "{config}" '
                "not found"
            )
            _set_cond(status, "Active", ok, "Active" if ok else "BadConfig", message, stamp)
            await self.hub.replace_status(api_path(KUEUE_API, "admissionchecks", name=name), body)

    async def _cluster_queues(
        self, cqs: dict[str, Obj], checks: dict[str, Obj], stamp: str
    ) -> set[str]:
        active: set[str] = set()
        for name, cq in cqs.items():
            names = _check_names(cq)
            missing = [n for n in names if n not in checks or not _true(checks[n], "Active")]
            ok = not missing
            if ok:
                active.add(name)
            current = _cond(cq, "Active")
            if current is not None and (current.get("status") == "True") == ok:
                continue
            body = copy.deepcopy(cq)
            status = body.setdefault("status", {})
            message = "Can admit new workloads" if ok else f"Inactive admission checks: {missing}"
            _set_cond(
                status, "Active", ok, "Ready" if ok else "AdmissionCheckInactive", message, stamp
            )
            await self.hub.replace_status(api_path(KUEUE_API, "clusterqueues", name=name), body)
        return active

    async def _job_integration(self, jobs: list[Obj]) -> None:
        for job in jobs:
            meta = job["metadata"]
            queue = (meta.get("labels") or {}).get(QUEUE_LABEL)
            if not queue:
                continue
            spec = job.get("spec") or {}
            workload = {
                "apiVersion": KUEUE_API,
                "kind": "Workload",
                "metadata": {
                    "name": f"job-{meta['name']}",
                    "namespace": meta["namespace"],
                    "labels": {"kueue.x-k8s.io/job-uid": meta["uid"]},
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
                "spec": {
                    "queueName": queue,
                    "podSets": [
                        {
                            "name": "main",
                            "count": int(spec.get("parallelism", 1)),
                            "template": copy.deepcopy(spec.get("template") or {}),
                        }
                    ],
                },
            }
            path = api_path(KUEUE_API, _WL, meta["namespace"])
            if await self.hub.get(f"{path}/job-{meta['name']}") is None:
                await self.hub.create(path, workload)

    # -- one Workload ------------------------------------------------------------------------

    async def _write(self, wl: Obj, status: Obj) -> None:
        """The Workload's status as real Kueue writes it: server-side apply of the whole
        admission status as field manager ``kueue-admission`` (force, with the read
        resourceVersion: ``workload.ApplyAdmissionStatus`` / ``PrepareWorkloadPatch``), so
        that manager owns ``admission``, the conditions and the check states; another writer
        applying as ``kueue-admission`` without them drops them, as on a real server."""
        if status == (wl.get("status") or {}):
            return
        meta = wl["metadata"]
        path = api_path(KUEUE_API, _WL, meta["namespace"], meta["name"])
        body = {
            "apiVersion": KUEUE_API,
            "kind": "Workload",
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "resourceVersion": meta["resourceVersion"],
            },
            "status": status,
        }
        await self.hub.apply(f"{path}/status", body, ADMISSION_MANAGER)

    async def _workload(self, wl: Obj, p: _Pass) -> None:
        status = copy.deepcopy(wl.get("status") or {})
        if status.get("admission") is None:
            await self._unreserved(wl, status, p)
            return
        states = status.get("admissionChecks") or []
        retry = [c for c in states if c.get("state") == "Retry"]
        if retry:
            await self._evict(wl, status, p, retry)
            return
        mk = [c for c in states if c.get("name") in p.mk_workers]
        usable = set().union(*(p.mk_workers[c["name"]] for c in mk)) if mk else set()
        nominated = [n for n in status.get("nominatedClusterNames") or [] if n in usable]
        if mk and nominated and not status.get("clusterName"):
            status["clusterName"] = nominated[0]
            status.pop("nominatedClusterNames", None)
            for c in mk:
                c.update(
                    {
                        "state": "Ready",
                        "message": f'The workload got reservation on "{nominated[0]}"',
                        "lastTransitionTime": p.stamp,
                    }
                )
            status["admissionChecks"] = states
            await self._write(wl, status)
            return
        if all(c.get("state") == "Ready" for c in states) and not _true(wl, "Admitted"):
            _set_cond(status, "Admitted", True, "Admitted", "The workload is admitted", p.stamp)
            await self._write(wl, status)
            return
        if _true(wl, "Admitted") and status.get("clusterName"):
            await self._run_remote(wl, status, p)

    async def _unreserved(self, wl: Obj, status: Obj, p: _Pass) -> None:
        states = [dict(c) for c in status.get("admissionChecks") or []]
        due = _requeue_at(states)
        if due is not None:  # evicted by a Retry: wait for every check's delay (KEP-3258)
            state = dict(status.get("requeueState") or {})
            if p.now < due:
                state["requeueAt"] = format_time(due)
                status["requeueState"] = state
                await self._write(wl, status)
                return
            for c in states:
                if c.get("state") == "Retry":
                    c["retryCount"] = int(c.get("retryCount") or 0) + 1
                    c["message"] = "Reset to Pending after eviction. Previously: Retry"
                if c.get("state") != "Pending":
                    c["lastTransitionTime"] = p.stamp
                c["state"] = "Pending"
                c.pop("requeueAfterSeconds", None)
                c.pop("podSetUpdates", None)
            status["admissionChecks"] = states
            _set_cond(
                status,
                "Requeued",
                True,
                "BackoffFinished",
                "The workload backoff was finished",
                p.stamp,
            )
            self.requeues += 1
            await self._write(wl, status)
            return
        requeue_at = (status.get("requeueState") or {}).get("requeueAt")
        if requeue_at and parse_utc(str(requeue_at)) > p.now:
            return
        meta = wl["metadata"]
        queue = str((wl.get("spec") or {}).get("queueName", ""))
        lq = p.lqs.get((meta["namespace"], queue))
        cq_name = str(((lq or {}).get("spec") or {}).get("clusterQueue", ""))
        cq = p.cqs.get(cq_name)
        problem = (
            f"LocalQueue {queue} doesn't exist"
            if lq is None
            else f"ClusterQueue {cq_name} doesn't exist"
            if cq is None
            else f"ClusterQueue {cq_name} is inactive"
            if cq_name not in p.active
            else None
        )
        if problem is not None or cq is None:
            _set_cond(status, "QuotaReserved", False, "Inadmissible", str(problem), p.stamp)
            await self._write(wl, status)
            return
        quota, use, need = _quota(cq), p.used.setdefault(cq_name, {}), _usage(wl)
        short = {
            r: v - (quota.get(r, Decimal(0)) - use.get(r, Decimal(0)))
            for r, v in need.items()
            if use.get(r, Decimal(0)) + v > quota.get(r, Decimal(0))
        }
        if short:
            r, more = next(iter(short.items()))
            message = (
                f"insufficient unused quota for {r} in ClusterQueue {cq_name}, {more} more needed"
            )
            _set_cond(status, "QuotaReserved", False, "Pending", message, p.stamp)
            await self._write(wl, status)
            return
        for r, v in need.items():
            use[r] = use.get(r, Decimal(0)) + v
        status["admission"] = {
            "clusterQueue": cq_name,
            "podSetAssignments": [
                {
                    "name": ps.get("name", "main"),
                    "count": int(ps.get("count", 1)),
                    "flavors": dict.fromkeys(need, "default-flavor"),
                    "resourceUsage": {r: str(v) for r, v in need.items()},
                }
                for ps in (wl.get("spec") or {}).get("podSets") or []
            ],
        }
        kept = {c.get("name"): c for c in states}
        status["admissionChecks"] = [
            kept.get(n)
            or {"name": n, "state": "Pending", "message": "", "lastTransitionTime": p.stamp}
            for n in _check_names(cq)
        ]
        _set_cond(
            status,
            "QuotaReserved",
            True,
            "QuotaReserved",
            f"Quota reserved in ClusterQueue {cq_name}",
            p.stamp,
        )
        if _cond(wl, "Evicted") is not None:
            _set_cond(status, "Evicted", False, "QuotaReserved", "Quota reserved again", p.stamp)
        await self._write(wl, status)

    async def _evict(self, wl: Obj, status: Obj, p: _Pass, retry: list[Obj]) -> None:
        meta = wl["metadata"]
        admitted = _cond(wl, "Admitted")
        if admitted is not None and admitted.get("status") == "True":
            since = parse_utc(str(admitted.get("lastTransitionTime") or p.stamp))
            ran_s = max(0, int((p.now - since).total_seconds()))
            past = int(status.get("accumulatedPastExecutionTimeSeconds") or 0)
            status["accumulatedPastExecutionTimeSeconds"] = past + ran_s
        cluster = status.pop("clusterName", None)
        status.pop("admission", None)
        status.pop("nominatedClusterNames", None)
        due = _requeue_at(status.get("admissionChecks") or []) or p.now
        count = int((status.get("requeueState") or {}).get("count", 0)) + 1
        status["requeueState"] = {"count": count, "requeueAt": format_time(due)}
        message = f"At least one admission check is false: {retry[0].get('message', '')}"
        _set_cond(status, "QuotaReserved", False, "Pending", "The workload is evicted", p.stamp)
        _set_cond(status, "Evicted", True, "AdmissionCheck", message, p.stamp)
        _set_cond(
            status, "Admitted", False, "NoReservation", "The workload has no reservation", p.stamp
        )
        _set_cond(status, "Requeued", False, "AdmissionCheck", message, p.stamp)
        await self._write(wl, status)
        key = f"{meta['namespace']}/{meta['name']}"
        self.evictions += 1
        self.evicted[key] = self.evicted.get(key, 0) + 1
        owner = self._owner(wl, p)
        if owner is not None and not (owner.get("spec") or {}).get("suspend"):
            await self.hub.patch(self._job_path(owner), {"spec": {"suspend": True}})
        if WORKER_LOST_SINCE in (meta.get("annotations") or {}):
            path = api_path(KUEUE_API, _WL, meta["namespace"], meta["name"])
            await self.hub.patch(path, {"metadata": {"annotations": {WORKER_LOST_SINCE: None}}})
        worker = self.workers.get(str(cluster or ""))
        if owner is not None and worker is not None:
            # a lost worker: garbage collection deletes the copy when it answers again
            with contextlib.suppress(TransientError):
                await worker.delete(self._job_path(owner))

    # -- remote run ---------------------------------------------------------------------------

    @staticmethod
    def _job_path(job: Obj) -> str:
        meta = job["metadata"]
        return f"/apis/batch/v1/namespaces/{meta['namespace']}/jobs/{meta['name']}"

    @staticmethod
    def _owner(wl: Obj, p: _Pass) -> Obj | None:
        for ref in wl["metadata"].get("ownerReferences") or []:
            if ref.get("uid") in p.jobs:
                return p.jobs[ref["uid"]]
        return None

    async def _run_remote(self, wl: Obj, status: Obj, p: _Pass) -> None:
        owner = self._owner(wl, p)
        worker = self.workers.get(str(status["clusterName"]))
        if owner is None or worker is None:
            return
        try:
            await self._sync_remote(wl, status, owner, worker, p)
        except WriteConflictError:
            return  # a write on the hub was refused: again next pass (the worker is fine)
        except TransientError:
            await self._worker_lost(wl, status, p)
            return
        meta = wl["metadata"]
        if WORKER_LOST_SINCE in (meta.get("annotations") or {}):
            path = api_path(KUEUE_API, _WL, meta["namespace"], meta["name"])
            await self.hub.patch(path, {"metadata": {"annotations": {WORKER_LOST_SINCE: None}}})

    async def _worker_lost(self, wl: Obj, status: Obj, p: _Pass) -> None:
        meta = wl["metadata"]
        raw = (meta.get("annotations") or {}).get(WORKER_LOST_SINCE)
        if raw is None:
            path = api_path(KUEUE_API, _WL, meta["namespace"], meta["name"])
            await self.hub.patch(path, {"metadata": {"annotations": {WORKER_LOST_SINCE: p.stamp}}})
            return
        if p.now - parse_utc(str(raw)) < timedelta(seconds=self.worker_lost_timeout_s):
            return
        states = status.get("admissionChecks") or []
        for c in states:
            if c.get("name") in p.mk_workers and c.get("state") == "Ready":
                c.update({"state": "Retry", "message": "Reserving remote lost"})
                c["lastTransitionTime"] = p.stamp
                c.pop("requeueAfterSeconds", None)
        status["admissionChecks"] = states
        await self._write(wl, status)

    async def _sync_remote(
        self, wl: Obj, status: Obj, owner: Obj, worker: FakeClient, p: _Pass
    ) -> None:
        meta = owner["metadata"]
        path = self._job_path(owner)
        remote = await worker.get(path)
        if remote is None:
            await worker.create(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": meta["namespace"]}},
            )
            if await worker.create(
                f"/apis/batch/v1/namespaces/{meta['namespace']}/jobs",
                self._remote_job(wl, status, owner),
            ):
                self.remote_creates += 1
                key = f"{meta['namespace']}/{meta['name']}"
                self.created[key] = self.created.get(key, 0) + 1
            return
        if not (_true(remote, "Complete") or _true(remote, "Failed")):
            return
        rstatus = remote.get("status") or {}
        if not (_true(owner, "Complete") or _true(owner, "Failed")):
            # (a finished hub Job's status is final: a pass whose Workload write failed after
            # it wrote it again would mutate completionTime, which the API server refuses)
            hub_status = dict(owner.get("status") or {})
            hub_status.update(
                {
                    k: rstatus[k]
                    for k in ("startTime", "completionTime", "succeeded", "failed")
                    if k in rstatus
                }
            )
            hub_status["conditions"] = [
                c for c in hub_status.get("conditions") or [] if c.get("type") == "Suspended"
            ] + [c for c in rstatus.get("conditions") or [] if c.get("type") != "Suspended"]
            await self.hub.replace_status(path, {**owner, "status": hub_status})
        wl_status = copy.deepcopy(wl.get("status") or {})
        ok = _true(remote, "Complete")
        _set_cond(
            wl_status,
            "Finished",
            True,
            "Succeeded" if ok else "Failed",
            "Job finished successfully" if ok else "Job failed",
            p.stamp,
        )
        await self._write(wl, wl_status)
        await worker.delete(path)

    @staticmethod
    def _remote_job(wl: Obj, status: Obj, owner: Obj) -> Obj:
        meta = owner["metadata"]
        template = copy.deepcopy((owner.get("spec") or {}).get("template") or {})
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {
            k: v
            for k, v in (tmeta.get("labels") or {}).items()
            if "controller-uid" not in k and "job-name" not in k
        }
        for check in status.get("admissionChecks") or []:
            for update in check.get("podSetUpdates") or []:
                tmeta.setdefault("labels", {}).update(update.get("labels") or {})
                tmeta.setdefault("annotations", {}).update(update.get("annotations") or {})
                pod = template.setdefault("spec", {})
                if update.get("nodeSelector"):
                    pod.setdefault("nodeSelector", {}).update(update["nodeSelector"])
                if update.get("tolerations"):
                    pod.setdefault("tolerations", []).extend(update["tolerations"])
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "labels": {ORIGIN_LABEL: ORIGIN, PREBUILT_LABEL: wl["metadata"]["name"]},
                "annotations": dict(meta.get("annotations") or {}),
            },
            "spec": {
                **{
                    k: owner["spec"][k]
                    for k in ("parallelism", "completions", "backoffLimit")
                    if k in owner["spec"]
                },
                "suspend": False,
                "template": template,
            },
        }

    async def _collect_garbage(self, workloads: list[Obj]) -> None:
        """Delete remote Jobs of ours whose Workload is not reserved on that worker (step 9)."""
        held = {
            (w["metadata"]["namespace"], w["metadata"]["name"]): (w.get("status") or {}).get(
                "clusterName"
            )
            for w in workloads
            if (w.get("status") or {}).get("admission") and not _true(w, "Finished")
        }
        for name, worker in self.workers.items():
            try:
                remote = await worker.list("/apis/batch/v1/jobs", labelSelector=ORIGIN_LABEL)
                for job in remote:
                    jmeta = job["metadata"]
                    owner = (jmeta.get("labels") or {}).get(PREBUILT_LABEL, "")
                    if held.get((jmeta["namespace"], owner)) == name:
                        continue
                    await worker.delete(self._job_path(job))
            except TransientError:
                continue  # a lost worker: collected when it answers again
