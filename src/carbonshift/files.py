"""The one way carbonshift opens a file a user named: a regular file of bounded size.

Every reader of a user-given path (instance, plan, scenario, sweep, carbon CSV, traces,
controller and hub configuration, region tables) goes through :func:`open_input`,
:func:`read_input_bytes` or :func:`read_input_text`. A FIFO, a device (``/dev/zero``), a
directory or a file above :data:`MAX_INPUT_BYTES` is refused with an :class:`InputError`
naming the path and the fix, before anything is read: a FIFO would block the reader forever
and ``/dev/zero`` would fill the memory (docs/formats.md, "Limits").
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, BinaryIO

from carbonshift.errors import InputError

__all__ = [
    "MAX_ARCHIVE_MEMBERS",
    "MAX_DECOMPRESSED_BYTES",
    "MAX_INPUT_BYTES",
    "MAX_INPUT_TEXT",
    "DecompressedTooLargeError",
    "open_decompressed",
    "open_input",
    "read_input_bytes",
    "read_input_text",
    "shown_path",
]

#: the largest input file carbonshift reads, in bytes (512 MiB)
MAX_INPUT_BYTES = 512 * 1024 * 1024
#: :data:`MAX_INPUT_BYTES` as said in messages and docs
MAX_INPUT_TEXT = "512 MiB"
#: the most bytes a ``.gz`` or ``.zip`` input may expand to (512 MiB): deflate reaches about
#: 1000:1, so a 1 MiB "zip bomb" could otherwise fill about 1 GiB of memory, a 512 MiB one 500 GiB
MAX_DECOMPRESSED_BYTES = 512 * 1024 * 1024
#: the most entries a ``.zip`` input may list (it is read for one data file)
MAX_ARCHIVE_MEMBERS = 1000

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


class DecompressedTooLargeError(InputError):
    """A compressed input expands past :data:`MAX_DECOMPRESSED_BYTES` (a "zip bomb")."""


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / (1024 * 1024):g} MiB"


class _Bounded(io.RawIOBase):
    """A decompressing stream that raises once more than ``limit`` bytes came out of it."""

    def __init__(self, inner: IO[bytes], path: str, limit: int) -> None:
        super().__init__()
        self._inner = inner
        self._path = path
        self._limit = limit
        self._count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        # ask for at most one byte past the limit: a bomb never gets to fill a large buffer
        room = self._limit + 1 - self._count
        view = memoryview(buffer).cast("B")[: max(room, 0)]
        try:
            got = self._inner.readinto(view)  # type: ignore[attr-defined]
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise InputError(
                f"compressed file {self._path!r} cannot be read ({exc}); check that it is a "
                "complete .gz or .zip file"
            ) from None
        self._count += got
        if self._count > self._limit:
            raise DecompressedTooLargeError(
                f"compressed file {self._path!r} expands to more than {_mib(self._limit)}, the "
                "limit for a decompressed input (a zip bomb?); decompress it yourself and give "
                "a smaller file, or cut it to the span you need"
            )
        return int(got)


def _zip_member(archive: zipfile.ZipFile, path: Path, limit: int) -> zipfile.ZipInfo:
    """The one data file of ``archive``: checked for count, declared size, nesting, password."""
    shown = shown_path(path)
    infos = archive.infolist()
    if len(infos) > MAX_ARCHIVE_MEMBERS:
        raise InputError(
            f"zip file {shown!r} lists {len(infos)} entries, above the limit of "
            f"{MAX_ARCHIVE_MEMBERS}; give a zip holding one data file"
        )
    members = [info for info in infos if not info.is_dir()]
    wanted = path.name[: -len(".zip")]
    chosen = [info for info in members if info.filename == wanted]
    if not chosen and len(members) == 1:
        chosen = members
    if not chosen:
        names = [info.filename for info in members][:20]
        raise InputError(
            f"zip file {shown!r} holds {names}; it must hold exactly one file or one named "
            f"{wanted!r}"
        )
    info = chosen[0]
    if info.file_size > limit:
        raise DecompressedTooLargeError(
            f"zip file {shown!r} member {info.filename!r} declares {_mib(info.file_size)} "
            f"uncompressed, above the limit of {_mib(limit)} for a decompressed input; unzip it "
            "and give a smaller file"
        )
    if info.filename.lower().endswith((".zip", ".gz")):
        raise InputError(
            f"zip file {shown!r} member {info.filename!r} is itself compressed; nested archives "
            "are not read: unpack the inner file and give it directly"
        )
    if info.flag_bits & 0x1:
        raise InputError(
            f"zip file {shown!r} member {info.filename!r} is encrypted; give an unencrypted zip"
        )
    return info


@contextmanager
def open_decompressed(
    path: str | os.PathLike[str], what: str, *, max_bytes: int | None = None
) -> Iterator[BinaryIO]:
    """Open a plain, ``.gz`` or ``.zip`` input (by its name) as one stream of its content.

    The file itself is bounded as in :func:`open_input`; what a ``.gz`` or ``.zip`` expands to
    is counted as it is read and refused past ``max_bytes`` (default
    :data:`MAX_DECOMPRESSED_BYTES`) with a :class:`DecompressedTooLargeError`. A ``.zip`` must
    hold one data file (or one named like the zip without ``.zip``), not another archive.
    """
    file = Path(path)
    limit = MAX_DECOMPRESSED_BYTES if max_bytes is None else max_bytes
    name = file.name.lower()
    shown = shown_path(file)
    with ExitStack() as stack:
        raw_file = stack.enter_context(open_input(file, what))
        if not name.endswith((".gz", ".zip")):
            yield raw_file
            return
        try:
            if name.endswith(".gz"):
                inner: IO[bytes] = stack.enter_context(gzip.GzipFile(fileobj=raw_file))  # type: ignore[arg-type]
            else:
                archive = stack.enter_context(zipfile.ZipFile(raw_file))
                inner = stack.enter_context(archive.open(_zip_member(archive, file, limit)))
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError) as exc:
            raise InputError(
                f"{what} file {shown!r} cannot be read ({exc}); check that it is a complete "
                ".gz or .zip file"
            ) from None
        with io.BufferedReader(_Bounded(inner, shown, limit)) as bounded:
            yield bounded
