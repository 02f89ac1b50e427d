"""The ``carbonshift`` command: a thin shell over the library.

Each verb lives in its own module and registers a typer sub-application in ``_VERBS``.
Errors raised as :class:`~carbonshift.errors.CarbonshiftError` are printed as one line on
stderr with exit code 2 (1 for temporary failures); ``--debug`` shows the traceback.
"""

from __future__ import annotations

import importlib
import logging
import sys

import typer

from carbonshift.errors import CarbonshiftError, TemporaryError

__all__ = ["app", "main"]

app = typer.Typer(
    name="carbonshift",
    help=(
        "Move flexible batch work to cleaner times and places.\n\n"
        "Example: carbonshift data show DE --start 2023-11-14T00:00Z --end 2023-11-15T00:00Z"
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

#: verb -> module that defines a typer app called ``app`` (one line per verb).
_VERBS: dict[str, str] = {
    "advise": "carbonshift.cli.advise",
    "data": "carbonshift.cli.data",
    "forecast": "carbonshift.cli.forecast",
    "reproduce": "carbonshift.cli.reproduce",
    "simulate": "carbonshift.cli.simulate",
    "sweep": "carbonshift.cli.sweep",
    "plan": "carbonshift.cli.plan",
    "controller": "carbonshift.cli.controller",
    "hub": "carbonshift.cli.hub",
    "serve": "carbonshift.cli.serve",
    "status": "carbonshift.cli.status",
    "completion": "carbonshift.cli.completion",
}

_STATE = {"debug": False}


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks and debug logs."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show info logs."),
) -> None:
    """Carbon-aware placement and time shifting of batch work."""
    _STATE["debug"] = debug
    level = logging.DEBUG if debug else logging.INFO if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


def _register() -> None:
    for verb, module_name in _VERBS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        sub = getattr(module, "app", None)
        if isinstance(sub, typer.Typer):
            app.add_typer(sub, name=verb)
        else:
            command = getattr(module, "command")  # noqa: B009 - a single-command verb
            app.command(name=verb)(command)


_register()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code instead of raising for carbonshift errors."""
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        app(args=argv, prog_name="carbonshift")
    except CarbonshiftError as exc:
        if debug:
            raise
        typer.echo(f"error: {exc}", err=True)
        return 1 if isinstance(exc, TemporaryError) else 2
    except SystemExit as exc:  # typer's standalone mode: usage errors, --help, typer.Exit
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
