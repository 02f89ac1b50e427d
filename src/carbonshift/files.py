"""The one way carbonshift opens a file a user named: a regular file of bounded size.

Every reader of a user-given path (instance, plan, scenario, sweep, carbon CSV, traces,
controller and hub configuration, region tables) goes through :func:`open_input`,
:func:`read_input_bytes` or :func:`read_input_text`. A FIFO, a device (``/dev/zero``), a
directory or a file above :data:`MAX_INPUT_BYTES` is refused with an :class:`InputError`
naming the path and the fix, before anything is read: a FIFO would block the reader forever
and ``/dev/zero`` would fill the memory (docs/formats.md, "Limits").
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from carbonshift.errors import InputError

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_INPUT_TEXT",
    "open_input",
    "read_input_bytes",
    "read_input_text",
    "shown_path",
]

#: the largest input file carbonshift reads, in bytes (512 MiB)
MAX_INPUT_BYTES = 512 * 1024 * 1024
#: :data:`MAX_INPUT_BYTES` as said in messages and docs
MAX_INPUT_TEXT = "512 MiB"

# opening a FIFO for reading blocks until a writer comes; O_NONBLOCK returns at once so that
# fstat can refuse it (it changes nothing for a regular file)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def shown_path(path: str | os.PathLike[str]) -> str:
    """``path`` for a message: at most 200 characters."""
    text = os.fspath(path)
    return text if len(text) <= 200 else text[:197] + "..."


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _open_checked(path: str | os.PathLike[str], what: str, max_bytes: int) -> int:
    shown = shown_path(path)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise InputError(
            f"cannot read {what} file {shown!r}: it does not exist; check the path"
        ) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InputError(f"cannot read {what} file {shown!r}: {reason}; check the path") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(
                f"{what} file {shown!r} is {_kind(info.st_mode)}, not a regular file; give a "
                f"regular file of at most {MAX_INPUT_TEXT} (copy a stream to a file first)"
            )
        if info.st_size > max_bytes:
            raise InputError(
                f"{what} file {shown!r} is {info.st_size} bytes, above the limit of "
                f"{_limit(max_bytes)} for an input file; give a smaller file (split it or "
                "cut it to the span you need)"
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _limit(max_bytes: int) -> str:
    return MAX_INPUT_TEXT if max_bytes == MAX_INPUT_BYTES else f"{max_bytes} bytes"


@contextmanager
def open_input(
    path: str | os.PathLike[str], what: str, *, max_bytes: int = MAX_INPUT_BYTES
) -> Iterator[BinaryIO]:
    """Open ``path`` for binary reading once it is known to be a regular file of at most
    ``max_bytes`` bytes; ``what`` names the file in messages ("trace", "carbon CSV")."""
    fd = _open_checked(path, what, max_bytes)
    with os.fdopen(fd, "rb") as handle:
        yield handle


def read_input_bytes(
    path: str | os.PathLike[str], what: str, *, max_bytes: int = MAX_INPUT_BYTES
) -> bytes:
    """The whole content of ``path`` (a regular file of at most ``max_bytes`` bytes)."""
    with open_input(path, what, max_bytes=max_bytes) as handle:
        try:
            raw = handle.read(max_bytes + 1)
        except OSError as exc:
            raise InputError(
                f"cannot read {what} file {shown_path(path)!r}: {exc.strerror or exc}"
            ) from None
    if len(raw) > max_bytes:  # a file that grew after the check, or one that lies about its size
        raise InputError(
            f"{what} file {shown_path(path)!r} is above the limit of {_limit(max_bytes)} for an "
            "input file; give a smaller file"
        )
    return raw


def read_input_text(
    path: str | os.PathLike[str],
    what: str,
    *,
    encoding: str = "utf-8",
    max_bytes: int = MAX_INPUT_BYTES,
) -> str:
    """The content of ``path`` decoded (``utf-8`` or ``utf-8-sig``); bytes that are not UTF-8
    are an :class:`InputError` naming the offset."""
    raw = read_input_bytes(path, what, max_bytes=max_bytes)
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{what} file {shown_path(path)!r} is not UTF-8 text (byte {exc.start} is "
            f"{raw[exc.start]:#04x}); save it as UTF-8"
        ) from None
