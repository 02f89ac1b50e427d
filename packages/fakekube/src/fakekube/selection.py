"""Label selectors, field selectors, node selection terms and resource quantities.

The string forms follow ``k8s.io/apimachinery/pkg/labels`` (``a=b,c!=d,e in (x,y),!f``) and
``pkg/fields`` (``spec.nodeName=n1,status.phase!=Succeeded``); ``LabelSelector`` objects
(``matchLabels`` / ``matchExpressions``) and ``NodeSelectorTerm`` follow core/v1 and meta/v1.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from fakekube._errors import ApiError

__all__ = [
    "FieldSelector",
    "LabelSelector",
    "label_selector_matches",
    "node_matches_pod",
    "parse_quantity",
]

Obj = dict[str, Any]

_SET_EXPR = re.compile(r"^\s*(!?)\s*([^\s!=,()]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")


def _split_top(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


class LabelSelector:
    """A parsed label selector string; ``matches(labels)``."""

    def __init__(self, text: str | None) -> None:
        self.requirements: list[tuple[str, str, tuple[str, ...]]] = []
        for part in _split_top(text or ""):
            self.requirements.append(self._parse(part))

    @staticmethod
    def _parse(part: str) -> tuple[str, str, tuple[str, ...]]:
        for op in ("!=", "==", "="):
            if op in part and "(" not in part:
                key, _, value = part.partition(op)
                return key.strip(), "!=" if op == "!=" else "=", (value.strip(),)
        match = _SET_EXPR.match(part)
        if match is None:
            raise ApiError.bad_request(
                f"unable to parse requirement: found '{part.strip()}', expected: "
                "'=', '!=', '==', 'in', notin'"
            )
        neg, key, op, values = match.groups()
        if op:
            vals = tuple(v.strip() for v in values.split(",") if v.strip())
            return key, op, vals
        return key, "!" if neg else "exists", ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, op, values in self.requirements:
            have = labels.get(key)
            if op == "=" and have != values[0]:
                return False
            if op == "!=" and have == values[0]:
                return False
            if op == "in" and have not in values:
                return False
            if op == "notin" and have in values:
                return False
            if op == "exists" and have is None:
                return False
            if op == "!" and have is not None:
                return False
        return True


def _pod_fields(obj: Obj) -> dict[str, str]:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    return {
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.schedulerName": spec.get("schedulerName", ""),
        "spec.restartPolicy": spec.get("restartPolicy", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.phase": status.get("phase", ""),
        "status.podIP": status.get("podIP", ""),
        "status.nominatedNodeName": status.get("nominatedNodeName", ""),
    }


def _event_fields(obj: Obj) -> dict[str, str]:
    inv = obj.get("involvedObject", {})
    out = {
        f"involvedObject.{k}": str(inv.get(k, ""))
        for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    }
    out.update({k: str(obj.get(k, "")) for k in ("reason", "type", "reportingComponent")})
    out["source"] = obj.get("source", {}).get("component", "")
    return out


_KIND_FIELDS: dict[str, Callable[[Obj], dict[str, str]]] = {
    "Pod": _pod_fields,
    "Event": _event_fields,
    "Secret": lambda o: {"type": o.get("type", "")},
    "Node": lambda o: {
        "spec.unschedulable": str(o.get("spec", {}).get("unschedulable", False)).lower()
    },
    "Namespace": lambda o: {"status.phase": o.get("status", {}).get("phase", "")},
    "Job": lambda o: {"status.successful": str(o.get("status", {}).get("succeeded", 0))},
}


def object_fields(kind: str, obj: Obj) -> dict[str, str]:
    meta = obj.get("metadata", {})
    fields = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
    }
    extra = _KIND_FIELDS.get(kind)
    if extra is not None:
        fields.update(extra(obj))
    return fields


class FieldSelector:
    """A parsed field selector for one kind; unknown fields are refused as the server does."""

    def __init__(self, text: str | None, kind: str) -> None:
        self.kind = kind
        self.requirements: list[tuple[str, bool, str]] = []
        known = set(object_fields(kind, {}))
        for part in _split_top(text or ""):
            negate = "!=" in part
            key, _, value = part.partition("!=" if negate else ("==" if "==" in part else "="))
            key = key.strip()
            if key not in known:
                raise ApiError.bad_request(f"field label not supported: {key}")
            self.requirements.append((key, negate, value.strip()))

    def matches(self, obj: Obj) -> bool:
        if not self.requirements:
            return True
        fields = object_fields(self.kind, obj)
        for key, negate, value in self.requirements:
            if (fields.get(key, "") == value) == negate:
                return False
        return True


def _expression_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op = expr.get("key", ""), expr.get("operator", "")
    values = list(expr.get("values") or [])
    have = labels.get(key)
    if op == "In":
        return have is not None and have in values
    if op == "NotIn":
        return have is None or have not in values
    if op == "Exists":
        return have is not None
    if op == "DoesNotExist":
        return have is None
    if op in ("Gt", "Lt") and have is not None and values:
        try:
            left, right = int(have), int(values[0])
        except ValueError:
            return False
        return left > right if op == "Gt" else left < right
    return False


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """meta/v1 ``LabelSelector`` object; an empty selector matches everything."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_expression_matches(e, labels) for e in selector.get("matchExpressions") or [])


def _term_matches(term: Mapping[str, Any], node: Obj) -> bool:
    labels = node.get("metadata", {}).get("labels", {}) or {}
    fields = {"metadata.name": node.get("metadata", {}).get("name", "")}
    exprs = term.get("matchExpressions") or []
    field_exprs = term.get("matchFields") or []
    if not exprs and not field_exprs:
        return False  # an empty term matches no objects
    return all(_expression_matches(e, labels) for e in exprs) and all(
        _expression_matches(e, fields) for e in field_exprs
    )


def node_matches_pod(spec: Mapping[str, Any], node: Obj) -> bool:
    """``nodeSelector`` AND any of the required node-affinity terms."""
    labels = node.get("metadata", {}).get("labels", {}) or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    return not (terms is not None and not any(_term_matches(t, node) for t in terms))


def tolerates(tolerations: list[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol.get("effect") != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists":
            if not tol.get("key") or tol.get("key") == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and tol.get("value", "") == taint.get("value", ""):
            return True
    return False


_SUFFIX = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("0.001"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
# k8s.io/apimachinery resource.Quantity: <signedNumber> then a binary SI suffix, a decimal
# exponent ("e3", "E-2") or a decimal SI suffix ("1E" is one exa, not an exponent).
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?))$"
)
# The real server keeps a Quantity in an int64 of its smallest unit; far larger values are
# refused rather than overflowing, as "quantities must match the regular expression" is.
_MAX_QUANTITY = Decimal(2**63 - 1)


def parse_quantity(text: Any) -> Decimal | None:
    """A resource.Quantity (``500m``, ``2``, ``1Gi``, ``1e3``, ``1E``) as a Decimal; None when
    malformed or beyond int64 (never raises)."""
    match = _QUANTITY.match(str(text).strip())
    if match is None:
        return None
    number, exponent, suffix = match.groups()
    digits = (exponent or "").lstrip("+-").lstrip("0")
    if len(digits) > 3 or len(number) > 64:
        return None
    try:
        value = Decimal(number)
        value = value.scaleb(int(exponent)) if exponent is not None else value * _SUFFIX[suffix]
    except ArithmeticError:
        return None
    if abs(value) > _MAX_QUANTITY:
        return None
    return value
