"""Every command of the README's tour runs as written from the repository root.

Commands marked "needs a cluster", "needs the network" or "runs until stopped" are skipped
(the Kubernetes tiers and tests/api cover them); the shell set-up lines (source, eval) are
not commands of ours. A command that another end-to-end test runs as written (with more
checks of its output, found by :func:`tour_command`) is not run twice: see
:data:`RUN_ELSEWHERE`. Each runs in a scratch folder that sees the repository's examples/ and
deploy/, so outputs land there and not in the checkout.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SKIP_MARKS = ("needs a cluster", "needs the network", "runs until stopped")

#: tour commands (by their first words) that another end-to-end test runs as the README
#: writes them, through :func:`tour_command`, and checks further; about 90 s of CI each
RUN_ELSEWHERE = {
    "carbonshift reproduce caspian": "tests/e2e/test_sim_e2e.py::test_reproduce_caspian_quick",
}


def tour_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Tour\s+```sh\n(.*?)```", text, flags=re.DOTALL)
    assert block is not None, "README.md has no ## Tour sh block"
    commands = []
    for line in block.group(1).splitlines():
        command, _, comment = line.partition("#")
        command = command.strip()
        if not command or command.startswith(("source ", "eval ")):
            continue
        if any(mark in comment for mark in SKIP_MARKS):
            continue
        commands.append(command)
    return commands


def tour_command(prefix: str) -> str:
    """The one tour command that starts with ``prefix``, as the README writes it."""
    found = [c for c in tour_commands() if c.startswith(prefix)]
    assert len(found) == 1, f"README.md's tour has {len(found)} commands starting {prefix!r}"
    return found[0]


def test_the_tour_is_found_and_names_the_main_verbs() -> None:
    verbs = {shlex.split(c)[1] for c in tour_commands() if c.startswith("carbonshift ")}
    assert {"data", "plan", "simulate", "sweep", "reproduce", "advise"} <= verbs


def test_each_command_run_elsewhere_is_in_the_tour() -> None:
    for prefix in RUN_ELSEWHERE:
        tour_command(prefix)


@pytest.mark.e2e
@pytest.mark.parametrize(
    "command", [c for c in tour_commands() if not c.startswith(tuple(RUN_ELSEWHERE))]
)
def test_readme_tour_command_runs(command: str, tmp_path: Path) -> None:
    for name in ("examples", "deploy"):
        (tmp_path / name).symlink_to(REPO / name)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        shlex.split(command),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        # a guard against a hang, not a speed target: the Caspian sweep takes about 310 s of
        # CPU alone and took 542 s in a clean-clone CI run beside other work on 2 cores
        timeout=1500,
        check=False,
    )
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
