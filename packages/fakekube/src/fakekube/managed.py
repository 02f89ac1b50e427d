"""``metadata.managedFields`` and server-side apply ownership: a simple version of the real one.

Followed: ``k8s.io/apimachinery/pkg/util/managedfields`` (``internal/fieldmanager.go``,
``internal/structuredmerge.go``, ``internal/stripmeta.go``, ``internal/conflict.go``) and
``sigs.k8s.io/structured-merge-diff`` ownership rules, reduced to what a test double needs:

- every write with a manager records an entry ``{manager, operation, apiVersion, time,
  fieldsType: FieldsV1, fieldsV1[, subresource]}``; ``Apply`` entries own exactly the fields
  the applied configuration names; ``Update`` entries gain the fields the write changed
  (taken away from any other manager) and every manager loses fields that no longer exist;
- the manager is the ``fieldManager`` query parameter, else the User-Agent up to its first
  ``/`` (``prefixFromUserAgent``), cut to 128 characters;
- an apply that changes a field owned by another manager is **409 Conflict** with
  ``FieldManagerConflict`` causes (``Apply failed with 1 conflict: conflict with "m":
  .spec.x``; Update managers print as ``"m" using v1``) unless ``force=true``, which takes
  the field over; an apply that drops a field it applied before removes it, unless another
  manager owns it too;
- ``apiVersion``, ``kind`` and server-set metadata (name, namespace, uid, resourceVersion,
  generation, creationTimestamp, managedFields, ...) are never owned (``stripmeta.go``); on
  kinds with a status subresource, main-resource writes own no ``status`` field and
  ``/status`` writes own only ``status`` fields (``subresource: status``).

Simplified: **every list is atomic** (owned as one field, as ``x-kubernetes-list-type:
atomic``); ``x-kubernetes-list-type: map`` and the merge keys of built-in lists are not
modelled for ownership (the merge itself still uses them); maps and structs are not marked
with ``.``; writes without a manager (the emulated controllers') record no entry.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

__all__ = [
    "Path",
    "apply_conflicts",
    "conflict_message",
    "field_paths",
    "manager_name",
    "owned_by_others",
    "previously_applied",
    "remove_paths",
    "track",
    "unshared",
]

Obj = dict[str, Any]
Path = tuple[str, ...]

_STRIPPED_META = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
)


def manager_name(field_manager: str, user_agent: str) -> str:
    """The explicit ``fieldManager``, else the User-Agent's product (``kubectl``)."""
    if field_manager:
        return field_manager[:128]
    return user_agent.split("/", 1)[0][:128]


def _leaves(value: Any, prefix: Path) -> set[Path]:
    if isinstance(value, dict) and value:
        found: set[Path] = set()
        for key, item in value.items():
            found |= _leaves(item, (*prefix, str(key)))
        return found
    return {prefix}


def field_paths(obj: Obj, *, subresource: str, has_status: bool) -> set[Path]:
    """The fields ``obj`` sets, as leaf paths (lists atomic), minus server-owned ones."""
    paths = set()
    for path in _leaves(obj, ()):
        if not path or path[0] in ("apiVersion", "kind"):
            continue
        if path[0] == "metadata" and (len(path) < 2 or path[1] in _STRIPPED_META):
            continue
        if has_status and (path[0] == "status") != (subresource == "status"):
            continue
        paths.add(path)
    return paths


def _get(obj: Any, path: Path) -> tuple[bool, Any]:
    node = obj
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False, None
        node = node[key]
    return True, node


def remove_paths(obj: Obj, paths: Iterable[Path]) -> None:
    """Delete ``paths`` from ``obj``, and maps they leave empty."""
    for path in sorted(paths, key=len, reverse=True):
        parents = []
        node: Any = obj
        for key in path[:-1]:
            if not isinstance(node, dict) or key not in node:
                break
            parents.append((node, key))
            node = node[key]
        else:
            if isinstance(node, dict):
                node.pop(path[-1], None)
                for parent, key in reversed(parents):
                    if parent[key] == {} and key not in ("metadata", "spec"):
                        del parent[key]
                    else:
                        break


def _fields_v1(paths: Iterable[Path]) -> Obj:
    tree: Obj = {}
    for path in sorted(paths):
        node = tree
        for key in path:
            node = node.setdefault(f"f:{key}", {})
    return tree


def _paths_of(fields: Any, prefix: Path = ()) -> set[Path]:
    if not isinstance(fields, dict) or not fields:
        return {prefix} if prefix else set()
    found: set[Path] = set()
    for key, sub in fields.items():
        if key.startswith("f:"):
            found |= _paths_of(sub, (*prefix, key[2:]))
        elif key == "." and prefix:
            found.add(prefix)
    return found


def _entries(obj: Obj) -> list[Obj]:
    entries = (obj.get("metadata") or {}).get("managedFields") or []
    return [e for e in entries if isinstance(e, dict)]


