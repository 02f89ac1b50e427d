"""The three patch formats of the API server, and the merge used for server-side apply.

- JSON patch (RFC 6902, ``application/json-patch+json``),
- JSON merge patch (RFC 7386, ``application/merge-patch+json``),
- strategic merge patch (``application/strategic-merge-patch+json``) for built-in kinds, with
  the merge keys of the fields carbonshift touches (containers, env, volumes, ports,
  schedulingGates, conditions, ownerReferences, finalizers) and the ``$patch`` directives
  ``delete``, ``replace`` and ``merge``, and the real element order of merged lists (new
  items first, see ``_normalize_order``; ``$setElementOrder`` honoured); ``$retainKeys`` is
  accepted and ignored. Lists without a merge key are replaced, as for ``+listType=atomic`` fields.
"""

from __future__ import annotations

import copy
from typing import Any

from fakekube._errors import ApiError

__all__ = ["apply_merge", "json_patch", "merge_patch", "strategic_merge_patch"]

# Field name -> merge key for lists of objects (patchMergeKey in the Go types).
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "resourceClaims": "name",
    "topologySpreadConstraints": "topologyKey",
}
# Lists of scalars merged as sets (patchStrategy=merge).
MERGE_SCALAR_LISTS = frozenset({"finalizers"})


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError.patch_rejected(f"JSON pointer {path!r} must start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _container(doc: Any, parts: list[str], path: str) -> Any:
    node = doc
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise ApiError.patch_rejected(f"doc is missing path: {path}: missing value")
    return node


def _get(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    return _container(doc, parts, path)


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        raise ApiError.patch_rejected("cannot remove the whole document")
    parent = _container(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise ApiError.patch_rejected(f"unable to remove nonexistent key: {last}: missing value")


def _add(doc: Any, path: str, value: Any, *, replace: bool = False) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent = _container(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise ApiError.patch_rejected(
                f"replace operation does not apply: doc is missing key: {path}: missing value"
            )
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(last)] = value
            else:
                parent.insert(int(last), value)
        else:
            raise ApiError.patch_rejected(
                f"add operation does not apply: doc is missing path: {path}"
            )
    else:
        raise ApiError.patch_rejected(f"doc is missing path: {path}: missing value")
    return doc


def json_patch(doc: Any, ops: Any) -> Any:
    """Apply an RFC 6902 patch to a copy of ``doc``."""
    if not isinstance(ops, list):
        raise ApiError.bad_request("json patch must be a list of operations")
    out = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise ApiError.bad_request(f"invalid JSON patch operation: {op!r}")
        kind, path = op["op"], op.get("path", "")
        if kind == "add":
            out = _add(out, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(out, path)
        elif kind == "replace":
            out = _add(out, path, copy.deepcopy(op.get("value")), replace=True)
        elif kind == "move":
            value = _remove(out, op.get("from", ""))
            out = _add(out, path, value)
        elif kind == "copy":
            out = _add(out, path, copy.deepcopy(_get(out, op.get("from", ""))))
        elif kind == "test":
            if _get(out, path) != op.get("value"):
                raise ApiError.patch_rejected(f"testing value {path} failed: test failed")
        else:
            raise ApiError.patch_rejected(f"Unexpected kind: {kind}")
    return out


def merge_patch(doc: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _merge_keyed_list(
    field: str, key: str, old: list[Any], patch: list[Any], nulls: bool
) -> list[Any]:
    out = copy.deepcopy(old)
    for item in patch:
        if not isinstance(item, dict):
            raise ApiError.bad_request(f"strategic merge patch: {field} items must be objects")
        directive = item.get("$patch")
        ident = item.get(key)
        index = next(
            (i for i, o in enumerate(out) if isinstance(o, dict) and o.get(key) == ident), None
        )
        if directive == "delete":
            if index is not None:
                out.pop(index)
            continue
        if directive == "replace":
            clean = {k: v for k, v in item.items() if k != "$patch"}
            if index is None:
                out.append(clean)
            else:
                out[index] = clean
            continue
        if index is None:
            out.append(_strategic(None, item, nulls))
        else:
            out[index] = _strategic(out[index], item, nulls)
    return out


def _ident(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else item


def _normalize_order(
    merged: list[Any],
    patch: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    ident: Any,
) -> list[Any]:
    """The element order of a strategic merge (``normalizeElementOrder`` and
    ``mergeSortedSlice`` of apimachinery's ``strategicpatch``): the items the patch names, in
    the patch's order (or its ``$setElementOrder``), interleaved with the items only the live
    list has, in their live order; where the live list does not rank two items (a new one),
    the patch's item comes first, so new items land before the live ones that follow."""
    named = [ident(p) for p in patch if not (isinstance(p, dict) and p.get("$patch") == "delete")]
    if patch_order is not patch:  # a $setElementOrder names every item it orders
        named += [ident(o) for o in patch_order]
    in_patch = [m for m in merged if ident(m) in named]
    server_only = [m for m in merged if ident(m) not in named]
    wanted = [ident(o) for o in patch_order]
    in_patch.sort(key=lambda m: wanted.index(ident(m)) if ident(m) in wanted else len(wanted))
    live = [ident(o) for o in server_order]

    def rank(item: Any) -> int:
        return live.index(ident(item)) if ident(item) in live else -1

    out: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(in_patch):
        if j >= len(in_patch):
            out.append(server_only[i])
            i += 1
        elif i >= len(server_only):
            out.append(in_patch[j])
            j += 1
        else:
            left, right = rank(server_only[i]), rank(in_patch[j])
            if left >= 0 and right >= 0 and left < right:
                out.append(server_only[i])
                i += 1
            else:
                out.append(in_patch[j])
                j += 1
    return out


def _strategic(doc: Any, patch: Any, nulls: bool) -> Any:
    """Merge ``patch`` into ``doc``; ``nulls`` is the strategic merge patch proper (a null
    deletes, lists take the strategic element order), off for server-side apply's merge."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    for name, value in patch.items():
        if name in ("$patch", "$retainKeys") or name.startswith("$setElementOrder/"):
            continue
        if name.startswith("$deleteFromPrimitiveList/"):
            field = name.split("/", 1)[1]
            out[field] = [v for v in out.get(field) or [] if v not in (value or [])]
            continue
        if value is None:
            if nulls:
                out.pop(name, None)
            continue
        if isinstance(value, list):
            if name in MERGE_KEYS or name == "ports":
                key = MERGE_KEYS.get(name) or (
                    "containerPort"
                    if any("containerPort" in v for v in value if isinstance(v, dict))
                    else "port"
                )
                replace = [
                    v
                    for v in value
                    if isinstance(v, dict) and v.get("$patch") == "replace" and len(v) == 1
                ]
                if replace:
                    out[name] = [v for v in value if v not in replace]
                else:
                    original = out.get(name) or []
                    merged_list = _merge_keyed_list(name, key, original, value, nulls)
                    if nulls:
                        order = patch.get(f"$setElementOrder/{name}") or value
                        merged_list = _normalize_order(
                            merged_list, value, order, original, lambda v, k=key: _ident(v, k)
                        )
                    out[name] = merged_list
            elif name in MERGE_SCALAR_LISTS:
                original = list(out.get(name) or [])
                merged = original + [v for v in value if v not in original]
                if nulls:
                    order = patch.get(f"$setElementOrder/{name}") or value
                    merged = _normalize_order(merged, value, order, original, lambda v: v)
                out[name] = merged
            else:
                out[name] = copy.deepcopy(value)
        elif isinstance(value, dict):
            merged_child = _strategic(out.get(name), value, nulls)
            if merged_child is None:
                out.pop(name, None)
            else:
                out[name] = merged_child
        else:
            out[name] = value
    return out


def strategic_merge_patch(doc: Any, patch: Any) -> Any:
    """Strategic merge patch for the fields in :data:`MERGE_KEYS`; other lists replace."""
    if not isinstance(patch, dict):
        raise ApiError.bad_request("strategic merge patch must be a JSON object")
    return _strategic(doc, patch, True)


def apply_merge(live: Any, applied: Any) -> Any:
    """Merge a server-side apply configuration into the live object.

    Without managedFields bookkeeping, fields the applier dropped are not removed: the
    applied configuration is merged in with the same keyed-list rules as a strategic merge.
    """
    return _strategic(live, applied, False)
