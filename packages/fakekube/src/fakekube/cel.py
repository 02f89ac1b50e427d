"""CEL validation rules of CRDs (``x-kubernetes-validations``), evaluated with cel-python.

What a real API server does with them (``apiextensions-apiserver/pkg/apiserver/schema/cel/
validation.go``), and what this module mirrors:

- every schema node with rules is checked where the object has a value: ``self`` is that
  value (at the root, the whole object);
- a **transition rule** (one that names ``oldSelf``) runs only on an update, and only where
  the node has a correlated old value: object properties by name, map values by key, items
  of ``x-kubernetes-list-type: map`` lists by their keys (never items of atomic or set
  lists); ``optionalOldSelf: true`` is not supported (such rules are skipped);
- on an update, a node equal to its correlated old value is not checked again (validation
  ratcheting, on by default since 1.30);
- a false result is ``field.Invalid(path, <schema type>, message)``: ``spec: Invalid value:
  "object": <message>``; ``fieldPath`` extends the path; ``reason`` ``FieldValueForbidden``,
  ``FieldValueRequired`` or ``FieldValueDuplicate`` changes the error's type; without a
  ``message``, ``messageExpression`` is evaluated, else ``failed rule: <rule>``; the root's
  path prints as ``<nil>``;
- an evaluation error is ``<error> evaluating rule: <message or rule>``
  (``no such key: x evaluating rule: ...``).

Rules that call a function cel-python lacks (the Kubernetes CEL libraries: ``quantity``,
``isQuantity``, ``url``, ``ip``, ``cidr``, ``format``, ``lists``, ``sets``, ...) are skipped;
:data:`SKIPPED` collects them so tests and docs can name them.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import celpy
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from fakekube._errors import FieldError

__all__ = ["SKIPPED", "validate"]

Obj = dict[str, Any]

SKIPPED: set[str] = set()
"""Rule texts skipped because cel-python cannot compile or run a function they call."""

_OLD_SELF = re.compile(r"\boldSelf\b")
_NO_SUCH_KEY = re.compile(r"no such (?:member in mapping|key): '?([^']*)'?")
_UNDECLARED = re.compile(r"undeclared reference to '([^']*)'")
_ENV = celpy.Environment()


class _UnsupportedError(Exception):
    """The rule calls something cel-python does not have."""


@lru_cache(maxsize=4096)
def _program(text: str) -> Any:
    try:
        ast = _ENV.compile(text)
    except CELParseError as exc:
        raise _UnsupportedError(str(exc)) from exc
    return _ENV.program(ast)


def _evaluate(text: str, activation: dict[str, Any]) -> Any:
    """The rule's result, or raises ``_UnsupportedError``, or returns a ``CELEvalError``."""
    program = _program(text)
    try:
        result = program.evaluate({k: json_to_cel(v) for k, v in activation.items()})
    except CELEvalError as exc:
        result = exc
    except Exception as exc:  # cel-python raises plain Python errors on odd inputs
        raise _UnsupportedError(f"{type(exc).__name__}: {exc}") from exc
    if isinstance(result, CELEvalError) and _UNDECLARED.search(str(result.args[0])):
        raise _UnsupportedError(str(result.args[0]))
    return result


def _eval_text(error: Any) -> str:
    text = str(error.args[0]) if getattr(error, "args", None) else str(error)
    key = _NO_SUCH_KEY.search(text)
    if key:
        return f"no such key: {key.group(1)}"
    return text


def _schema_type(schema: Obj) -> str:
    wanted = schema.get("type")
    if isinstance(wanted, str) and wanted:
        return wanted
    if schema.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return "object" if "properties" in schema or "additionalProperties" in schema else ""


def _path_text(path: str) -> str:
    return path or "<nil>"


def _extend(path: str, field_path: str) -> str:
    """``fieldPath`` (``.spec.x``, ``.list[0]``, ``['key']``) appended to ``path``."""
    out = path
    for name, bracket in re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)|(\[[^\]]*\])", field_path):
        if name:
            out = f"{out}.{name}" if out else name
        else:
            inner = bracket[1:-1].strip("'\"")
            out = f"{out}[{inner}]"
    return out


