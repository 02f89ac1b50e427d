"""The fields one field manager owns in an object, read from ``metadata.managedFields``.

A server-side apply replaces everything its manager applied before: a field that manager
owns and the new apply leaves out is deleted (unless another manager owns it too). A writer
that must share a manager with another controller (the Kueue dispatcher writes as
``kueue-admission``, which Kueue itself uses for ``status.admission`` and the conditions)
therefore reads what that manager owns, changes its part and applies the lot: this module
gives the lot. ``fieldsV1`` keys: ``f:<name>`` a map field, ``k:<json>`` a list item by its
keys, ``v:<json>`` a set member, ``.`` the node itself; a leaf (``{}``) owns the whole value.
"""

from __future__ import annotations

import copy
import json
from typing import Any

__all__ = ["owned_fields"]

Obj = dict[str, Any]


def owned_fields(obj: Obj, manager: str, *, operation: str = "Apply", subresource: str = "") -> Obj:
    """The part of ``obj`` that ``manager``'s ``operation`` entry (for ``subresource``) owns."""
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        if (
            entry.get("manager") == manager
            and entry.get("operation") == operation
            and (entry.get("subresource") or "") == subresource
        ):
            picked = _pick(obj, entry.get("fieldsV1") or {})
            return picked if isinstance(picked, dict) else {}
    return {}


def _pick(value: Any, fields: Any) -> Any:
    if not isinstance(fields, dict):
        return copy.deepcopy(value)
    children = {k: v for k, v in fields.items() if k != "."}
    if not children:
        return copy.deepcopy(value)
    if isinstance(value, dict):
        out: Obj = {}
        for key, sub in children.items():
            if key.startswith("f:") and key[2:] in value:
                out[key[2:]] = _pick(value[key[2:]], sub)
        return out
    if isinstance(value, list):
        items: list[Any] = []
        for key, sub in children.items():
            if key.startswith("k:"):
                want = json.loads(key[2:])
                for item in value:
                    if isinstance(item, dict) and all(item.get(k) == v for k, v in want.items()):
                        items.append({**_pick(item, sub), **want})
            elif key.startswith("v:"):
                member = json.loads(key[2:])
                if member in value:
                    items.append(member)
        return items
    return copy.deepcopy(value)
