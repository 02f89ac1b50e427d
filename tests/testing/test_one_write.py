"""The fake sends each answer in one write, head and body together, as a Go API server does
(uvicorn writes them apart, so a client woke twice for every answer)."""

from __future__ import annotations

import asyncio.selector_events
import socket
import ssl
import threading
from typing import Any

import pytest

from fakekube import FakeKube, run_fakekube

ANSWERS = 6


@pytest.fixture
def socket_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the writes on every plain socket transport of the process while a test
    runs (the fake's, in its own thread: the test's client is a blocking socket)."""
    sizes: list[int] = []
    lock = threading.Lock()
    cls: Any = asyncio.selector_events._SelectorSocketTransport
    write = cls.write

    def counted(self: Any, data: bytes) -> None:
        with lock:
            sizes.append(len(data))
        write(self, data)

    monkeypatch.setattr(cls, "write", counted)
    return sizes


def _get_answers(kube: FakeKube, sock: socket.socket, count: int) -> list[bytes]:
    request = (
        f"GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: {kube.base_url}\r\n"
        f"Authorization: Bearer {kube.admin_token}\r\n\r\n"
    ).encode()
    reader = sock.makefile("rb")
    answers = []
    for _ in range(count):
        sock.sendall(request)
        status = reader.readline()
        length = 0
        while (line := reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        answers.append(status + reader.read(length))
    return answers


@pytest.mark.parametrize("tls", [False, True], ids=["plain-http", "tls"])
def test_each_answer_is_one_write(tls: bool, socket_writes: list[int]) -> None:
    with run_fakekube(tls=tls) as kube:
        host, port = kube.base_url.rsplit("//", 1)[1].split(":")
        with socket.create_connection((host, int(port))) as raw:
            sock: socket.socket = raw
            if tls:
                assert kube.ca is not None
                context = ssl.create_default_context(cafile=str(kube.ca.cert))
                sock = context.wrap_socket(raw, server_hostname=host)
            _get_answers(kube, sock, 1)  # after the TLS handshake and its session tickets
            socket_writes.clear()
            answers = _get_answers(kube, sock, ANSWERS)
            want_writes = ANSWERS
            assert all(a.startswith(b"HTTP/1.1 200") for a in answers), answers
            assert len(socket_writes) == want_writes, socket_writes
