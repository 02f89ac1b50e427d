"""Which pip extra brings which optional package, and the error that names it.

The core (planning, carbon data, the CLI) installs with ``pip install carbonshift``; the
simulator's plotting stack, the HTTP service and the Kubernetes controller come with extras
(``carbonshift[sim]``, ``[api]``, ``[k8s]``, ``[all]``; see pyproject.toml). Code that needs
an optional package imports it through :func:`require` (or catches ``ModuleNotFoundError`` and
calls :func:`missing_extra`), so that the user reads which extra to install instead of a
traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

from carbonshift.errors import CarbonshiftError

__all__ = ["EXTRA_OF", "MissingExtraError", "installed", "missing_extra", "pyplot", "require"]

#: top-level import name -> the extra of carbonshift that installs it.
EXTRA_OF: dict[str, str] = {
    "matplotlib": "sim",
    "pandas": "sim",
    "fastapi": "api",
    "uvicorn": "api",
    "kubernetes_asyncio": "k8s",
    "prometheus_client": "k8s",
    "dask": "dask",
    "distributed": "dask",
    "ray": "ray",
}


class MissingExtraError(CarbonshiftError):
    """An optional package is not installed; the message names the extra that brings it."""


def missing_extra(
    module: str, needed_for: str, *, extra: str | None = None
) -> MissingExtraError | None:
    """The error for a missing optional ``module``, or ``None`` when no extra brings it.

    ``extra`` names the extra to install when it is not the module's own (the controller
    needs fastapi too, but ``carbonshift[k8s]`` is what brings the whole controller).
    """
    top = module.split(".")[0]
    if top not in EXTRA_OF:
        return None
    extra = extra or EXTRA_OF[top]
    return MissingExtraError(
        f"{needed_for} needs the Python package {top!r}, which is not installed; "
        f"install carbonshift[{extra}] (pip install 'carbonshift[{extra}]')"
    )


def installed(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it."""
    if module in sys.modules:
        return sys.modules[module] is not None  # None: blocked, as ``import`` reads it
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(module: str, *, needed_for: str, extra: str | None = None) -> ModuleType:
    """Import ``module``; if it is missing, raise :class:`MissingExtraError` naming its extra."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        error = missing_extra(exc.name or module, needed_for, extra=extra)
        if error is None:
            raise
        raise error from exc


def pyplot(*, needed_for: str) -> ModuleType:
    """matplotlib's pyplot on the Agg back end (files only, no display), imported on demand."""
    require("matplotlib", needed_for=needed_for).use("Agg")
    return require("matplotlib.pyplot", needed_for=needed_for)
