"""The level-triggered controller: watch + periodic planning, hold and release, fail open.

One pipeline per period (at each slot boundary): read nodes, Pods and Jobs from the caches
the watches keep (relisted only when no watch runs, not per pass; a watch that fails or
answers 410 relists on its own); collect the
held workloads (Pods carrying the ``carbonshift.io/hold`` gate, managed Jobs suspended and
never released); release at once those no longer held by intent (critical, opted out,
unusable) and those whose latest start has come (fail open); plan the rest in ONE policy call
(:func:`carbonshift.k8s.planner.plan_round`); release what starts now; write on each still-
held workload its planned start, reason and estimated emissions (annotations, and an Event
when the plan changes). Between periods, watch events keep the cache fresh and trigger a
per-object check (fail open, critical, unusable), and the loop wakes at the earliest latest
start of a held workload, so nothing is held past it.

The planning call (and the forecast it reads) runs in a worker thread
(:func:`asyncio.to_thread`), not on the event loop that also serves the admission webhook,
the scheduler extender, /metrics, the leader Lease and the watches: a plan of a million
cells, or a carbon provider that hangs until its timeouts, no longer stalls them. Passes stay
serialised (one at a time, under the controller's lock); watch events that arrive meanwhile
update the caches and queue their checks for the next step, and the pass acts on the objects
as it read them before planning (a release of one changed meanwhile meets a 409 and is
re-checked). A pass cancelled while it plans (the app stopping) abandons the plan; the thread
runs to its end, unobserved, and the process exits after it.

Release is idempotent and conflict-safe: a merge patch carrying the ``resourceVersion`` it
was computed from (409: re-read, re-check, retry). A Pod is released by removing the gate
(the node affinity, when pinning, in the same patch); a Job by ``suspend: false`` with
``carbonshift.io/released-at`` in the same patch. After a restart the state is read back
from the objects: an ungated Pod or a Job with ``released-at`` is never released again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from carbonshift.errors import CarbonshiftError, InputError, TemporaryError
from carbonshift.k8s.client import (
    ConflictError,
    InvalidError,
    Kube,
    KubeError,
    NotFoundError,
)
from carbonshift.k8s.clock import Clock
from carbonshift.k8s.config import ControllerConfig
from carbonshift.k8s.flowcontrol import bucket_or_none
from carbonshift.k8s.informer import Informer, older
from carbonshift.k8s.intent import (
    CRITICAL,
    MANAGED_LABEL,
    RUNTIME,
    Intent,
    NotHeld,
    Obj,
    only_written,
    read_duration,
    read_intent,
    read_time,
    requested,
)
from carbonshift.k8s.keys import (
    ANNOTATION_PREFIX,
    CONTROLLER_COMPONENT,
    EST_ARRIVAL,
    EST_NOW,
    EST_PLANNED,
    LATEST_START,
    PLANNED_START,
    REASON,
    RELEASED_AT,
    STATE,
)
from carbonshift.k8s.kinds import ADAPTERS, JOB, POD, JobAdapter, PodAdapter
from carbonshift.k8s.metrics import Metrics, record_left_out
from carbonshift.k8s.nodes import allocatable as node_allocatable
from carbonshift.k8s.nodes import capacity as node_capacity
from carbonshift.k8s.planner import (
    CarbonSource,
    Outcome,
    Round,
    RunningWork,
    carbon_source_for,
    data_used,
    plan_round,
    reason_shape,
    slot_floor,
)
from carbonshift.units import format_utc

__all__ = [
    "ANNOTATIONS",
    "Action",
    "Controller",
    "job_path",
    "pod_path",
]

_LOG = logging.getLogger("carbonshift.k8s")

ANNOTATIONS = (STATE, PLANNED_START, LATEST_START, REASON, EST_NOW, EST_PLANNED, RELEASED_AT)

_PODS = POD.path()
_JOBS = JOB.path()
_NODES = "/api/v1/nodes"
_TERMINAL = ("Succeeded", "Failed")
_MAX_WRITE_ATTEMPTS = 6
#: how carbonshift.planning.hold words a move by the release rate limit
_RATE_LIMITED = "release rate limit"


def pod_path(namespace: str, name: str) -> str:
    return POD.path(namespace, name)


def job_path(namespace: str, name: str) -> str:
    return JOB.path(namespace, name)


def _adapter(obj: Obj) -> PodAdapter | JobAdapter:
    return POD if obj.get("kind") == POD.kind else JOB


def _path(obj: Obj) -> str:
    meta = obj["metadata"]
    return _adapter(obj).path(meta["namespace"], meta["name"])


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind')}/{meta.get('namespace', '')}/{meta.get('name', '')}"


#: :meth:`Controller._fail_open` found nothing held (a sentinel: no latest start)
_NO_HELD = datetime.max.replace(tzinfo=UTC)

_older = older  # the resourceVersion guard lives with the caches (carbonshift.k8s.informer)


def _state_label(annotations: Mapping[str, str]) -> Obj:
    """The ``carbonshift.io/state`` label that mirrors the annotation of the same name, so
    ``kubectl get pods -l carbonshift.io/state=held`` works (an RFC 3339 planned start is not
    a valid label value, so only the state is a label)."""
    return {"labels": {STATE: annotations[STATE]}} if STATE in annotations else {}


def _worth_writing(current: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    """Whether a held workload's annotations need a write this pass.

    The state, planned start and latest start are written whenever they change, and so is the
    reason when its wording changes. The gram estimates (and the numbers quoted in the reason)
    follow the forecast and "now", so they move every pass: rewriting them for every held
    workload every period cost one PATCH per held workload per period (bench/controller.md:
    a 10 % drift rule still rewrote 584 of 1,760 held Pods an hour), past any client rate
    limit at fleet scale. They are written with the plan and stand "as of the last plan
    change" until the next one.
    """
    for key in (STATE, PLANNED_START, LATEST_START, EST_ARRIVAL):
        if key in wanted and current.get(key) != wanted[key]:
            return True
    if reason_shape(current.get(REASON, "")) != reason_shape(wanted.get(REASON, "")):
        return True
    return any(key not in current for key in (EST_NOW, EST_PLANNED))


def _annotations(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def _gates(obj: Obj) -> list[str]:
    return [str(g.get("name")) for g in (obj.get("spec") or {}).get("schedulingGates") or []]


def _job_finished(job: Obj) -> bool:
    return JOB.is_finished(job)


@dataclass(frozen=True, slots=True)
class Action:
    """A write the controller made (or, in dry-run, would have made)."""

    at: datetime
    verb: str  # "release", "hold", "annotate"
    key: str
    why: str
    reason: str
    dry_run: bool = False


class Controller:
    """Holds and releases opted-in Pods and Jobs of one cluster (see the module doc)."""

    def __init__(
        self,
        config: ControllerConfig,
        kube: Kube,
        clock: Clock,
        *,
        metrics: Metrics | None = None,
        source: CarbonSource | None = None,
        after_list: Callable[[], None] | None = None,
    ) -> None:
        self.config = config
        self.kube = kube
        self.clock = clock
        self.metrics = metrics or Metrics()
        #: called once the initial lists are stored, before the watches start (the app's
        #: :func:`carbonshift.k8s.heap.settle`; None: nothing)
        self.after_list = after_list
        self.source = source or carbon_source_for(config)
        self._informers = {
            path: Informer(
                kube,
                path,
                kind=kind,
                api_version=ADAPTERS[kind].api_version if kind in ADAPTERS else "v1",
                key=(lambda o: str(o["metadata"]["name"])) if path == _NODES else _key,
            )
            for path, kind in ((_PODS, POD.kind), (_JOBS, JOB.kind), (_NODES, "Node"))
        }
        self.pods: dict[str, Obj] = self._informers[_PODS].items
        self.jobs: dict[str, Obj] = self._informers[_JOBS].items
        self.nodes: dict[str, Obj] = self._informers[_NODES].items
        self.actions: list[Action] = []
        self.outcomes: dict[str, Outcome] = {}
        self.last_round: Round | None = None
        self.rounds = 0
        self._released: set[str] = set()  # uids: a cache; the objects are the truth
        #: (slot start, planned releases made in it): the release rate limit's count
        self._slot_releases: tuple[datetime | None, int] = (None, 0)
        self._noted: dict[str, str] = {}  # uid -> last "not held" reason reported
        self._budget_config: ControllerConfig | None = None  # see _planning_config
        #: the Event budget (``events.qps`` / ``.burst``; None: every Event is posted): an
        #: Event past it is dropped and counted, the annotations say the same
        self.event_budget = bucket_or_none(config.events.qps, config.events.burst)
        #: Events held back while a pass writes its releases (None: post at once)
        self._later_events: list[tuple[tuple[Obj, str, str], bool]] | None = None
        #: (kind, uid, resourceVersion) -> intent: a pass reads each workload's intent several
        #: times (collect, fail open, wake-up, notes, watch checks), and it changes only with
        #: the object
        self._intents: dict[tuple[str, str, str], Intent | NotHeld] = {}
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        #: the earliest latest start of the held workloads, as the last fail-open scan left
        #: them (_NO_HELD: none held; None: no scan since the loop last slept)
        self._earliest_latest_start: datetime | None = None
        self._next_plan: datetime | None = None
        self._idle_at: datetime | None = None
        self._asleep_until: datetime | None = None
        self._stopping = False
        self._lock = asyncio.Lock()

    # -- the loop -------------------------------------------------------------------------

    async def run(self, is_leader: asyncio.Event | None = None) -> None:
        """Reconcile until cancelled; only while ``is_leader`` is set, when given."""
        watches: list[asyncio.Task[None]] = []
        try:
            while not self._stopping:
                if is_leader is not None and not is_leader.is_set():
                    await is_leader.wait()
                try:
                    await self.resync()
                    break
                except (TemporaryError, KubeError) as exc:
                    _LOG.warning("initial list failed: %s; retrying", exc)
                    await self.clock.backoff(1.0)
            if self.after_list is not None:
                self.after_list()
            for path in (_PODS, _JOBS, _NODES):
                watches.append(asyncio.create_task(self._watch(path)))
            self._watching = True  # from here the watches keep the caches: no relist per pass
            while not self._stopping:
                if is_leader is not None and not is_leader.is_set():
                    self._idle_at = None
                    await is_leader.wait()
                    self._next_plan = None
                await self.step()
                await self._sleep_until_due()
        finally:
            self._watching = False
            for task in watches:
                task.cancel()
            for task in watches:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    def stop(self) -> None:
        self._stopping = True
        self._queue.put_nowait("")

    async def step(self) -> None:
        """One turn: queued object checks, the planning pass when due, fail-open checks.

        Nothing raised for one object or one pass ends the loop: a carbonshift error is logged,
        any other exception with its traceback, both counted in ``carbonshift_errors_total``;
        held workloads still fail open on time.
        """
        self._idle_at = None
        async with self._lock:
            while not self._queue.empty():
                key = self._queue.get_nowait()
                if key:
                    async with self._contained("check", key):
                        await self._check_object(key)
            now = self.clock.now()
            failed = False
            if self._next_plan is None or now >= self._next_plan:
                try:
                    await self.plan_pass()
                    self._next_plan = slot_floor(now, self.config.planning.slot_minutes) + (
                        timedelta(minutes=self.config.planning.slot_minutes)
                    )
                except CarbonshiftError as exc:  # API trouble, bad data: retry, keep failing open
                    self.metrics.errors.labels(stage="pass").inc()
                    _LOG.warning("planning pass failed: %s; retrying soon", exc)
                    failed = True
                except Exception:  # a bug must not stop the controller: fail open, retry
                    self.metrics.errors.labels(stage="pass").inc()
                    _LOG.exception("planning pass failed; retrying soon")
                    failed = True
            async with self._contained("fail-open", ""):
                await self._fail_open(self.clock.now())
            if failed:
                await self.clock.backoff(1.0)
                return
        self._idle_at = self.clock.now()

    def _contained(self, stage: str, key: str | Obj) -> _Contained:
        """Contain an exception raised while handling one object (``key``, or the object
        itself: its key is made only when something fails): log, count, go on."""
        return _Contained(self, stage, key)

    async def _sleep_until_due(self) -> None:
        wake = self._next_plan or self.clock.now()
        earliest, self._earliest_latest_start = self._earliest_latest_start, None
        if earliest is None:  # the step's fail-open scan did not finish: scan again
            for intent in self._held_intents().values():
                wake = min(wake, intent.latest_start)
        elif earliest is not _NO_HELD:
            wake = min(wake, earliest)
        if not self._queue.empty():
            return
        sleeper = asyncio.create_task(self.clock.sleep_until(wake))
        waiter = asyncio.create_task(self._queue_ready())
        self._asleep_until = wake
        try:
            await asyncio.wait((sleeper, waiter), return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._asleep_until = None
            for task in (sleeper, waiter):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _queue_ready(self) -> None:
        key = await self._queue.get()
        self._queue.put_nowait(key)

    async def until_idle(self, *, timeout_s: float = 30.0, poll_s: float = 0.005) -> None:
        """Wait (real time) until the loop has handled everything due at the clock's now,
        looking every ``poll_s`` seconds."""
        began = time.monotonic()
        while not self._queue.empty() or not (
            (self._idle_at is not None and self._idle_at >= self.clock.now())
            or (self._asleep_until is not None and self._asleep_until > self.clock.now())
        ):
            if time.monotonic() - began > timeout_s:
                raise TemporaryError(f"the controller did not settle within {timeout_s} s")
            await asyncio.sleep(poll_s)

    # -- cache ----------------------------------------------------------------------------

    @property
    def _watching(self) -> bool:
        """Whether run()'s watches keep the caches (else each pass relists)."""
        return all(informer.watching for informer in self._informers.values())

    @_watching.setter
    def _watching(self, on: bool) -> None:
        for informer in self._informers.values():
            informer.watching = on

    @property
    def _rv(self) -> dict[str, str]:
        return {path: i.resource_version for path, i in self._informers.items()}

    def _cache_for(self, path: str) -> dict[str, Obj]:
        return self._informers[path].items

    def _keep(self, cache: dict[str, Obj], key: str, new: Obj, kind: Any) -> None:
        """Cache a write's answer unless the watch already brought a newer version, or its
        deletion (:meth:`carbonshift.k8s.informer.Informer.keep`)."""
        new.setdefault("kind", kind)
        next(i for i in self._informers.values() if i.items is cache).keep(key, new)

    async def _relist(self, path: str) -> None:
        await self._informers[path].relist()

    async def resync(self) -> None:
        """Relist nodes, Pods and Jobs (the level the controller acts on)."""
        for path in (_NODES, _PODS, _JOBS):
            await self._relist(path)

    async def _watch(self, path: str) -> None:
        """Keep one cache by its watch (relisting after a 410 or a failure); each Pod or Job
        that changes, and all of them after a relist, is queued for a check."""

        def restarted(reason: str) -> None:
            self.metrics.watch_restarts.labels(reason=reason).inc()
            if reason != "closed":
                _LOG.info("watch %s ended (%s); relisting", path, reason)

        def queue_all() -> None:
            if path != _NODES:
                for key in self._cache_for(path):
                    self._queue.put_nowait(key)

        await self._informers[path].run(
            self.clock.backoff,
            on_change=None if path == _NODES else self._queue.put_nowait,
            on_restart=restarted,
            on_relist=queue_all,
            lock=self._lock,
        )

    # -- what is held ---------------------------------------------------------------------

    def _held_objects(self) -> list[Obj]:
        """Pods with our gate and Jobs we hold, by the objects (not by memory)."""
        held: list[Obj] = []
        if self.config.dry_run:
            for obj in [*self.pods.values(), *self.jobs.values()]:
                # dry-run: nothing is held; plan every opted-in workload not yet "released"
                if obj["metadata"].get("uid") in self._released or self._terminal(obj):
                    continue
                if isinstance(self._intent(obj, self.clock.now()), Intent):
                    held.append(obj)
            return held
        for obj in [*self.pods.values(), *self.jobs.values()]:
            if self._held(obj) and not obj["metadata"].get("deletionTimestamp"):
                held.append(obj)
        return held

    def _intent(self, obj: Obj, now: datetime) -> Intent | NotHeld:
        """:func:`read_intent`, remembered per object version. ``now`` only stands in for a
        missing creationTimestamp, so such an object is read afresh each time."""
        meta = obj.get("metadata") or {}
        uid, rv = meta.get("uid"), meta.get("resourceVersion")
        if not (uid and rv and meta.get("creationTimestamp")):
            return read_intent(obj, self.config, now)
        key = (str(obj.get("kind")), str(uid), str(rv))
        found = self._intents.get(key)
        if found is None:
            if len(self._intents) > 2 * (len(self.pods) + len(self.jobs)) + 1024:
                self._intents.clear()  # versions long gone; cheaper than tracking them
            found = self._intents[key] = read_intent(obj, self.config, now)
        return found

    def _terminal(self, obj: Obj) -> bool:
        return _adapter(obj).is_finished(obj)

    def _held(self, obj: Obj) -> bool:
        """Whether carbonshift holds ``obj``: its kind's hold is on, and, where that field is
        also the user's (a Job's ``suspend``), carbonshift says so on the object."""
        adapter = _adapter(obj)
        if not adapter.is_held(obj):
            return False
        return not adapter.shared_hold or self._job_held(obj)

    def _job_held(self, job: Obj) -> bool:
        if not JOB.is_held(job):
            return False
        if RELEASED_AT in _annotations(job) or job["metadata"].get("deletionTimestamp"):
            return False
        if _job_finished(job):
            return False
        return isinstance(self._intent(job, self.clock.now()), Intent) or (
            _annotations(job).get(STATE) == "held"
        )

    def _held_intents(self) -> dict[str, Intent]:
        now = self.clock.now()
        out: dict[str, Intent] = {}
        for obj in self._held_objects():
            intent = self._intent(obj, now)
            if isinstance(intent, Intent) and obj["metadata"].get("uid") not in self._released:
                out[intent.key] = intent
        return out

    # -- capacity -------------------------------------------------------------------------

    def capacity(self) -> dict[str, float]:
        """Allocatable of Ready, schedulable nodes, in planning units."""
        return node_capacity(self.nodes.values(), self.config.cluster.resources)

    def _runtime_of(self, obj: Obj) -> timedelta | None:
        owner = next(
            (r for r in obj["metadata"].get("ownerReferences") or [] if r.get("kind") == "Job"),
            None,
        )
        source = obj
        if owner is not None:
            source = self.jobs.get(
                f"Job/{obj['metadata'].get('namespace')}/{owner.get('name')}", obj
            )
        intent = self._intent(source, self.clock.now())
        if isinstance(intent, Intent):
            return intent.expected_runtime
        raw = _annotations(source).get(RUNTIME) or _annotations(obj).get(RUNTIME)
        if raw is None:
            return None
        try:
            return read_duration(str(raw), what=f"annotation {RUNTIME}")
        except InputError:
            return None

    def running(self, now: datetime) -> list[RunningWork]:
        """Work that holds capacity, counted as the scheduler does.

        A Pod holds room once it is bound to a node (``spec.nodeName``) and until it ends; a
        Pod this controller released holds it from its release even before it is bound (the
        scheduler is about to place it). Pending Pods nobody placed hold nothing: the
        scheduler does not count them either. How long: an opted-in Pod (or a Job's) for its
        expected runtime from its start (or release); any other Pod for the whole horizon
        (a service does not say when it ends). Released Jobs without pods yet hold their
        demand for their runtime from the release. A Pod whose requests cannot be read is
        skipped (the scheduler would not have bound it).
        """
        out: list[RunningWork] = []
        jobs_with_pods: set[str] = set()
        for key, pod in self.pods.items():
            try:
                work = self._pod_work(key, pod, now, jobs_with_pods)
            except (InputError, ArithmeticError, ValueError, TypeError, AttributeError) as exc:
                _LOG.info("capacity: %s skipped (%s)", key, exc)
                continue
            if work is not None:
                out.append(work)
        for key, job in self.jobs.items():
            released = _annotations(job).get(RELEASED_AT)
            if released is None or key in jobs_with_pods or _job_finished(job):
                continue
            if (job.get("status") or {}).get("succeeded"):
                continue
            intent = self._intent(job, now)
            if not isinstance(intent, Intent):
                continue
            try:
                ends = read_time(released, what=RELEASED_AT) + intent.expected_runtime
            except InputError:
                continue
            out.append(RunningWork(key, dict(intent.demand), ends))
        return out

    def _pod_work(
        self, key: str, pod: Obj, now: datetime, jobs_with_pods: set[str]
    ) -> RunningWork | None:
        status = pod.get("status") or {}
        if status.get("phase") in _TERMINAL or _gates(pod):
            return None
        meta = pod["metadata"]
        released = _annotations(pod).get(RELEASED_AT)
        if not (pod.get("spec") or {}).get("nodeName") and released is None:
            return None  # pending and not placed: the scheduler counts nothing for it
        for ref in meta.get("ownerReferences") or []:
            if ref.get("kind") == "Job":
                jobs_with_pods.add(f"Job/{meta.get('namespace')}/{ref.get('name')}")
        demand = requested(pod, self.config.cluster.resources)
        runtime = self._runtime_of(pod)
        started = status.get("startTime") or released
        try:
            begin = read_time(str(started), what="status.startTime") if started else now
        except InputError:  # a start nobody can read: count it from now
            begin = now
        return RunningWork(key, demand, None if runtime is None else begin + runtime)

    # -- passes ---------------------------------------------------------------------------

    async def plan_pass(self) -> None:
        """The periodic pipeline (see the module doc)."""
        began = time.perf_counter()
        if not self._watching:
            await self.resync()
        now = self.clock.now()
        pending: list[Intent] = []
        objects: dict[str, Obj] = {}
        await self._hold_new_jobs(now)
        for obj in self._held_objects():
            uid = obj["metadata"].get("uid", "")
            if uid in self._released:
                continue
            async with self._contained("collect", obj):
                intent = self._intent(obj, now)
                if isinstance(intent, NotHeld):
                    await self._release(obj, None, "not-held", f"released: {intent.reason}")
                    continue
                if now >= intent.latest_start:
                    await self._release(obj, intent, "fail-open", self._fail_open_reason(intent))
                    continue
                pending.append(intent)
                objects[intent.key] = obj
        await self._note_unheld(now)
        keep = {intent.key for intent in pending}
        self.outcomes = {k: v for k, v in self.outcomes.items() if k in keep}
        counts = {POD.kind: 0, JOB.kind: 0}
        if not pending:
            self.metrics.plan_left_out.set(0)
        if pending:
            errors_before = self.source.errors
            try:
                slot0 = slot_floor(now, self.config.planning.slot_minutes)
                if self._slot_releases[0] != slot0:
                    self._slot_releases = (slot0, 0)
                # the plan (and the forecast it reads: the provider chain's HTTP calls) runs
                # in a worker thread, so the loop keeps serving the webhook, the extender,
                # /metrics, the Lease and the watches meanwhile; it gets values made here,
                # not views of state the loop changes, and what it answers is acted on here
                round_ = await asyncio.to_thread(
                    plan_round,
                    self._planning_config(),
                    now,
                    tuple(pending),
                    self.capacity(),
                    tuple(self.running(now)),
                    self.source,
                    previous={
                        key: o.planned_start
                        for key, o in self.outcomes.items()
                        if o.scheduled and not o.start_now
                    },
                    released_this_slot=self._slot_releases[1],
                )
            except CarbonshiftError as exc:
                self.metrics.provider_errors.inc()
                _LOG.warning("planning failed (%s); workloads stay held until they must start", exc)
                round_ = None
            except Exception:  # a bug: held workloads still fail open at their latest start
                self.metrics.errors.labels(stage="plan").inc()
                _LOG.exception("planning failed; workloads stay held until they must start")
                round_ = None
            self.metrics.provider_errors.inc(max(0, self.source.errors - errors_before))
            if round_ is not None:
                self.rounds += 1
                self.last_round = round_
                record_left_out(
                    self.metrics.plan_left_out,
                    self.metrics.plan_truncated,
                    _LOG,
                    round_.left_out,
                    len(pending),
                    f"planning.max_plan_cells {self.config.planning.max_plan_cells or 0:,} "
                    "weighted cells; the most urgent were planned, the rest wait, released at "
                    "their latest start at the latest",
                )
                self.metrics.forecast_age.set((now - round_.forecast.issued_at).total_seconds())
                self.metrics.record_freshness(round_.forecast.freshness)
                outcomes = {i.key: self._budget_note(round_.outcomes[i.key]) for i in pending}
                self.outcomes.update(outcomes)
                self.metrics.rate_limited.set(
                    sum(1 for o in outcomes.values() if _RATE_LIMITED in o.reason)
                )
                # releases first, the most urgent first (planned start, then deadline): under
                # the client's rate limit they leave in this order, before any plan write
                due = sorted(
                    (i for i in pending if outcomes[i.key].start_now),
                    key=lambda i: (outcomes[i.key].planned_start, i.deadline, i.key),
                )
                self._later_events = []  # their Released Events after every release write
                try:
                    for intent in due:
                        outcome = outcomes[intent.key]
                        async with self._contained("act", intent.key):
                            why = "planned" if now < intent.latest_start else "fail-open"
                            slot_start, released = self._slot_releases
                            self._slot_releases = (slot_start, released + 1)
                            await self._release(
                                objects[intent.key], intent, why, outcome.reason, outcome
                            )
                finally:
                    later, self._later_events = self._later_events, None
                    for args, warning in later:
                        await self._event(*args, warning=warning)
                # their Held Events after every plan write, within the Event budget as it
                # stands then: the writes say why each workload waits; the number of Events
                # no longer grows with how long the writes take (bench/controller.md)
                self._later_events = []
                try:
                    for intent in pending:
                        outcome = outcomes[intent.key]
                        if outcome.start_now:
                            continue
                        async with self._contained("act", intent.key):
                            counts[intent.kind] += 1
                            self.metrics.planned_delay.observe(
                                max(0.0, (outcome.planned_start - now).total_seconds())
                            )
                            await self._write_plan(objects[intent.key], intent, outcome)
                finally:
                    later, self._later_events = self._later_events, None
                    for args, warning in later:
                        await self._event(*args, warning=warning)
        for kind, count in counts.items():
            self.metrics.held.labels(kind=kind).set(count)
        self.metrics.reconcile_duration.observe(time.perf_counter() - began)

    def _planning_config(self) -> ControllerConfig:
        """The configuration the plan is made with: ``planning.max_releases_per_slot`` lowered
        to the releases the client's request rate limit lets through in a slot, when that is
        fewer (:meth:`ControllerConfig.release_budget_per_slot`)."""
        budget = self.config.release_budget_per_slot()
        limit = self.config.planning.max_releases_per_slot
        if budget == 0 or (limit and limit <= budget):
            return self.config
        if self._budget_config is None:
            planning = self.config.planning.model_copy(update={"max_releases_per_slot": budget})
            self._budget_config = self.config.model_copy(update={"planning": planning})
        return self._budget_config

    def _budget_note(self, outcome: Outcome) -> Outcome:
        """Say in the reason of a workload the release rate limit moved that the limit is the
        API request budget (client_connection.qps), when it is."""
        if self._planning_config() is self.config or _RATE_LIMITED not in outcome.reason:
            return outcome
        qps = self.config.client_connection.qps
        note = (
            f"{_RATE_LIMITED} (waits for the API request budget: client_connection.qps "
            f"{qps:g} requests/s, 2 requests per release)"
        )
        return replace(outcome, reason=outcome.reason.replace(_RATE_LIMITED, note, 1))

    async def _fail_open(self, now: datetime) -> None:
        """Release every held workload whose latest start has come; remember the earliest
        latest start of those still held after it, for the loop's wake-up
        (:meth:`_sleep_until_due`), so a step scans the held workloads once, not twice (a
        change to the caches meanwhile queues a check, and the loop then does not sleep)."""
        self._earliest_latest_start = None
        earliest: datetime | None = None
        for obj in self._held_objects():
            intent = self._intent(obj, now)
            if not isinstance(intent, Intent) or obj["metadata"].get("uid") in self._released:
                continue
            if now >= intent.latest_start:
                async with self._contained("fail-open", intent.key):
                    await self._release(obj, intent, "fail-open", self._fail_open_reason(intent))
                if obj["metadata"].get("uid") in self._released:
                    continue
            if earliest is None or intent.latest_start < earliest:
                earliest = intent.latest_start
        self._earliest_latest_start = _NO_HELD if earliest is None else earliest

    def _fail_open_reason(self, intent: Intent) -> str:
        return (
            f"released at its latest start {format_utc(intent.latest_start)} "
            f"(deadline {format_utc(intent.deadline)} minus {intent.expected_runtime} runtime)"
        )

    async def _check_object(self, key: str) -> None:
        """An event-driven check of one object: not held any more, or past its latest start."""
        obj = self.pods.get(key) or self.jobs.get(key)
        if obj is None or obj["metadata"].get("uid") in self._released:
            return
        now = self.clock.now()
        held = obj in self._held_objects() if self.config.dry_run else self._held(obj)
        if not held:
            if _adapter(obj).late_hold:
                await self._hold_new_jobs(now, only=key)
            await self._note_unheld(now, [obj])
            return
        intent = self._intent(obj, now)
        if isinstance(intent, NotHeld):
            await self._release(obj, None, "not-held", f"released: {intent.reason}")
        elif now >= intent.latest_start:
            await self._release(obj, intent, "fail-open", self._fail_open_reason(intent))
        elif intent.key not in self.outcomes and self.config.planning.plan_on_arrival:
            self._next_plan = None  # plan it in this step, with everything else pending
        elif _annotations(obj).get(STATE) is None and intent.key not in self.outcomes:
            next_plan = self._next_plan or now
            await self._annotate(
                obj,
                {
                    STATE: "held",
                    LATEST_START: format_utc(intent.latest_start),
                    PLANNED_START: format_utc(min(next_plan, intent.latest_start)),
                    REASON: f"held for the next planning round at {format_utc(next_plan)}",
                },
            )

    async def _hold_new_jobs(self, now: datetime, only: str | None = None) -> None:
        """Suspend managed Jobs that arrived unsuspended and never started (no webhook)."""
        if self.config.dry_run:
            return
        for key, job in list(self.jobs.items()):
            if only is not None and key != only:
                continue
            async with self._contained("hold", key):
                await self._hold_new_job(now, key, job)

    async def _hold_new_job(self, now: datetime, key: str, job: Obj) -> None:
        spec, status = job.get("spec") or {}, job.get("status") or {}
        if spec.get("suspend") or RELEASED_AT in _annotations(job):
            return
        if status.get("startTime") or status.get("active") or _job_finished(job):
            return
        intent = self._intent(job, now)
        if not isinstance(intent, Intent) or now >= intent.latest_start:
            return
        patch = {
            "metadata": {
                "resourceVersion": job["metadata"]["resourceVersion"],
                "annotations": {STATE: "held", REASON: "suspended by carbonshift on arrival"},
                "labels": {STATE: "held"},
            },
            "spec": JOB.hold_spec(job),
        }
        with contextlib.suppress(ConflictError, NotFoundError, InvalidError):
            self._keep(self.jobs, key, await self.kube.patch(_path(job), patch), JOB.kind)
            self.actions.append(Action(now, "hold", key, "arrival", "suspended on arrival"))

    async def _note_unheld(self, now: datetime, objects: list[Obj] | None = None) -> None:
        """Say once, on the object, why an opted-in workload is not held: a bad value
        (``UnusableIntent`` Warning), ``critical: "true"`` or the label opting it out
        (``NotHeld``): an annotation, an Event and a metric, once per workload and reason."""
        if objects is None:
            objects = [*self.pods.values(), *self.jobs.values()]
        for obj in objects:
            async with self._contained("note", obj):
                await self._note_one(now, obj)

    async def _note_one(self, now: datetime, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        opted = MANAGED_LABEL in (meta.get("labels") or {})
        if not opted and meta.get("namespace") not in self.config.opt_in.namespaces:
            return
        intent = self._intent(obj, now)
        if not isinstance(intent, NotHeld):
            return
        if self._terminal(obj) and not intent.unusable:
            return  # a bad value is reported even when the work ended before it was seen
        if not intent.unusable and intent.annotation not in (CRITICAL, MANAGED_LABEL):
            return
        if self._still_held(obj):
            return  # released first (and noted then); a note now would un-hold a Job unreleased
        uid = meta.get("uid", "")
        if self._noted.get(uid) == intent.reason or _annotations(obj).get(REASON) == (
            intent.reason
        ):
            self._noted[uid] = intent.reason
            return
        if not await self._annotate(obj, {STATE: "not-held", REASON: intent.reason}):
            return  # refused (409, 422, 404): tried again on the next pass
        self._noted[uid] = intent.reason
        if intent.unusable:
            self.metrics.unusable.labels(annotation=intent.annotation).inc()
            await self._event(obj, "UnusableIntent", intent.reason, warning=True)
        else:
            why = "critical" if intent.annotation == CRITICAL else "opted-out"
            self.metrics.not_held.labels(why=why).inc()
            await self._event(obj, "NotHeld", intent.reason)

    # -- writes ---------------------------------------------------------------------------

    async def _write_plan(self, obj: Obj, intent: Intent, outcome: Outcome) -> None:
        wanted = {
            STATE: "held",
            PLANNED_START: format_utc(outcome.planned_start),
            LATEST_START: format_utc(intent.latest_start),
            REASON: outcome.reason,
            EST_NOW: f"{outcome.est_g_now:.1f}",
            EST_PLANNED: f"{outcome.est_g_planned:.1f}",
        }
        current = _annotations(obj)
        if EST_ARRIVAL not in current:
            wanted[EST_ARRIVAL] = f"{outcome.est_g_now:.1f}"
        if not _worth_writing(current, wanted):
            return
        changed_start = current.get(PLANNED_START) != wanted[PLANNED_START]
        changed_data = data_used(current.get(REASON, "")) != data_used(wanted[REASON])
        await self._annotate(obj, wanted)
        if changed_start or changed_data:
            await self._event(
                obj,
                "Held",
                f"held until {wanted[PLANNED_START]} (latest start {wanted[LATEST_START]}): "
                f"{outcome.reason}; est. {outcome.est_g_planned:.1f} g planned vs "
                f"{outcome.est_g_now:.1f} g now",
            )

    def _still_held(self, obj: Obj) -> bool:
        """Whether carbonshift holds ``obj`` on the server: our gate, or a Job we suspended."""
        return not self.config.dry_run and self._held(obj)

    async def _annotate(self, obj: Obj, annotations: Mapping[str, str]) -> bool:
        """Write ``annotations`` (and the state label); False when the API refused it. What
        the object already says is not written again."""
        key = _key(obj)
        current = _annotations(obj)
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if all(current.get(k) == v for k, v in annotations.items()) and (
            STATE not in annotations or labels.get(STATE) == annotations[STATE]
        ):
            return True
        self.actions.append(
            Action(
                self.clock.now(),
                "annotate",
                key,
                "",
                annotations.get(REASON, ""),
                self.config.dry_run,
            )
        )
        if self.config.dry_run:
            return True
        try:
            new = await self.kube.patch(
                _path(obj),
                {"metadata": {"annotations": dict(annotations), **_state_label(annotations)}},
            )
        except (NotFoundError, InvalidError, ConflictError) as exc:
            _LOG.info("annotating %s failed: %s", key, exc)
            return False
        kind = str(obj.get("kind"))
        self._carry_intent(obj, new, annotations)
        self._keep(self._cache_for(_PODS if kind == POD.kind else _JOBS), key, new, kind)
        return True

    def _carry_intent(self, old: Obj, new: Obj, written: Mapping[str, str]) -> bool:
        """Whether ``new``, the answer of our own annotation write to ``old``, is ``old`` plus
        what we wrote and nothing else (merge patches carry no resourceVersion: anything else
        may have changed meanwhile); if so, ``old``'s intent is remembered for ``new``: our
        annotations and the state label are no input of it, so it is not read again for the
        answer (and the watch event of the same version)."""
        if not only_written(old, new, written, _state_label(written).get("labels", {})):
            return False
        old_meta, new_meta = old["metadata"], new["metadata"]
        kind, uid = str(old.get("kind")), str(old_meta.get("uid"))
        found = self._intents.get((kind, uid, str(old_meta.get("resourceVersion"))))
        if found is not None:
            self._intents[(kind, uid, str(new_meta["resourceVersion"]))] = found
        return True

    def _release_patch(self, obj: Obj, reason: str, nodes: list[str] | None) -> Obj:
        now = format_utc(self.clock.now())
        meta: Obj = {
            "resourceVersion": obj["metadata"]["resourceVersion"],
            "annotations": {STATE: "released", RELEASED_AT: now, REASON: reason},
            "labels": {STATE: "released"},
        }
        affinity: Obj | None = None
        if nodes:
            affinity = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        # terms are ORed; a field selector takes one value per requirement
                        # (validateNodeFieldSelectorRequirement: 422 otherwise)
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "In", "values": [node]}
                                ]
                            }
                            for node in nodes
                        ]
                    }
                }
            }
        return {"metadata": meta, "spec": _adapter(obj).release_spec(obj, affinity)}

    def _nodes_with_room(self, obj: Obj) -> list[str] | None:
        """Nodes where the workload fits now (``pin_nodes``), or None to leave it open."""
        if not self.config.pin_nodes:
            return None
        pod_spec = _adapter(obj).pod_specs(obj)[0]
        if (pod_spec or {}).get("affinity", {}).get("nodeAffinity"):
            return None
        resources = self.config.cluster.resources
        try:
            need = requested(obj, resources)
        except InputError:
            return None
        used: dict[str, dict[str, float]] = {}
        for pod in self.pods.values():
            node = (pod.get("spec") or {}).get("nodeName")
            if not node or (pod.get("status") or {}).get("phase") in _TERMINAL:
                continue
            with contextlib.suppress(InputError):
                for r, v in requested(pod, resources).items():
                    used.setdefault(node, {}).setdefault(r, 0.0)
                    used[node][r] += v
        fits = []
        for name, node in sorted(self.nodes.items()):
            offered = node_allocatable(node, resources)
            room = True
            for r in resources:
                if used.get(name, {}).get(r, 0.0) + need[r] > offered[r] + 1e-9:
                    room = False
            if room:
                fits.append(name)
        return fits or None

    async def _release(
        self,
        obj: Obj,
        intent: Intent | None,
        why: str,
        reason: str,
        outcome: Outcome | None = None,
    ) -> None:
        """Release once: remove the gate / unsuspend, conflict-safe (see the module doc)."""
        key = _key(obj)
        uid = obj["metadata"].get("uid", "")
        if uid in self._released:
            return
        now = self.clock.now()
        kind = str(obj.get("kind"))
        if self.config.dry_run:
            self._released.add(uid)
            self.actions.append(Action(now, "release", key, why, reason, dry_run=True))
            _LOG.info("dry-run: would release %s (%s): %s", key, why, reason)
            return
        current = obj
        nodes = self._nodes_with_room(obj)
        for _attempt in range(_MAX_WRITE_ATTEMPTS):
            still_held = self._held(current)
            if not still_held:
                return
            try:
                new = await self.kube.patch(
                    _path(current), self._release_patch(current, reason, nodes)
                )
            except ConflictError:
                self.metrics.write_conflicts.inc()
                try:
                    current = await self.kube.get(_path(obj))
                except NotFoundError:
                    return
                current.setdefault("kind", kind)
                continue
            except NotFoundError:
                return
            except InvalidError as exc:
                if nodes:
                    _LOG.info("release of %s with node affinity refused (%s); without", key, exc)
                    nodes = None
                    continue
                _LOG.warning("release of %s refused: %s", key, exc)
                return
            self._keep(self._cache_for(_PODS if kind == POD.kind else _JOBS), key, new, kind)
            self._released.add(uid)
            self.actions.append(Action(now, "release", key, why, reason))
            self.metrics.released.labels(kind=kind, why=why).inc()
            if why == "fail-open":
                self.metrics.failed_open.inc()
            arrival = _annotations(current).get(EST_ARRIVAL)
            if arrival is not None and outcome is not None:
                with contextlib.suppress(ValueError):
                    self.metrics.carbon_saved.inc(max(0.0, float(arrival) - outcome.est_g_now))
            self.outcomes.pop(key, None)
            await self._event(current, "Released", reason, warning=why == "fail-open")
            if why == "not-held":  # say why now: it may run and end before the next pass
                await self._note_one(now, new)
            return
        _LOG.warning("release of %s gave up after %d conflicts", key, _MAX_WRITE_ATTEMPTS)

    async def _event(self, obj: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        """Record a core/v1 Event on ``obj`` (best effort), within the Event budget
        (``events.qps`` / ``.burst``): past it the Event is dropped and counted in
        ``carbonshift_events_dropped_total{reason}``; what it would have said is on the
        object already (its annotations are written first, budget or not)."""
        if self.config.dry_run:
            return
        if self._later_events is not None:
            self._later_events.append(((obj, reason, message), warning))
            return
        if self.event_budget is not None and not self.event_budget.take():
            self.metrics.events_dropped.labels(reason=reason).inc()
            return
        meta = obj.get("metadata") or {}
        now = format_utc(self.clock.now())
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "generateName": f"{meta.get('name', 'x')}.",
                "namespace": meta.get("namespace"),
            },
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", "v1"),
                "kind": obj.get("kind"),
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
            },
            "reason": reason,
            "message": message[:1000],
            "type": "Warning" if warning else "Normal",
            "source": {"component": "carbonshift-controller"},
            "reportingComponent": CONTROLLER_COMPONENT,
            "reportingInstance": self.config.identity or "carbonshift",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            await self.kube.create(f"/api/v1/namespaces/{meta.get('namespace')}/events", event)
        except (KubeError, TemporaryError) as exc:
            _LOG.info("event %s on %s not recorded: %s", reason, _key(obj), exc)