def _message(rule: Obj, activation: dict[str, Any]) -> str:
    message = rule.get("message")
    if isinstance(message, str) and message.strip():
        return message.strip()
    expression = rule.get("messageExpression")
    if isinstance(expression, str) and expression:
        try:
            result = _evaluate(expression, activation)
        except _UnsupportedError:
            result = None
        if isinstance(result, str) and result.strip():
            return str(result).strip()
    return f"failed rule: {str(rule.get('rule', '')).strip()}"


def _rule_text(rule: Obj) -> str:
    message = rule.get("message")
    if isinstance(message, str) and message.strip():
        return message.strip()
    return str(rule.get("rule", "")).strip()


def _check_rules(
    value: Any, schema: Obj, path: str, old: Any, has_old: bool, errs: list[FieldError]
) -> None:
    for rule in schema.get("x-kubernetes-validations") or []:
        if not isinstance(rule, dict) or not isinstance(rule.get("rule"), str):
            continue
        text = rule["rule"]
        transition = bool(_OLD_SELF.search(text))
        if transition and (not has_old or rule.get("optionalOldSelf")):
            continue
        activation = {"self": value}
        if transition:
            activation["oldSelf"] = old
        try:
            result = _evaluate(text, activation)
        except _UnsupportedError:
            SKIPPED.add(text)
            continue
        shown = _schema_type(schema)
        where = _path_text(_extend(path, str(rule.get("fieldPath") or "")))
        if isinstance(result, CELEvalError):
            detail = f"{_eval_text(result)} evaluating rule: {_rule_text(rule)}"
            errs.append(FieldError(_path_text(path), "Invalid value", detail, shown))
            continue
        if bool(result):
            continue
        message = _message(rule, activation)
        reason = rule.get("reason")
        if reason == "FieldValueForbidden":
            errs.append(FieldError(where, "Forbidden", message))
        elif reason == "FieldValueRequired":
            errs.append(FieldError(where, "Required value", message))
        elif reason == "FieldValueDuplicate":
            errs.append(FieldError(where, "Duplicate value", "", shown))
        else:
            errs.append(FieldError(where, "Invalid value", message, shown))


def _child_schema(schema: Obj, key: str) -> Obj | None:
    props = schema.get("properties") or {}
    if key in props and isinstance(props[key], dict):
        return props[key]  # type: ignore[no-any-return]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _item_key(item: Any, keys: list[str]) -> tuple[Any, ...] | None:
    if not isinstance(item, dict):
        return None
    return tuple(repr(item.get(k)) for k in keys)


def _walk(
    value: Any, schema: Obj, path: str, old: Any, has_old: bool, errs: list[FieldError]
) -> None:
    if value is None:
        return
    if has_old and value == old:
        return  # ratcheting: an unchanged node is not checked again
    _check_rules(value, schema, path, old, has_old, errs)
    if isinstance(value, dict):
        for key, item in value.items():
            sub = _child_schema(schema, key)
            if sub is None:
                continue
            old_has = has_old and isinstance(old, dict) and key in old
            child_path = f"{path}.{key}" if path else key
            if "properties" not in schema and isinstance(schema.get("additionalProperties"), dict):
                child_path = f"{path}[{key}]"
            _walk(item, sub, child_path, old.get(key) if old_has else None, old_has, errs)
    elif isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            return
        keys = schema.get("x-kubernetes-list-map-keys") or []
        by_key: dict[tuple[Any, ...], Any] = {}
        if (
            has_old
            and isinstance(old, list)
            and schema.get("x-kubernetes-list-type") == "map"
            and keys
        ):
            for entry in old:
                ident = _item_key(entry, keys)
                if ident is not None:
                    by_key[ident] = entry
        for i, item in enumerate(value):
            ident = _item_key(item, keys) if by_key else None
            correlated = ident is not None and ident in by_key
            _walk(
                item,
                items,
                f"{path}[{i}]",
                by_key.get(ident) if correlated and ident is not None else None,
                correlated,
                errs,
            )


def validate(obj: Obj, schema: Obj, old: Obj | None = None) -> list[FieldError]:
    """The errors of ``obj``'s CEL rules under ``schema`` (``old`` on updates)."""
    errs: list[FieldError] = []
    _walk(obj, schema, "", old, old is not None, errs)
    return errs
