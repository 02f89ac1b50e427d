"""``--param KEY=VALUE`` options, read the same way by every verb that takes them."""

from __future__ import annotations

from carbonshift.errors import InputError

__all__ = ["parse_param_items"]


def parse_param_items(items: list[str], *, example: str = "omega1=0.5") -> dict[str, str]:
    """``["k=v", ...]`` as a dict; the values stay text (the policy's ParamSpecs type them)."""
    params: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(
                f"--param {item!r} is not KEY=VALUE; write it like {example} "
                "(carbonshift plan --list-policies shows each policy's parameters)"
            )
        params[key.strip()] = value.strip()
    return params
