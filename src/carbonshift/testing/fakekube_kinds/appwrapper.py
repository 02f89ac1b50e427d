"""A small emulation of multi-cluster MCAD's AppWrapper dispatcher for tests.

MCAD (``workload.codeflare.dev/v1beta1``), as the multi-cluster MCAD that Caspian ran on
uses it: an AppWrapper on the hub wraps Kubernetes objects
(``spec.resources.GenericItems[].generictemplate``, or ``spec.components[].template``) and
is dispatched once no ``spec.dispatchingGates`` remain, to the spoke named in
``spec.schedulingSpec.clusterScheduling.policyResult.targetCluster.name``.

**Emulated**, per pass over the hub's AppWrappers:

- gated (``dispatchingGates`` not empty): ``status.state: Pending``, message names the gates;
- ungated with a known target cluster and not yet dispatched: every wrapped ``batch/v1`` Job
  is created in that worker (label ``workload.codeflare.dev/appwrapper: <name>``, namespace
  created when missing), ``status.state: Running``, ``status.targetClusterName`` set
  (MCAD's dispatch step, collapsed: no quota check in the spoke);
- when every wrapped Job has finished in the worker: ``status.state: Completed`` (``Failed``
  if one failed), the Jobs' start and completion times copied into ``status``, and the
  worker's copies deleted;
- ungated with no target cluster: left ``Pending`` with a message (the one-cluster MCAD
  would dispatch locally; the hub runs no workloads here).

Not emulated: wrapped kinds other than Jobs, MCAD's queueing, quota and preemption, requeue
on failure, ``schedulingSpec`` fields other than the target cluster, the AppWrapper
controller's later ``components`` status fields.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from carbonshift.testing.fakekube_kinds._client import Emulator, TransientError, api_path
from carbonshift.testing.fakekube_kinds.crds import APPWRAPPER_API

__all__ = ["APPWRAPPER_LABEL", "AppWrapperEmulator", "target_cluster", "wrapped_jobs"]

Obj = dict[str, Any]
APPWRAPPER_LABEL = "workload.codeflare.dev/appwrapper"


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

    def __init__(self, hub_url: str, workers: Mapping[str, str]) -> None:
        super().__init__(hub_url, workers)
        self.dispatches = 0

    async def reconcile(self) -> int:
        before = self.writes()
        for aw in await self.hub.list(api_path(APPWRAPPER_API, "appwrappers")):
            try:
                await self._one(aw)
            except TransientError:  # this one waits (e.g. its worker is down); not the others
                self.failures += 1
        return self.writes() - before

    async def _status(self, aw: Obj, status: Obj) -> None:
        if status == (aw.get("status") or {}):
            return
        meta = aw["metadata"]
        path = api_path(APPWRAPPER_API, "appwrappers", meta["namespace"], meta["name"])
        await self.hub.replace_status(path, {**aw, "status": status})

    async def _one(self, aw: Obj) -> None:
        meta, spec = aw["metadata"], aw.get("spec") or {}
        status = copy.deepcopy(aw.get("status") or {})
        if status.get("state") in ("Completed", "Failed"):
            return
        gates = [g.get("name") for g in spec.get("dispatchingGates") or []]
        target = target_cluster(aw)
        if gates:
            status.update({"state": "Pending", "message": f"dispatching gated by {gates}"})
            await self._status(aw, status)
            return
        worker = self.workers.get(target or "")
        if worker is None:
            status.update({"state": "Pending", "message": f"no known target cluster ({target})"})
            await self._status(aw, status)
            return
        ns = meta["namespace"]
        jobs = wrapped_jobs(aw)
        if status.get("state") != "Running":
            await worker.create(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            )
            for job in jobs:
                job_meta = job.setdefault("metadata", {})
                job_meta["namespace"] = ns
                job_meta.setdefault("labels", {})[APPWRAPPER_LABEL] = meta["name"]
                if await worker.create(f"/apis/batch/v1/namespaces/{ns}/jobs", job):
                    self.created[f"{ns}/{meta['name']}"] = (
                        self.created.get(f"{ns}/{meta['name']}", 0) + 1
                    )
            self.dispatches += 1
            status.update(
                {
                    "state": "Running",
                    "message": f"dispatched to {target}",
                    "targetClusterName": target,
                }
            )
            await self._status(aw, status)
            return
        remote = await worker.list(
            f"/apis/batch/v1/namespaces/{ns}/jobs",
            labelSelector=f"{APPWRAPPER_LABEL}={meta['name']}",
        )
        if len(remote) < len(jobs):
            return
        if not all(_true(j, "Complete") or _true(j, "Failed") for j in remote):
            return
        failed = any(_true(j, "Failed") for j in remote)
        starts = sorted(str((j.get("status") or {}).get("startTime", "")) for j in remote)
        ends = sorted(str((j.get("status") or {}).get("completionTime", "")) for j in remote)
        status.update(
            {
                "state": "Failed" if failed else "Completed",
                "message": f"wrapped jobs finished in {target}",
                "startTime": starts[0] if starts else None,
                "completionTime": ends[-1] if ends else None,
            }
        )
        await self._status(aw, status)
        for job in remote:
            await worker.delete(f"/apis/batch/v1/namespaces/{ns}/jobs/{job['metadata']['name']}")
