"""Structural-schema handling of custom resources: pruning, defaulting, validation.

What a real API server does with the ``openAPIV3Schema`` of a CRD version, in its order
(``apiextensions-apiserver/pkg/apiserver/customresource_handler.go``, the unstructured
decoder), and what this module mirrors:

1. **prune** unknown fields (``pkg/apiserver/schema/pruning/algorithm.go``): a key of an
   object that is neither in ``properties`` nor covered by ``additionalProperties`` is
   dropped, unless the node has ``x-kubernetes-preserve-unknown-fields: true``. At the root
   ``apiVersion``, ``kind`` and ``metadata`` are kept (metadata has its own rules);
2. drop **non-nullable nulls without a default**
   (``pkg/apiserver/schema/defaulting/prunenulls.go``
   ``PruneNonNullableNullsWithoutDefaults``): a ``null`` object field whose schema is not
   ``nullable`` and has no ``default`` disappears, as if it had not been sent;
3. apply **defaults** top-down (``pkg/apiserver/schema/defaulting/algorithm.go``): a
   missing field, or a ``null`` one that is not nullable, gets its ``default``, then the
   defaults inside it;
4. **validate** (``pkg/apiserver/validation/validation.go``
   ``kubeOpenAPIResultToFieldErrors`` over kube-openapi's validators): ``type``
   (``object``, ``array``, ``string``, ``integer``, ``number``, ``boolean``),
   ``nullable``, ``required``, ``enum``, ``maxLength``/``minLength``,
   ``maxItems``/``minItems``, ``minimum``/``maximum`` (and their ``exclusive*``),
   ``pattern``, ``format: date-time``, ``items``, ``properties``, ``additionalProperties``,
   ``x-kubernetes-int-or-string``. On update, a subtree equal to the old object's is not
   checked again (CRD validation ratcheting, beta and on by default since 1.30).

The error shapes are kube-openapi's (``pkg/validation/errors/schema.go``), wrapped as
``kubeOpenAPIResultToFieldErrors`` wraps them, e.g.
``spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer:
"string"``, ``status.admissionChecks[0].message: Required value``,
``spec.mode: Unsupported value: "x": supported values: "a", "b"``,
``spec.name: Too long: may not be more than 5 bytes`` (1.32's ``field.TooLong``, which
``TooLongMaxLength`` became in kubernetes PR #128553), ``spec.items: Too many: 3: must have
at most 2 items``.

5. the CEL rules (``x-kubernetes-validations``, :mod:`fakekube.cel`), unless a value had the
   wrong type.

Not done: ``x-kubernetes-list-type`` uniqueness
(``set``/``map`` duplicates are not refused), formats other than ``date-time``,
``uniqueItems``, ``multipleOf``, ``maxProperties``/``minProperties``,
``allOf``/``anyOf``/``oneOf``/``not``, ``x-kubernetes-embedded-resource`` metadata checks.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from fakekube import cel
from fakekube._errors import FieldError, invalid, required, unsupported

__all__ = ["find_schema", "prepare", "validate"]

Obj = dict[str, Any]

_ROOT_KEEP = ("apiVersion", "kind", "metadata")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})$")


def find_schema(crd: Obj, version: str) -> Obj | None:
    """The ``openAPIV3Schema`` of ``version`` in ``crd`` (None when it has none)."""
    spec = crd.get("spec") or {}
    for entry in spec.get("versions") or []:
        if entry.get("name") == version:
            schema = (entry.get("schema") or {}).get("openAPIV3Schema")
            return schema if isinstance(schema, dict) else None
    top = (spec.get("validation") or {}).get("openAPIV3Schema")
    return top if isinstance(top, dict) else None


# -- pruning and defaulting -----------------------------------------------------------------


def _preserves(schema: Obj) -> bool:
    return bool(schema.get("x-kubernetes-preserve-unknown-fields"))


def _field_schema(schema: Obj, key: str) -> Obj | None:
    """The schema of ``key`` in an object node, or None if the key is unknown there."""
    props = schema.get("properties") or {}
    if key in props:
        sub = props[key]
        return sub if isinstance(sub, dict) else {}
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        return extra
    if extra is True:
        return {"x-kubernetes-preserve-unknown-fields": True}
    return None


def _prune(value: Any, schema: Obj, *, root: bool = False) -> None:
    if isinstance(value, dict):
        for key in list(value):
            if root and key in _ROOT_KEEP:
                continue
            sub = _field_schema(schema, key)
            if sub is None:
                if not _preserves(schema):
                    del value[key]
                continue
            if value[key] is None and not sub.get("nullable") and "default" not in sub:
                del value[key]
                continue
            _prune(value[key], sub)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                _prune(item, items)


def _default(value: Any, schema: Obj, *, root: bool = False) -> None:
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if not isinstance(sub, dict) or (root and key in _ROOT_KEEP):
                continue
            if "default" in sub and (
                key not in value or (value[key] is None and not sub.get("nullable"))
            ):
                value[key] = copy.deepcopy(sub["default"])
        for key, item in value.items():
            if root and key in _ROOT_KEEP:
                continue
            sub = _field_schema(schema, key)
            if sub is not None:
                _default(item, sub)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                if item is None and "default" in items and not items.get("nullable"):
                    value[i] = copy.deepcopy(items["default"])
                _default(value[i], items)


def prepare(obj: Obj, schema: Obj) -> None:
    """Prune unknown fields and non-nullable nulls, then apply defaults, in place."""
    _prune(obj, schema, root=True)
    _default(obj, schema, root=True)


# -- validation -----------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _is_type(value: Any, wanted: str) -> bool:
    if wanted == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if wanted == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if wanted == "boolean":
        return isinstance(value, bool)
    if wanted == "string":
        return isinstance(value, str)
    if wanted == "array":
        return isinstance(value, list)
    if wanted == "object":
        return isinstance(value, dict)
    return True


def _go_number(number: Any) -> str:
    """A float64 bound as Go's ``%v`` prints it (``0``, ``1.5``, ``1e+21``)."""
    value = float(number)
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def _type_error(path: str, shown: str, wanted: str) -> FieldError:
    """kube-openapi ``InvalidType``, wrapped as ``field.TypeInvalid``."""
    return FieldError(
        path,
        "Invalid value",
        f'{path} in body must be of type {wanted}: "{shown}"',
        shown,
        reason="FieldValueTypeInvalid",
    )


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def validate(obj: Obj, schema: Obj, old: Obj | None = None) -> list[FieldError]:
    """Schema errors of ``obj``; subtrees equal to ``old``'s are skipped (ratcheting)."""
    errs: list[FieldError] = []
    root = {k: v for k, v in obj.items() if k not in _ROOT_KEEP}
    old_root = None if old is None else {k: v for k, v in old.items() if k not in _ROOT_KEEP}
    root_schema = {
        **schema,
        "required": [r for r in schema.get("required") or [] if r not in _ROOT_KEEP],
    }
    _check(root, root_schema, "", old_root, old is not None, errs)
    # The CEL rules run unless a value has the wrong type (``hasBlockingErr``).
    if not any(e.reason == "FieldValueTypeInvalid" for e in errs):
        errs.extend(cel.validate(obj, schema, old))
    return errs


