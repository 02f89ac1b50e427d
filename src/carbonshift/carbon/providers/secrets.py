"""API keys read from environment variables or files, and kept out of logs and errors.

A :class:`Secret` prints as ``Secret('***')``; only :meth:`Secret.reveal` returns the value,
and the HTTP layer scrubs every known secret from any message it raises.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from carbonshift.errors import InputError
from carbonshift.files import read_input_text

__all__ = ["Secret", "read_secret", "scrub"]


class Secret:
    """A credential that never shows itself in ``repr``/``str``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The credential itself: pass it to the wire, nowhere else."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


def read_secret(name: str, env: Mapping[str, str] | None = None) -> Secret | None:
    """The secret in ``$NAME``, or in the file named by ``$NAME_FILE``; ``None`` when neither.

    >>> read_secret("CARBONSHIFT_NOPE", env={}) is None
    True
    """
    environ = os.environ if env is None else env
    value = environ.get(name)
    if value:
        return Secret(value.strip())
    path_text = environ.get(f"{name}_FILE")
    if not path_text:
        return None
    path = Path(path_text)
    # a key is short: 64 KiB is ample, and anything larger is the wrong file
    text = read_input_text(path, f"{name}_FILE key", max_bytes=64 * 1024).strip()
    if not text:
        raise InputError(f"{name}_FILE names {str(path)!r}, which is empty; put the key in it")
    return Secret(text)


def scrub(text: str, secrets: Iterable[Secret | None]) -> str:
    """``text`` with every secret's value replaced by ``***``."""
    for secret in secrets:
        if secret is not None and len(secret.reveal()) >= 4:
            text = text.replace(secret.reveal(), "***")
    return text
