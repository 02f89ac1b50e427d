"""Request bodies the controller's own HTTP servers read, bounded: the webhook's
AdmissionReview and the extender's ExtenderArgs.

Only the API server and kube-scheduler should call these servers, but anything in the
cluster that reaches the port can: a body is read as it arrives and refused past its limit
(:class:`BodyTooLargeError`, answered 413 naming the size and the limit), a
``Content-Length`` above it before a byte is read, so that no caller fills the memory of the
controller (docs/controller.md, "Limits on what the API server sends").
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from carbonshift.bounded import TooLargeError, read_bounded
from carbonshift.errors import InputError

__all__ = [
    "MAX_EXTENDER_ARGS_BYTES",
    "MAX_REVIEW_BYTES",
    "BodyTooLargeError",
    "read_json",
    "too_large_answer",
]

#: the most bytes of an AdmissionReview (16 MiB): it carries the object and, on an update,
#: the old one, each at most the API server's 3 MiB request limit
MAX_REVIEW_BYTES = 16 << 20
#: the most bytes of an ExtenderArgs (64 MiB): with ``nodeCacheCapable: false`` (the shipped
#: setting) it carries every candidate Node, about 5-10 KiB each: 5,000 nodes are 25-50 MiB
MAX_EXTENDER_ARGS_BYTES = 64 << 20


class BodyTooLargeError(InputError):
    """A request body above its limit; the message names the size, the limit and the fix."""


async def read_json(request: Request, limit: int, what: str) -> Any:
    """The request's body parsed as JSON (None when it is not JSON), read up to ``limit``
    bytes; :class:`BodyTooLargeError` past it (``what`` names the body in the message)."""
    try:
        body = await read_bounded(
            request.stream(),
            limit,
            what=f"{what} body",
            fix="only the API server and kube-scheduler should call this port (check the "
            "NetworkPolicy)",
            content_length=request.headers.get("content-length"),
        )
    except TooLargeError as exc:
        raise BodyTooLargeError(str(exc)) from exc
    try:
        return json.loads(body)  # as Starlette's request.json()
    except ValueError:
        return None


def too_large_answer(error: BodyTooLargeError) -> JSONResponse:
    """The 413 answer to a body above its limit."""
    return JSONResponse({"error": str(error)}, status_code=413, headers={"connection": "close"})
