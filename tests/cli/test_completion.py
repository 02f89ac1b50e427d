"""Shell completion: the script `carbonshift completion bash` prints completes in a real bash."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from carbonshift.cli.app import main

BIN = Path(sys.executable).parent

CASES = {
    "a verb": (("carbonshift", "sim"), ["simulate"]),
    "a sub-command": (("carbonshift", "data", "pot"), ["potential"]),
    "an option": (("carbonshift", "data", "potential", "--slack"), ["--slack-hours"]),
    "a choice": (("carbonshift", "completion", "z"), ["zsh"]),
}


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completes_verbs_options_and_choices() -> None:
    # one bash, one eval of the printed script, then each case in turn (a subprocess per
    # case would start carbonshift twice as often)
    lines = ['eval "$(carbonshift completion bash)"']
    for name, (words, _) in CASES.items():
        lines += [
            f"COMP_WORDS=({' '.join(words)}); COMP_CWORD={len(words) - 1}; COMPREPLY=()",
            "_carbonshift_completion carbonshift",
            f'echo "{name}: ${{COMPREPLY[*]}}"',
        ]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["bash", "-c", "\n".join(lines)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    got = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    want = {name: " ".join(words) for name, (_, words) in CASES.items()}
    assert got == want


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_a_script_for_each_shell(
    shell: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["completion", shell]) == 0
    assert "_CARBONSHIFT_COMPLETE" in capsys.readouterr().out


def test_completion_refuses_an_unknown_shell(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "tcsh"]) != 0
    assert "tcsh" in capsys.readouterr().err
