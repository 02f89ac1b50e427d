"""What nodes offer, in planning units (cpu cores, memory GiB, gpu devices).

Shared by the one-cluster controller (its capacity and node choice) and the hub (each
spoke's capacity and whether one pod fits a node).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from carbonshift.k8s.intent import parse_quantity, planning_units

__all__ = ["allocatable", "capacity", "fits_a_node", "usable", "usable_allocatables"]

Obj = dict[str, Any]


def usable(node: Obj) -> bool:
    """Whether a node takes new pods: Ready and not cordoned."""
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def allocatable(node: Obj, resources: Iterable[str]) -> dict[str, float]:
    """A node's ``status.allocatable`` of ``resources`` (0 for those it does not list);
    raises InputError for a malformed quantity."""
    offered = (node.get("status") or {}).get("allocatable") or {}
    return {
        r: planning_units(r, parse_quantity(offered[r], what=f"node {r}")) if r in offered else 0.0
        for r in resources
    }


def usable_allocatables(nodes: Iterable[Obj], resources: tuple[str, ...]) -> list[dict[str, float]]:
    """Allocatable of each usable node."""
    return [allocatable(node, resources) for node in nodes if usable(node)]


def capacity(nodes: Iterable[Obj], resources: tuple[str, ...]) -> dict[str, float]:
    """Allocatable of the usable nodes together."""
    each = usable_allocatables(nodes, resources)
    return {r: sum(node[r] for node in each) for r in resources}


def fits_a_node(pod: Mapping[str, float], nodes: Iterable[Mapping[str, float]]) -> bool:
    """Whether one pod asking ``pod`` fits the allocatable of at least one of ``nodes``."""
    return any(all(node.get(r, 0.0) + 1e-9 >= a for r, a in pod.items()) for node in nodes)