def _same(entry: Obj, manager: str, operation: str, subresource: str) -> bool:
    return (
        entry.get("manager") == manager
        and entry.get("operation") == operation
        and (entry.get("subresource") or "") == subresource
    )


def _overlaps(a: Path, b: Path) -> bool:
    short = min(len(a), len(b))
    return a[:short] == b[:short]


def apply_conflicts(
    live: Obj, applied: Obj, paths: set[Path], manager: str, subresource: str
) -> dict[str, list[Path]]:
    """Fields the apply would change that other managers own: printed manager -> paths."""
    found: dict[str, list[Path]] = {}
    for entry in _entries(live):
        if _same(entry, manager, "Apply", subresource):
            continue
        owned = _paths_of(entry.get("fieldsV1"))
        for path in sorted(paths):
            if any(_overlaps(path, o) for o in owned) and _get(applied, path) != _get(live, path):
                found.setdefault(_print_manager(entry), []).append(path)
    return found


def _print_manager(entry: Obj) -> str:
    """``printManager`` of ``internal/conflict.go``, given the manager identifier
    (``BuildManagerIdentifier``), which never carries the time: an Update manager prints as
    ``"ed" using v1``, never ``... at <time>``."""
    text = json.dumps(entry.get("manager", ""))
    if entry.get("subresource"):
        text += f' with subresource "{entry["subresource"]}"'
    if entry.get("operation") == "Update":
        text += f" using {entry.get('apiVersion', '')}"
    return text


def conflict_message(conflicts: dict[str, list[Path]]) -> tuple[str, list[Obj]]:
    """``getConflictMessage`` and the causes of ``NewConflictError``."""
    pairs = [(m, p) for m, paths in conflicts.items() for p in paths]
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {m}", "field": _dotted(p)}
        for m, p in pairs
    ]
    if len(pairs) == 1:
        manager, path = pairs[0]
        return f"Apply failed with 1 conflict: conflict with {manager}: {_dotted(path)}", causes
    lines: list[str] = []
    for manager in sorted(conflicts):
        lines.append(f"conflicts with {manager}:")
        lines.extend(f"- {_dotted(p)}" for p in conflicts[manager])
    return f"Apply failed with {len(pairs)} conflicts: " + "\n".join(lines), causes


def _dotted(path: Path) -> str:
    return "".join(f".{key}" for key in path)


def track(
    old: Obj | None,
    new: Obj,
    *,
    manager: str,
    operation: str,
    api_version: str,
    now: str,
    subresource: str,
    has_status: bool,
    applied: set[Path] | None = None,
    forced: Iterable[Path] = (),
) -> None:
    """Set ``new``'s ``metadata.managedFields`` after a write by ``manager``."""
    entries = copy.deepcopy(_entries(old) if old is not None else [])
    live = field_paths(new, subresource="", has_status=False)
    if operation == "Apply":
        mine = set(applied or ())
    else:
        mine = {
            p
            for p in field_paths(new, subresource=subresource, has_status=has_status)
            if old is None or _get(old, p) != _get(new, p)
        }
    taken = set(forced) if operation == "Apply" else mine
    kept: list[Obj] = []
    previous: set[Path] = set()
    for entry in entries:
        owned = _paths_of(entry.get("fieldsV1"))
        if _same(entry, manager, operation, subresource):
            previous = owned if operation == "Update" else set()
            continue
        owned = {p for p in owned if p in live and not any(_overlaps(p, t) for t in taken)}
        if owned:
            entry["fieldsV1"] = _fields_v1(owned)
            kept.append(entry)
    mine = {p for p in mine | previous if p in live}
    if mine or operation == "Apply":
        entry = {
            "manager": manager,
            "operation": operation,
            "apiVersion": api_version,
            "time": now,
            "fieldsType": "FieldsV1",
            "fieldsV1": _fields_v1(mine),
        }
        if subresource:
            entry["subresource"] = subresource
        kept.append(entry)
    if kept:
        new.setdefault("metadata", {})["managedFields"] = kept
    else:
        new.get("metadata", {}).pop("managedFields", None)


def owned_by_others(live: Obj, manager: str, subresource: str) -> set[Path]:
    """Every field some other manager (or this one through Update) owns."""
    owned: set[Path] = set()
    for entry in _entries(live):
        if not _same(entry, manager, "Apply", subresource):
            owned |= _paths_of(entry.get("fieldsV1"))
    return owned


def unshared(paths: set[Path], others: set[Path]) -> set[Path]:
    """The ``paths`` no other manager owns (nor owns a part of)."""
    return {p for p in paths if not any(_overlaps(p, o) for o in others)}


def previously_applied(live: Obj, manager: str, subresource: str) -> set[Path]:
    """The fields ``manager``'s last apply named."""
    for entry in _entries(live):
        if _same(entry, manager, "Apply", subresource):
            return _paths_of(entry.get("fieldsV1"))
    return set()
