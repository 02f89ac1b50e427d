"""``carbonshift completion SHELL``: print the shell completion script for bash, zsh or fish."""

from __future__ import annotations

from enum import StrEnum

import typer

# typer re-exports these from private modules without __all__; they are its documented
# completion entry points (what --show-completion prints)
from typer.completion import (  # type: ignore[attr-defined]
    completion_init,
    get_completion_script,
)

__all__ = ["command"]

#: The environment variable the completion script sets when it asks carbonshift to complete.
COMPLETE_VAR = "_CARBONSHIFT_COMPLETE"

# register typer's bash, zsh, fish and PowerShell completers with click, so that a shell
# calling back with _CARBONSHIFT_COMPLETE set gets the words (add_completion stays off:
# one explicit verb instead of two hidden options on every command)
completion_init()


class Shell(StrEnum):
    """The shells carbonshift completes for."""

    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"


def command(
    shell: Shell = typer.Argument(..., help="bash, zsh or fish."),
) -> None:
    """Print the completion script for SHELL (verbs, options, zone and policy choices).

    Load it in the running shell, or add the line to ~/.bashrc (~/.zshrc):

    Example: eval "$(carbonshift completion bash)"

    fish: carbonshift completion fish > ~/.config/fish/completions/carbonshift.fish
    """
    script = get_completion_script(
        prog_name="carbonshift", complete_var=COMPLETE_VAR, shell=shell.value
    )
    typer.echo(script)
