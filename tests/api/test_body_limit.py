"""The API's body limit (``_BodyLimit``, over carbonshift.bounded) spoken to as ASGI
directly, so that a ``Content-Length`` can lie: a body is refused 413 by what comes, past the
limit, whatever its header says; a header above the limit is refused before a byte is read;
a body at the limit reaches the app whole."""

from __future__ import annotations

import json
from typing import Any

import pytest

from carbonshift.api.app import _BodyLimit

LIMIT = 1000


class _App:
    """The app behind the limit: records the body it read."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        self.bodies.append(message["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


async def _post(
    chunks: list[bytes], content_length: str | None
) -> tuple[int, dict[str, Any], _App, int]:
    """Send ``chunks`` as one request's body; the status, the JSON answer, the app and how
    many chunks the limit asked for."""
    headers = [(b"content-type", b"application/json")]
    if content_length is not None:
        headers.append((b"content-length", content_length.encode()))
    scope = {"type": "http", "method": "POST", "path": "/v1/plan", "headers": headers}
    asked = 0

    async def receive() -> dict[str, Any]:
        nonlocal asked
        asked += 1
        if asked > len(chunks):
            return {"type": "http.disconnect"}
        more = asked < len(chunks)
        return {"type": "http.request", "body": chunks[asked - 1], "more_body": more}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    app = _App()
    await _BodyLimit(app, limit=LIMIT, timeout_s=5.0)(scope, receive, send)
    status = sent[0]["status"]
    answer = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))
    return status, answer, app, asked


@pytest.mark.parametrize(
    ("chunks", "content_length"),
    [
        pytest.param([b"x" * 600, b"x" * 600], "10", id="a-content-length-lying-low"),
        pytest.param([b"x" * 600, b"x" * 600], None, id="no-content-length"),
        pytest.param([b"x" * 600, b"x" * 600], "oops", id="a-content-length-not-a-number"),
        pytest.param([b"x"] * (LIMIT + 1), None, id="one-byte-over-in-one-byte-chunks"),
    ],
)
async def test_what_comes_past_the_limit_is_413_whatever_the_header_says(
    chunks: list[bytes], content_length: str | None
) -> None:
    status, answer, app, asked = await _post(chunks, content_length)
    assert status == 413
    assert answer["detail"] == (
        "request body is larger than 1000 bytes; send a smaller instance or split the jobs"
    )
    assert app.bodies == []
    assert asked == len(chunks)  # read up to the chunk that passed the limit, no further


async def test_a_content_length_above_the_limit_is_413_before_a_byte_is_read() -> None:
    status, _, app, asked = await _post([b"{}"], str(LIMIT + 1))
    assert (status, asked, app.bodies) == (413, 0, [])


@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param([b"y" * LIMIT], id="at-the-limit-in-one-chunk"),
        pytest.param([b"y" * 10] * (LIMIT // 10), id="at-the-limit-in-small-chunks"),
    ],
)
async def test_a_body_at_the_limit_reaches_the_app_whole(chunks: list[bytes]) -> None:
    status, _, app, _ = await _post(chunks, str(LIMIT))
    assert status == 200
    assert app.bodies == [b"y" * LIMIT]
