"""Hostile values and mutations of valid inputs, as hypothesis strategies."""

from __future__ import annotations

import copy
import json
import math
import os
from pathlib import Path
from typing import Any

from hypothesis import strategies as st


class Huge:
    """An integer literal of ``digits`` nines (Python refuses to print one past 4,300)."""

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"Huge({self.digits})"


class Deep:
    """Arrays nested ``depth`` deep, written into JSON or TOML text as brackets."""

    def __init__(self, depth: int) -> None:
        self.depth = depth

    def __repr__(self) -> str:
        return f"Deep({self.depth})"


SPECIAL: list[Any] = [
    True,
    False,
    None,
    "3",
    "",
    "x" * 300,
    "../../etc/passwd",
    [],
    {},
    -1,
    0,
    1,
    4.0,
    4.5,
    0.5,
    2**31,
    2**63,
    -(2**63) - 1,
    10**30,
    Huge(4400),
    1e308,
    -1e308,
    5e-324,
    1e-12,
    math.inf,
    -math.inf,
    math.nan,
    Deep(40),
    Deep(1000),
    Deep(5000),
]

hostile = st.one_of(
    st.sampled_from(SPECIAL),
    st.integers(),
    st.floats(),
    st.text(max_size=12),
    st.lists(st.integers(-3, 3), max_size=3),
)


def paths_of(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``data`` (dict keys and list indexes)."""
    found = [prefix] if prefix else []
    if isinstance(data, dict):
        for key, value in data.items():
            found += paths_of(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found += paths_of(value, (*prefix, index))
    return found


def mutate(data: Any, path: tuple[Any, ...], value: Any, *, delete: bool = False) -> Any:
    """A copy of ``data`` with ``path`` set to ``value`` (or deleted)."""
    out = copy.deepcopy(data)
    target = out
    for key in path[:-1]:
        target = target[key]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


def to_json(data: Any) -> str:
    """JSON text of ``data``: NaN and Infinity as their literals, Deep as brackets."""
    literals: list[str] = []

    def default(value: Any) -> Any:
        if isinstance(value, Deep):
            literals.append("[" * value.depth + "]" * value.depth)
        elif isinstance(value, Huge):
            literals.append("9" * value.digits)
        else:
            raise TypeError(type(value).__name__)
        return f"__literal_{len(literals) - 1}__"

    text = json.dumps(data, default=default)
    for index, literal in enumerate(literals):
        text = text.replace(f'"__literal_{index}__"', literal)
    return text


def names_of(path: tuple[Any, ...]) -> tuple[str, ...]:
    """Words an error about ``path`` may name: its keys, singular forms too."""
    words = [str(k) for k in path if isinstance(k, str)]
    return tuple(words + [w.rstrip("s") for w in words if len(w) > 3])


def _toml_value(value: Any) -> str:
    if isinstance(value, Deep):
        return "[" * value.depth + "]" * value.depth
    if isinstance(value, Huge):
        return "9" * value.digits
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
        )
    raise TypeError(type(value).__name__)


def to_toml(data: dict[str, Any]) -> str:
    """TOML text of a scenario: tables, arrays of tables, inline tables; None leaves a key out."""
    lines: list[str] = []
    for table, body in data.items():
        bodies = body if isinstance(body, list) else [body]
        header = f"[[{table}]]" if isinstance(body, list) else f"[{table}]"
        for item in bodies:
            lines.append(header)
            if not isinstance(item, dict):
                lines.append(f"value = {_toml_value(item)}")
                continue
            for key, value in item.items():
                if value is not None:
                    lines.append(f"{json.dumps(key)} = {_toml_value(value)}")
            lines.append("")
    return "\n".join(lines) + "\n"


#: what a path given on the command line may name besides a good file (issue 13)
FILE_KINDS = ["fifo", "dev-zero", "directory", "above-limit", "empty", "random-bytes", "missing"]


def make_file(folder: Path, name: str, kind: str, junk: bytes = b"") -> Path:
    """A path in ``folder`` named ``name`` that is a ``kind`` of thing (see FILE_KINDS)."""
    path = folder / name
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "above-limit":
        with path.open("wb") as handle:  # sparse: no disk used
            handle.truncate(512 * 1024 * 1024 + 1)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "random-bytes":
        path.write_bytes(junk)
    return path
