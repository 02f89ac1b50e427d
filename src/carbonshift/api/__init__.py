"""carbonshift.api: the HTTP advice API (FastAPI, OpenAPI at ``/openapi.json``).

The Carbon Aware SDK WebAPI, drop-in (``/emissions/...`` and ``/locations`` with Azure and
AWS region names: :mod:`carbonshift.api.sdk`, :mod:`carbonshift.api.regions`),
``POST /v1/advise``, ``POST /v1/plan`` (docs/formats.md instance -> plan), ``/healthz``,
``/metrics``, and offline API docs at ``/docs`` and ``/redoc``. See ``docs/api.md``.

The app is imported on first use of :func:`create_app` or :class:`ApiSettings`: the CLI's
``advise`` verb uses :mod:`carbonshift.api.advice` without FastAPI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from carbonshift.api.app import ApiSettings, create_app

__all__ = ["ApiSettings", "create_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("carbonshift.api.app"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
