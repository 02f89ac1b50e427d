"""Phase 5 of the hub's pass: act on the plan, each kind its own way.

================  ===============================  ===================================
kind              hold (and keep held)             release / suspend
================  ===============================  ===================================
hub Job           ``spec.suspend: true``           a copy in the spoke (:mod:`.mirroring`)
                                                   / the copy deleted
Kueue Workload    our AdmissionCheck ``Retry``     check ``Ready`` with ``podSetUpdates``
                  with ``requeueAfterSeconds``     and ``nominatedClusterNames`` / Retry
AppWrapper        not copied (hub label)           a copy in the spoke / the copy deleted
AppWrapper        our ``dispatchingGates`` entry   gate off, ``targetCluster`` on / gate
(gated)                                            back on, target cleared
================  ===============================  ===================================

The plan is written on the hub object first (planned cluster and start, reason; on release
``placed-cluster`` and ``released-at``), so a restart cut between two writes finds it there.
Each kind's writes are one method here, chosen by kind in :meth:`ActPhase._act`'s tables;
the patch bodies come from the kind's adapter (:mod:`carbonshift.k8s.kinds`).
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from carbonshift.errors import CarbonshiftError
from carbonshift.k8s.client import ConflictError
from carbonshift.k8s.keys import (
    DONE_SECONDS,
    PLACED_CLUSTER,
    PLANNED_CLUSTER,
    PLANNED_START,
    REASON,
    RELEASED_AT,
    REMAINING,
    SPOKE_STATUS,
    STATE_LABEL,
    State,
)
from carbonshift.k8s.kinds import APPWRAPPER, HUB_JOB, WORKLOAD, condition_true
from carbonshift.k8s.multicluster.mirroring import MirrorPhase, copier
from carbonshift.k8s.multicluster.plan import Decision, HubRound
from carbonshift.k8s.multicluster.record import LOG, Obj, stamp
from carbonshift.k8s.multicluster.workloads import HubWorkload, state_label
from carbonshift.k8s.owned import owned_fields
from carbonshift.k8s.planner import data_used, reason_shape

__all__ = ["ActPhase", "held_change"]

_Step = Callable[[HubWorkload, Decision, datetime], Awaitable[None]]
_Stop = Callable[[HubWorkload, Mapping[str, str | None], Decision, datetime], Awaitable[bool]]


def held_change(
    current: Mapping[str, str], labelled_held: bool, want: Mapping[str, str]
) -> tuple[bool, bool]:
    """(write the annotations, tell with a CarbonPlanned Event) for a held hub workload.

    As in the one-cluster controller: the planned cluster and start are written and told
    whenever they change; the reason is written when its wording changes (not its numbers,
    which follow the forecast every pass) and told when the data the plan used turn replayed,
    stale or fall-back, or back (issue 15).
    """
    reason_now, reason_wanted = current.get(REASON, ""), want[REASON]
    moved = not labelled_held or any(
        current.get(key) != want[key] for key in (PLANNED_CLUSTER, PLANNED_START)
    )
    reworded = reason_shape(reason_now) != reason_shape(reason_wanted)
    data_changed = data_used(reason_now) != data_used(reason_wanted)
    return moved or reworded or data_changed, moved or data_changed


class ActPhase(MirrorPhase):
    """Hold, release and suspend hub workloads as the plan says."""

    #: held workloads whose plan write this pass leaves to the next (``hold_writes_per_pass``)
    _deferred: frozenset[str] = frozenset()
    #: how many of them the last pass left
    last_holds_deferred: int = 0
    #: :meth:`_hold_write` of each held workload of this pass, by key, with the workload and
    #: decision it was found for (:meth:`_holds_to_defer` finds it, :meth:`_hold` takes it)
    _hold_writes: dict[str, tuple[HubWorkload, Decision, tuple[bool, bool, dict[str, str]]]]

    @functools.cached_property
    def _kind_steps(self) -> tuple[dict[str, _Step], dict[str, _Step], dict[str, _Stop]]:
        """(keep held, release, suspend) of each kind: built once per controller (it was
        three dicts of bound methods per workload acted on)."""
        return (
            {
                HUB_JOB.kind: self._keep_job_held,
                WORKLOAD.kind: self._keep_workload_held,
                APPWRAPPER.kind: self._keep_appwrapper_held,
            },
            {
                HUB_JOB.kind: self._release_copy,
                WORKLOAD.kind: self._release_workload,
                APPWRAPPER.kind: self._release_appwrapper,
            },
            {
                HUB_JOB.kind: self._suspend_copy,
                WORKLOAD.kind: self._suspend_workload,
                APPWRAPPER.kind: self._suspend_appwrapper,
            },
        )

    async def _act(self, now: datetime, workloads: list[HubWorkload], round_: HubRound) -> None:
        """Suspensions first, then releases (nearest planned start, then deadline, first),
        then holds: under the client's rate limit (``client_connection``) requests leave in
        the order the pass makes them, so a release is not kept behind the plan writes of
        thousands of held workloads (at 50 requests/s, 4,000 of them are 80 s); the
        one-cluster controller's order (``Reconciler.plan_pass``)."""
        self._deferred = self._holds_to_defer(workloads, round_)
        self.last_holds_deferred = len(self._deferred)
        self.metrics.holds_deferred.set(len(self._deferred))
        suspend: list[tuple[HubWorkload, Decision]] = []
        release: list[tuple[HubWorkload, Decision]] = []
        hold: list[tuple[HubWorkload, Decision]] = []
        for w in workloads:
            decision = round_.decisions.get(w.key)
            if decision is None:
                continue
            if w.state == "placed":
                if not decision.start_now:
                    suspend.append((w, decision))
            elif decision.start_now and decision.cluster is not None:
                release.append((w, decision))
            else:
                hold.append((w, decision))
        release.sort(key=lambda wd: (wd[1].start, wd[0].intent.deadline, wd[0].key))
        for step, todo in ((self._suspend, suspend), (self._release, release), (self._hold, hold)):
            for w, decision in todo:
                try:
                    await step(w, decision, now)
                except ConflictError:
                    self.tally("conflicts")  # re-read and decided again next reconcile
                except CarbonshiftError as exc:
                    self.tally("errors")
                    LOG.warning("acting on %s failed: %s", w.key, exc)

    # -- hold ---------------------------------------------------------------------------------

    def _holds_to_defer(self, workloads: list[HubWorkload], round_: HubRound) -> frozenset[str]:
        """The held workloads whose plan this pass leaves to the next: past the first
        ``hold_writes_per_pass`` plan writes, nearest planned start first (then by key). They
        stay held as they are (a hub Job as it arrived, suspended); a release, a suspension
        and a kind's own hold (a hub Job's ``suspend``, a Workload's ``Retry``) are never
        deferred. What it finds of each held workload (:meth:`_hold_write`) is kept for
        :meth:`_hold` in this pass (:attr:`_hold_writes`), not found again."""
        self._hold_writes = {}
        limit = self.config.hold_writes_per_pass
        if limit <= 0:
            return frozenset()
        kept = self._hold_writes
        due: list[tuple[datetime, str]] = []
        for w in workloads:
            d = round_.decisions.get(w.key)
            if d is None or w.state == "placed" or (d.start_now and d.cluster is not None):
                continue
            found = self._hold_write(w, d)
            key = w.key
            kept[key] = (w, d, found)
            if found[0]:
                due.append((d.start, key))
        if len(due) <= limit:
            return frozenset()
        due.sort()
        return frozenset(key for _, key in due[limit:])

    def _hold_write(self, w: HubWorkload, d: Decision) -> tuple[bool, bool, dict[str, str]]:
        """(write the plan, tell it with an Event, the annotations wanted) for held ``w``."""
        want = {
            PLANNED_CLUSTER: d.cluster or "",
            PLANNED_START: stamp(d.start),
            REASON: d.reason,
        }
        labels = w.obj["metadata"].get("labels") or {}
        write, tell = held_change(w.annotations, labels.get(STATE_LABEL) == State.HELD, want)
        return write, tell, want

    async def _hold(self, w: HubWorkload, d: Decision, now: datetime) -> None:
        known = getattr(self, "_hold_writes", _NONE_FOUND).pop(w.key, None)
        if known is not None and known[0] is w and known[1] is d:  # found this pass
            write, tell, want = known[2]
        else:
            write, tell, want = self._hold_write(w, d)
        if write and w.key in self._deferred:  # next pass (hold_writes_per_pass)
            write = tell = False
        if write:
            w = _with_obj(w, await self._annotate(w, want))
        if tell:
            self._event(now, w.key, "planned", d.cluster or "", d.reason, w.uid)
        await self._kind_steps[0][w.kind](w, d, now)

    async def _keep_job_held(self, w: HubWorkload, d: Decision, now: datetime) -> None:
        if HUB_JOB.is_held(w.obj):
            return
        meta = w.obj["metadata"]
        answer = await self.hub.patch(
            HUB_JOB.path(meta["namespace"], meta["name"]),
            {
                "metadata": {"resourceVersion": meta["resourceVersion"]},
                "spec": HUB_JOB.hold_spec(w.obj),
            },
        )
        self._kept(HUB_JOB, answer)

    async def _keep_workload_held(self, w: HubWorkload, d: Decision, now: datetime) -> None:
        await self._set_check(w, "Retry", d.reason, requeue_after_s=self._wait_s(d, now))

    async def _keep_appwrapper_held(self, w: HubWorkload, d: Decision, now: datetime) -> None:
        return None  # our dispatching gate stays on until the release takes it off

    def _wait_s(self, d: Decision, now: datetime) -> int:
        """Kueue's ``requeueAfterSeconds`` up to the planned start, at most the configured."""
        return max(1, min(self.config.max_requeue_s, math.ceil((d.start - now).total_seconds())))

    # -- release ------------------------------------------------------------------------------

    async def _release(self, w: HubWorkload, d: Decision, now: datetime) -> None:
        assert d.cluster is not None
        await self._kind_steps[1][w.kind](w, d, now)

    def _release_plan(self, d: Decision, now: datetime) -> dict[str, str | None]:
        assert d.cluster is not None
        return {
            PLANNED_CLUSTER: d.cluster,
            PLANNED_START: stamp(d.start),
            REASON: d.reason,
            PLACED_CLUSTER: d.cluster,
            RELEASED_AT: stamp(now),
        }

    def _released(self, w: HubWorkload, d: Decision, now: datetime) -> None:
        self.tally("releases", kind=w.kind, cluster=d.cluster or "")
        self._event(now, w.key, "released", d.cluster or "", d.reason, w.uid)

    async def _release_copy(self, w: HubWorkload, d: Decision, now: datetime) -> None:
        """Write the plan ahead, then create the copy in the spoke (hub Jobs, AppWrappers
        labelled for the hub)."""
        cluster = d.cluster or ""
        w = _with_obj(w, await self._annotate(w, self._release_plan(d, now)))  # write-ahead
        self._released(w, d, now)
        # the copy; if this fails, mirroring creates it next time
        spoke = self.spokes.get(cluster)
        if spoke is not None and spoke.healthy and spoke.api is not None:
            await self._ensure_copy(_with_state(w, cluster, now), spoke, now)

    async def _release_workload(self, w: HubWorkload, d: Decision, now: datetime) -> None:
        if WORKLOAD.is_held(w.obj):  # no quota reserved (status.admission unset):
            # evicted by an earlier Retry and not yet requeued: Kueue brings it back, then we
            # release it; until then, say so.
            await self._hold(w, d, now)
            return
        w = _with_obj(w, await self._annotate(w, self._release_plan(d, now)))  # write-ahead
        self._released(w, d, now)
        await self._nominate(w, d.cluster or "", d.reason, now)  # else re-driven next pass

    async def _release_appwrapper(self, w: HubWorkload, d: Decision, now: datetime) -> None:
        if copier(w) is not None:
            await self._release_copy(w, d, now)
            return
        plan = self._release_plan(d, now)
        meta = w.obj["metadata"]
        body = {
            "metadata": {
                "resourceVersion": meta["resourceVersion"],
                "annotations": plan,
                **state_label(plan),
            },
            "spec": {**APPWRAPPER.release_spec(w.obj, d.cluster or ""), **_with_remaining(w)},
        }
        path = APPWRAPPER.path(meta["namespace"], meta["name"])
        self._kept(APPWRAPPER, await self.hub.patch(path, body))
        self._released(w, d, now)

    async def _redrive_workloads(self, now: datetime, workloads: list[HubWorkload]) -> None:
        """Finish a Kueue release that a failure or restart cut between its writes."""
        for w in workloads:
            if w.adapter is not WORKLOAD or w.state != "placed" or w.placed is None:
                continue
            status = w.obj.get("status") or {}
            if condition_true(w.obj, "Admitted") or status.get("admission") is None:
                continue
            check = WORKLOAD.our_check(w.obj, self._check_names) or {}
            if check.get("state") == "Ready" and (
                status.get("clusterName") or status.get("nominatedClusterNames")
            ):
                continue
            reason = w.annotations.get(REASON, "released")
            try:
                await self._nominate(w, w.placed, reason, now)
            except CarbonshiftError as exc:
                self.tally("errors")
                LOG.warning("re-driving %s failed: %s", w.key, exc)

    async def _nominate(self, w: HubWorkload, cluster: str, reason: str, now: datetime) -> None:
        """Our check Ready with podSetUpdates, then MultiKueue's nominatedClusterNames."""
        meta = w.obj["metadata"]
        annotations = {PLANNED_CLUSTER: cluster, RELEASED_AT: stamp(now)}
        if w.done_s > 0:  # a resumed piece: podSetUpdates may only add keys, so a new one
            annotations[REMAINING] = f"{int(w.remaining.total_seconds())}s"
        await self._set_check(
            w,
            "Ready",
            reason,
            pod_set_updates=[
                {"name": ps.get("name", "main"), "annotations": annotations}
                for ps in (w.obj.get("spec") or {}).get("podSets") or [{"name": "main"}]
            ],
        )
        status = w.obj.get("status") or {}
        if status.get("clusterName"):
            return
        # Kueue requires external dispatchers to write nominatedClusterNames as
        # kueue-admission (kubernetes-sigs/kueue PR #5782), the manager Kueue's own
        # server-side applies of status.admission and the conditions use; an apply that
        # named only our field would delete those (the workload loses its quota
        # reservation). So, as Kueue's dispatcher (multikueue ``dispatcher.nominate`` ->
        # ``workload.PatchAdmissionStatus``, which applies the whole admission status):
        # read what the manager owns, set our field, apply it all, guarded by the
        # resourceVersion read (a 409 is retried next pass).
        path = WORKLOAD.path(meta["namespace"], meta["name"])
        live = await self.hub.get(path)
        if (live.get("status") or {}).get("clusterName"):
            return  # dispatched meanwhile
        owned = owned_fields(live, self.config.field_manager, subresource="status")
        body_status = dict(owned.get("status") or {})
        body_status["nominatedClusterNames"] = [cluster]
        answer = await self.hub.apply(
            path + "/status",
            {
                "apiVersion": live.get("apiVersion", "kueue.x-k8s.io/v1beta2"),
                "kind": "Workload",
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "resourceVersion": live["metadata"]["resourceVersion"],
                },
                "status": body_status,
            },
            self.config.field_manager,
        )
        self._kept(WORKLOAD, answer)

    # -- suspend ------------------------------------------------------------------------------

    async def _suspend(self, w: HubWorkload, d: Decision, now: datetime) -> None:
        """Stop interruptible running work the plan moves to later; count what it did.

        Job, and AppWrapper labelled for the hub: the spoke copy is deleted. Kueue Workload:
        our check goes to ``Retry`` with ``requeueAfterSeconds`` up to the new start, which
        makes Kueue evict it (MultiKueue removes the worker's copy) and requeue it then.
        Gated AppWrapper: our dispatching gate goes back on and the target cluster is
        cleared, so MCAD takes the wrapped resources back.
        The hub object is written first (``done-seconds``, the new plan), so a restart cut
        between the two writes finishes the hold from the annotations.
        """
        if w.placed is None or w.released_at is None:
            return
        ran_s = max(0.0, (now - w.released_at).total_seconds())
        # the restart overhead of a resumed piece is not useful work
        useful_s = max(0.0, ran_s - (w.overhead.total_seconds() if w.done_s > 0 else 0.0))
        plan: dict[str, str | None] = {
            PLACED_CLUSTER: None,
            RELEASED_AT: None,
            SPOKE_STATUS: None,
            DONE_SECONDS: str(int(w.done_s + useful_s)),
            PLANNED_CLUSTER: d.cluster or "",
            PLANNED_START: stamp(d.start),
            REASON: f"suspended: {d.reason}",
        }
        if not await self._kind_steps[2][w.kind](w, plan, d, now):
            return
        self.tally("suspended", cluster=w.placed)
        self._event(now, w.key, "suspended", w.placed, d.reason, w.uid)

    async def _suspend_copy(
        self, w: HubWorkload, plan: Mapping[str, str | None], d: Decision, now: datetime
    ) -> bool:
        """Write the new plan, then delete the copy in the spoke."""
        adapter = copier(w)
        spoke = self.spokes.get(w.placed or "")
        spoke_api = spoke.api if spoke is not None else None
        if spoke_api is None or adapter is None:
            return False  # cannot stop the copy now; planned again next pass
        await self._annotate(w, plan)
        meta = w.obj["metadata"]
        assert spoke is not None
        await self._delete_copy(spoke, meta["namespace"], meta["name"], adapter)
        return True

    async def _suspend_workload(
        self, w: HubWorkload, plan: Mapping[str, str | None], d: Decision, now: datetime
    ) -> bool:
        updated = await self._annotate(w, plan)
        await self._set_check(
            _with_obj(w, updated),
            "Retry",
            plan[REASON] or "",
            requeue_after_s=self._wait_s(d, now),
        )
        return True

    async def _suspend_appwrapper(
        self, w: HubWorkload, plan: Mapping[str, str | None], d: Decision, now: datetime
    ) -> bool:
        """Put our dispatching gate back on and clear the target, in one patch (a copy:
        delete it, as a hub Job's)."""
        if copier(w) is not None:
            return await self._suspend_copy(w, plan, d, now)
        meta = w.obj["metadata"]
        body = {
            "metadata": {
                "resourceVersion": meta["resourceVersion"],
                "annotations": dict(plan),
                **state_label(plan),
            },
            "spec": APPWRAPPER.hold_spec(w.obj),
        }
        path = APPWRAPPER.path(meta["namespace"], meta["name"])
        self._kept(APPWRAPPER, await self.hub.patch(path, body))
        return True

    async def _set_check(
        self,
        w: HubWorkload,
        state: str,
        message: str,
        *,
        requeue_after_s: int | None = None,
        pod_set_updates: list[Obj] | None = None,
    ) -> None:
        """Write our entry of ``status.admissionChecks`` only (a conflict re-reads next time)."""
        meta = w.obj["metadata"]
        path = WORKLOAD.path(meta["namespace"], meta["name"])
        fresh = await self.hub.get(path)
        status = dict(fresh.get("status") or {})
        if status.get("admission") is None:
            return  # Kueue only evaluates checks of workloads with quota reserved
        checks = [dict(c) for c in status.get("admissionChecks") or []]
        changed = False
        for check in checks:
            if check.get("name") not in self._check_names:
                continue
            want: Obj = {"state": state, "message": message[:1000]}
            if requeue_after_s is not None:
                want["requeueAfterSeconds"] = requeue_after_s
            if pod_set_updates is not None:
                want["podSetUpdates"] = pod_set_updates
            if any(check.get(k) != v for k, v in want.items()):
                if check.get("state") != state:
                    check["lastTransitionTime"] = stamp(self.clock.now())
                check.update(want)
                if requeue_after_s is None:
                    check.pop("requeueAfterSeconds", None)
                changed = True
        if not changed:
            return
        body = copy.deepcopy(fresh)
        body["status"] = {**status, "admissionChecks": checks}
        self._kept(WORKLOAD, await self.hub.replace(path + "/status", body))


