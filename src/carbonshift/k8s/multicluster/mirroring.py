"""Phases 2 and 6 of the hub's pass: the copies of hub Jobs in the spokes.

A hub Job is the one kind whose spoke copy the hub owns (a Kueue Workload's is MultiKueue's,
an AppWrapper's MCAD's): mirroring creates the copy of a placed hub Job when it is missing
(adopting one it finds by the ``hub-uid`` label), mirrors the copy's status back and, once
it finished, writes the hub Job's final status and deletes the copy; it plans again the hub
Jobs of a spoke that stayed away too long, and cleans up copies whose hub object is gone.
"""

from __future__ import annotations

import contextlib
import json
from datetime import datetime

from carbonshift.errors import CarbonshiftError
from carbonshift.k8s.client import ConflictError, ForbiddenError, NotFoundError
from carbonshift.k8s.informer import Informer
from carbonshift.k8s.keys import (
    ANNOTATION_PREFIX,
    HUB_LABEL,
    HUB_UID_LABEL,
    LOST_FROM,
    MANAGED_LABEL,
    PLACED_CLUSTER,
    REASON,
    RELEASED_AT,
    RUNTIME,
    SPOKE_STATUS,
)
from carbonshift.k8s.kinds import HUB_JOB, condition_true
from carbonshift.k8s.multicluster.inventory import Spoke
from carbonshift.k8s.multicluster.record import LOG, HubState, Obj
from carbonshift.k8s.multicluster.workloads import JOBS, HubWorkload

__all__ = ["MirrorPhase"]

_TEMPLATE_LABELS = (
    "batch.kubernetes.io/controller-uid",
    "batch.kubernetes.io/job-name",
    "controller-uid",
    "job-name",
)


