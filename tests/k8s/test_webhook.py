"""The admission webhook: AdmissionReview v1 in, JSONPatch out, over TLS; it never denies."""

from __future__ import annotations

import base64
import json
import re
import ssl
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from carbonshift.errors import InputError
from carbonshift.k8s.app import serve
from carbonshift.k8s.config import ServerSection, parse_config
from carbonshift.k8s.metrics import Metrics
from carbonshift.k8s.webhook import review_response, webhook_app
from fakekube.patch import json_patch
from tests.builders import FrozenClock
from tests.k8s.certs import make_certs
from tests.k8s.objects import job, pod

NOW = datetime(2023, 11, 14, tzinfo=UTC)


CONFIG = parse_config({})


def review(obj: dict[str, Any], operation: str = "CREATE") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "req-1", "operation": operation, "namespace": "batch", "object": obj},
    }


def patched(obj: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    response = answer["response"]
    assert response["uid"] == "req-1"
    assert response["allowed"] is True
    if "patch" not in response:
        return obj
    assert response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"]))
    result: dict[str, Any] = json_patch(obj, ops)
    return result


@pytest.mark.parametrize(
    ("obj", "want_gates"),
    [
        (pod(created=None), ["carbonshift.io/hold"]),
        (pod(created=None, gates=["other.io/gate"]), ["other.io/gate", "carbonshift.io/hold"]),
        (pod(created=None, gates=["carbonshift.io/hold"]), ["carbonshift.io/hold"]),
    ],
    ids=["plain-pod", "pod-with-another-gate", "already-gated"],
)
def test_opted_in_pods_get_the_gate(obj: dict[str, Any], want_gates: list[str]) -> None:
    got = patched(obj, review_response(review(obj), CONFIG, FrozenClock(NOW)))
    assert [g["name"] for g in got["spec"]["schedulingGates"]] == want_gates


def test_opted_in_jobs_are_suspended_and_marked_held() -> None:
    obj = job(created=None)
    got = patched(obj, review_response(review(obj), CONFIG, FrozenClock(NOW)))
    assert got["spec"]["suspend"] is True
    assert got["metadata"]["annotations"]["carbonshift.io/state"] == "held"


@pytest.mark.parametrize(
    ("obj", "operation", "want_warning"),
    [
        (pod(created=None, managed=None), "CREATE", None),
        (pod(created=None, annotations={"carbonshift.io/critical": "true"}), "CREATE", None),
        (pod(created=None, annotations={"carbonshift.io/deadline": "soon"}), "CREATE", "not held"),
        (pod(created=None), "UPDATE", None),
    ],
    ids=["not-opted-in", "critical", "unusable-deadline", "update-is-ignored"],
)
def test_other_workloads_pass_unchanged(
    obj: dict[str, Any], operation: str, want_warning: str | None
) -> None:
    metrics = Metrics()
    answer = review_response(review(obj, operation), CONFIG, FrozenClock(NOW), metrics)
    assert patched(obj, answer) == obj
    warnings = answer["response"].get("warnings") or []
    if want_warning is None:
        assert warnings == []
    else:
        assert want_warning in warnings[0]
        # counted once, by the controller when it notes the object, never by the webhook too
        assert (
            metrics.registry.get_sample_value(
                "carbonshift_unusable_intent_total", {"annotation": "carbonshift.io/deadline"}
            )
            is None
        )


def test_dry_run_patches_nothing() -> None:
    obj = pod(created=None)
    answer = review_response(review(obj), parse_config({"dry_run": True}), FrozenClock(NOW))
    assert "patch" not in answer["response"]
    assert "dry-run" in answer["response"]["warnings"][0]
    # RFC 3339 in UTC, not Python's str(datetime) "2026-11-24 07:07:48.197406+00:00"
    deadline = answer["response"]["warnings"][0].rsplit("deadline ", 1)[1]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", deadline), deadline


def test_garbage_is_admitted() -> None:
    assert review_response({"hello": 1}, CONFIG, FrozenClock(NOW))["response"]["allowed"] is True


async def test_served_over_tls_with_a_verified_certificate(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    section = ServerSection(port=0, cert_file=str(certs.cert_file), key_file=str(certs.key_file))
    served = await serve("webhook", webhook_app(CONFIG, FrozenClock(NOW)), section)
    try:
        context = ssl.create_default_context(cadata=certs.ca_pem.decode())
        async with httpx.AsyncClient(verify=context) as client:
            answer = (
                await client.post(f"{served.url}/mutate", json=review(pod(created=None)))
            ).json()
        async with httpx.AsyncClient(verify=ssl.create_default_context()) as untrusting:
            with pytest.raises(httpx.ConnectError):
                await untrusting.post(f"{served.url}/mutate", json=review(pod(created=None)))
    finally:
        served.server.should_exit = True
        await served.task
    assert answer["response"]["patchType"] == "JSONPatch"


async def test_a_missing_certificate_is_a_clear_error(tmp_path: Path) -> None:
    section = ServerSection(port=0, cert_file=str(tmp_path / "nope.crt"), key_file="k")
    with pytest.raises(InputError, match=r"webhook\.cert_file .*nope\.crt' is not a file"):
        await serve("webhook", webhook_app(CONFIG, FrozenClock(NOW)), section)
    with pytest.raises(InputError, match="are required"):
        await serve("webhook", webhook_app(CONFIG, FrozenClock(NOW)), ServerSection(port=0))
