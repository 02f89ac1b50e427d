"""A small emulation of multi-cluster MCAD's AppWrapper dispatcher for tests.

Emulated kind: ``AppWrapper`` of ``workload.codeflare.dev/v1beta1`` as the multi-cluster MCAD
that Caspian ran on serves it (github.com/tardieu/mcad, ``api/v1beta1/appwrapper_types.go``
and ``internal/controller/dispatcher.go``): an AppWrapper on the hub wraps Kubernetes objects
(``spec.resources.GenericItems[].generictemplate``, or ``spec.components[].template``) and is
dispatched once ``spec.dispatchingGates`` is empty, to the cluster named in
``spec.schedulingSpec.clusterScheduling.policyResult.targetCluster.name``. In that MCAD a gate
is a string; the emulation only asks whether the list is empty, as MCAD does.

The dispatcher's state lives in ``spec.dispatcherStatus`` (MCAD writes it there: ``phase``
Queued / Dispatching / Running / Succeeded / Failed / Requeuing, ``lastDispatchingTime``,
``dispatchedNanos`` = time dispatched excluding the current leg, ``transitions``); the
runner's in ``status.runnerStatus.phase``. The emulation also writes ``status.state``
(Pending / Running / Completed / Failed) and ``status.message``, the fields of
project-codeflare's single-cluster MCAD that the hub reads today, and
``status.targetClusterName`` (in neither MCAD; read by the hub's tests). Both are to go once
the hub reads ``spec.dispatcherStatus.phase``.

**Emulated**, per pass over the hub's AppWrappers (time is the hub's virtual clock):

- new: ``phase: Queued``; gated: stays ``Queued``, ``status.state: Pending``, message names the
  gates;
- ungated, ``Queued``, target a known worker: every wrapped ``batch/v1`` Job is created in
  that worker (label ``workload.codeflare.dev/appwrapper: <name>``, namespace created when
  missing), ``phase: Running`` (MCAD's Dispatching step collapsed: no quota check in the
  spoke), ``lastDispatchingTime`` = now; :attr:`AppWrapperEmulator.dispatches` + 1;
- ungated, no known target cluster: left ``Queued`` with a message;
- **interruption** (MCAD's ``requeued due to dispatching gate``): a gate put back on a
  ``Running`` AppWrapper makes it ``Requeuing``; the wrapped Jobs are deleted in the cluster
  it ran in, ``dispatchedNanos`` grows by the leg just ended, and it returns to ``Queued``
  (gated: waiting); :attr:`AppWrapperEmulator.requeues` + 1. Removing the gate (and setting a
  target, possibly another cluster) dispatches it again. A target changed while ``Running``
  and ungated is ignored: MCAD's dispatcher reacts to gates only;
- every wrapped Job finished in the worker: ``phase: Succeeded`` (``Failed`` if one failed),
  ``status.state`` Completed / Failed, the Jobs' start and completion times copied into
  ``status``, ``dispatchedNanos`` grown, and the worker's copies deleted.

Not emulated: wrapped kinds other than Jobs, MCAD's queueing, quota, priorities and
``maxNumRequeuings`` on failure, the runner in the spoke (collapsed into the dispatcher),
``schedulingSpec`` fields other than the target cluster.

:class:`LocalMcadEmulator` is the other shape: tardieu/mcad under its own CRD (no gates, no
target cluster, state in ``status``) running in each spoke and dispatching the AppWrappers
created there into that spoke (what a hub that copies AppWrappers to spokes relies on).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from fakekube._time import parse_utc
from fakekube.clock import format_time
from fakekube.plugins._client import Emulator, FakeClient, TransientError, api_path
from fakekube.plugins.crds import APPWRAPPER_API

__all__ = [
    "APPWRAPPER_LABEL",
    "AppWrapperEmulator",
    "LocalMcadEmulator",
    "target_cluster",
    "wrapped_jobs",
]

Obj = dict[str, Any]
APPWRAPPER_LABEL = "workload.codeflare.dev/appwrapper"
_LEGACY_STATE = {
    "Queued": "Pending",
    "Requeuing": "Pending",
    "Dispatching": "Running",
    "Running": "Running",
    "Succeeded": "Completed",
    "Failed": "Failed",
}


def target_cluster(aw: Obj) -> str | None:
    spec = aw.get("spec") or {}
    result = (
        ((spec.get("schedulingSpec") or {}).get("clusterScheduling") or {}).get("policyResult")
        or {}
    ).get("targetCluster") or {}
    name = result.get("name")
    return str(name) if name else None


def wrapped_jobs(aw: Obj) -> list[Obj]:
    spec = aw.get("spec") or {}
    items = [
        i.get("generictemplate") for i in (spec.get("resources") or {}).get("GenericItems") or []
    ]
    items += [i.get("template") for i in spec.get("components") or []]
    return [copy.deepcopy(i) for i in items if isinstance(i, dict) and i.get("kind") == "Job"]


def _true(obj: Obj, kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


class AppWrapperEmulator(Emulator):
    """MCAD's multi-cluster dispatcher as a client of a fake hub and its workers."""

    max_passes = 10

    def __init__(
        self,
        hub_url: str,
        workers: Mapping[str, str],
        tokens: Mapping[str, str] | None = None,
        ca_files: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(hub_url, workers, tokens, ca_files)
        self.dispatches = 0
        self.requeues = 0
        """AppWrappers taken back from a cluster because a gate was put back."""

    async def reconcile(self) -> int:
        before = self.writes()
        now = await self.hub.now()
        for aw in await self.hub.list(api_path(APPWRAPPER_API, "appwrappers")):
            try:
                await self._one(aw, now)
            except TransientError:  # this one waits (e.g. its worker is down); not the others
                self.failures += 1
        return self.writes() - before

    @staticmethod
    def _path(aw: Obj) -> str:
        meta = aw["metadata"]
        return api_path(APPWRAPPER_API, "appwrappers", meta["namespace"], meta["name"])

    async def _phase(
        self, aw: Obj, phase: str, now: datetime, reason: str = "", *, leg_over: bool = False
    ) -> Obj:
        """Write ``spec.dispatcherStatus`` as MCAD's dispatcher does (``update``)."""
        current = dict((aw.get("spec") or {}).get("dispatcherStatus") or {})
        transition = {"time": format_time(now), "phase": phase}
        if reason:
            transition["reason"] = reason
        current["transitions"] = [*(current.get("transitions") or []), transition]
        if leg_over and current.get("lastDispatchingTime"):
            leg = now - parse_utc(str(current["lastDispatchingTime"]))
            nanos = int(leg.total_seconds()) * 1_000_000_000
            current["dispatchedNanos"] = int(current.get("dispatchedNanos") or 0) + nanos
        if phase == "Running" and current.get("phase") != "Running":
            current["lastDispatchingTime"] = format_time(now)
        current["phase"] = phase
        await self.hub.patch(self._path(aw), {"spec": {"dispatcherStatus": current}})
        aw.setdefault("spec", {})["dispatcherStatus"] = current
        return current

    async def _status(self, aw: Obj, phase: str, message: str, **extra: Any) -> None:
        status = aw.get("status") or {}
        runner = {"Running": "Running", "Succeeded": "Succeeded", "Failed": "Failed"}
        want = {
            "state": _LEGACY_STATE.get(phase, "Pending"),
            "message": message,
            "runnerStatus": {**(status.get("runnerStatus") or {}), "phase": runner.get(phase, "")},
            **extra,
        }
        if all(status.get(k) == v for k, v in want.items()):
            return
        await self.hub.patch(f"{self._path(aw)}/status", {"status": want})

    async def _one(self, aw: Obj, now: datetime) -> None:
        meta, spec = aw["metadata"], aw.get("spec") or {}
        phase = str((spec.get("dispatcherStatus") or {}).get("phase") or "")
        if phase in ("Succeeded", "Failed"):
            return
        gates = list(spec.get("dispatchingGates") or [])
        target = target_cluster(aw)
        ns = meta["namespace"]
        if phase == "":
            await self._phase(aw, "Queued", now)
            phase = "Queued"
        if phase in ("Running", "Requeuing", "Dispatching"):
            ran_in = str((aw.get("status") or {}).get("targetClusterName") or target or "")
            worker = self.workers.get(ran_in)
            if gates:  # interruption: take it back from the cluster
                if phase != "Requeuing":
                    await self._phase(aw, "Requeuing", now, "requeued due to dispatching gate")
                if worker is not None:
                    for job in await worker.list(
                        f"/apis/batch/v1/namespaces/{ns}/jobs",
                        labelSelector=f"{APPWRAPPER_LABEL}={meta['name']}",
                    ):
                        name = job["metadata"]["name"]
                        await worker.delete(f"/apis/batch/v1/namespaces/{ns}/jobs/{name}")
                await self._phase(aw, "Queued", now, leg_over=True)
                self.requeues += 1
                await self._status(aw, "Queued", f"requeued due to dispatching gate {gates}")
                return
            if worker is not None:
                await self._watch(aw, now, worker, ran_in)
            return
        if gates:
            await self._status(aw, "Queued", f"dispatching gated by {gates}")
            return
        worker = self.workers.get(target or "")
        if worker is None:
            await self._status(aw, "Queued", f"no known target cluster ({target})")
            return
        await worker.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        )
        for job in wrapped_jobs(aw):
            job_meta = job.setdefault("metadata", {})
            job_meta["namespace"] = ns
            job_meta.setdefault("labels", {})[APPWRAPPER_LABEL] = meta["name"]
            if await worker.create(f"/apis/batch/v1/namespaces/{ns}/jobs", job):
                key = f"{ns}/{meta['name']}"
                self.created[key] = self.created.get(key, 0) + 1
        self.dispatches += 1
        await self._phase(aw, "Running", now)
        await self._status(aw, "Running", f"dispatched to {target}", targetClusterName=target)

    async def _watch(self, aw: Obj, now: datetime, worker: Any, cluster: str) -> None:
        meta = aw["metadata"]
        ns = meta["namespace"]
        remote = await worker.list(
            f"/apis/batch/v1/namespaces/{ns}/jobs",
            labelSelector=f"{APPWRAPPER_LABEL}={meta['name']}",
        )
        if len(remote) < len(wrapped_jobs(aw)):
            return
        if not all(_true(j, "Complete") or _true(j, "Failed") for j in remote):
            return
        failed = any(_true(j, "Failed") for j in remote)
        starts = sorted(str((j.get("status") or {}).get("startTime", "")) for j in remote)
        ends = sorted(str((j.get("status") or {}).get("completionTime", "")) for j in remote)
        phase = "Failed" if failed else "Succeeded"
        # the convenience status first: a pass stops at a terminal phase, so a status write
        # that failed after it would never be made again
        await self._status(
            aw,
            phase,
            f"wrapped jobs finished in {cluster}",
            targetClusterName=cluster,  # again: the Running write may have failed (a fault)
            startTime=starts[0] if starts else None,
            completionTime=ends[-1] if ends else None,
        )
        await self._phase(aw, phase, now, leg_over=True)
        for job in remote:
            await worker.delete(f"/apis/batch/v1/namespaces/{ns}/jobs/{job['metadata']['name']}")


