"""Shared helpers for the contract file formats: loading JSON, strict numbers, and translating
pydantic errors into one line naming the field.

Numbers are strict (docs/reliability.md): a JSON number, never a boolean or a numeric string;
finite; an integral float such as ``4.0`` is accepted where a whole number is expected; every
amount lies in a documented range so that no product of them overflows, and a positive value
below :data:`MIN_POSITIVE` is refused as too small (a solver cannot tell it from 0).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from carbonshift.errors import InputError
from carbonshift.files import read_input_bytes, shown_path

_LOG = logging.getLogger("carbonshift.formats")
_VALIDATOR_STEP = re.compile(r"^(function-(after|before|wrap|plain)|chain|lax-or-strict|union)\[")

#: deepest nesting of arrays and objects a contract file may have (the contracts need 4)
MAX_DEPTH = 32
#: integer literals with more digits than this are read as (out-of-range) floats, never as
#: Python integers (which refuse more than 4,300 digits with a traceback)
_MAX_INT_DIGITS = 30
#: the smallest positive amount accepted: smaller values are refused as "use another unit"
MIN_POSITIVE = 1e-9


def strict_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a JSON number, not {_kind(value)}")
    if isinstance(value, int):
        if abs(value) > 1e300:
            raise ValueError("is far too large; give a finite number in the documented range")
        return float(value)
    if not math.isfinite(value):
        raise ValueError("must be a finite number, not Infinity or NaN (or a number that large)")
    return value


def whole_number(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a whole number, not {_kind(value)}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("must be a finite whole number (this one is Infinity, NaN or huge)")
        if not value.is_integer():
            raise ValueError(f"must be a whole number, not {value!r}")
        return int(value)
    return value


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string (write the number without quotes)"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def amount_in(unit: str, most: float) -> Callable[[float], float]:
    """A check: a float >= 0 and <= ``most`` (in ``unit``); positive values below
    MIN_POSITIVE refused. Use as ``Annotated[float, BeforeValidator(strict_number),
    AfterValidator(amount_in(...))]``."""

    def check(value: float) -> float:
        if value < 0:
            raise ValueError(f"must be >= 0 {unit}")
        if 0 < value < MIN_POSITIVE:
            raise ValueError(
                f"is positive but below {MIN_POSITIVE:g} {unit}: too small; use a smaller unit "
                f"so that values are 0 or at least {MIN_POSITIVE:g}"
            )
        if value > most:
            raise ValueError(f"is above the limit of {most:g} {unit}; use a larger unit")
        return value

    return check


def whole_in(least: int, most: int, unit: str) -> Callable[[int], int]:
    """A check: an integer in ``[least, most]`` (``unit`` names it). Use after
    ``BeforeValidator(whole_number)``, which reads ``4.0`` as 4."""

    def check(value: int) -> int:
        if not least <= value <= most:
            raise ValueError(f"must be between {least} and {most} {unit}")
        return value

    return check


def strict_bool(value: Any) -> bool:
    """``true`` or ``false`` only (not 1, 0 or "true")."""
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, not {_kind(value)}")
    return value


def check_depth(data: Any, what: str, most: int = MAX_DEPTH) -> None:
    """Refuse arrays and objects nested deeper than ``most`` (without recursion)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > most:
                raise InputError(
                    f"{what}: arrays and objects are nested more than {most} deep; the format "
                    "needs at most 4 levels"
                )
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)


def _parse_int(text: str) -> int | float:
    return int(text) if len(text) <= _MAX_INT_DIGITS else float(text)


def loads_json(raw: bytes | str, what: str) -> Any:
    """Decode UTF-8 JSON; every failure (bytes, syntax, depth, huge numbers) is an InputError."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{what} is not UTF-8 text (byte {exc.start} is {raw[exc.start]:#04x}); save it "
                "as UTF-8"
            ) from None
    try:
        data = json.loads(raw, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise InputError(
            f"{what}: arrays and objects are nested more than {MAX_DEPTH} deep; the format needs "
            "at most 4 levels"
        ) from None
    check_depth(data, what)
    return data


def null_if_undefined(data: Any) -> Any:
    """``data`` with every NaN or infinite float replaced by None (JSON ``null``: undefined)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: null_if_undefined(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [null_if_undefined(value) for value in data]
    return data


def dumps_strict(data: Any, *, indent: int | None = None) -> str:
    """JSON text that any strict parser reads: NaN or Infinity anywhere is a bug, not output."""
    return json.dumps(data, indent=indent, allow_nan=False)


def describe_validation_error(exc: ValidationError, what: str) -> str:
    """Turn a pydantic error into one line naming the field, the value and the fix."""
    first = exc.errors()[0]
    # pydantic names validator steps in loc ("function-after[check(), ...]"): not a field
    parts = [str(part) for part in first["loc"] if not _VALIDATOR_STEP.match(str(part))]
    location = ".".join(parts) or "(top level)"
    value = first.get("input")
    shown = _shown(value)
    more = len(exc.errors()) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    message = str(first["msg"]).removeprefix("Value error, ")
    return " ".join(f"{what}: field {location} = {shown}: {message}{suffix}".split())


def _shown(value: object) -> str:
    if isinstance(value, dict | list):
        return f"<{type(value).__name__} of {len(value)}>"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    text = json.dumps(value) if _jsonable(value) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _jsonable(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def read_json(path: Path, what: str) -> Any:
    """Read a JSON file (a regular file of at most 512 MiB: :mod:`carbonshift.files`),
    raising InputError with line and column on malformed JSON."""
    raw = read_input_bytes(path, what)
    return loads_json(raw, f"{what} file {shown_path(path)!r}")


def warn_unknown_fields(model: BaseModel, what: str, prefix: str = "") -> None:
    """Log a warning for each field the reader ignored (docs/formats.md: ignore with a warning)."""
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
