"""What carbonshift holds in a cluster, and why: the rows of ``carbonshift status``.

The controller and the hub write their decisions onto each workload (``carbonshift.io/state``,
``planned-start``, ``reason``, the estimated grams now and at the planned start, and for the
hub ``planned-cluster``); this module only reads them back, for Pods, Jobs, Kueue Workloads
and AppWrappers (each through its adapter, :mod:`carbonshift.k8s.kinds`). Kinds whose API the
cluster does not serve (no Kueue, no MCAD) are skipped. Where no cluster is noted, the place
is where the adapter says the workload runs (a Pod's node).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from carbonshift.k8s.client import Kube, NotFoundError
from carbonshift.k8s.keys import (
    EST_NOW,
    EST_PLANNED,
    PLACED_CLUSTER,
    PLANNED_CLUSTER,
    PLANNED_START,
    REASON,
    RELEASED_AT,
    STATE,
    State,
)
from carbonshift.k8s.kinds import ADAPTERS, KindAdapter
from carbonshift.units import parse_utc

__all__ = ["ROW_KEYS", "WORKLOAD_KINDS", "WorkloadStatus", "list_status"]

#: Every kind carbonshift acts on, at the API version its adapter names (AppWrappers at
#: ``workload.codeflare.dev/v1beta1``, the only version MCAD's CRD serves).
WORKLOAD_KINDS: tuple[KindAdapter, ...] = tuple(ADAPTERS.values())


#: The machine-named fields of a row (JSON and CSV), in order.
ROW_KEYS = (
    "kind",
    "namespace",
    "name",
    "state",
    "planned_start",
    "place",
    "reason",
    "estimated_g_now",
    "estimated_g_planned",
    "estimated_saving_g",
)


@dataclass(frozen=True, slots=True)
class WorkloadStatus:
    """One workload as carbonshift left it: state, when and where it is planned, and why."""

    kind: str
    namespace: str
    name: str
    state: str
    planned_start: datetime | None
    place: str | None
    reason: str
    estimated_g_now: float | None
    estimated_g_planned: float | None

    @property
    def estimated_saving_g(self) -> float | None:
        """Grams the plan is expected to save against starting now (None when not stated)."""
        if self.estimated_g_now is None or self.estimated_g_planned is None:
            return None
        return self.estimated_g_now - self.estimated_g_planned

    def as_row(self) -> dict[str, Any]:
        """The machine-named fields, for JSON and CSV."""
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "state": self.state,
            "planned_start": (
                self.planned_start.strftime("%Y-%m-%dT%H:%M:%SZ") if self.planned_start else None
            ),
            "place": self.place,
            "reason": self.reason,
            "estimated_g_now": self.estimated_g_now,
            "estimated_g_planned": self.estimated_g_planned,
            "estimated_saving_g": self.estimated_saving_g,
        }


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return parse_utc(text)
    except ValueError:  # a hand-edited annotation: shown as unknown, never an error
        return None


def _status_of(adapter: KindAdapter, obj: dict[str, Any]) -> WorkloadStatus | None:
    meta = obj.get("metadata") or {}
    notes: Mapping[str, str] = meta.get("annotations") or {}
    state = notes.get(STATE)
    if state is None:
        # the hub writes no state: a workload it placed carries placed-cluster (and
        # released-at), one it holds carries its planned cluster and start
        if PLACED_CLUSTER in notes or RELEASED_AT in notes:
            state = State.RELEASED.value
        elif PLANNED_CLUSTER in notes or PLANNED_START in notes:
            state = State.HELD.value
        else:
            return None
    place = notes.get(PLANNED_CLUSTER) or notes.get(PLACED_CLUSTER) or adapter.runs_on(obj)
    return WorkloadStatus(
        kind=adapter.kind,
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        state=state,
        planned_start=_time(notes.get(PLANNED_START)),
        place=place,
        reason=notes.get(REASON, ""),
        estimated_g_now=_number(notes.get(EST_NOW)),
        estimated_g_planned=_number(notes.get(EST_PLANNED)),
    )


async def list_status(
    kube: Kube, *, namespace: str | None = None, states: Iterable[str] | None = ("held",)
) -> list[WorkloadStatus]:
    """Every workload carbonshift annotated, in ``states`` (None: any), soonest start first."""
    wanted = None if states is None else set(states)
    rows: list[WorkloadStatus] = []
    for adapter in WORKLOAD_KINDS:
        path = adapter.path(namespace)
        try:
            listed = await kube.list(path)
        except NotFoundError:
            continue  # the cluster does not serve this kind (no Kueue, no MCAD)
        for obj in listed.get("items") or []:
            row = _status_of(adapter, obj)
            if row is not None and (wanted is None or row.state in wanted):
                rows.append(row)
    far = datetime.max.replace(tzinfo=None)
    return sorted(
        rows,
        key=lambda r: (
            r.planned_start.replace(tzinfo=None) if r.planned_start else far,
            r.namespace,
            r.name,
        ),
    )