_NONE_FOUND: dict[str, Any] = {}
"""What :meth:`ActPhase._hold` finds before any pass has set ``_hold_writes`` (nothing)."""


def _with_obj(w: HubWorkload, obj: Obj) -> HubWorkload:
    return HubWorkload(
        w.kind,
        obj,
        w.intent,
        w.state,
        w.placed,
        w.released_at,
        w.interruptible,
        w.overhead,
        w.done_s,
    )


def _with_state(w: HubWorkload, cluster: str, now: datetime) -> HubWorkload:
    """``w`` as placed in ``cluster`` at ``now`` (before the next pass reads it so)."""
    return HubWorkload(
        w.kind, w.obj, w.intent, "placed", cluster, now, w.interruptible, w.overhead, w.done_s
    )


def _with_remaining(w: HubWorkload) -> Obj:
    """The AppWrapper's wrapped Job templates with :data:`REMAINING` set (resumed work only).

    Answers the ``spec`` fields to merge: ``resources`` (multi-cluster MCAD) or
    ``components`` (the later AppWrapper controller); nothing for a first run.
    """
    if w.done_s <= 0:
        return {}
    spec = copy.deepcopy(w.obj.get("spec") or {})
    left = f"{int(w.remaining.total_seconds())}s"
    out: Obj = {}
    items = (spec.get("resources") or {}).get("GenericItems")
    if items:
        for item in items:
            _set_pod_annotation(item.get("generictemplate"), left)
        out["resources"] = spec["resources"]
    if spec.get("components"):
        for item in spec["components"]:
            _set_pod_annotation(item.get("template"), left)
        out["components"] = spec["components"]
    return out


def _set_pod_annotation(job: Any, left: str) -> None:
    if isinstance(job, dict) and job.get("kind") == "Job":
        template = job.setdefault("spec", {}).setdefault("template", {})
        template.setdefault("metadata", {}).setdefault("annotations", {})[REMAINING] = left
