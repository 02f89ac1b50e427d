"""Which Pods the emulated scheduler, kubelet and Job controller must look at.

The controllers run to a fixed point after every write. Scanning every Pod on each run made
the fake quadratic in the number of Pods (10,000 gated Pods took minutes to create); this
index is kept up to date from the store's commits instead, so that a run costs the Pods that
changed. It holds only keys and counts; the controllers read the stored objects themselves.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from fakekube._time import parse_duration, parse_utc
from fakekube.errors import ConfigError
from fakekube.selection import parse_quantity
from fakekube.store import Change

__all__ = ["PodIndex"]

Obj = dict[str, Any]
ObjKey = tuple[str, str]

RUNTIME_ANNOTATION = "carbonshift.io/expected-runtime"
REMAINING_ANNOTATION = "carbonshift.io/remaining-runtime"
RESOURCES = ("cpu", "memory", "nvidia.com/gpu")
TERMINAL = ("Succeeded", "Failed")
POD_KEY = ("", "pods")  # (group, plural): the store's keys
NODE_KEY = ("", "nodes")
JOB_KEY = ("batch", "jobs")


def requests(pod: Obj) -> dict[str, Decimal]:
    """The Pod's requests (limits where no requests are given) of the resources counted."""
    total = {r: Decimal(0) for r in RESOURCES}
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        asked = resources.get("requests") or resources.get("limits") or {}
        for res in RESOURCES:
            if res in asked:
                total[res] += parse_quantity(asked[res]) or Decimal(0)
    return total


def schedulable(pod: Obj) -> bool:
    """Unbound, ungated, not being deleted and Pending: the scheduler's work."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    return (
        not spec.get("nodeName")
        and not spec.get("schedulingGates")
        and not pod["metadata"].get("deletionTimestamp")
        and status.get("phase", "Pending") == "Pending"
    )


def runtime(pod: Obj) -> timedelta | None:
    """How long the fake container runs: the remaining runtime of a resumed piece of work
    (``carbonshift.io/remaining-runtime``, what its checkpoint leaves) when set, else the
    expected runtime."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    for key in (REMAINING_ANNOTATION, RUNTIME_ANNOTATION):
        text = annotations.get(key)
        if text is None:
            continue
        try:
            return parse_duration(str(text), what=key)
        except ConfigError:
            return None
    return None


def ends(pod: Obj, started: object) -> datetime | None:
    """When the fake container ends: its start plus its runtime; None when it runs on (no
    runtime, a start the fake cannot read, or an end past the last datetime)."""
    length = runtime(pod)
    if length is None or not started:
        return None
    try:
        return parse_utc(str(started), what="status.startTime") + length
    except (ConfigError, OverflowError):
        return None


def _holding(pod: Obj | None) -> str | None:
    """The node whose room the Pod holds (bound and not finished), else None."""
    if pod is None:
        return None
    node = (pod.get("spec") or {}).get("nodeName")
    if node and (pod.get("status") or {}).get("phase") not in TERMINAL:
        return str(node)
    return None


def _resources(pod: Obj | None) -> list[Any]:
    """The containers' resources as written (compared, not parsed, on every write)."""
    containers = ((pod or {}).get("spec") or {}).get("containers") or []
    return [c.get("resources") for c in containers]


def _owners(pod: Obj | None) -> set[str]:
    if pod is None:
        return set()
    refs = pod["metadata"].get("ownerReferences") or []
    return {str(r["uid"]) for r in refs if r.get("uid")}


