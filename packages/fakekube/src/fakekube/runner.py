"""Run a fake cluster on a loopback port in a background thread, and drive it from tests.

>>> from fakekube import run_fakekube
>>> with run_fakekube() as kube:          # doctest: +SKIP
...     kube.base_url, kube.kubeconfig    # http://127.0.0.1:PORT, a kubeconfig file
...     kube.advance(hours=2)             # virtual time; controllers run to a fixed point
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import ssl
import tempfile
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol
from uvicorn.protocols.http.h11_impl import H11Protocol

from fakekube.cluster import FakeCluster, FakeKubeConfig
from fakekube.errors import ConfigError, TemporaryError
from fakekube.faults import Fault
from fakekube.server import build_app
from fakekube.tls import CertPair, ClusterCA, cluster_ca

__all__ = ["FakeKube", "run_fakekube", "write_kubeconfig"]

Obj = dict[str, Any]
T = TypeVar("T")


def write_kubeconfig(
    path: Path,
    base_url: str,
    *,
    namespace: str = "default",
    token: str = "",
    ca_pem: bytes | None = None,
    client: CertPair | None = None,
) -> Path:
    """A kubeconfig with one context ``fakekube`` pointing at ``base_url`` (``token``: a
    bearer token; ``client``: a client certificate and key; else no credentials). Over TLS
    ``ca_pem`` is the cluster's CA; everything is inlined (``*-data``), no file paths."""
    user: dict[str, str] = {}
    if token:
        user["token"] = token
    if client is not None:
        user["client-certificate-data"] = _b64(client.cert.read_bytes())
        user["client-key-data"] = _b64(client.key.read_bytes())
    cluster: dict[str, str] = {"server": base_url}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = _b64(ca_pem)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fakekube", "cluster": cluster}],
        "users": [{"name": "fakekube", "user": user}],
        "contexts": [
            {
                "name": "fakekube",
                "context": {"cluster": "fakekube", "user": "fakekube", "namespace": namespace},
            }
        ],
        "current-context": "fakekube",
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n")
    if token or client is not None:
        path.chmod(0o600)
    return path


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class FakeKube:
    """Handle on a running fake cluster; every method is safe to call from the test thread."""

    def __init__(
        self,
        cluster: FakeCluster,
        loop: asyncio.AbstractEventLoop,
        base_url: str,
        kubeconfig: Path,
        ca: ClusterCA | None = None,
    ) -> None:
        self.cluster = cluster
        self._loop = loop
        self.base_url = base_url
        self.kubeconfig = kubeconfig
        self.ca = ca
        """The cluster's CA when served over TLS (``run_fakekube(tls=True)``), else None."""

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=60)

    def _run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        async def call() -> Any:
            return fn(*args, **kwargs)

        return self._call(call())

    # -- time -----------------------------------------------------------------------------

    def now(self) -> datetime:
        """The cluster's clock."""
        return self.cluster.clock.now()

    def advance(
        self,
        delta: timedelta | None = None,
        *,
        seconds: float = 0,
        minutes: float = 0,
        hours: float = 0,
    ) -> datetime:
        """Move the clock forward, then run the controllers to a fixed point; return the new now."""
        step = (delta or timedelta(0)) + timedelta(seconds=seconds, minutes=minutes, hours=hours)
        return self._call(self.cluster.advance(step))

    async def advance_async(
        self,
        delta: timedelta | None = None,
        *,
        seconds: float = 0,
        minutes: float = 0,
        hours: float = 0,
    ) -> datetime:
        """:meth:`advance` for async tests: awaits instead of blocking the caller's loop."""
        step = (delta or timedelta(0)) + timedelta(seconds=seconds, minutes=minutes, hours=hours)
        future = asyncio.run_coroutine_threadsafe(self.cluster.advance(step), self._loop)
        return await asyncio.wrap_future(future)

    async def settle_async(self) -> int:
        """:meth:`settle` for async tests."""
        future = asyncio.run_coroutine_threadsafe(self.cluster.settle(), self._loop)
        return await asyncio.wrap_future(future)

    def settle(self) -> int:
        """Run the emulated controllers to a fixed point now (binding, starting, completing)."""
        return self._call(self.cluster.settle())

    # -- direct access (bypasses HTTP, not the API rules) ----------------------------------

    def get(self, kind: str, name: str, namespace: str = "", api_version: str = "v1") -> Obj:
        def read() -> Obj:
            api = self.cluster.api
            return api.get(api.kind(kind, api_version), namespace, name)

        result: Obj = self._run(read)
        return result

    def list(self, kind: str, namespace: str | None = None, api_version: str = "v1") -> list[Obj]:
        def read() -> list[Obj]:
            api = self.cluster.api
            items, _ = api.list(api.kind(kind, api_version), namespace)
            return items

        result: list[Obj] = self._run(read)
        return result

    def create(self, obj: Obj) -> Obj:
        """Create through the API rules (defaults, webhooks, validation)."""
        api = self.cluster.api
        rt = api.kind(obj.get("kind", ""), obj.get("apiVersion", "v1"))
        namespace = obj.get("metadata", {}).get("namespace", "default") if rt.namespaced else ""
        return self._call(api.create(rt, namespace, obj))

    # -- faults and watches ---------------------------------------------------------------

    def add_fault(self, fault: Fault) -> Fault:
        return self._run(self.cluster.faults.add, fault)  # type: ignore[no-any-return]

    def clear_faults(self) -> None:
        self._run(self.cluster.faults.clear)

    def drop_watches(self) -> int:
        """End every open watch stream, as an API server restart or a load balancer would."""
        return self._run(self.cluster.drop_watches)  # type: ignore[no-any-return]

    def compact(self) -> None:
        """Forget the event history: watches from any older resourceVersion get 410 Gone."""
        self._run(self.cluster.store.compact)

    def send_bookmarks(self) -> None:
        self._run(self.cluster.send_bookmarks)

    def register_service_endpoint(self, namespace: str, name: str, url: str) -> None:
        """Route webhook calls for Service ``namespace/name`` to ``url`` (https://127.0.0.1:P)."""
        self._run(self.cluster.api.service_endpoints.__setitem__, (namespace, name), url)

    # -- identities -----------------------------------------------------------------------

    def service_account_kubeconfig(
        self, namespace: str, name: str, path: Path | None = None
    ) -> Path:
        """A kubeconfig that authenticates as ServiceAccount ``namespace/name`` (a bearer
        token, valid while the ServiceAccount exists); written next to the admin one."""
        token = self._run(self.cluster.auth.issue, namespace, name)
        target = path or self.kubeconfig.with_name(f"kubeconfig-{namespace}-{name}")
        return write_kubeconfig(
            target,
            self.base_url,
            namespace=namespace,
            token=token,
            ca_pem=None if self.ca is None else self.ca.pem,
        )

    def client_certificate_kubeconfig(
        self, user: str, groups: tuple[str, ...] = (), path: Path | None = None
    ) -> Path:
        """A kubeconfig that authenticates as ``user`` in ``groups`` with a client
        certificate signed by the cluster's CA (``CN=user``, one ``O`` per group), as a
        real cluster's users often do; needs ``run_fakekube(tls=True)``."""
        if self.ca is None:
            raise ConfigError(
                "client certificates need TLS: start the cluster with run_fakekube(tls=True) "
                "or python -m fakekube --tls"
            )
        pair = self.ca.client(user, groups)
        stem = "".join(c if c.isalnum() else "-" for c in user)
        target = path or self.kubeconfig.with_name(f"kubeconfig-cert-{stem}")
        return write_kubeconfig(target, self.base_url, ca_pem=self.ca.pem, client=pair)

    def enforce_rbac(self, on: bool = True) -> None:
        """Turn RBAC enforcement on (or off) for a running cluster, e.g. after a fixture has
        set it up as the admin; as ``FakeKubeConfig(rbac=True)`` from the start."""
        self._run(setattr, self.cluster, "rbac", on)

    @property
    def admin_token(self) -> str:
        """The bearer token of ``kubernetes-admin`` (group ``system:masters``), which the
        kubeconfig at :attr:`kubeconfig` carries."""
        return self.cluster.auth.admin_token

    @property
    def resource_version(self) -> int:
        return self.cluster.store.rv


