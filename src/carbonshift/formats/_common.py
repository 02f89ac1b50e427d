"""Shared helpers for the contract file formats: loading JSON and translating pydantic errors."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from carbonshift.errors import InputError

_LOG = logging.getLogger("carbonshift.formats")


def describe_validation_error(exc: ValidationError, what: str) -> str:
    """Turn a pydantic error into one line naming the field, the value and the fix."""
    first = exc.errors()[0]
    location = ".".join(str(part) for part in first["loc"]) or "(top level)"
    value = first.get("input")
    shown = json.dumps(value)[:80] if _jsonable(value) else repr(value)[:80]
    more = len(exc.errors()) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{what}: field {location} = {shown}: {first['msg']}{suffix}"


def _jsonable(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def read_json(path: Path, what: str) -> Any:
    """Read a JSON file, raising InputError with line and column on malformed JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {what} file {str(path)!r}: {exc.strerror}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{what} file {str(path)!r} is not valid JSON: {exc.msg} at line {exc.lineno} "
            f"column {exc.colno}"
        ) from exc


def warn_unknown_fields(model: BaseModel, what: str, prefix: str = "") -> None:
    """Log a warning for each field the reader ignored (CONTRACTS.md: ignore with a warning)."""
    extra = model.model_extra or {}
    for key in extra:
        _LOG.warning("%s: ignoring unknown field %s%s", what, prefix, key)
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            warn_unknown_fields(value, what, f"{prefix}{name}.")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, BaseModel):
                    warn_unknown_fields(item, what, f"{prefix}{name}[{index}].")