class PodIndex:
    """Pods by what the emulated components do with them, kept from the store's commits.

    - ``unbound``: schedulable Pods (the scheduler's queue), ``fresh`` those of them that
      arrived (or whose spec changed) since the scheduler last ran;
    - ``starting``: bound Pending Pods (the kubelet starts them);
    - running Pods with a known end, in a heap by end (the kubelet ends them when due);
    - the requests and Pod count each node holds (bound, unfinished Pods), as the scheduler
      counts them;
    - Pods by owner uid (the Job controller's pods of a Job), and ``dirty_jobs``: the Jobs
      written, or whose Pods were, since the Job controller last looked (looking at every
      Job per run made 10,000 Jobs quadratic);
    - ``epoch``: bumped whenever room may have been freed (a bound Pod ends or goes, any Node
      write). Like kube-scheduler's unschedulable queue, a Pod found unfit is tried again only
      then, not each time another Pod arrives (retrying every waiting Pod per arrival made
      releasing thousands of Pods quadratic).
    """

    def __init__(self) -> None:
        self.unbound: set[ObjKey] = set()
        self.fresh: set[ObjKey] = set()
        self.starting: set[ObjKey] = set()
        self.used: dict[str, dict[str, Decimal]] = defaultdict(
            lambda: {r: Decimal(0) for r in RESOURCES}
        )
        self.count: dict[str, int] = defaultdict(int)
        self.owned: dict[str, set[ObjKey]] = defaultdict(set)
        self.dirty_jobs: set[ObjKey] = set()
        self._job_of_uid: dict[str, ObjKey] = {}
        self.epoch = 0
        self.scheduled_epoch = -1
        self._end_of: dict[ObjKey, datetime] = {}
        self._ends: list[tuple[datetime, ObjKey]] = []

    def observe(self, change: Change) -> None:
        """Fold one committed write in (a store observer)."""
        if change.key == NODE_KEY:
            self.epoch += 1
            return
        if change.key == JOB_KEY:
            self._observe_job(change)
            return
        if change.key != POD_KEY:
            return
        meta = change.obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        for uid in _owners(change.old) | _owners(change.obj):
            job = self._job_of_uid.get(uid)
            if job is not None:
                self.dirty_jobs.add(job)
        new = None if change.type == "DELETED" else change.obj
        old = change.old
        self.unbound.discard(key)
        self.starting.discard(key)
        self._end_of.pop(key, None)
        was, now = _holding(old), _holding(new)
        if was != now or (was is not None and _resources(old) != _resources(new)):
            if was is not None:
                self._hold(was, old or {}, -1)
                self.epoch += 1  # room freed (or changed) on that node
            if now is not None:
                self._hold(now, new or {}, 1)
        for uid in _owners(old) - _owners(new):
            self.owned[uid].discard(key)
            if not self.owned[uid]:
                del self.owned[uid]
        for uid in _owners(new):
            self.owned[uid].add(key)
        if new is None or not schedulable(new):
            self.fresh.discard(key)
        if new is None:
            return
        phase = (new.get("status") or {}).get("phase", "Pending")
        if schedulable(new):
            self.unbound.add(key)
            if old is None or not schedulable(old) or old.get("spec") != new.get("spec"):
                self.fresh.add(key)  # new work, or its selectors or tolerations changed
        elif now is not None and phase == "Pending":
            self.starting.add(key)
        elif now is not None:
            end = ends(new, (new.get("status") or {}).get("startTime"))
            if end is not None:
                self._end_of[key] = end
                heapq.heappush(self._ends, (end, key))
                if len(self._ends) > 2 * len(self._end_of) + 1024:
                    self._ends = [(e, k) for k, e in self._end_of.items()]
                    heapq.heapify(self._ends)

    def _observe_job(self, change: Change) -> None:
        meta = change.obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        uid = str(meta.get("uid", ""))
        if change.type == "DELETED":
            self._job_of_uid.pop(uid, None)
            self.dirty_jobs.discard(key)
        else:
            self._job_of_uid[uid] = key
            self.dirty_jobs.add(key)

    def _hold(self, node: str, pod: Obj, sign: int) -> None:
        used = self.used[node]
        for res, qty in requests(pod).items():
            used[res] += sign * qty
        self.count[node] += sign

    def due(self, now: datetime) -> set[ObjKey]:
        """Running Pods whose end is at or before ``now``."""
        out: set[ObjKey] = set()
        while self._ends and self._ends[0][0] <= now:
            end, key = heapq.heappop(self._ends)
            if self._end_of.get(key) == end:
                out.add(key)
        for key in out:  # still running until the kubelet's write lands: keep them due
            heapq.heappush(self._ends, (self._end_of[key], key))
        return out
