"""Phases 2 and 6 of the hub's pass: the copies the hub owns in the spokes.

A hub Job, and an AppWrapper labelled for the hub, run as a copy the hub owns in the spoke
(a Kueue Workload's is MultiKueue's, a gated AppWrapper's its MCAD's): mirroring creates the
copy of a placed one when it is missing (adopting one it finds by the ``hub-uid`` label),
mirrors the copy's status back and, once it finished, writes the hub object's final status
and deletes the copy; it plans again the copied work of a spoke that stayed away too long,
and cleans up copies whose hub object is gone. What a copy is, and what its status says,
comes from the kind's adapter (:class:`carbonshift.k8s.kinds.Copied`).
"""

from __future__ import annotations

import contextlib
import json
from datetime import datetime

from carbonshift.errors import CarbonshiftError
from carbonshift.k8s.client import ConflictError, ForbiddenError, NotFoundError
from carbonshift.k8s.informer import Informer
from carbonshift.k8s.keys import (
    HUB_UID_LABEL,
    LOST_FROM,
    PLACED_CLUSTER,
    REASON,
    RELEASED_AT,
    SPOKE_STATUS,
)
from carbonshift.k8s.kinds import COPIED_KINDS, HUB_JOB, Copied
from carbonshift.k8s.multicluster.inventory import Spoke
from carbonshift.k8s.multicluster.record import LOG, HubState, Obj
from carbonshift.k8s.multicluster.workloads import HubWorkload

__all__ = ["ABSENT_RETRY_S", "MirrorPhase", "copier"]

ABSENT_RETRY_S = 900.0
"""Seconds after which the hub asks a spoke again for a kind of copies it did not serve."""


def copier(w: HubWorkload) -> Copied | None:
    """``w``'s adapter when the hub places ``w`` as a copy of its own (None: it does not)."""
    adapter = COPIED_KINDS.get(w.kind)
    return adapter if adapter is not None and adapter.copied(w.obj) else None


