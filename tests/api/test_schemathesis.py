"""schemathesis against the OpenAPI schema: no server error, responses as documented.

schemathesis is not among the project's dev dependencies yet (pyproject belongs to another
part of the project); until it is, this module skips and ``test_fuzz.py`` plays its role
with plain hypothesis. Run it by hand with schemathesis installed:
``pip install --target /tmp/st schemathesis && PYTHONPATH=/tmp/st .venv/bin/pytest tests/api``.
"""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, settings  # noqa: E402

from carbonshift.api import create_app  # noqa: E402
from carbonshift.carbon.providers import ChainSet, EmbeddedReplay, FallbackChain  # noqa: E402
from carbonshift.carbon.series import CiKind  # noqa: E402

APP = create_app(
    ChainSet(
        chains={
            CiKind.DIRECT: FallbackChain(CiKind.DIRECT, [], floor=EmbeddedReplay()),
            CiKind.LCA: FallbackChain(CiKind.LCA, [], floor=EmbeddedReplay()),
        },
        providers={},
    )
)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case: object) -> None:
    # a schema-valid request may still be refused with 400 (unknown zone, end before start):
    # semantic checks beyond the schema are the API's job, so that one check is left out
    case.call_and_validate(  # type: ignore[attr-defined]
        excluded_checks=[schemathesis.specs.openapi.checks.positive_data_acceptance]
    )
