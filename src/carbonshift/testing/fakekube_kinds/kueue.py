"""A small emulation of Kueue v0.19 (core, Job integration, MultiKueue manager) for tests.

It is a client of a fake hub and its fake workers, and makes the state changes that real
Kueue makes in response to what carbonshift writes. **Emulated, in this order, per pass:**

1. *Job integration*: a hub ``batch/v1`` Job labelled ``kueue.x-k8s.io/queue-name`` gets a
   ``Workload`` named ``job-<job>`` (owner reference to the Job; one pod set ``main`` with
   the Job's template and ``count = parallelism``). The Job must be created suspended (real
   Kueue's webhook suspends it; here nothing does).
2. *Quota reservation*: a Workload without ``status.admission``, past its
   ``status.requeueState.requeueAt``, whose ClusterQueue is active and has room, gets
   ``status.admission`` (clusterQueue, podSetAssignments with resourceUsage),
   ``QuotaReserved=True`` and one ``status.admissionChecks`` entry per check of the
   ClusterQueue, state ``Pending``. **Simplification**: ``spec.queueName`` names the
   ClusterQueue directly (no LocalQueue kind); one flavor, quota = the sum of
   ``nominalQuota`` of each covered resource; no cohorts, borrowing, preemption or fair
   sharing.
3. *Retry*: a reserved Workload with a check in state ``Retry`` is evicted: admission
   removed, ``QuotaReserved=False``, ``Evicted=True`` (reason ``AdmissionCheck``),
   ``requeueState`` = {count + 1, requeueAt = now + the check's ``requeueAfterSeconds``
   (0 when absent)}, every check back to ``Pending`` (KEP-3258 behaviour), nominated
   clusters cleared.
4. *MultiKueue, external dispatcher*: a reserved Workload with ``status.nominatedClusterNames``
   and no ``status.clusterName`` is taken by the first nominated worker (the emulated worker
   admits at once): ``clusterName`` set, ``nominatedClusterNames`` cleared, the MultiKueue
   check (AdmissionCheck with controllerName ``kueue.x-k8s.io/multikueue``) ``Ready``.
   MultiKueue checks are marked ``Active``; a worker named in no MultiKueueCluster is not used.
5. *Admission*: a reserved Workload whose checks are all ``Ready`` gets ``Admitted=True``.
6. *Remote run and sync*: an admitted Workload's Job is created in its worker, unsuspended,
   with the ``podSetUpdates`` of every check applied to the template (labels, annotations,
   nodeSelector); when it finishes, its status is copied to the hub Job's status, the
   Workload gets ``Finished=True`` and the remote Job is deleted. (Real MultiKueue creates a
   remote Workload too, and the hub Job carries ``spec.managedBy``; the fake hub has no
   ``managedBy``, so the hub Job stays suspended.)
7. *ClusterQueue*: ``Active=True`` when every check it names exists and is Active.

Not emulated: LocalQueues, ResourceFlavors, cohorts, preemption, partial admission,
``retryDelayMinutes``, Workload priority, TAS, pods-ready timeouts, remote Workload objects.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from carbonshift.testing.fakekube.clock import format_time
from carbonshift.testing.fakekube.selection import parse_quantity
from carbonshift.testing.fakekube_kinds._client import Emulator, TransientError, api_path
from carbonshift.testing.fakekube_kinds.crds import KUEUE_API
from carbonshift.units import parse_utc

__all__ = ["MULTIKUEUE_CONTROLLER", "QUEUE_LABEL", "KueueEmulator"]

Obj = dict[str, Any]
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
_WL = "workloads"


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


class KueueEmulator(Emulator):
    """Kueue as a client of a fake hub (``hub_url``) and workers (name -> base URL)."""

    max_passes = 20

    def __init__(self, hub_url: str, workers: Mapping[str, str]) -> None:
        super().__init__(hub_url, workers)
        self.remote_creates = 0

    async def reconcile(self) -> int:
        """One pass (module doc); answers the writes made."""
        before = self.writes()
        now = await self.hub.now()
        stamp = format_time(now)
        checks = {
            c["metadata"]["name"]: c
            for c in await self.hub.list(api_path(KUEUE_API, "admissionchecks"))
        }
        await self._multikueue_checks_active(checks, stamp)
        cqs = {
            c["metadata"]["name"]: c
            for c in await self.hub.list(api_path(KUEUE_API, "clusterqueues"))
        }
        active = await self._cluster_queues(cqs, checks, stamp)
        mk_clusters = {
            c["metadata"]["name"]
            for c in await self.hub.list(api_path(KUEUE_API, "multikueueclusters"))
        }
        jobs = await self.hub.list("/apis/batch/v1/jobs")
        await self._job_integration(jobs)
        workloads = await self.hub.list(api_path(KUEUE_API, _WL))
        by_uid = {j["metadata"]["uid"]: j for j in jobs}
        used: dict[str, dict[str, Decimal]] = {}
        for wl in workloads:
            adm = (wl.get("status") or {}).get("admission")
            if adm and not _true(wl, "Finished"):
                cq_use = used.setdefault(adm["clusterQueue"], {})
                for r, v in _usage(wl).items():
                    cq_use[r] = cq_use.get(r, Decimal(0)) + v
        for wl in sorted(workloads, key=lambda w: w["metadata"].get("creationTimestamp", "")):
            if _true(wl, "Finished"):
                continue
            try:
                await self._workload(wl, now, stamp, cqs, active, checks, used, mk_clusters, by_uid)
            except TransientError:  # this one waits (e.g. its worker is down); not the others
                self.failures += 1
        after = self.writes()
        return after - before

    async def _multikueue_checks_active(self, checks: dict[str, Obj], stamp: str) -> None:
        for name, check in checks.items():
            if (check.get("spec") or {}).get("controllerName") != MULTIKUEUE_CONTROLLER:
                continue
            if _true(check, "Active"):
                continue
            body = copy.deepcopy(check)
            status = body.setdefault("status", {})
            _set_cond(status, "Active", True, "Active", "Connected", stamp)
            await self.hub.replace_status(api_path(KUEUE_API, "admissionchecks", name=name), body)

    async def _cluster_queues(
        self, cqs: dict[str, Obj], checks: dict[str, Obj], stamp: str
    ) -> set[str]:
        active: set[str] = set()
        for name, cq in cqs.items():
            names = [
                c if isinstance(c, str) else c.get("name")
                for c in (cq.get("spec") or {}).get("admissionChecks") or []
            ]
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

    async def _workload(
        self,
        wl: Obj,
        now: datetime,
        stamp: str,
        cqs: dict[str, Obj],
        active: set[str],
        checks: dict[str, Obj],
        used: dict[str, dict[str, Decimal]],
        mk_clusters: set[str],
        jobs: dict[str, Obj],
    ) -> None:
        meta = wl["metadata"]
        path = api_path(KUEUE_API, _WL, meta["namespace"], meta["name"])
        status = copy.deepcopy(wl.get("status") or {})
        adm = status.get("admission")
        cq_name = str((wl.get("spec") or {}).get("queueName", ""))
        if adm is None:
            requeue_at = (status.get("requeueState") or {}).get("requeueAt")
            if requeue_at and parse_utc(str(requeue_at)) > now:
                return
            cq = cqs.get(cq_name)
            if cq is None or cq_name not in active:
                return
            quota, use, need = _quota(cq), used.setdefault(cq_name, {}), _usage(wl)
            if any(use.get(r, Decimal(0)) + v > quota.get(r, Decimal(0)) for r, v in need.items()):
                _set_cond(status, "QuotaReserved", False, "Pending", "insufficient quota", stamp)
                if status != (wl.get("status") or {}):
                    await self.hub.replace_status(path, {**wl, "status": status})
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
            names = [
                c if isinstance(c, str) else c.get("name")
                for c in (cq.get("spec") or {}).get("admissionChecks") or []
            ]
            status["admissionChecks"] = [
                {"name": n, "state": "Pending", "message": "", "lastTransitionTime": stamp}
                for n in names
            ]
            _set_cond(
                status,
                "QuotaReserved",
                True,
                "QuotaReserved",
                f"Quota reserved in ClusterQueue {cq_name}",
                stamp,
            )
            if _cond(wl, "Evicted") is not None:
                _set_cond(status, "Evicted", False, "QuotaReserved", "Quota reserved again", stamp)
            await self.hub.replace_status(path, {**wl, "status": status})
            return
        states = status.get("admissionChecks") or []
        retry = [c for c in states if c.get("state") == "Retry"]
        if retry:
            wait = max(int(c.get("requeueAfterSeconds", 0) or 0) for c in retry)
            status.pop("admission", None)
            status.pop("nominatedClusterNames", None)
            status.pop("clusterName", None)
            count = int((status.get("requeueState") or {}).get("count", 0)) + 1
            status["requeueState"] = {
                "count": count,
                "requeueAt": format_time(now + timedelta(seconds=wait)),
            }
            status["admissionChecks"] = [
                {
                    k: v
                    for k, v in {**c, "state": "Pending", "lastTransitionTime": stamp}.items()
                    if k not in ("requeueAfterSeconds", "podSetUpdates")
                }
                for c in states
            ]
            _set_cond(
                status, "QuotaReserved", False, "Pending", "evicted by an admission check", stamp
            )
            _set_cond(
                status,
                "Evicted",
                True,
                "AdmissionCheck",
                f"At least one admission check is false: {retry[0]['message']}",
                stamp,
            )
            _set_cond(
                status, "Admitted", False, "NoReservation", "The workload has no reservation", stamp
            )
            await self.hub.replace_status(path, {**wl, "status": status})
            return
        mk = [
            c
            for c in states
            if (checks.get(c.get("name", "")) or {}).get("spec", {}).get("controllerName")
            == MULTIKUEUE_CONTROLLER
        ]
        nominated = [
            n
            for n in status.get("nominatedClusterNames") or []
            if n in mk_clusters and n in self.workers
        ]
        if mk and nominated and not status.get("clusterName"):
            status["clusterName"] = nominated[0]
            status.pop("nominatedClusterNames", None)
            for c in states:
                if c in mk:
                    c.update(
                        {
                            "state": "Ready",
                            "message": f'The workload got reservation on "{nominated[0]}"',
                            "lastTransitionTime": stamp,
                        }
                    )
            status["admissionChecks"] = states
            await self.hub.replace_status(path, {**wl, "status": status})
            return
        if all(c.get("state") == "Ready" for c in states) and not _true(wl, "Admitted"):
            _set_cond(status, "Admitted", True, "Admitted", "The workload is admitted", stamp)
            await self.hub.replace_status(path, {**wl, "status": status})
            return
        if _true(wl, "Admitted") and status.get("clusterName"):
            await self._run_remote(wl, status, jobs, stamp)

    async def _run_remote(self, wl: Obj, status: Obj, jobs: dict[str, Obj], stamp: str) -> None:
        owner = next(
            (
                jobs[r["uid"]]
                for r in wl["metadata"].get("ownerReferences") or []
                if r.get("uid") in jobs
            ),
            None,
        )
        worker = self.workers.get(str(status["clusterName"]))
        if owner is None or worker is None:
            return
        meta = owner["metadata"]
        path = f"/apis/batch/v1/namespaces/{meta['namespace']}/jobs/{meta['name']}"
        remote = await worker.get(path)
        if remote is None:
            await worker.create(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": meta["namespace"]}},
            )
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
                    if update.get("nodeSelector"):
                        template.setdefault("spec", {}).setdefault("nodeSelector", {}).update(
                            update["nodeSelector"]
                        )
            body = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "labels": {
                        ORIGIN_LABEL: "hub",
                        "kueue.x-k8s.io/prebuilt-workload-name": wl["metadata"]["name"],
                    },
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
            if await worker.create(f"/apis/batch/v1/namespaces/{meta['namespace']}/jobs", body):
                self.remote_creates += 1
                key = f"{meta['namespace']}/{meta['name']}"
                self.created[key] = self.created.get(key, 0) + 1
            return
        if not (_true(remote, "Complete") or _true(remote, "Failed")):
            return
        rstatus = remote.get("status") or {}
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
            stamp,
        )
        wl_path = api_path(KUEUE_API, _WL, wl["metadata"]["namespace"], wl["metadata"]["name"])
        await self.hub.replace_status(wl_path, {**wl, "status": wl_status})
        await worker.delete(path)
