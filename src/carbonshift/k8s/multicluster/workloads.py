"""The hub's view of the three kinds of workload it places, read from plain JSON objects.

========================  ======================================  =========================
kind (hub object)         held by                                  placed by
========================  ======================================  =========================
batch/v1 Job              ``spec.suspend: true`` on the hub        a copy created in the spoke
Kueue Workload            our AdmissionCheck in state Retry,       our check Ready with
(``kueue.x-k8s.io``)      with ``requeueAfterSeconds``             ``podSetUpdates``, and
                                                                   ``status.nominatedClusterNames``
MCAD AppWrapper,          not copied yet (no MCAD on the hub)      a copy created in the spoke
label ``carbonshift.io/hub``
MCAD AppWrapper           our gate in ``spec.dispatchingGates``    gate removed and
(``workload.codeflare                                              ``...policyResult.targetCluster``
.dev/v1beta1``)
========================  ======================================  =========================

Every kind has its adapter (:mod:`carbonshift.k8s.kinds`): it says where the intent is
written (the Job itself, the Workload's owner Job, the AppWrapper's metadata over its wrapped
Job's pod template) and the one intent parser reads it there
(:func:`carbonshift.k8s.intent.read_intent_from`); no object is rewritten to look like a Job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from carbonshift.errors import InputError
from carbonshift.k8s.config import ControllerConfig
from carbonshift.k8s.intent import (
    Intent,
    NotHeld,
    read_duration,
    read_intent_from,
    requested,
)
from carbonshift.k8s.keys import (
    DONE_SECONDS,
    HOLD_GATE,
    HUB_UID_LABEL,
    INTERRUPTIBLE,
    LOST_FROM,
    OVERHEAD,
    PLACED_CLUSTER,
    PLANNED_CLUSTER,
    PLANNED_START,
    REASON,
    RELEASED_AT,
    REMAINING,
    SPOKE_STATUS,
    STATE_LABEL,
)
from carbonshift.k8s.kinds import APPWRAPPER, HUB_KINDS, WORKLOAD, HubKind, condition_true
from carbonshift.k8s.kinds.kueue import QUEUE_LABEL
from carbonshift.units import parse_utc

__all__ = [
    "APPWRAPPERS",
    "DONE_SECONDS",
    "HOLD_GATE",
    "HUB_ADAPTERS",
    "HUB_UID_LABEL",
    "INTERRUPTIBLE",
    "JOBS",
    "LOST_FROM",
    "OVERHEAD",
    "PLACED_CLUSTER",
    "PLANNED_CLUSTER",
    "PLANNED_START",
    "QUEUE_LABEL",
    "REASON",
    "RELEASED_AT",
    "REMAINING",
    "SPOKE_STATUS",
    "STANDING_KEYS",
    "STATE_LABEL",
    "WORKLOADS",
    "HubWorkload",
    "Kind",
    "after_own_write",
    "condition_true",
    "is_finished",
    "pod_demand",
    "read_workload",
    "spoke_job_names",
    "state_label",
]

Obj = dict[str, Any]
Kind = Literal["Job", "Workload", "AppWrapper"]

HUB_ADAPTERS: dict[str, HubKind] = {a.kind: a for a in HUB_KINDS}
"""The hub's adapter of each kind it places."""
JOBS = HUB_ADAPTERS["Job"].path()
WORKLOADS = WORKLOAD.path()
APPWRAPPERS = APPWRAPPER.path()


def state_label(annotations: Mapping[str, str | None]) -> dict[str, dict[str, str]]:
    """The metadata patch of ``STATE_LABEL`` for a hub write of these annotations: released
    once ``released-at`` is written, held while a planned start is written without it (a
    hold, or a suspension, which clears ``released-at``); none for other writes."""
    if annotations.get(RELEASED_AT):
        return {"labels": {STATE_LABEL: "released"}}
    if annotations.get(PLANNED_START):
        return {"labels": {STATE_LABEL: "held"}}
    return {}


def is_finished(kind: Kind, obj: Obj) -> bool:
    """Whether a hub object has run to its end (succeeded or failed)."""
    return HUB_ADAPTERS[kind].is_finished(obj)


@dataclass(frozen=True, slots=True)
class HubWorkload:
    """One opted-in hub object: what it asks for and where it stands.

    ``state`` is ``held`` (waiting for its start), ``placed`` (released to ``placed``),
    ``suspended`` (interruptible work stopped by the plan, to resume later) or ``done``.
    """

    kind: Kind
    obj: Obj
    intent: Intent
    state: Literal["held", "placed", "suspended", "done"]
    placed: str | None
    released_at: datetime | None
    interruptible: bool
    overhead: timedelta
    done_s: float

    @property
    def adapter(self) -> HubKind:
        """This kind's adapter."""
        return HUB_ADAPTERS[self.kind]

    @property
    def key(self) -> str:
        meta = self.obj["metadata"]
        return f"{self.kind}/{meta.get('namespace', '')}/{meta['name']}"

    @property
    def uid(self) -> str:
        return str(self.obj["metadata"].get("uid", ""))

    @property
    def annotations(self) -> dict[str, str]:
        return dict(self.obj["metadata"].get("annotations") or {})

    @property
    def remaining(self) -> timedelta:
        """Work left: the expected runtime less what ran, plus a restart's overhead if any ran."""
        left = self.intent.expected_runtime - timedelta(seconds=self.done_s)
        return max(left, timedelta(minutes=1)) + (
            self.overhead if self.done_s > 0 else timedelta(0)
        )

    @property
    def expected_end(self) -> datetime | None:
        if self.released_at is None:
            return None
        return self.released_at + self.remaining


