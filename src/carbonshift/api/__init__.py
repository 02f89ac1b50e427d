"""carbonshift.api: the HTTP advice API (FastAPI, OpenAPI at ``/openapi.json``).

The Carbon Aware SDK WebAPI, drop-in (``/emissions/...`` and ``/locations`` with Azure and
AWS region names: :mod:`carbonshift.api.sdk`, :mod:`carbonshift.api.regions`),
``POST /v1/advise``, ``POST /v1/plan`` (docs/formats.md instance -> plan), ``/healthz``,
``/metrics``, and offline API docs at ``/docs`` and ``/redoc``. See ``docs/api.md``.
"""

from carbonshift.api.app import ApiSettings, create_app

__all__ = ["ApiSettings", "create_app"]
