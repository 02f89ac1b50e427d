"""The hub's view of the three kinds of workload it places, read from plain JSON objects.

========================  ======================================  =========================
kind (hub object)         held by                                  placed by
========================  ======================================  =========================
batch/v1 Job              ``spec.suspend: true`` on the hub        a copy created in the spoke
Kueue Workload            our AdmissionCheck in state Retry,       our check Ready with
(``kueue.x-k8s.io``)      with ``requeueAfterSeconds``             ``podSetUpdates``, and
                                                                   ``status.nominatedClusterNames``
MCAD AppWrapper           our gate in ``spec.dispatchingGates``    gate removed and
(``workload.codeflare                                              ``...policyResult.targetCluster``
.dev/v1beta1``)
========================  ======================================  =========================

Every kind reuses the one-cluster controller's intent parser
(:func:`carbonshift.k8s.intent.read_intent`) on a Job-shaped view: the Job itself, the
Workload's owner Job, or the AppWrapper's Job item under the AppWrapper's own metadata.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from carbonshift.errors import InputError
from carbonshift.k8s.config import ControllerConfig
from carbonshift.k8s.intent import (
    HUB_LABEL,
    MANAGED_LABEL,
    Intent,
    NotHeld,
    read_duration,
    read_intent,
    requested,
)
from carbonshift.units import parse_utc

__all__ = [
    "APPWRAPPERS",
    "DONE_SECONDS",
    "HOLD_GATE",
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
    "STATE_LABEL",
    "WORKLOADS",
    "HubWorkload",
    "Kind",
    "appwrapper_job_view",
    "condition_true",
    "is_finished",
    "pod_demand",
    "read_workload",
    "spoke_job_names",
    "state_label",
]

Obj = dict[str, Any]
Kind = Literal["Job", "Workload", "AppWrapper"]

JOBS = "/apis/batch/v1/jobs"
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/workloads"
APPWRAPPERS = "/apis/workload.codeflare.dev/v1beta1/appwrappers"

PLANNED_CLUSTER = "carbonshift.io/planned-cluster"
PLANNED_START = "carbonshift.io/planned-start"
REASON = "carbonshift.io/reason"
PLACED_CLUSTER = "carbonshift.io/placed-cluster"
RELEASED_AT = "carbonshift.io/released-at"
SPOKE_STATUS = "carbonshift.io/spoke-status"
INTERRUPTIBLE = "carbonshift.io/interruptible"
OVERHEAD = "carbonshift.io/restart-overhead"
DONE_SECONDS = "carbonshift.io/done-seconds"
LOST_FROM = "carbonshift.io/lost-from"
"""Spokes this workload was placed in and planned again from after they stayed away."""
REMAINING = "carbonshift.io/remaining-runtime"
"""Pod annotation on a resumed piece of interruptible work: the run time it still needs
(what is left plus the restart overhead). The expected runtime is kept as the user wrote it;
a workload can read this (downward API) to know how far its checkpoint got."""
HUB_UID_LABEL = "carbonshift.io/hub-uid"
HOLD_GATE = "carbonshift.io/hold"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
STATE_LABEL = "carbonshift.io/state"
"""Label the hub keeps in sync with its plan (``held`` or ``released``), as the one-cluster
controller does, so ``kubectl get jobs -l carbonshift.io/state=held`` lists what it holds (the
planned start, an RFC 3339 time, is no valid label value and stays an annotation)."""


def state_label(annotations: Mapping[str, str | None]) -> dict[str, dict[str, str]]:
    """The metadata patch of ``STATE_LABEL`` for a hub write of these annotations: released
    once ``released-at`` is written, held while a planned start is written without it (a
    hold, or a suspension, which clears ``released-at``); none for other writes."""
    if annotations.get(RELEASED_AT):
        return {"labels": {STATE_LABEL: "released"}}
    if annotations.get(PLANNED_START):
        return {"labels": {STATE_LABEL: "held"}}
    return {}


def condition_true(obj: Obj, kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def is_finished(kind: Kind, obj: Obj) -> bool:
    """Whether a hub object has run to its end (succeeded or failed)."""
    if kind == "Job":
        return condition_true(obj, "Complete") or condition_true(obj, "Failed")
    if kind == "Workload":
        return condition_true(obj, "Finished")
    # MCAD's dispatcher phase (spec.dispatcherStatus, as the multi-cluster MCAD writes it)
    phase = ((obj.get("spec") or {}).get("dispatcherStatus") or {}).get("phase", "")
    return str(phase) in ("Succeeded", "Failed")


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


def appwrapper_job_view(aw: Obj) -> Obj | None:
    """The AppWrapper's first Job item under the AppWrapper's own metadata (None: no Job).

    Items are read from ``spec.resources.GenericItems[].generictemplate`` (multi-cluster
    MCAD) or ``spec.components[].template`` (the later AppWrapper controller).
    """
    spec = aw.get("spec") or {}
    templates = [
        item.get("generictemplate")
        for item in (spec.get("resources") or {}).get("GenericItems") or []
    ] + [item.get("template") for item in spec.get("components") or []]
    for template in templates:
        if isinstance(template, dict) and template.get("kind") == "Job":
            view = copy.deepcopy(template)
            view["metadata"] = copy.deepcopy(aw.get("metadata") or {})
            return view
    return None


def pod_demand(w: HubWorkload, resources: tuple[str, ...]) -> dict[str, float]:
    """What one pod of ``w`` requests (its largest pod set's template, for Kueue), in planning
    units; raises InputError for a malformed quantity."""
    if w.kind == "Workload":
        templates = [
            ps.get("template") or {} for ps in (w.obj.get("spec") or {}).get("podSets") or []
        ]
    else:
        job = w.obj if w.kind == "Job" else (appwrapper_job_view(w.obj) or {})
        templates = [((job.get("spec") or {}).get("template") or {})]
    out = dict.fromkeys(resources, 0.0)
    for template in templates:
        asked = requested({"kind": "Pod", "spec": template.get("spec") or {}}, resources)
        out = {r: max(out[r], asked[r]) for r in resources}
    return out


def spoke_job_names(w: HubWorkload) -> set[tuple[str, str]]:
    """(namespace, name) of the Jobs that run ``w`` in its spoke: the copy of a hub Job, the
    owner Job of a Kueue Workload (MultiKueue's remote copy), an AppWrapper's wrapped Jobs."""
    meta = w.obj.get("metadata") or {}
    ns = str(meta.get("namespace", ""))
    if w.kind == "Job":
        return {(ns, str(meta.get("name")))}
    if w.kind == "Workload":
        return {
            (ns, str(ref.get("name")))
            for ref in meta.get("ownerReferences") or []
            if ref.get("kind") == "Job"
        }
    spec = w.obj.get("spec") or {}
    items = [
        i.get("generictemplate") for i in (spec.get("resources") or {}).get("GenericItems") or []
    ]
    items += [i.get("template") for i in spec.get("components") or []]
    return {
        (ns, str((i.get("metadata") or {}).get("name")))
        for i in items
        if isinstance(i, dict) and i.get("kind") == "Job"
    }


def _job_view(kind: Kind, obj: Obj, owners: dict[str, Obj]) -> Obj | None:
    if kind == "Job":
        return obj
    if kind == "AppWrapper":
        return appwrapper_job_view(obj)
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "Job" and ref.get("uid") in owners:
            return owners[ref["uid"]]
    return None


def _interruptible(annotations: dict[str, str]) -> tuple[bool, timedelta]:
    flag = str(annotations.get(INTERRUPTIBLE, "false")).strip().lower() == "true"
    raw = annotations.get(OVERHEAD)
    overhead = read_duration(str(raw), what=f"annotation {OVERHEAD}") if raw else timedelta(0)
    return flag, overhead


def read_workload(
    kind: Kind, obj: Obj, config: ControllerConfig, now: datetime, owners: dict[str, Obj]
) -> HubWorkload | NotHeld:
    """The hub's view of ``obj``, or why it is left alone."""
    view = _job_view(kind, obj, owners)
    if view is None:
        return NotHeld(f"{kind} has no Job to read its intent from")
    # copies of the parts changed here only: a deep copy of every hub object, three times
    # per reconcile, was a third of the hub's CPU at 3,000 Jobs (bench/hub.md)
    meta = dict(view.get("metadata") or {})
    labels = meta["labels"] = dict(meta.get("labels") or {})
    view = {**view, "kind": "Job", "metadata": meta}
    # a hub Job opts in by the hub label (which the one-cluster reading refuses); the other
    # kinds by our gate / admission check
    if kind != "Job" or labels.pop(HUB_LABEL, None) == "true":
        labels.setdefault(MANAGED_LABEL, "true")
    intent = read_intent(view, config, now)
    if isinstance(intent, NotHeld):
        return intent
    annotations: dict[str, str] = dict((obj.get("metadata") or {}).get("annotations") or {})
    try:
        interruptible, overhead = _interruptible(
            {**((view.get("metadata") or {}).get("annotations") or {}), **annotations}
        )
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
    finished = is_finished(kind, obj)
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