class _Contained:
    """:meth:`Controller._contained`: an exception raised in the block is logged, counted in
    ``carbonshift_errors_total{stage}`` and swallowed (a carbonshift error as a warning, any
    other with its traceback); cancellation goes through. A class, not a generator-based
    context manager: a pass enters one per held workload and phase (tens of thousands at
    fleet scale), and this costs a third as much (bench/controller.md, "Per-request and
    per-workload CPU")."""

    __slots__ = ("_controller", "_key", "_stage")

    def __init__(self, controller: Controller, stage: str, key: str | Obj) -> None:
        self._controller = controller
        self._stage = stage
        self._key = key

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> bool:
        if exc is None or not isinstance(exc, Exception):
            return False
        self._controller.metrics.errors.labels(stage=self._stage).inc()
        key = self._key if isinstance(self._key, str) else _key(self._key)
        if isinstance(exc, CarbonshiftError):
            _LOG.warning("%s of %s failed: %s", self._stage, key or "held workloads", exc)
        else:
            _LOG.error("%s of %s failed", self._stage, key or "held workloads", exc_info=exc)
        return True


def describe(obj: Obj) -> dict[str, Any]:
    """The carbonshift annotations of an object (for tests and the CLI)."""
    return {k: v for k, v in _annotations(obj).items() if k.startswith(ANNOTATION_PREFIX)}
