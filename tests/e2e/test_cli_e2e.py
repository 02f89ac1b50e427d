"""End-to-end: the installed ``carbonshift`` command, run as a user runs it."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e


def run_cli(*args: str, timeout_s: float = 300.0) -> subprocess.CompletedProcess[str]:
    """Run the CLI; ``timeout_s`` only guards against a hang (no timing is asserted)."""
    return subprocess.run(
        [sys.executable, "-m", "carbonshift.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def test_help_lists_the_verbs() -> None:
    done = run_cli("--help")
    assert done.returncode == 0, done.stderr
    assert "Example" in done.stdout


def test_unknown_verb_is_a_usage_error() -> None:
    done = run_cli("no-such-verb")
    assert done.returncode == 2
    assert "No such command" in done.stderr