class MirrorPhase(HubState):
    """Spoke copies of placed hub Jobs: create or adopt, mirror back, recall, clean up."""

    def _spoke_job(self, w: HubWorkload, cluster: str) -> Obj:
        job = w.obj
        meta, spec = job["metadata"], job.get("spec") or {}
        # new dicts where the copy differs; the rest is shared with the cached hub Job, which
        # nothing writes to (a deep copy per release was a tenth of a pass at 3,000 Jobs)
        template = dict(spec.get("template") or {})
        tmeta = template["metadata"] = dict(template.get("metadata") or {})
        labels = {k: v for k, v in (tmeta.get("labels") or {}).items() if k not in _TEMPLATE_LABELS}
        tmeta["labels"] = labels
        tmeta["annotations"] = {
            **(tmeta.get("annotations") or {}),
            RUNTIME: f"{int(w.remaining.total_seconds())}s",
        }
        body_labels = {
            k: v
            for k, v in (meta.get("labels") or {}).items()
            if k not in (MANAGED_LABEL, HUB_LABEL)
        }
        body_labels[HUB_UID_LABEL] = w.uid
        body_labels[MANAGED_LABEL] = "false"  # a spoke's own carbonshift must not hold it again
        annotations = {
            k: v
            for k, v in (meta.get("annotations") or {}).items()
            if k.startswith(ANNOTATION_PREFIX)
        }
        annotations[PLACED_CLUSTER] = cluster
        return {
            "apiVersion": HUB_JOB.api_version,
            "kind": HUB_JOB.kind,
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "labels": body_labels,
                "annotations": annotations,
            },
            "spec": {
                **{k: spec[k] for k in ("parallelism", "completions", "backoffLimit") if k in spec},
                "suspend": False,
                "template": template,
            },
        }

    async def _spoke_copies(self, spoke: Spoke) -> Informer:
        """The copies of hub Jobs in ``spoke`` (``hub-uid`` label), as a watch on this
        connection keeps them: listed once per connection, not read one by one per pass."""
        assert spoke.api is not None
        copies = spoke.copies
        if copies is None or copies.source is not spoke.api:
            if copies is not None:
                await copies.stop()
            copies = Informer(
                spoke.api,
                JOBS,
                kind=HUB_JOB.kind,
                api_version=HUB_JOB.api_version,
                query={"labelSelector": HUB_UID_LABEL},
            )
            spoke.copies = copies
        if not copies.running or copies.failing:  # the spoke answers now: mend it now
            await copies.relist()
            copies.start(self.clock.backoff)
        return copies

    async def _delete_copy(self, spoke: Spoke, namespace: str, name: str) -> bool:
        """Delete a spoke copy (False: it was gone already); the cache forgets it at once."""
        assert spoke.api is not None
        deleted = await spoke.api.delete(HUB_JOB.path(namespace, name))
        if spoke.copies is not None:
            spoke.copies.forget(f"{namespace}/{name}")
        return deleted

    async def _ensure_copy(self, w: HubWorkload, spoke: Spoke, now: datetime) -> Obj | None:
        """The spoke copy of hub Job ``w``, created when missing; None when it cannot be."""
        assert spoke.api is not None
        meta = w.obj["metadata"]
        copies = await self._spoke_copies(spoke)
        found = copies.items.get(f"{meta['namespace']}/{meta['name']}")
        if found is not None:
            if (found["metadata"].get("labels") or {}).get(HUB_UID_LABEL) == w.uid:
                return found
            # a copy of an older hub object of the same name: remove it, create next time
            await self._delete_copy(spoke, meta["namespace"], meta["name"])
            self._event(now, w.key, "removed-stale-copy", spoke.spec.name, uid=w.uid)
            return None
        if meta["namespace"] not in spoke.namespaces:
            # 409: it exists; 403: the identity may not create namespaces (spoke-rbac.yaml
            # makes that optional), so the operator creates them: try the Job either way
            with contextlib.suppress(ConflictError, ForbiddenError):
                await spoke.api.create(
                    "/api/v1/namespaces",
                    {
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {"name": meta["namespace"]},
                    },
                )
            spoke.namespaces.add(meta["namespace"])
        try:
            created = await spoke.api.create(
                HUB_JOB.path(meta["namespace"]), self._spoke_job(w, spoke.spec.name)
            )
        except ConflictError:  # created meanwhile (another hub replica): adopt next time
            self.tally("adopted")
            return None
        except (ForbiddenError, NotFoundError) as exc:
            spoke.namespaces.discard(meta["namespace"])
            # a misconfigured spoke, not an outage: say what to grant, keep the work placed
            self.tally("errors")
            fix = (
                f"create namespace {meta['namespace']!r} there and bind ClusterRole "
                "carbonshift-spoke-jobs in it with a RoleBinding (deploy/hub/spoke-rbac.yaml)"
            )
            self._event(now, w.key, "copy-refused", spoke.spec.name, f"{exc}; {fix}", uid=w.uid)
            LOG.warning(
                "spoke %s refused the copy of %s (%s): %s", spoke.spec.name, w.key, exc, fix
            )
            return None
        copies.add(f"{meta['namespace']}/{meta['name']}", created)
        self.tally("spoke_creates")
        self._event(now, w.key, "created-in-spoke", spoke.spec.name, uid=w.uid)
        return created

    async def _mirror_jobs(self, now: datetime, workloads: list[HubWorkload]) -> None:
        for w in workloads:
            if w.adapter is not HUB_JOB or w.state != "placed" or w.placed is None:
                continue
            spoke = self.spokes.get(w.placed)
            if spoke is None or not spoke.healthy or spoke.api is None:
                continue
            try:
                copy_ = await self._ensure_copy(w, spoke, now)
                if copy_ is None:
                    continue
                await self._mirror_one(w, spoke, copy_, now)
            except ConflictError:
                self.tally("conflicts")
            except CarbonshiftError as exc:
                self.tally("errors")
                LOG.warning("mirroring %s from %s failed: %s", w.key, w.placed, exc)

    async def _mirror_one(self, w: HubWorkload, spoke: Spoke, remote: Obj, now: datetime) -> None:
        assert spoke.api is not None
        status = remote.get("status") or {}
        finished = condition_true(remote, "Complete") or condition_true(remote, "Failed")
        meta = w.obj["metadata"]
        if finished:
            # the cached hub Job (a stale one answers 409: done again next pass)
            hub_status = dict(w.obj.get("status") or {})
            kept = [c for c in hub_status.get("conditions") or [] if c.get("type") == "Suspended"]
            hub_status.update(
                {
                    k: status[k]
                    for k in ("startTime", "completionTime", "succeeded", "failed")
                    if k in status
                }
            )
            hub_status["active"] = 0
            hub_status["conditions"] = kept + [
                c for c in status.get("conditions") or [] if c.get("type") != "Suspended"
            ]
            body = {**w.obj, "status": hub_status}
            path = HUB_JOB.path(meta["namespace"], meta["name"])
            self._kept(HUB_JOB, await self.hub.replace(path + "/status", body))
            self.tally("mirrored")
            outcome = "Complete" if condition_true(remote, "Complete") else "Failed"
            self._event(now, w.key, f"finished-{outcome.lower()}", spoke.spec.name, uid=w.uid)
            if await self._delete_copy(spoke, meta["namespace"], meta["name"]):
                self.tally("cleaned")
            return
        summary = json.dumps(
            {
                "cluster": spoke.spec.name,
                "active": status.get("active", 0),
                "succeeded": status.get("succeeded", 0),
                "failed": status.get("failed", 0),
                "startTime": status.get("startTime"),
            },
            sort_keys=True,
        )
        if w.annotations.get(SPOKE_STATUS) != summary:
            await self._annotate(w, {SPOKE_STATUS: summary})

    async def _recall_lost(self, now: datetime, workloads: list[HubWorkload]) -> None:
        """Plan again the hub Jobs placed in a spoke that stayed away too long.

        Only Jobs, whose copy the hub owns: MultiKueue does this for Kueue workloads itself
        (``workerLostTimeout``), and MCAD re-dispatches an AppWrapper only after it has taken
        the wrapped resources back from the old cluster, which it cannot do while that
        cluster is away. Whatever ran in the lost spoke is not counted (its progress is
        unknown); the copy there is deleted when the spoke answers again. Work that was in
        fact still running through the partition therefore runs twice: at least once, as
        MultiKueue.
        """
        if self.config.spoke_lost_timeout_s <= 0:
            return
        for w in workloads:
            if w.state != "placed" or w.placed is None or w.adapter is not HUB_JOB:
                continue
            why = self._lost(w.placed, now)
            if why is None:
                continue
            lost = ",".join(filter(None, [w.annotations.get(LOST_FROM), w.placed]))
            plan: dict[str, str | None] = {
                PLACED_CLUSTER: None,
                RELEASED_AT: None,
                SPOKE_STATUS: None,
                LOST_FROM: lost,
                REASON: f"{why}: planned again",
            }
            try:
                await self._annotate(w, plan)
            except ConflictError:
                self.tally("conflicts")
                continue
            except CarbonshiftError as exc:
                self.tally("errors")
                LOG.warning("recalling %s from %s failed: %s", w.key, w.placed, exc)
                continue
            self.tally("recalled", cluster=w.placed)
            self._event(now, w.key, "recalled", w.placed, plan[REASON] or "", w.uid)

    async def _collect_garbage(self, now: datetime, workloads: list[HubWorkload]) -> None:
        live = {w.uid: w.placed for w in workloads if w.adapter is HUB_JOB and w.state == "placed"}
        for name, spoke in self._healthy().items():
            if spoke.api is None:
                continue
            try:
                copies = await self._spoke_copies(spoke)
                for job in list(copies.items.values()):
                    uid = (job["metadata"].get("labels") or {}).get(HUB_UID_LABEL)
                    if live.get(str(uid)) == name:
                        continue
                    meta = job["metadata"]
                    if await self._delete_copy(spoke, meta["namespace"], meta["name"]):
                        self.tally("cleaned")
                        self._event(
                            now,
                            f"Job/{meta['namespace']}/{meta['name']}",
                            "cleaned",
                            name,
                            uid=str(uid or ""),
                        )
            except CarbonshiftError as exc:
                self.tally("errors")
                LOG.warning("cleaning spoke %s failed: %s", name, exc)
