"""Fault injection: refusals, shares of requests, and bounded repetitions."""

from __future__ import annotations

import httpx
import pytest

from fakekube import FakeKube, Fault
from fakekube.errors import ConfigError
from tests.testing.builders import PODS, pod


@pytest.mark.parametrize(
    ("code", "want_reason"),
    [
        pytest.param(409, "Conflict", id="conflict"),
        pytest.param(429, "TooManyRequests", id="throttled"),
        pytest.param(500, "InternalError", id="server-error"),
        pytest.param(503, "ServiceUnavailable", id="unavailable"),
    ],
)
def test_injected_error_is_a_status(
    http: httpx.Client, fakekube: FakeKube, code: int, want_reason: str
) -> None:
    fakekube.add_fault(Fault(code=code, verb="create", resource="pods", times=1))

    refused = http.post(PODS, json=pod("p"))
    accepted = http.post(PODS, json=pod("p"))

    assert refused.status_code == code
    assert refused.json()["reason"] == want_reason
    assert accepted.status_code == 201
    if code == 429:
        assert refused.headers["Retry-After"] == "1"


def test_faults_match_verb_and_resource_only(http: httpx.Client, fakekube: FakeKube) -> None:
    fakekube.add_fault(Fault(code=500, verb="patch", resource="pods"))

    assert http.post(PODS, json=pod("p")).status_code == 201
    assert http.get(PODS).status_code == 200
    assert http.get("/apis/batch/v1/namespaces/default/jobs").status_code == 200


def test_a_share_of_requests_fails_reproducibly(http: httpx.Client, fakekube: FakeKube) -> None:
    fakekube.add_fault(Fault(code=500, verb="list", probability=0.5))

    codes = [http.get(PODS).status_code for _ in range(40)]
    fakekube.clear_faults()

    assert 5 < codes.count(500) < 35
    assert http.get(PODS).status_code == 200


def test_fault_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="not injectable"):
        Fault(code=418)
    with pytest.raises(ConfigError, match="outside"):
        Fault(code=500, probability=2.0)


def test_control_endpoint_adds_faults(http: httpx.Client) -> None:
    http.post("/fakekube/faults", json={"code": 429, "verb": "get", "times": 1}).raise_for_status()

    assert http.get(f"{PODS}/x").status_code == 429
    assert http.get(f"{PODS}/x").status_code == 404
