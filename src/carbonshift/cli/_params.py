"""``--param KEY=VALUE`` options, read the same way by every verb that takes them."""

from __future__ import annotations

import tomllib
from typing import Any

from carbonshift.errors import InputError

__all__ = ["parse_grid_items", "parse_param_items"]


def _split(item: str) -> tuple[str, str] | None:
    """``KEY=VALUE`` as (key, value), stripped; None when there is no ``=`` or no key."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        return None
    return key.strip(), value.strip()


def parse_param_items(items: list[str], *, example: str = "omega1=0.5") -> dict[str, str]:
    """``["k=v", ...]`` as a dict; the values stay text (the policy's ParamSpecs type them)."""
    params: dict[str, str] = {}
    for item in items:
        pair = _split(item)
        if pair is None:
            raise InputError(
                f"--param {item!r} is not KEY=VALUE; write it like {example} "
                "(carbonshift plan --list-policies shows each policy's parameters)"
            )
        params[pair[0]] = pair[1]
    return params


def parse_grid_items(items: list[str]) -> dict[str, list[Any]]:
    """``["KEY=V1,V2", ...]`` (``sweep --param``) as a grid: each value read as a TOML value
    (``5`` a whole number, ``0.5`` a number, ``true`` a boolean), else kept as text."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        pair = _split(item)
        if pair is None or not pair[1]:
            raise InputError(
                f"--param {item!r} is not KEY=V1,V2,...; write it like "
                "hold.min_saving_pct=0,5,10 or omega1=0.5,1.0 (a key named hold.* sets the "
                "scenario's [hold] rule)"
            )
        grid[pair[0]] = [_toml_value(v.strip()) for v in pair[1].split(",")]
    return grid


def _toml_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