def _check(
    value: Any, schema: Obj, path: str, old: Any, has_old: bool, errs: list[FieldError]
) -> None:
    if has_old and value == old:
        return
    if value is None:
        if schema.get("nullable"):
            return
        wanted = _wanted_type(schema)
        if wanted:
            errs.append(_type_error(path, "null", wanted))
        return
    wanted = _wanted_type(schema)
    if schema.get("x-kubernetes-int-or-string"):
        if not (_is_type(value, "integer") or isinstance(value, str)):
            errs.append(_type_error(path, _type_name(value), "integer,string"))
            return
    elif wanted and not _is_type(value, wanted):
        errs.append(_type_error(path, _type_name(value), wanted))
        return
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        allowed = tuple(e if isinstance(e, str) else _json_text(e) for e in schema["enum"])
        errs.append(unsupported(path, value, allowed))
    if isinstance(value, str):
        _check_string(value, schema, path, errs)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(value, schema, path, errs)
    elif isinstance(value, list):
        _check_array(value, schema, path, old if isinstance(old, list) else None, has_old, errs)
    elif isinstance(value, dict):
        _check_object(value, schema, path, old if isinstance(old, dict) else None, has_old, errs)


def _wanted_type(schema: Obj) -> str:
    wanted = schema.get("type")
    return wanted if isinstance(wanted, str) else ""


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))