class _OneWriteTransport(asyncio.Transport):
    """A connection's transport that sends what the server writes in one turn of the event
    loop as one write, as a Go API server sends an answer's head and body together: uvicorn
    writes them apart (two ``send`` calls of one answer), and a client then wakes twice for
    one answer. The writes are joined and handed on at the end of the turn, in order; a
    watch's events written in one turn go as one write too. Closing sends what is pending
    first; aborting drops it."""

    def __init__(self, transport: asyncio.Transport) -> None:
        super().__init__()
        self._transport = transport
        self._loop = asyncio.get_running_loop()
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def _flush(self) -> None:
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self._transport.abort()

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._pending))

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()


class _OneWriteProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's HTTP protocol (httptools where installed, else h11) over a
    :class:`_OneWriteTransport`: one write per answer."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        super().connection_made(_OneWriteTransport(transport))


class _PeerCertProtocol(H11Protocol):
    """uvicorn's h11 protocol over a :class:`_OneWriteTransport`, handing the verified
    client certificate's subject to the app as
    ``scope["extensions"]["tls"]["client_cert_subject"]`` (uvicorn 0.54 does not yet
    implement the ASGI TLS extension). The handshake has ended when this runs."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_OneWriteTransport(transport))
        ssl_object = transport.get_extra_info("ssl_object")
        peer = ssl_object.getpeercert() if ssl_object is not None else None
        if peer:
            self.app = _with_client_subject(self.app, peer.get("subject", ()))


def _with_client_subject(app: Any, subject: Any) -> Any:
    async def with_subject(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            extensions = {**scope.get("extensions", {}), "tls": {"client_cert_subject": subject}}
            scope = {**scope, "extensions": extensions}
        await app(scope, receive, send)

    return with_subject


class _Server(uvicorn.Server):
    """uvicorn's server, stopped by an event instead of polling ``should_exit`` every 0.1 s."""

    stop_event: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self.stop_event = asyncio.Event()
        await self.on_tick(0)
        if not self.should_exit:
            await self.stop_event.wait()

    def stop_from(self, loop: asyncio.AbstractEventLoop) -> None:
        self.should_exit = True
        if self.stop_event is not None:
            loop.call_soon_threadsafe(self.stop_event.set)


