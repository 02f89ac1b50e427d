"""The mutating admission webhook: gate opted-in Pods and suspend opted-in Jobs at creation.

``POST /mutate`` takes an ``admission.k8s.io/v1`` AdmissionReview and answers one with a
base64 JSONPatch: a workload with a usable intent gets its kind's hold (the adapter's
``admission_ops``: a Pod the scheduling gate, which the API server refuses to add later; a
Job ``spec.suspend: true``) and the state ``held``. The webhook never denies: a workload that
is not opted in, critical, or has an unusable value is admitted unchanged, with the reason as
an admission warning (``kubectl`` prints it); the controller then writes the reason on the
object and counts it once in ``carbonshift_unusable_intent``. Dry-run mode patches nothing.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from carbonshift.k8s.bodies import MAX_REVIEW_BYTES, BodyTooLargeError, read_json, too_large_answer
from carbonshift.k8s.clock import Clock
from carbonshift.k8s.config import ControllerConfig
from carbonshift.k8s.intent import NotHeld, Obj, read_intent
from carbonshift.k8s.keys import REASON, STATE, State
from carbonshift.k8s.kinds import CONTROLLER_KINDS
from carbonshift.k8s.metrics import Metrics
from carbonshift.units import format_utc

__all__ = ["admission_patch", "review_response", "webhook_app"]

_LOG = logging.getLogger("carbonshift.k8s")
_HELD_NOTE = "held by carbonshift until its first planning round"
ADMITTED = {a.kind: a for a in CONTROLLER_KINDS}


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def admission_patch(
    obj: Obj, config: ControllerConfig, clock: Clock, metrics: Metrics | None = None
) -> tuple[list[Obj], list[str]]:
    """The JSONPatch for a new object, and warnings to show the user."""
    intent = read_intent(obj, config, clock.now())
    if isinstance(intent, NotHeld):
        if intent.unusable:  # counted once, by the controller, when it notes it on the object
            return [], [f"carbonshift: not held: {intent.reason}"]
        return [], []
    if config.dry_run:
        return [], [
            "carbonshift (dry-run): would hold until planned; deadline "
            f"{format_utc(intent.deadline)}"
        ]
    ops: list[Obj] = []
    meta = obj.get("metadata") or {}
    if not meta.get("annotations"):
        ops.append({"op": "add", "path": "/metadata/annotations", "value": {}})
    for key, value in ((STATE, State.HELD.value), (REASON, _HELD_NOTE)):
        ops.append({"op": "add", "path": f"/metadata/annotations/{_escape(key)}", "value": value})
    adapter = ADMITTED[obj["kind"]]  # read_intent holds only these kinds
    hold = adapter.admission_ops(obj)
    if isinstance(hold, str):
        return [], [f"carbonshift: not held: {hold}"]
    if hold is None:  # already held
        return [], []
    return ops + hold, []


def review_response(
    review: Any, config: ControllerConfig, clock: Clock, metrics: Metrics | None = None
) -> Obj:
    """The AdmissionReview answer to ``review`` (allowed, with a patch when one applies)."""
    request = review.get("request") if isinstance(review, dict) else None
    if not isinstance(request, dict):
        return {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {
                "uid": "",
                "allowed": True,
                "warnings": ["carbonshift: not an AdmissionReview"],
            },
        }
    response: Obj = {"uid": request.get("uid", ""), "allowed": True}
    obj = request.get("object")
    if request.get("operation") == "CREATE" and isinstance(obj, dict):
        meta = obj.setdefault("metadata", {})
        if not meta.get("namespace") and request.get("namespace"):
            meta["namespace"] = request["namespace"]
        try:
            ops, warnings = admission_patch(obj, config, clock, metrics)
        except Exception as exc:  # never block a workload on our bug
            _LOG.exception("webhook failed on %s", request.get("name"))
            if metrics is not None:
                metrics.errors.labels(stage="webhook").inc()
            ops, warnings = [], [f"carbonshift: not held: internal error {exc!r}"]
        if ops:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
        if warnings:
            response["warnings"] = warnings
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def webhook_app(
    config: ControllerConfig,
    clock: Clock,
    metrics: Metrics | None = None,
    degraded: Callable[[], list[str]] | None = None,
) -> FastAPI:
    """The webhook's HTTP app (serve it over TLS: the API server calls only https).

    ``/healthz`` answers 200 while the process works (probes must not restart it), with
    ``"status": "degraded"`` and the reasons ``degraded()`` gives (the carbon data of the last
    plan were replayed, stale or a fall-back)."""
    app = FastAPI(title="carbonshift admission webhook", docs_url=None, redoc_url=None)

    @app.post("/mutate")
    async def mutate(request: Request) -> JSONResponse:
        try:
            review = await read_json(request, MAX_REVIEW_BYTES, "the AdmissionReview")
        except BodyTooLargeError as exc:
            _LOG.warning("webhook: %s", exc)
            return too_large_answer(exc)
        return JSONResponse(review_response(review, config, clock, metrics))

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        reasons = degraded() if degraded is not None else []
        return {"status": "degraded" if reasons else "ok", "reasons": reasons}

    return app
