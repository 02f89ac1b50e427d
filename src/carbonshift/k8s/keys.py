"""Every ``carbonshift.io/*`` name carbonshift reads or writes on Kubernetes objects.

One module owns the vocabulary, so a key is spelt once: the controller, its webhook, the hub,
``carbonshift status`` and the tests import it from here (``tests/k8s/test_keys.py`` fails
when another module under ``src/`` spells a ``carbonshift.io/`` literal). docs/controller.md
and docs/multicluster.md explain what each one means to a user.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "ANNOTATION_PREFIX",
    "API_GROUP",
    "API_VERSION",
    "CARBON_AWARE_LABEL",
    "CONTROLLER_COMPONENT",
    "CRITICAL",
    "DEADLINE",
    "DONE_SECONDS",
    "EST_ARRIVAL",
    "EST_NOW",
    "EST_PLANNED",
    "GRID_ZONE_LABEL",
    "HOLD_GATE",
    "HUB_COMPONENT",
    "HUB_LABEL",
    "HUB_UID_LABEL",
    "INTERRUPTIBLE",
    "LATEST_START",
    "LOST_FROM",
    "MANAGED_LABEL",
    "OVERHEAD",
    "PLACED_CLUSTER",
    "PLANNED_CLUSTER",
    "PLANNED_START",
    "POWER",
    "REASON",
    "RELEASED_AT",
    "REMAINING",
    "RUNTIME",
    "SPOKE_STATUS",
    "STATE",
    "STATE_LABEL",
    "WATTS_PER_CORE_LABEL",
    "State",
]

API_GROUP = "carbonshift.io"
"""The API group of carbonshift's own resources (``CarbonCluster``) and of every key below."""
API_VERSION = f"{API_GROUP}/v1alpha1"
ANNOTATION_PREFIX = f"{API_GROUP}/"
"""Every annotation and label key carbonshift owns starts with this."""

# -- what a user writes (intent) ---------------------------------------------------------
MANAGED_LABEL = f"{API_GROUP}/managed"
"""Label: ``"true"`` opts a workload in, ``"false"`` opts it out of an opted-in namespace."""
HUB_LABEL = f"{API_GROUP}/hub"
"""``"true"`` on a hub Job or AppWrapper: the multi-cluster hub's, never this controller's or
its webhook's (the two may run on one cluster; Kueue Workloads are the hub's by kind, gated
AppWrappers by the gate)."""
DEADLINE = f"{API_GROUP}/deadline"
RUNTIME = f"{API_GROUP}/expected-runtime"
CRITICAL = f"{API_GROUP}/critical"
POWER = f"{API_GROUP}/power-watts"
INTERRUPTIBLE = f"{API_GROUP}/interruptible"
OVERHEAD = f"{API_GROUP}/restart-overhead"

# -- what carbonshift writes (decisions) --------------------------------------------------
HOLD_GATE = f"{API_GROUP}/hold"
"""The Pod scheduling gate, and the AppWrapper dispatching gate, that hold a workload."""
STATE = f"{API_GROUP}/state"
"""Annotation and label (same key): a :class:`State` value."""
STATE_LABEL = STATE
PLANNED_START = f"{API_GROUP}/planned-start"
LATEST_START = f"{API_GROUP}/latest-start"
REASON = f"{API_GROUP}/reason"
EST_NOW = f"{API_GROUP}/estimated-g-now"
EST_PLANNED = f"{API_GROUP}/estimated-g-planned"
EST_ARRIVAL = f"{API_GROUP}/estimated-g-at-arrival"
RELEASED_AT = f"{API_GROUP}/released-at"

# -- the hub's decisions ------------------------------------------------------------------
PLANNED_CLUSTER = f"{API_GROUP}/planned-cluster"
PLACED_CLUSTER = f"{API_GROUP}/placed-cluster"
SPOKE_STATUS = f"{API_GROUP}/spoke-status"
DONE_SECONDS = f"{API_GROUP}/done-seconds"
LOST_FROM = f"{API_GROUP}/lost-from"
"""Spokes this workload was placed in and planned again from after they stayed away."""
REMAINING = f"{API_GROUP}/remaining-runtime"
"""Pod annotation on a resumed piece of interruptible work: the run time it still needs
(what is left plus the restart overhead). The expected runtime is kept as the user wrote it;
a workload can read this (downward API) to know how far its checkpoint got."""
HUB_UID_LABEL = f"{API_GROUP}/hub-uid"
"""Label on a spoke copy: the hub object's UID, so a restarted hub adopts the copy it finds."""

# -- node and cluster labels ----------------------------------------------------------------
WATTS_PER_CORE_LABEL = f"{API_GROUP}/watts-per-core"
GRID_ZONE_LABEL = f"{API_GROUP}/grid-zone"
CARBON_AWARE_LABEL = f"{API_GROUP}/carbon-aware"

# -- who reports Events ---------------------------------------------------------------------
CONTROLLER_COMPONENT = f"{API_GROUP}/controller"
HUB_COMPONENT = f"{API_GROUP}/hub"


class State(StrEnum):
    """The values of :data:`STATE`: what carbonshift did with a workload."""

    HELD = "held"
    RELEASED = "released"
    NOT_HELD = "not-held"