def _check_string(value: str, schema: Obj, path: str, errs: list[FieldError]) -> None:
    max_len, min_len = schema.get("maxLength"), schema.get("minLength")
    if isinstance(max_len, int) and len(value) > max_len:
        unit = "byte" if max_len == 1 else "bytes"
        errs.append(FieldError(path, "Too long", f"may not be more than {max_len} {unit}"))
    if isinstance(min_len, int) and len(value) < min_len:
        errs.append(invalid(path, value, f"{path} in body should be at least {min_len} chars long"))
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            matched = re.search(pattern, value) is not None
        except re.error:
            matched = True
        if not matched:
            errs.append(invalid(path, value, f"{path} in body should match '{pattern}'"))
    if schema.get("format") == "date-time" and not _DATE_TIME.match(value):
        errs.append(
            FieldError(
                path,
                "Invalid value",
                f'{path} in body must be of type date-time: "{value}"',
                value,
                reason="FieldValueTypeInvalid",
            )
        )


def _check_number(value: float, schema: Obj, path: str, errs: list[FieldError]) -> None:
    maximum, minimum = schema.get("maximum"), schema.get("minimum")
    if isinstance(maximum, int | float):
        if schema.get("exclusiveMaximum") and value >= maximum:
            errs.append(
                invalid(path, value, f"{path} in body should be less than {_go_number(maximum)}")
            )
        elif value > maximum:
            errs.append(
                invalid(
                    path,
                    value,
                    f"{path} in body should be less than or equal to {_go_number(maximum)}",
                )
            )
    if isinstance(minimum, int | float):
        if schema.get("exclusiveMinimum") and value <= minimum:
            errs.append(
                invalid(path, value, f"{path} in body should be greater than {_go_number(minimum)}")
            )
        elif value < minimum:
            errs.append(
                invalid(
                    path,
                    value,
                    f"{path} in body should be greater than or equal to {_go_number(minimum)}",
                )
            )


def _check_array(
    value: list[Any],
    schema: Obj,
    path: str,
    old: list[Any] | None,
    has_old: bool,
    errs: list[FieldError],
) -> None:
    max_items, min_items = schema.get("maxItems"), schema.get("minItems")
    if isinstance(max_items, int) and len(value) > max_items:
        errs.append(
            FieldError(path, "Too many", f"must have at most {max_items} items", len(value))
        )
    if isinstance(min_items, int) and len(value) < min_items:
        errs.append(
            invalid(path, len(value), f"{path} in body should have at least {min_items} items")
        )
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            # Ratcheting compares list items by position only for atomic lists; an item
            # equal to the one at the same index of the old list is not checked again.
            old_item = old[i] if old is not None and i < len(old) else None
            has_old_item = old is not None and i < len(old)
            _check(item, items, f"{path}[{i}]", old_item, has_old and has_old_item, errs)


def _check_object(
    value: Obj,
    schema: Obj,
    path: str,
    old: Obj | None,
    has_old: bool,
    errs: list[FieldError],
) -> None:
    for key in schema.get("required") or []:
        if key not in value:
            errs.append(required(_join(path, key)))
    for key, item in value.items():
        sub = _field_schema(schema, key)
        if sub is None:
            continue
        has_old_item = old is not None and key in old
        _check(
            item,
            sub,
            _join(path, key),
            old.get(key) if old is not None else None,
            has_old and has_old_item,
            errs,
        )