class MirrorPhase(HubState):
    """Spoke copies of placed hub work: create or adopt, mirror back, recall, clean up."""

    def _serves(self, spoke: Spoke, kind: str) -> bool:
        """Whether to ask ``spoke`` for its copies of ``kind`` now: not found absent there,
        or found so more than :data:`ABSENT_RETRY_S` ago (MCAD may have been installed)."""
        since = spoke.absent_kinds.get(kind)
        return since is None or (self.clock.now() - since).total_seconds() >= ABSENT_RETRY_S

    async def _spoke_copies(self, spoke: Spoke, adapter: Copied = HUB_JOB) -> Informer | None:
        """The copies of ``adapter``'s kind in ``spoke`` (``hub-uid`` label), as a watch on
        this connection keeps them: listed once per connection, not read one by one per pass.
        None when the spoke does not serve the kind or may not list it (it is then noted in
        ``spoke.absent_kinds``, and no copy of that kind is planned there)."""
        assert spoke.api is not None
        copies = spoke.kind_copies.get(adapter.kind)
        if copies is None or copies.source is not spoke.api:
            if copies is not None:
                await copies.stop()
            copies = Informer(
                spoke.api,
                adapter.path(),
                kind=adapter.kind,
                api_version=adapter.api_version,
                query={"labelSelector": HUB_UID_LABEL},
            )
            spoke.kind_copies[adapter.kind] = copies
        if not copies.running or copies.failing:  # the spoke answers now: mend it now
            try:
                await copies.relist()
            except (NotFoundError, ForbiddenError) as exc:
                if adapter is HUB_JOB:
                    raise  # every spoke serves Jobs, and spoke-rbac.yaml grants listing them
                # no such kind there (a spoke without MCAD: normal where AppWrappers are
                # gated), or no grant: say so once, at info or as a misconfiguration
                log = LOG.warning if isinstance(exc, ForbiddenError) else LOG.info
                if adapter.kind not in spoke.absent_kinds:
                    log(
                        "spoke %s: cannot list %s there (%s): no copy of one goes there; "
                        "install it there and grant get/list/watch of it "
                        "(deploy/hub/spoke-rbac.yaml) to place copies of it there",
                        spoke.spec.name,
                        adapter.plural,
                        exc,
                    )
                spoke.absent_kinds[adapter.kind] = self.clock.now()
                return None
            spoke.absent_kinds.pop(adapter.kind, None)
            copies.start(self.clock.backoff)
        return copies

    async def _probe_copies(self) -> None:
        """Start the copies' caches of every copied kind the hub serves in every healthy
        spoke, so that the plan knows which spokes serve which kind before it places any."""
        kinds = [a for a in COPIED_KINDS.values() if a.path() not in self._absent]
        for name, spoke in self._healthy().items():
            for adapter in kinds:
                if spoke.api is None or not self._serves(spoke, adapter.kind):
                    continue
                try:
                    await self._spoke_copies(spoke, adapter)
                except CarbonshiftError as exc:
                    self.tally("errors")
                    LOG.warning("listing %s copies in spoke %s failed: %s", adapter.kind, name, exc)

    async def _delete_copy(
        self, spoke: Spoke, namespace: str, name: str, adapter: Copied = HUB_JOB
    ) -> bool:
        """Delete a spoke copy (False: it was gone already); the cache forgets it at once."""
        assert spoke.api is not None
        deleted = await spoke.api.delete(adapter.path(namespace, name))
        copies = spoke.kind_copies.get(adapter.kind)
        if copies is not None:
            copies.forget(f"{namespace}/{name}")
        return deleted

    async def _ensure_copy(self, w: HubWorkload, spoke: Spoke, now: datetime) -> Obj | None:
        """The spoke copy of ``w``, created when missing; None when it cannot be."""
        assert spoke.api is not None
        adapter = copier(w)
        if adapter is None:
            return None
        meta = w.obj["metadata"]
        copies = await self._spoke_copies(spoke, adapter)
        if copies is None:
            self.tally("errors")
            fix = (
                f"spoke {spoke.spec.name} serves no {adapter.kind} the hub may list: install "
                "it there (MCAD for AppWrappers) and apply deploy/hub/spoke-rbac.yaml"
            )
            self._event(now, w.key, "copy-refused", spoke.spec.name, fix, uid=w.uid)
            return None
        found = copies.items.get(f"{meta['namespace']}/{meta['name']}")
        if found is not None:
            if (found["metadata"].get("labels") or {}).get(HUB_UID_LABEL) == w.uid:
                return found
            # a copy of an older hub object of the same name: remove it, create next time
            await self._delete_copy(spoke, meta["namespace"], meta["name"], adapter)
            self._event(now, w.key, "removed-stale-copy", spoke.spec.name, uid=w.uid)
            return None
        if meta["namespace"] not in spoke.namespaces:
            # 409: it exists; 403: the identity may not create namespaces (spoke-rbac.yaml
            # makes that optional), so the operator creates them: try the copy either way
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
                adapter.path(meta["namespace"]),
                adapter.spoke_copy(w.obj, spoke.spec.name, int(w.remaining.total_seconds())),
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
        """Mirror every placed copy (hub Jobs, AppWrappers labelled for the hub)."""
        await self._probe_copies()
        for w in workloads:
            adapter = copier(w)
            if adapter is None or w.state != "placed" or w.placed is None:
                continue
            spoke = self.spokes.get(w.placed)
            if spoke is None or not spoke.healthy or spoke.api is None:
                continue
            try:
                copy_ = await self._ensure_copy(w, spoke, now)
                if copy_ is None:
                    continue
                await self._mirror_one(w, adapter, spoke, copy_, now)
            except ConflictError:
                self.tally("conflicts")
            except CarbonshiftError as exc:
                self.tally("errors")
                LOG.warning("mirroring %s from %s failed: %s", w.key, w.placed, exc)

    async def _mirror_one(
        self, w: HubWorkload, adapter: Copied, spoke: Spoke, remote: Obj, now: datetime
    ) -> None:
        assert spoke.api is not None
        meta = w.obj["metadata"]
        if adapter.is_finished(remote):
            # the cached hub object (a stale one answers 409: done again next pass)
            body = {**w.obj, "status": adapter.copy_status(w.obj, remote)}
            path = adapter.path(meta["namespace"], meta["name"])
            self._kept(adapter, await self.hub.replace(path + "/status", body))
            self.tally("mirrored")
            outcome = "complete" if adapter.succeeded(remote) else "failed"
            self._event(now, w.key, f"finished-{outcome}", spoke.spec.name, uid=w.uid)
            if await self._delete_copy(spoke, meta["namespace"], meta["name"], adapter):
                self.tally("cleaned")
            return
        summary = json.dumps(
            {"cluster": spoke.spec.name, **adapter.copy_summary(remote)}, sort_keys=True
        )
        if w.annotations.get(SPOKE_STATUS) != summary:
            await self._annotate(w, {SPOKE_STATUS: summary})

    async def _recall_lost(self, now: datetime, workloads: list[HubWorkload]) -> None:
        """Plan again the copied work placed in a spoke that stayed away too long.

        Only work whose copy the hub owns (hub Jobs, AppWrappers labelled for the hub):
        MultiKueue does this for Kueue workloads itself (``workerLostTimeout``), and a
        multi-cluster MCAD re-dispatches a gated AppWrapper only after it has taken the
        wrapped resources back from the old cluster, which it cannot do while that cluster
        is away. Whatever ran in the lost spoke is not counted (its progress is
        unknown); the copy there is deleted when the spoke answers again. Work that was in
        fact still running through the partition therefore runs twice: at least once, as
        MultiKueue.
        """
        if self.config.spoke_lost_timeout_s <= 0:
            return
        for w in workloads:
            if w.state != "placed" or w.placed is None or copier(w) is None:
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
        live = {w.uid: w.placed for w in workloads if w.state == "placed" and copier(w)}
        kinds = [a for a in COPIED_KINDS.values() if a.path() not in self._absent]
        for name, spoke in self._healthy().items():
            if spoke.api is None:
                continue
            for adapter in kinds:
                if not self._serves(spoke, adapter.kind):
                    continue  # not served there: no copies to clean
                try:
                    copies = await self._spoke_copies(spoke, adapter)
                    for obj in list(copies.items.values()) if copies is not None else []:
                        uid = (obj["metadata"].get("labels") or {}).get(HUB_UID_LABEL)
                        if live.get(str(uid)) == name:
                            continue
                        meta = obj["metadata"]
                        if await self._delete_copy(spoke, meta["namespace"], meta["name"], adapter):
                            self.tally("cleaned")
                            self._event(
                                now,
                                f"{adapter.kind}/{meta['namespace']}/{meta['name']}",
                                "cleaned",
                                name,
                                uid=str(uid or ""),
                            )
                except CarbonshiftError as exc:
                    self.tally("errors")
                    LOG.warning("cleaning spoke %s failed: %s", name, exc)
