"""What a real API server checks in a CRD's own ``openAPIV3Schema`` when the CRD is created
or updated (``apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go``
``ValidateCustomResourceDefinitionOpenAPISchema``, ``validateMapListKeysMapSet`` and
``specStandardValidatorV3``), with its field paths and messages:

- every node with ``properties`` or below one names a ``type`` (structural schema), unless
  it is ``x-kubernetes-int-or-string`` or ``x-kubernetes-preserve-unknown-fields``:
  ``...properties[x].type: Required value: must not be empty for specified object fields``;
- ``type`` is one of array, boolean, integer, number, object, string; ``type: null`` is
  forbidden; ``$ref``, ``id``, ``definitions``, ``dependencies``, ``patternProperties``,
  ``additionalItems`` are not supported;
- ``x-kubernetes-list-type: map`` needs non-empty ``x-kubernetes-list-map-keys``, an ``items``
  schema of type object, keys that are scalar properties of the items, no duplicates, and
  each key **required or with a default** and not nullable; set and map items are not
  nullable.

Paths follow the real ones: ``spec.versions[0].schema.openAPIV3Schema.properties[spec]
.properties[slots].items.properties[name].default``.
"""

from __future__ import annotations

from typing import Any

from fakekube._errors import FieldError, forbidden, invalid, required, unsupported

__all__ = ["validate_crd_schemas"]

Obj = dict[str, Any]

_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_UNSUPPORTED = (
    ("$ref", "$ref is not supported"),
    ("id", "id is not supported"),
    ("definitions", "definitions is not supported"),
    ("dependencies", "dependencies is not supported"),
    ("patternProperties", "patternProperties is not supported"),
    ("additionalItems", "additionalItems is not supported"),
)


def _go_strings(values: Any) -> str:
    items = ", ".join(f'"{v}"' for v in values or [])
    return f"[]string{{{items}}}"


def validate_crd_schemas(crd: Obj) -> list[FieldError]:
    """The schema errors of every version of ``crd`` (and of ``spec.validation``)."""
    spec = crd.get("spec") or {}
    errs: list[FieldError] = []
    for i, version in enumerate(spec.get("versions") or []):
        if not isinstance(version, dict):
            continue
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if isinstance(schema, dict):
            _node(schema, f"spec.versions[{i}].schema.openAPIV3Schema", errs, root=True)
    top = (spec.get("validation") or {}).get("openAPIV3Schema")
    if isinstance(top, dict):
        _node(top, "spec.validation.openAPIV3Schema", errs, root=True)
    return errs


def _node(schema: Obj, path: str, errs: list[FieldError], *, root: bool = False) -> None:
    kind = schema.get("type")
    if kind == "null":
        errs.append(
            forbidden(f"{path}.type", "type cannot be set to null, use nullable as an alternative")
        )
    elif isinstance(kind, str) and kind and kind not in _TYPES:
        errs.append(unsupported(f"{path}.type", kind, _TYPES))
    elif not kind and not root and not _typeless_allowed(schema):
        errs.append(required(f"{path}.type", "must not be empty for specified object fields"))
    for key, why in _UNSUPPORTED:
        if key in schema and schema[key] not in (None, "", {}, []):
            errs.append(forbidden(f"{path}.{key}", why))
    list_type = schema.get("x-kubernetes-list-type")
    if list_type in ("map", "set"):
        _list_rules(schema, path, str(list_type), errs)
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict):
            _node(sub, f"{path}.properties[{name}]", errs)
    items = schema.get("items")
    if isinstance(items, dict):
        _node(items, f"{path}.items", errs)
    elif isinstance(items, list):
        errs.append(forbidden(f"{path}.items", "items must be a schema object and not an array"))
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        _node(extra, f"{path}.additionalProperties", errs)


def _typeless_allowed(schema: Obj) -> bool:
    return bool(
        schema.get("x-kubernetes-int-or-string")
        or schema.get("x-kubernetes-preserve-unknown-fields")
    )


def _list_rules(schema: Obj, path: str, list_type: str, errs: list[FieldError]) -> None:
    items = schema.get("items")
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if list_type == "map":
        if not keys:
            errs.append(
                required(
                    f"{path}.x-kubernetes-list-map-keys",
                    "must not be empty if x-kubernetes-list-type is map",
                )
            )
        if not isinstance(items, dict):
            errs.append(
                required(f"{path}.items", "must have a schema if x-kubernetes-list-type is map")
            )
            return
        if items.get("type") != "object":
            errs.append(
                invalid(
                    f"{path}.items.type",
                    items.get("type", ""),
                    "must be object if parent array's x-kubernetes-list-type is map",
                )
            )
        else:
            props = items.get("properties") or {}
            seen: set[str] = set()
            for key in keys:
                if key in props:
                    if (props[key] or {}).get("type") in ("array", "object"):
                        errs.append(
                            invalid(
                                f"{path}.items.properties[{key}].type",
                                items.get("type"),
                                "must be a scalar type if parent array's x-kubernetes-list-type "
                                "is map",
                            )
                        )
                else:
                    errs.append(
                        FieldError(
                            f"{path}.x-kubernetes-list-map-keys",
                            "Invalid value",
                            "entries must all be names of item properties",
                            shown=_go_strings(keys),
                        )
                    )
                if key in seen:
                    errs.append(
                        FieldError(
                            f"{path}.x-kubernetes-list-map-keys",
                            "Invalid value",
                            "must not contain duplicate entries",
                            shown=_go_strings(keys),
                        )
                    )
                seen.add(key)
    if not isinstance(items, dict):
        return
    # validateMapListKeysMapSet
    if items.get("nullable"):
        errs.append(
            forbidden(
                f"{path}.items.nullable",
                f"cannot be nullable when x-kubernetes-list-type is {list_type}",
            )
        )
    if list_type != "map":
        return
    props = items.get("properties") or {}
    needed = set(items.get("required") or [])
    for key in keys:
        prop = props.get(key)
        if not isinstance(prop, dict):
            continue
        if key not in needed and "default" not in prop:
            errs.append(
                required(
                    f"{path}.items.properties[{key}].default",
                    "this property is in x-kubernetes-list-map-keys, so it must have a default "
                    "or be a required property",
                )
            )
        if prop.get("nullable"):
            errs.append(
                forbidden(
                    f"{path}.items.properties[{key}].nullable",
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                )
            )
