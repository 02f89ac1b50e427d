"""carbonshift.api: the HTTP advice API (FastAPI, OpenAPI at ``/openapi.json``).

Carbon Aware SDK compatible ``/emissions/forecasts/current`` and
``/emissions/bylocations/best``, ``POST /v1/advise``, ``POST /v1/plan`` (CONTRACTS.md
instance -> plan), ``/healthz`` and ``/metrics``. See ``docs/api.md``.
"""

from carbonshift.api.app import ApiSettings, create_app

__all__ = ["ApiSettings", "create_app"]
