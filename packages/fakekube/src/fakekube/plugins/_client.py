"""A small JSON client of a fake cluster's HTTP API, for the emulated controllers here.

The emulations run as clients of the fake servers (as the real Kueue and MCAD do), never
inside them, so several fake clusters in several threads stay independent.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import httpx

from fakekube._time import parse_utc
from fakekube.errors import TemporaryError

__all__ = ["FakeClient", "TransientError", "WriteConflictError", "api_path"]

Obj = dict[str, Any]


def api_path(api_version: str, plural: str, namespace: str = "", name: str = "") -> str:
    """``/api/v1/...`` or ``/apis/<group>/<version>/...`` for a resource."""
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    ns = f"/namespaces/{namespace}" if namespace else ""
    tail = f"/{name}" if name else ""
    return f"{base}{ns}/{plural}{tail}"


class TransientError(TemporaryError):
    """A 429 or 5xx answer (e.g. an injected fault) or no answer at all (connection refused,
    timeout): the emulator tries again next pass."""


class WriteConflictError(TransientError):
    """A 409 to a write (a stale resourceVersion, or an injected fault): nothing was written;
    the emulator re-reads and tries again next pass."""


def _check(answer: httpx.Response) -> None:
    if answer.status_code == 429 or answer.status_code >= 500:
        raise TransientError(f"{answer.request.method} {answer.request.url}: {answer.status_code}")
    if answer.is_error:  # the server's Status message says what was refused and why
        request = f"{answer.request.method} {answer.request.url}"
        raise httpx.HTTPStatusError(
            f"{request}: {answer.status_code} {answer.text[:500]}",
            request=answer.request,
            response=answer,
        )


class FakeClient:
    """JSON verbs against one fake cluster; a 404 on get answers None."""

    def __init__(self, base_url: str, token: str = "", ca_file: str | None = None) -> None:
        self.base_url = base_url
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # over TLS (run_fakekube(tls=True)) the cluster's CA verifies the server
        verify: ssl.SSLContext | bool = (
            ssl.create_default_context(cafile=ca_file) if ca_file is not None else True
        )
        self.http = httpx.AsyncClient(base_url=base_url, timeout=30, headers=headers, verify=verify)
        self.writes = 0

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return await self.http.request(method, path, **kwargs)
        except httpx.TransportError as exc:  # the cluster does not answer: a lost worker
            raise TransientError(f"{method} {self.base_url}{path}: no answer ({exc!r})") from exc

    async def close(self) -> None:
        await self.http.aclose()

    async def now(self) -> datetime:
        answer = await self._send("GET", "/fakekube/clock")
        _check(answer)
        return parse_utc(str(answer.json()["now"]))

    async def get(self, path: str) -> Obj | None:
        answer = await self._send("GET", path)
        if answer.status_code == 404:
            return None
        _check(answer)
        result: Obj = answer.json()
        return result

    async def list(self, path: str, **query: str) -> list[Obj]:
        answer = await self._send("GET", path, params=query)
        if answer.status_code == 404:
            return []
        _check(answer)
        items: list[Obj] = answer.json().get("items") or []
        return items

    async def create(self, path: str, body: Obj) -> Obj | None:
        """Create; None when it already exists (409)."""
        answer = await self._send("POST", path, json=body)
        if answer.status_code == 409:
            return None
        _check(answer)
        self.writes += 1
        result: Obj = answer.json()
        return result

    async def replace_status(self, path: str, body: Obj) -> bool:
        """PUT the status subresource (:class:`WriteConflictError` on a 409; False when gone)."""
        return await self.replace(f"{path}/status", body)

    async def replace(self, path: str, body: Obj) -> bool:
        """PUT the object (e.g. MCAD's dispatcher writing ``spec.dispatcherStatus``);
        :class:`WriteConflictError` on a 409, so that no later write of the pass builds on it;
        False when it is gone."""
        return self._written(await self._send("PUT", path, json=body), path)

    async def patch(self, path: str, body: Obj) -> bool:
        """JSON merge patch (RFC 7386); :class:`WriteConflictError` on a 409; False when gone."""
        answer = await self._send(
            "PATCH",
            path,
            content=json.dumps(body),
            headers={"Content-Type": "application/merge-patch+json"},
        )
        return self._written(answer, path)

    async def apply(self, path: str, body: Obj, field_manager: str) -> bool:
        """Server-side apply (force) as ``field_manager``; :class:`WriteConflictError` on a
        409 (e.g. a stale ``metadata.resourceVersion`` in ``body``); False when gone."""
        answer = await self._send(
            "PATCH",
            path,
            params={"fieldManager": field_manager, "force": "true"},
            content=json.dumps(body),
            headers={"Content-Type": "application/apply-patch+yaml"},
        )
        return self._written(answer, path)

    def _written(self, answer: httpx.Response, path: str) -> bool:
        """True when a write landed; False when the object is gone; raises on a 409."""
        if answer.status_code == 404:
            return False
        if answer.status_code == 409:  # a conflict (or an injected one): not written, retry
            raise WriteConflictError(f"{answer.request.method} {path}: 409 {answer.text[:200]}")
        _check(answer)
        self.writes += 1
        return True

    async def delete(self, path: str) -> bool:
        answer = await self._send(
            "DELETE",
            path,
            json={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
        )
        if answer.status_code == 404:
            return False
        _check(answer)
        self.writes += 1
        return True


class Emulator:
    """What the Kueue and MCAD emulations share: a client of the fake hub and one per worker,
    and :meth:`settle`, which reconciles until a pass writes nothing and fails nothing."""

    #: passes :meth:`settle` takes at most by default
    max_passes = 10

    def __init__(
        self,
        hub_url: str,
        workers: Mapping[str, str],
        tokens: Mapping[str, str] | None = None,
        ca_files: Mapping[str, str] | None = None,
    ) -> None:
        # tokens: bearer token per base URL, for clusters that enforce RBAC (the admin's:
        # the emulated Kueue and MCAD run as cluster-wide system controllers); ca_files: the
        # CA certificate file per base URL of a cluster served over TLS
        tokens = tokens or {}
        cas = ca_files or {}
        self.hub = FakeClient(hub_url, tokens.get(hub_url, ""), cas.get(hub_url))
        self.workers = {
            name: FakeClient(url, tokens.get(url, ""), cas.get(url))
            for name, url in workers.items()
        }
        self.failures = 0
        self.created: dict[str, int] = {}
        """Objects created in workers, per hub object (``namespace/name``)."""

    async def close(self) -> None:
        await self.hub.close()
        for worker in self.workers.values():
            await worker.close()

    async def settle(self, max_passes: int | None = None) -> int:
        """Reconcile until a pass writes nothing; answers the passes taken."""
        limit = self.max_passes if max_passes is None else max_passes
        for n in range(1, limit + 1):
            failures = self.failures
            try:
                if not await self.reconcile() and self.failures == failures:
                    return n
            except TransientError:  # an injected fault: try again, as the real controller would
                continue
        return limit

    async def reconcile(self) -> int:
        """One pass; answers the writes made."""
        raise NotImplementedError

    def writes(self) -> int:
        """Writes made so far, on the hub and every worker."""
        return self.hub.writes + sum(w.writes for w in self.workers.values())
