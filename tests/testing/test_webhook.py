"""Mutating admission webhooks called over TLS with AdmissionReview v1."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakekube import FakeKube
from fakekube.tls import CertPair, self_signed
from tests.testing.builders import JOBS, PODS, job, pod

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")

HOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
GATE = "carbonshift.io/hold"


@dataclass
class Hook:
    """A TLS webhook on loopback that gates every pod it sees (or denies, when told to)."""

    url: str
    pair: CertPair
    reviews: list[dict[str, Any]] = field(default_factory=list)
    deny: str | None = None


@pytest.fixture
def hook(tmp_path: Path) -> Iterator[Hook]:
    pair = self_signed(tmp_path, hosts=("127.0.0.1", "gate.carbonshift.svc"))
    state: dict[str, Any] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            hook_state: Hook = state["hook"]
            hook_state.reviews.append(review)
            response: dict[str, Any] = {
                "uid": review["request"]["uid"],
                "allowed": hook_state.deny is None,
            }
            if hook_state.deny is not None:
                response["status"] = {"code": 403, "message": hook_state.deny}
            else:
                patch = [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": GATE}]}]
                response["patchType"] = "JSONPatch"
                response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
            body = json.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": response,
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pair.cert, pair.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    state["hook"] = Hook(f"https://127.0.0.1:{server.server_address[1]}/mutate", pair)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield state["hook"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def configuration(client_config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    webhook = {
        "name": "gate.carbonshift.io",
        "clientConfig": client_config,
        "rules": [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
            }
        ],
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        **extra,
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "carbonshift"},
        "webhooks": [webhook],
    }


def test_webhook_gates_pods_at_creation(http: httpx.Client, hook: Hook, fakekube: FakeKube) -> None:
    http.post(
        HOOKS, json=configuration({"url": hook.url, "caBundle": hook.pair.ca_bundle})
    ).raise_for_status()

    created = http.post(PODS, json=pod("p")).json()
    fakekube.settle()

    assert created["spec"]["schedulingGates"] == [{"name": GATE}]
    assert created["status"]["conditions"][0]["reason"] == "SchedulingGated"
    assert fakekube.get("Pod", "p", "default")["spec"].get("nodeName") is None
    request = hook.reviews[0]["request"]
    assert hook.reviews[0]["apiVersion"] == "admission.k8s.io/v1"
    assert request["operation"] == "CREATE"
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["namespace"] == "default"
    assert request["object"]["metadata"]["name"] == "p"


def test_webhook_gates_the_pods_of_jobs(http: httpx.Client, hook: Hook, fakekube: FakeKube) -> None:
    http.post(HOOKS, json=configuration({"url": hook.url, "caBundle": hook.pair.ca_bundle}))
    http.post(JOBS, json=job("j"))
    fakekube.settle()

    pods = fakekube.list("Pod", "default")

    assert [p["spec"]["schedulingGates"] for p in pods] == [[{"name": GATE}]]
    assert pods[0]["metadata"]["generateName"] == "j-"


def test_service_reference_is_verified_against_the_service_name(
    http: httpx.Client, hook: Hook, fakekube: FakeKube
) -> None:
    fakekube.register_service_endpoint("carbonshift", "gate", hook.url.removesuffix("/mutate"))
    service = {"namespace": "carbonshift", "name": "gate", "path": "/mutate", "port": 443}
    http.post(HOOKS, json=configuration({"service": service, "caBundle": hook.pair.ca_bundle}))

    created = http.post(PODS, json=pod("p"))

    assert created.status_code == 201, created.text
    assert created.json()["spec"]["schedulingGates"] == [{"name": GATE}]


@pytest.mark.parametrize(
    ("extra", "labels", "want_called"),
    [
        pytest.param(
            {"objectSelector": {"matchLabels": {"carbonshift.io/managed": "true"}}},
            {"carbonshift.io/managed": "true"},
            True,
            id="object-selected",
        ),
        pytest.param(
            {"objectSelector": {"matchLabels": {"carbonshift.io/managed": "true"}}},
            {},
            False,
            id="object-not-selected",
        ),
        pytest.param(
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "default"}}},
            {},
            True,
            id="namespace-selected",
        ),
        pytest.param(
            {
                "namespaceSelector": {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/metadata.name",
                            "operator": "NotIn",
                            "values": ["default"],
                        }
                    ]
                }
            },
            {},
            False,
            id="namespace-excluded",
        ),
    ],
)
def test_selectors_decide_which_pods_reach_the_webhook(
    http: httpx.Client, hook: Hook, extra: dict[str, Any], labels: dict[str, str], want_called: bool
) -> None:
    http.post(
        HOOKS, json=configuration({"url": hook.url, "caBundle": hook.pair.ca_bundle}, **extra)
    )

    http.post(PODS, json=pod("p", labels=labels)).raise_for_status()

    assert bool(hook.reviews) == want_called


def test_denial_is_the_webhooks_status(http: httpx.Client, hook: Hook) -> None:
    hook.deny = "no deadline annotation"
    http.post(HOOKS, json=configuration({"url": hook.url, "caBundle": hook.pair.ca_bundle}))

    answer = http.post(PODS, json=pod("p"))

    assert answer.status_code == 403
    assert (
        answer.json()["message"]
        == 'admission webhook "gate.carbonshift.io" denied the request: no deadline annotation'
    )


@pytest.mark.parametrize(
    ("policy", "want_code"),
    [pytest.param("Fail", 500, id="fail-closed"), pytest.param("Ignore", 201, id="fail-open")],
)
def test_unverifiable_certificate_follows_the_failure_policy(
    http: httpx.Client, hook: Hook, policy: str, want_code: int
) -> None:
    wrong_ca = self_signed(hook.pair.cert.parent / "other", hosts=("127.0.0.1",)).ca_bundle
    http.post(
        HOOKS, json=configuration({"url": hook.url, "caBundle": wrong_ca}, failurePolicy=policy)
    )

    answer = http.post(PODS, json=pod("p"))

    assert answer.status_code == want_code
    if want_code == 500:
        assert answer.json()["reason"] == "InternalError"
        assert 'failed calling webhook "gate.carbonshift.io"' in answer.json()["message"]
    assert hook.reviews == []