def _serve(
    cluster: FakeCluster,
    sock: socket.socket,
    server: _Server,
    started: threading.Event,
    box: dict[str, Any],
) -> None:
    async def main() -> None:
        box["loop"] = asyncio.get_running_loop()
        try:
            await cluster.start()
        except BaseException as exc:
            box["error"] = exc
            started.set()
            raise
        started.set()
        try:
            await server.serve(sockets=[sock])
        finally:
            await cluster.stop()

    try:
        asyncio.run(main())
    except BaseException as exc:
        box.setdefault("error", exc)
        started.set()


@contextmanager
def run_fakekube(
    config: FakeKubeConfig | None = None,
    *,
    port: int = 0,
    kubeconfig: Path | None = None,
    tls: bool = False,
) -> Iterator[FakeKube]:
    """Start a fake cluster on ``127.0.0.1:port`` (0: a free port) and stop it on exit.

    ``tls``: serve HTTPS with a certificate from a fresh cluster CA (``FakeKube.ca``), which
    the kubeconfig trusts, and accept client certificates signed by it as identities
    (``FakeKube.client_certificate_kubeconfig``); kubectl then sends bearer tokens too."""
    cluster = FakeCluster(config or FakeKubeConfig())
    # IPPROTO_TCP, so that asyncio turns Nagle off on accepted connections (else 40 ms per request).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"port {port} on 127.0.0.1 is not free ({exc.strerror}); "
            "pick another port, or 0 for any"
        ) from exc
    host, bound = sock.getsockname()
    cluster.host = f"{host}:{bound}"
    with tempfile.TemporaryDirectory(prefix="fakekube-") as tmp:
        ca = cluster_ca(Path(tmp) / "pki") if tls else None
        base_url = f"{'https' if tls else 'http'}://{host}:{bound}"
        server_tls: dict[str, Any] = {"http": _OneWriteProtocol}
        if ca is not None:
            serving = ca.serving((host, "localhost"))
            server_tls = {
                "ssl_certfile": str(serving.cert),
                "ssl_keyfile": str(serving.key),
                "ssl_ca_certs": str(ca.cert),
                "ssl_cert_reqs": ssl.CERT_OPTIONAL,
                "http": _PeerCertProtocol,
            }
        server = _Server(
            uvicorn.Config(
                build_app(cluster),
                log_level="warning",
                access_log=False,
                lifespan="off",
                timeout_graceful_shutdown=2,
                **server_tls,
            )
        )
        started = threading.Event()
        box: dict[str, Any] = {}
        thread = threading.Thread(
            target=_serve, args=(cluster, sock, server, started, box), name="fakekube", daemon=True
        )
        path = write_kubeconfig(
            kubeconfig or Path(tmp) / "kubeconfig",
            base_url,
            token=cluster.auth.admin_token,
            ca_pem=None if ca is None else ca.pem,
        )
        thread.start()
        started.wait(30)
        while "error" not in box and not server.started and thread.is_alive():
            threading.Event().wait(0.01)
        if "error" in box or not server.started:
            raise TemporaryError(
                f"the fake API server did not start on {base_url}: {box.get('error')!r}"
            )
        handle = FakeKube(cluster, box["loop"], base_url, path, ca)
        try:
            yield handle
        finally:
            with contextlib.suppress(Exception):  # the loop may already be gone
                handle.drop_watches()
            server.stop_from(box["loop"])
            thread.join(15)
            sock.close()