def pod_demand(w: HubWorkload, resources: tuple[str, ...]) -> dict[str, float]:
    """What one pod of ``w`` requests (its largest pod set's template, for Kueue), in planning
    units; raises InputError for a malformed quantity."""
    out = dict.fromkeys(resources, 0.0)
    for spec in w.adapter.pod_specs(w.obj):
        asked = requested({"kind": "Pod", "spec": spec}, resources)
        out = {r: max(out[r], asked[r]) for r in resources}
    return out


def spoke_job_names(w: HubWorkload) -> set[tuple[str, str]]:
    """(namespace, name) of the Jobs that run ``w`` in its spoke: the copy of a hub Job, the
    owner Job of a Kueue Workload (MultiKueue's remote copy), an AppWrapper's wrapped Jobs."""
    return w.adapter.spoke_jobs(w.obj)


def _interruptible(annotations: dict[str, str]) -> tuple[bool, timedelta]:
    flag = str(annotations.get(INTERRUPTIBLE, "false")).strip().lower() == "true"
    raw = annotations.get(OVERHEAD)
    overhead = read_duration(str(raw), what=f"annotation {OVERHEAD}") if raw else timedelta(0)
    return flag, overhead


def read_workload(
    kind: Kind, obj: Obj, config: ControllerConfig, now: datetime, owners: dict[str, Obj]
) -> HubWorkload | NotHeld:
    """The hub's view of ``obj``, or why it is left alone."""
    adapter = HUB_ADAPTERS[kind]
    source = adapter.intent_source(obj, owners)
    if source is None:
        return NotHeld(f"{kind} has no Job to read its intent from")
    intent = read_intent_from(source, config, now)
    if isinstance(intent, NotHeld):
        return intent
    annotations: dict[str, str] = dict((obj.get("metadata") or {}).get("annotations") or {})
    try:
        interruptible, overhead = _interruptible(
            {**(source.metadata.get("annotations") or {}), **annotations}
        )
    except (InputError, ValueError, ArithmeticError, TypeError, AttributeError) as exc:
        return NotHeld(f"unusable annotation: {exc}", unusable=True)
    return _standing(kind, obj, annotations, intent, interruptible, overhead)


STANDING_KEYS = frozenset(
    {
        PLACED_CLUSTER,
        RELEASED_AT,
        DONE_SECONDS,
        PLANNED_CLUSTER,
        PLANNED_START,
        REASON,
        SPOKE_STATUS,
        LOST_FROM,
    }
)
"""The annotations the hub writes on its objects (where each stands): no input of the
intent, nor of whether it is interruptible."""


def after_own_write(w: HubWorkload, obj: Obj) -> HubWorkload | NotHeld:
    """``w`` read again from ``obj``, the answer of the hub's own write of
    :data:`STANDING_KEYS` annotations (and the state label) to ``w.obj`` and nothing else
    (:func:`carbonshift.k8s.intent.only_written`): the intent, interruptible and overhead are
    carried, not parsed again; where it stands is read from ``obj``'s annotations, as
    :func:`read_workload` reads it."""
    annotations: dict[str, str] = dict((obj.get("metadata") or {}).get("annotations") or {})
    return _standing(w.kind, obj, annotations, w.intent, w.interruptible, w.overhead)


def _standing(
    kind: Kind,
    obj: Obj,
    annotations: dict[str, str],
    intent: Intent,
    interruptible: bool,
    overhead: timedelta,
) -> HubWorkload | NotHeld:
    """``obj`` as a :class:`HubWorkload`: where it stands, from the hub's annotations."""
    try:
        released_raw = annotations.get(RELEASED_AT)
        released = parse_utc(released_raw, what=RELEASED_AT) if released_raw else None
        done_s = float(annotations.get(DONE_SECONDS, "0") or 0)
        if not 0 <= done_s < math.inf:
            raise InputError(
                f"annotation {DONE_SECONDS}={annotations.get(DONE_SECONDS)!r} is not a finite "
                "number of seconds >= 0"
            )
    except (InputError, ValueError, ArithmeticError, TypeError, AttributeError) as exc:
        return NotHeld(f"unusable annotation: {exc}", unusable=True)
    placed = annotations.get(PLACED_CLUSTER) or None
    finished = HUB_ADAPTERS[kind].is_finished(obj)
    state: Literal["held", "placed", "suspended", "done"]
    if finished:
        state = "done"
    elif placed:
        state = "placed"
    elif done_s > 0:
        state = "suspended"
    else:
        state = "held"
    return HubWorkload(
        kind=kind,
        obj=obj,
        intent=intent,
        state=state,
        placed=placed,
        released_at=released,
        interruptible=interruptible,
        overhead=overhead,
        done_s=done_s,
    )
