"""Shared plumbing of the trace readers: opening (plain, .gz, .zip), bad-row bookkeeping."""

from __future__ import annotations

import difflib
import io
import logging
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from carbonshift.errors import InputError
from carbonshift.files import open_decompressed
from carbonshift.workloads.model import ReadReport, RowProblem

__all__ = ["RowSink", "did_you_mean", "open_text", "parse_finite"]

_log = logging.getLogger("carbonshift.workloads")
_MAX_PROBLEMS = 1000


def did_you_mean(value: str, choices: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` when a choice is close to ``value``, else the list of choices."""
    close = difflib.get_close_matches(value, list(choices), n=1)
    if close:
        return f"did you mean {close[0]!r}?"
    return f"choose one of {sorted(choices)}"


@contextmanager
def open_text(path: str | Path) -> Iterator[io.TextIOBase]:
    """Open a text file, a ``.gz`` file or a ``.zip`` holding one data file, for reading.

    The file itself must be a regular file of at most 512 MiB, and what a ``.gz`` or ``.zip``
    expands to is bounded too (:func:`carbonshift.files.open_decompressed`).
    """
    file = Path(path)
    with (
        open_decompressed(file, "trace") as raw,
        io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="") as text,
    ):
        yield text


def parse_finite(text: str) -> float | None:
    """The number in ``text``, or ``None`` when it is not a finite number."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


class RowSink:
    """Bookkeeping of rows a reader could not use.

    ``bad`` is for malformed rows: in strict mode it raises an :class:`InputError` naming
    file, line, column, value and the fix; in lenient mode it records the problem.
    ``skip`` is for well-formed rows that describe no runnable job (cancelled, zero length):
    counted in both modes, never an error.
    """

    def __init__(self, path: str | Path, *, strict: bool) -> None:
        self.path = str(path)
        self.strict = strict
        self.problems: list[RowProblem] = []
        self.counts: Counter[str] = Counter()

    def bad(self, line: int, column: str, value: str, reason: str, fix: str) -> None:
        """Report a malformed row (raise when strict, record when lenient)."""
        if self.strict:
            raise InputError(
                f"{self.path}:{line}: column {column!r} value {value!r} {reason}; {fix} "
                "(or read with strict=False to skip and count bad rows)"
            )
        self.counts["malformed"] += 1
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(RowProblem(line, column, value, f"{reason}; {fix}"))

    def skip(self, reason: str) -> None:
        """Count a well-formed row that is left out (``reason`` is a short tag)."""
        self.counts[reason] += 1

    def report(self, rows_read: int, jobs_kept: int, header: dict[str, str]) -> ReadReport:
        """The final report; logs a warning when rows were left out."""
        report = ReadReport(
            path=self.path,
            rows_read=rows_read,
            jobs_kept=jobs_kept,
            skipped=dict(self.counts),
            problems=tuple(self.problems),
            header=header,
        )
        if self.counts:
            first = f"; first: {self.problems[0].describe(self.path)}" if self.problems else ""
            _log.warning(
                "%s: kept %d of %d rows; left out %s%s",
                self.path,
                jobs_kept,
                rows_read,
                dict(self.counts),
                first,
            )
        return report