class LocalMcadEmulator(Emulator):
    """tardieu/mcad in each worker, dispatching that worker's own AppWrappers into it.

    Emulated kind: ``AppWrapper`` as tardieu/mcad's own CRD serves it (``upstream/mcad``):
    no dispatching gates and no target cluster; the state lives in ``status``: ``state``
    (``Pending`` / ``Running`` / ``Completed`` / ``Failed``; empty when new), ``step``,
    ``restarts`` (required by the CRD), ``dispatchTimestamp`` and ``transitions`` (``time``,
    ``state``, ``step``). Per pass over each worker's AppWrappers:

    - new (no state): every wrapped ``batch/v1`` Job is created in the AppWrapper's namespace
      (label ``workload.codeflare.dev/appwrapper: <name>``, owned by the AppWrapper, so that
      deleting the AppWrapper deletes them, as MCAD's finalizer does), ``state: Running``,
      ``step: created``, ``dispatchTimestamp`` now; :attr:`dispatches` + 1 and
      :attr:`created` counts the Jobs per ``namespace/name``;
    - ``Running`` and every wrapped Job finished: ``Completed`` (``Failed`` if one failed),
      step Idle (``""``, omitted); the Jobs are left to the AppWrapper's deletion.

    State and step names are tardieu/mcad's (``api/v1beta1/appwrapper_types.go``: ``Queued``
    is written ``Pending``, ``Succeeded`` ``Completed``); its dispatcher's intermediate steps
    (``dispatching``, ``accepting``, ``creating``) are collapsed into one write.

    Not emulated: MCAD's queueing, quota, priorities, requeuing and retries, wrapped kinds
    other than Jobs. The hub client (``hub_url``) is not used: every cluster is a worker.
    """

    def __init__(
        self,
        hub_url: str,
        workers: Mapping[str, str],
        tokens: Mapping[str, str] | None = None,
        ca_files: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(hub_url, workers, tokens, ca_files)
        self.dispatches = 0

    async def reconcile(self) -> int:
        before = self.writes()
        for worker in self.workers.values():
            try:
                now = await worker.now()
                for aw in await worker.list(api_path(APPWRAPPER_API, "appwrappers")):
                    await self._one(worker, aw, now)
            except TransientError:  # this worker waits (e.g. it is down); not the others
                self.failures += 1
        return self.writes() - before

    async def _status(
        self, worker: FakeClient, aw: Obj, state: str, step: str, now: datetime
    ) -> None:
        meta, status = aw["metadata"], dict(aw.get("status") or {})
        status.update({"state": state, "restarts": status.get("restarts", 0)})
        # the Idle step is "" and omitted, as Go's omitempty writes it (null: merge-patched out)
        status["step"] = step or None
        if state == "Running":
            status["dispatchTimestamp"] = format_time(now)
        status["transitions"] = [
            *(status.get("transitions") or []),
            {"time": format_time(now), "state": state, **({"step": step} if step else {})},
        ]
        status["transitionCount"] = len(status["transitions"])
        path = api_path(APPWRAPPER_API, "appwrappers", meta["namespace"], meta["name"])
        await worker.patch(f"{path}/status", {"status": status})

    async def _one(self, worker: FakeClient, aw: Obj, now: datetime) -> None:
        meta = aw["metadata"]
        ns = meta["namespace"]
        state = str((aw.get("status") or {}).get("state") or "")
        if state in ("Completed", "Failed"):
            return
        jobs = f"/apis/batch/v1/namespaces/{ns}/jobs"
        if state in ("", "Pending"):
            for job in wrapped_jobs(aw):
                job_meta = job.setdefault("metadata", {})
                job_meta["namespace"] = ns
                job_meta.setdefault("labels", {})[APPWRAPPER_LABEL] = meta["name"]
                job_meta["ownerReferences"] = [
                    {
                        "apiVersion": APPWRAPPER_API,
                        "kind": "AppWrapper",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ]
                if await worker.create(jobs, job):
                    key = f"{ns}/{meta['name']}"
                    self.created[key] = self.created.get(key, 0) + 1
            self.dispatches += 1
            await self._status(worker, aw, "Running", "created", now)
            return
        remote = await worker.list(jobs, labelSelector=f"{APPWRAPPER_LABEL}={meta['name']}")
        if len(remote) < len(wrapped_jobs(aw)):
            return
        if not all(_true(j, "Complete") or _true(j, "Failed") for j in remote):
            return
        failed = any(_true(j, "Failed") for j in remote)
        await self._status(worker, aw, "Failed" if failed else "Completed", "", now)
