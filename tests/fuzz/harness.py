"""What every fuzz target checks, and the tally behind docs/reliability.md's figures.

A target hands one input to carbonshift and classifies what came back:

- ``ok``: a result; any JSON written or answered parses strictly (no NaN, no Infinity);
- ``clean``: a refusal: exit code 2 or a 4xx, with one line naming the field (or the file);
- ``traceback``, ``5xx``, ``hang`` (past :data:`HANG_S`), ``bad-json``, ``bad-error``, and
  ``accepted`` (a hostile value taken as valid): defects.

The budget comes from ``CARBONSHIFT_FUZZ_EXAMPLES`` (examples per target; default 25 in the
normal tier, 250 in the e2e tier). With ``CARBONSHIFT_FUZZ_REPORT=FILE`` each target adds its
tally to FILE (JSON), which is how the figures table is measured.
"""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: seconds one input may take before it counts as a hang
HANG_S = 60
DEFECTS = ("traceback", "5xx", "hang", "bad-json", "bad-error", "accepted")


def examples(default: int) -> int:
    """Examples per target: ``$CARBONSHIFT_FUZZ_EXAMPLES`` or ``default``."""
    return int(os.environ.get("CARBONSHIFT_FUZZ_EXAMPLES", default))


class HangError(Exception):
    """One input ran past HANG_S."""


@contextmanager
def hang_guard(seconds: int = HANG_S) -> Iterator[None]:
    """Raise HangError in the main thread after ``seconds``."""

    def alarm(signum: int, frame: object) -> None:
        raise HangError(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def strict_json(text: str) -> Any:
    """Parse ``text`` refusing NaN and Infinity (what a strict parser does)."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"non-JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


def one_line_naming(message: str, names: tuple[str, ...]) -> bool:
    """A one-line, non-empty message that names one of ``names`` (or the word field)."""
    text = message.strip()
    if not text or "\n" in text or "Traceback" in text:
        return False
    return any(name and name in text for name in (*names, "field"))


class Tally:
    """Outcomes of one target; written to ``$CARBONSHIFT_FUZZ_REPORT`` at the end."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.counts: Counter[str] = Counter()
        self.defects: list[str] = []

    def add(self, outcome: str, detail: str = "") -> None:
        self.counts[outcome] += 1
        if outcome in DEFECTS:
            self.defects.append(f"{outcome}: {detail[:300]}")

    def run(self, check: Callable[[], tuple[str, str]]) -> None:
        """Run one input's ``check`` (returning outcome and detail) under the hang guard."""
        try:
            with hang_guard():
                outcome, detail = check()
        except HangError as exc:
            outcome, detail = "hang", str(exc)
        self.add(outcome, detail)

    def save(self) -> None:
        report = os.environ.get("CARBONSHIFT_FUZZ_REPORT")
        if not report:
            return
        path = Path(report)
        data = json.loads(path.read_text()) if path.exists() else {}
        mine = Counter(data.get(self.target, {}))
        mine.update(self.counts)
        data[self.target] = dict(mine)
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
