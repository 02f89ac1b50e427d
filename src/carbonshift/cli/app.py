"""The ``carbonshift`` command: a thin shell over the library.

Each verb lives in its own module and registers a typer sub-application in ``_VERBS``.
Errors raised as :class:`~carbonshift.errors.CarbonshiftError` are printed as one line on
stderr with exit code 2 (1 for temporary failures); ``--debug`` shows the traceback. A verb
whose optional packages are not installed (``simulate`` without carbonshift[sim]) stays
listed, and running it says which extra to install.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Iterable, Sequence
from importlib.metadata import PackageNotFoundError, version

import typer
from rich.markup import escape

from carbonshift._extras import installed, missing_extra
from carbonshift.errors import CarbonshiftError, TemporaryError

__all__ = ["app", "build", "main"]  # noqa: F822 - app: built on first use, __getattr__

_HELP = (
    "Move flexible batch work to cleaner times and places.\n\n"
    "Example: carbonshift data show DE --start 2023-11-14T00:00Z --end 2023-11-15T00:00Z"
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

#: verb -> the extra that brings everything it needs (EXTRA_OF names the rest by package).
_VERB_EXTRAS: dict[str, str] = {
    "simulate": "sim",
    "sweep": "sim",
    "reproduce": "sim",
    "serve": "api",
    "controller": "k8s",
    "hub": "k8s",
}

_STATE = {"debug": False}


def _version() -> str:
    try:
        return version("carbonshift")
    except PackageNotFoundError:  # a source tree on PYTHONPATH, never installed
        return "0+unknown"


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"carbonshift {_version()}")
        raise typer.Exit()


def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks and debug logs."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show info logs."),
    _version_wanted: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the installed version and exit (carbonshift --version).",
    ),
) -> None:
    """Carbon-aware placement and time shifting of batch work."""
    _STATE["debug"] = debug
    level = logging.DEBUG if debug else logging.INFO if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


def _needs_extra(cli: typer.Typer, verb: str, error: CarbonshiftError) -> None:
    """Stand in for a verb whose optional packages are missing: say which extra to install."""

    @cli.command(
        name=verb,
        help=escape(f"(not installed) {error}"),  # [sim] is not rich markup
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        add_help_option=False,
    )
    def _missing(ctx: typer.Context) -> None:
        raise error

    del _missing


#: verb -> packages it needs on every run but imports only when it draws (found at start-up,
#: not imported: a verb without them is listed as not installed, as one that fails to load is)
_VERB_DRAWS: dict[str, tuple[str, ...]] = {
    "sweep": ("matplotlib",),
    "reproduce": ("matplotlib",),
}


def _register(cli: typer.Typer, verb: str) -> None:
    package = next((p for p in _VERB_DRAWS.get(verb, ()) if not installed(p)), None)
    absent = package and missing_extra(package, f"carbonshift {verb}", extra=_VERB_EXTRAS[verb])
    if absent:
        _needs_extra(cli, verb, absent)
        return
    module_name = _VERBS[verb]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return
        error = missing_extra(exc.name or "", f"carbonshift {verb}", extra=_VERB_EXTRAS.get(verb))
        if error is None:
            raise
        _needs_extra(cli, verb, error)
        return
    sub = getattr(module, "app", None)
    if isinstance(sub, typer.Typer):
        cli.add_typer(sub, name=verb)
    else:
        command = getattr(module, "command")  # noqa: B009 - a single-command verb
        cli.command(name=verb)(command)


def build(verbs: Iterable[str] = _VERBS) -> typer.Typer:
    """The ``carbonshift`` typer application with ``verbs`` (every verb by default).

    Each verb's module is imported here, so a run that names its verb builds an application
    with that verb alone (see :func:`main`): ``carbonshift data show`` does not import the
    planner, the simulator, the web stack or the Kubernetes client.
    """
    cli = typer.Typer(
        name="carbonshift",
        help=_HELP,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    cli.callback()(_root)
    for verb in verbs:
        _register(cli, verb)
    return cli


def __getattr__(name: str) -> typer.Typer:
    """``app``, the application with every verb, built on first use (tests, doc tools)."""
    if name == "app":
        full = build()
        globals()["app"] = full
        return full
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _verb_named(args: Sequence[str]) -> str | None:
    """The verb ``args`` run, when it is one of ours (the root's options are all flags)."""
    first = next((arg for arg in args if not arg.startswith("-")), None)
    return first if first in _VERBS else None


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code instead of raising for carbonshift errors."""
    args = argv if argv is not None else sys.argv[1:]
    debug = "--debug" in args
    verb = _verb_named(args)
    # one verb: build only it (start-up without the other verbs' imports); --version: none;
    # otherwise, as for the root's --help, completion or a misspelt verb, every verb
    if verb is not None:
        cli = build([verb])
    elif "--version" in args:
        cli = build([])
    else:
        cli = sys.modules[__name__].app
    try:
        cli(args=list(args), prog_name="carbonshift")
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
