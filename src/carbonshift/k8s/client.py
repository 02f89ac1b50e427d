"""A thin JSON client of the Kubernetes API over kubernetes-asyncio, with retries.

The controller speaks plain JSON (``dict``) to the API: the same objects the webhook and
the intent parser see. :class:`Kube` is the interface it consumes; :class:`ApiKube` is the
implementation over ``kubernetes_asyncio.client.ApiClient`` (authentication, TLS and
kubeconfig handling stay the library's). Answers the caller can act on become exceptions:
:class:`ConflictError` (409: re-read and retry), :class:`GoneError` (410: relist),
:class:`NotFoundError`, :class:`InvalidError` (422). 429 and 5xx answers and dropped
connections are retried with exponential backoff (honouring ``Retry-After``) through the
clock seam, then raised as
:class:`~carbonshift.errors.TemporaryError`. Every request but a watch first takes a token
of the client-side rate limit, when one is set (:class:`~carbonshift.k8s.flowcontrol.TokenBucket`,
the controller's ``client_connection.qps`` and ``.burst``), retries included, as client-go.
Requests go to the library's aiohttp session directly (:class:`DirectSend`), with the
library's authentication, TLS and proxy settings, not through its generic ``call_api``; they
go, watches included, when no proxy is configured, over :mod:`carbonshift.k8s.wire`'s
connections instead of the session (``CARBONSHIFT_K8S_TRANSPORT=aiohttp`` keeps the session).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import logging
import os
import re
import ssl
import urllib.parse
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Protocol

from carbonshift._extras import require
from carbonshift.bounded import BoundedDecoder, TooLargeError, UndecodableError
from carbonshift.errors import CarbonshiftError, InputError, TemporaryError
from carbonshift.k8s.clock import Clock
from carbonshift.k8s.flowcontrol import TokenBucket, bucket_or_none
from carbonshift.k8s.wire import (
    Answer,
    LeanPool,
    WatchStream,
    WireError,
    answer_buffer,
    answer_refused,
    available,
)

__all__ = [
    "FIELD_MANAGER",
    "USER_AGENT",
    "ApiKube",
    "ConflictError",
    "GoneError",
    "InvalidError",
    "Kube",
    "KubeError",
    "NotFoundError",
    "connect",
    "error_for",
    "set_user_agent",
]

_LOG = logging.getLogger("carbonshift.k8s")
Obj = dict[str, Any]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
#: Who writes: the ``fieldManager`` of every create, replace and patch (managedFields show
#: it) and the User-Agent of every request (the API server's audit log shows it).
FIELD_MANAGER = "carbonshift"
USER_AGENT = "carbonshift"


try:  # optional: not a dependency (bench/controller.md, 2026-11-27, has what it saves)
    _orjson: Any = importlib.import_module("orjson")
except ImportError:
    _orjson = None


def parse_json(raw: bytes | str) -> Any:
    """An answer or watch event parsed: by orjson when it is installed (about 2.6 times as
    fast as ``json.loads`` on a Pod; parsing is a tenth of the controller's first pass over
    10,000 Pods), else by ``json.loads``. What orjson refuses and ``json`` takes (a lone
    surrogate escape) goes to ``json.loads``, which raises ``ValueError`` for what is no JSON.
    (orjson reads an integer beyond 64 bits as a float; the API server sends none: its own
    decoding, apimachinery's, already turns a number beyond int64 into a float64.)"""
    if _orjson is not None:
        try:
            return _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(raw)


def dump_json(body: Any) -> bytes:
    """A request body as JSON bytes: by orjson when it is installed (faster than
    ``json.dumps`` on our patches), else by ``json.dumps``. What ``json.dumps`` refuses
    (a datetime, a dataclass, a model object, a key that is not a string) orjson is told
    to refuse too (its ``OPT_PASSTHROUGH_*``): either way ``TypeError`` (orjson's
    ``JSONEncodeError`` is one) before anything is sent, and the caller hands the body to
    the library's walk (:func:`library_json`)."""
    if _orjson is not None:
        try:
            return bytes(_orjson.dumps(body, option=_ORJSON_STRICT))
        except _orjson.JSONEncodeError as exc:
            if _ORJSON_TOO_BIG not in str(exc):
                raise
            # an integer past 64 bits, which json.dumps writes as it is
    return json.dumps(body).encode()


_ORJSON_TOO_BIG = "Integer exceeds 64-bit range"
_ORJSON_STRICT = (
    0
    if _orjson is None
    else _orjson.OPT_PASSTHROUGH_DATETIME
    | _orjson.OPT_PASSTHROUGH_DATACLASS
    | _orjson.OPT_PASSTHROUGH_SUBCLASS
)
#: query names whose values repeat from request to request (their encoded strings are kept)
_FIXED_QUERY_NAMES = frozenset({"fieldManager", "force", "labelSelector", "limit", "fieldSelector"})
_REMEMBERED_QUERIES = 64


def set_user_agent(api_client: Any) -> Any:
    """Name carbonshift as the User-Agent of a kubernetes-asyncio ``ApiClient`` (its default
    is ``OpenAPI-Generator/...``); answers the client."""
    try:
        from importlib.metadata import version

        api_client.user_agent = f"{USER_AGENT}/{version('carbonshift')}"
    except Exception:  # not installed as a distribution (a source checkout)
        api_client.user_agent = USER_AGENT
    return api_client


def skip_env_lookups(api_client: Any) -> bool:
    """Turn off the per-request proxy and ``.netrc`` lookups of kubernetes-asyncio's aiohttp
    session when the environment has neither; answers whether they were turned off.

    The session is built with ``trust_env=True``, so every request looks both up in a worker
    thread: about 0.3 ms of CPU per request (0.47 against 0.16 ms for a GET against the fake
    API server), most of a controller's cost per write. With no proxy variable and no netrc
    file the lookups find nothing, so skipping them changes no request.
    """
    if urllib.request.getproxies() or os.environ.get("NETRC"):
        return False
    with contextlib.suppress(RuntimeError, KeyError):  # no home directory: nothing to read
        if os.path.exists(os.path.expanduser("~/.netrc")):
            return False
    session = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
    if session is None or not hasattr(session, "_trust_env"):
        return False  # another aiohttp or client version: leave it as it is
    session._trust_env = False
    return True


def send_plain_json(api_client: Any) -> Any:
    """Let a kubernetes-asyncio ``ApiClient`` send our bodies as they are: plain JSON of our
    dicts, without its serialiser walk; answers the client.

    ``call_api`` passes every body through ``sanitize_for_serialization``, which rebuilds it
    dict by dict and value by value to turn the library's model objects and datetimes into
    JSON types (about 6 % of the controller's CPU in a profile of its first pass over 10,000
    Pods), then ``json.dumps`` it. Our bodies are dicts parsed from JSON or built of str,
    int, float, bool, None, lists and dicts, which ``json.dumps`` takes as they are. Anything
    else (a datetime, a model object) makes ``json.dumps`` raise ``TypeError`` before the
    request is sent; :meth:`ApiKube._call` then sends that body through the library's whole
    walk (:func:`library_json`).
    """
    walk = getattr(api_client, "sanitize_for_serialization", None)
    if walk is None:
        return api_client  # another client (a test double): it serialises as it does

    def sanitize(obj: Any) -> Any:
        return obj if type(obj) is dict else walk(obj)

    api_client.sanitize_for_serialization = sanitize
    return api_client


def library_json(api_client: Any, body: Any) -> Any:
    """``body`` as kubernetes-asyncio's own serialiser makes it, all the way down (datetimes
    as ISO 8601, model objects as their dicts): its walk, on an object that does not have
    :func:`send_plain_json`'s shortcut (the walk recurses through
    ``self.sanitize_for_serialization``)."""
    library = type(api_client)
    walker = type(
        "LibraryWalk",
        (),
        {
            "PRIMITIVE_TYPES": library.PRIMITIVE_TYPES,
            "sanitize_for_serialization": library.sanitize_for_serialization,
        },
    )()
    return walker.sanitize_for_serialization(body)


def _auth_hook_as_known(api_client: Any) -> bool:
    """Whether the library's ``update_params_for_auth`` is the coroutine
    ``(headers, queries, auth_settings, ...)`` that :class:`DirectSend` calls (as in
    kubernetes-asyncio 36). Another release of the library keeps ``call_api``."""
    hook = getattr(api_client, "update_params_for_auth", None)
    if hook is None or not inspect.iscoroutinefunction(hook):
        return False
    try:
        names = list(inspect.signature(hook).parameters)
    except (TypeError, ValueError):
        return False
    return names[:3] == ["headers", "queries", "auth_settings"]


class DirectSend:
    """kubernetes-asyncio's request path for plain JSON, without its generic per-call work:
    a request goes straight to the library's aiohttp session (its TLS, client certificate,
    proxy and server name as configured), with the library's authentication.

    ``call_api`` then ``RESTClientObject.request`` serve every generated API method: they
    sanitise the headers and query, copy them into tuples, check the method and content type
    by regular expression and build a timeout object on every call: 0.02-0.04 ms of the
    0.15-0.26 ms of CPU a PATCH against the fake API server costs us (bench/controller.md,
    2026-11-27), 10,000 of them in the first pass over 10,000 held Pods. Here the request is
    built from what the library would have sent: ``Accept`` and ``Content-Type``, its default
    headers (our User-Agent) and cookie, its ``BearerToken`` setting asked afresh per request
    (``update_params_for_auth``: a refreshed exec or service-account token is picked up),
    the URL as the library's ``host + path + "?" + urlencode(query)``, the body as
    ``json.dumps`` (a body JSON cannot take raises ``TypeError`` before anything is sent,
    as with :func:`send_plain_json`), the timeout as the library's ``ClientTimeout(total=)``.

    A request goes over :class:`~carbonshift.k8s.wire.LeanPool` (:attr:`lean`; a watch, the
    one request without a time limit, on a connection of its own:
    :meth:`~carbonshift.k8s.wire.LeanPool.watch`) when the session would connect straight to
    the API server: no proxy in the configuration nor the environment
    (:func:`skip_env_lookups` turned its lookups off), an ``http`` or ``https`` URL, for
    ``https`` the connector's own ``ssl.SSLContext``; and not when
    ``CARBONSHIFT_K8S_TRANSPORT`` is ``aiohttp``. It sends what the session would, less
    aiohttp's ``Accept-Encoding: gzip, deflate`` (answers come unencoded: no compressing on
    the server, no decompressing here), but for lists, which ask for gzip (:data:`LIST_GZIP`),
    and less the session's cookie jar (the API server sets no cookie). A header value with a
    line break, which aiohttp refuses, goes to the session.
    """

    def __init__(self, api_client: Any, session: Any) -> None:
        import aiohttp

        self._api = api_client
        self._session = session
        rest = api_client.rest_client
        self._extra: dict[str, Any] = {}
        if getattr(rest, "proxy", None):
            self._extra["proxy"] = rest.proxy
        if getattr(rest, "proxy_headers", None):
            self._extra["proxy_headers"] = rest.proxy_headers
        if getattr(rest, "server_hostname", None):
            self._extra["server_hostname"] = rest.server_hostname
        # by seconds; None (a watch): no timeout, as the library's ClientTimeout()
        self._timeouts: dict[float | None, Any] = {None: aiohttp.ClientTimeout()}
        self._timeout = aiohttp.ClientTimeout
        #: encoded query strings by their (name, value) pairs: nearly every write sends the
        #: same ``fieldManager=carbonshift`` (``urlencode`` costs about as much as the rest of
        #: building the request; bench/controller.md, "Per-request and per-workload CPU")
        self._queries: dict[tuple[tuple[str, str], ...], str] = {}
        #: the lean transport's connections (None: every request through the session)
        self.lean = _lean_pool(api_client, session, self._extra)

    @classmethod
    def of(cls, api_client: Any) -> DirectSend | None:
        """The direct path for a kubernetes-asyncio ``ApiClient`` over an aiohttp session;
        None for anything else (a test double, another client): it keeps ``call_api``."""
        try:
            import aiohttp
            from kubernetes_asyncio.client import ApiClient
        except ImportError:
            return None
        session = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
        if not isinstance(api_client, ApiClient) or not isinstance(session, aiohttp.ClientSession):
            return None
        if not _auth_hook_as_known(api_client):
            return None
        return cls(api_client, session)

    def _query_string(self, queries: list[tuple[str, str]]) -> str:
        """``urlencode(queries)``, remembered for the few that repeat (a watch's or a list
        page's carry a resourceVersion or a continue token: those are encoded each time)."""
        key = tuple(queries)
        found = self._queries.get(key)
        if found is None:
            found = urllib.parse.urlencode(queries)
            if len(self._queries) < _REMEMBERED_QUERIES and all(
                name in _FIXED_QUERY_NAMES for name, _ in queries
            ):
                self._queries[key] = found
        return found

    async def send(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None,
        body: Any,
        content_type: str,
        timeout_s: float | None,
        idle_s: float = 330.0,
        gzip: bool = False,
        batch_s: float = 0.0,
    ) -> Any:
        """The answer to one request: with ``timeout_s`` None a watch's (over the lean
        transport a :class:`~carbonshift.k8s.wire.WatchStream` that ends after ``idle_s``
        without a byte; through the session aiohttp's response, without a limit)."""
        api = self._api
        headers = {"Accept": "application/json", "Content-Type": content_type}
        headers.update(api.default_headers)
        if api.cookie:
            headers["Cookie"] = api.cookie
        queries = list((query or {}).items())
        await api.update_params_for_auth(headers, queries, ["BearerToken"])
        target = path + "?" + self._query_string(queries) if queries else path
        data = None if body is None else dump_json(body)
        lean = self.lean
        if lean is not None:
            fields = "".join([f"{name}: {value}\r\n" for name, value in headers.items()])
            n_lines = len(headers)  # else a value with a line break: aiohttp's (it refuses)
            if fields.count("\n") == n_lines and fields.count("\r") == n_lines:
                if timeout_s is None:  # a watch
                    return await lean.watch(
                        target,
                        fields,
                        start_timeout_s=WATCH_START_S,
                        idle_s=idle_s,
                        batch_s=batch_s,
                    )
                if gzip:
                    fields += "Accept-Encoding: gzip\r\n"
                return await lean.request(method, target, fields, data, timeout_s)
        url = api.configuration.host + target
        timeout = self._timeouts.get(timeout_s)
        if timeout is None:
            timeout = self._timeouts[timeout_s] = self._timeout(total=timeout_s)
        if timeout_s is None:  # a watch: aiohttp reads its lines (and decodes them)
            return await self._session.request(
                method, url, headers=headers, data=data, timeout=timeout, **self._extra
            )
        # the body as sent: _read_bounded decodes it in bounded pieces, where aiohttp would
        # decode what one network read holds before the bound applies; only the codings it
        # reads are asked for (aiohttp asks for br and zstd too where those are installed)
        headers["Accept-Encoding"] = "gzip, deflate"
        return RawAnswer(
            await self._session.request(
                method,
                url,
                headers=headers,
                data=data,
                timeout=timeout,
                auto_decompress=False,
                **self._extra,
            )
        )


class RawAnswer:
    """An aiohttp response asked for with ``auto_decompress=False``: its body comes as sent
    (gzip or deflate when the server coded it), for :func:`_read_bounded` to decode."""

    __slots__ = ("response",)

    def __init__(self, response: Any) -> None:
        self.response = response

    @property
    def status(self) -> int:
        return int(self.response.status)

    @property
    def headers(self) -> Any:
        return self.response.headers

    def release(self) -> None:
        self.response.release()


#: whether lists ask the API server for gzip over the lean transport: a real server
#: compresses answers over 128 KB when asked (a 500-Job page: 402 KiB of JSON, about 26 KiB
#: as gzip level 1, the server's), and decoding costs the client about 3 % of parsing it
#: (bench/hub.md, "Watches over the lean transport")
LIST_GZIP = True
#: seconds a watch may take to connect and answer its head (the lean transport's)
WATCH_START_S = 30.0
#: the ``timeoutSeconds`` a watch asks for: the API server ends the stream after it
WATCH_TIMEOUT_S = 300
#: seconds without a byte after which the lean transport ends a watch as stalled (the server
#: ends it at :data:`WATCH_TIMEOUT_S`, and sends a bookmark about once a minute before)
WATCH_IDLE_S = WATCH_TIMEOUT_S + 30.0
#: seconds a watch's socket is left unread after each batch of events, so that the echoes
#: of a controller's own writes come several to a wake-up of the event loop (bench/hub.md,
#: "Echoes read in batches"); an event waits at most this long more (0: read each at once)
WATCH_BATCH_S = 0.02

#: ``CARBONSHIFT_K8S_TRANSPORT``: ``lean`` (the default) or ``aiohttp`` (every request
#: through kubernetes-asyncio's aiohttp session, as before 2026-11-27)
TRANSPORT_ENV = "CARBONSHIFT_K8S_TRANSPORT"


def _lean_pool(api_client: Any, session: Any, extra: dict[str, Any]) -> LeanPool | None:
    """The lean transport's pool for ``api_client``'s API server, or None where the session
    must send (see :class:`DirectSend`)."""
    wanted = os.environ.get(TRANSPORT_ENV, "lean")
    if wanted not in ("lean", "aiohttp"):
        raise InputError(
            f"{TRANSPORT_ENV}={wanted!r} is not a transport; set it to 'lean' (the default) or "
            "'aiohttp', or unset it"
        )
    if not available() or wanted == "aiohttp":
        return None
    if "proxy" in extra or "proxy_headers" in extra or getattr(session, "_trust_env", True):
        return None  # a proxy, or proxy and .netrc lookups per request: aiohttp's
    configuration = api_client.configuration
    host = str(configuration.host)
    context = getattr(getattr(session, "connector", None), "_ssl", None)
    try:
        return LeanPool(
            host,
            ssl_context=context if isinstance(context, ssl.SSLContext) else None,
            server_hostname=extra.get("server_hostname"),
            limit=int(configuration.connection_pool_maxsize or 100),
        )
    except ValueError:  # a URL or TLS setting the lean transport does not take
        return None


class KubeError(CarbonshiftError):
    """The API answered an error status."""

    def __init__(self, status: int, message: str, reason: str = "") -> None:
        super().__init__(f"HTTP {status} {reason}: {message}".strip())
        self.status = status
        self.reason = reason


class ConflictError(KubeError):
    """409: the object changed since it was read; re-read it and try again."""


class GoneError(KubeError):
    """410: the resourceVersion is too old; relist."""


class NotFoundError(KubeError):
    """404: no such object."""


class InvalidError(KubeError):
    """422: the change breaks a validation rule."""


class ForbiddenError(KubeError):
    """403: RBAC does not grant our identity this verb on this resource; a misconfiguration
    to fix in the shipped RBAC, not an outage (trying again changes nothing)."""

    def denied(self) -> str:
        """What was refused, as ``list pods`` (``list jobs.batch in namespace x``), read from
        the API server's message (``responsewriters.forbiddenMessage``); else the message."""
        found = _DENIED.search(str(self))
        if found is None:
            return str(self)
        verb, resource, group, namespace = found.groups()
        where = f" in namespace {namespace}" if namespace else ""
        return f"{verb} {resource}{'.' + group if group else ''}{where}"


_DENIED = re.compile(
    r'cannot (\S+) resource "([^"]+)" in API group "([^"]*)"(?: in the namespace "([^"]*)")?'
)


_BY_STATUS: dict[int, type[KubeError]] = {
    403: ForbiddenError,
    409: ConflictError,
    410: GoneError,
    404: NotFoundError,
    422: InvalidError,
}


def error_for(status: int, body: Any) -> KubeError:
    """The exception for an error answer (``body`` a Status object or text)."""
    message, reason = str(body)[:300], ""
    if isinstance(body, dict):
        message = str(body.get("message", message))
        reason = str(body.get("reason", ""))
    return _BY_STATUS.get(status, KubeError)(status, message, reason)


class Kube(Protocol):
    """The API verbs the controller uses, on paths such as ``/api/v1/namespaces/ns/pods``."""

    async def get(self, path: str) -> Obj: ...

    async def list(self, path: str, **query: str) -> Obj: ...

    async def create(self, path: str, body: Obj) -> Obj: ...

    async def replace(self, path: str, body: Obj) -> Obj: ...

    async def patch(self, path: str, body: Any, content_type: str = MERGE_PATCH) -> Obj: ...

    def watch(self, path: str, resource_version: str, **query: str) -> AsyncIterator[Obj]: ...


class ApiKube:
    """:class:`Kube` over a kubernetes-asyncio ``ApiClient``."""

    def __init__(
        self,
        api_client: Any,
        clock: Clock,
        *,
        retries: int = 6,
        first_backoff_s: float = 0.2,
        limiter: TokenBucket | None = None,
    ) -> None:
        self._client = send_plain_json(set_user_agent(api_client))
        skip_env_lookups(api_client)
        self._direct = DirectSend.of(api_client)
        self._clock = clock
        self._retries = retries
        self._first_backoff_s = first_backoff_s
        #: the client-side rate limit of every request but watches (None: no limit)
        self.limiter = limiter
        #: seconds without a byte after which a watch over the lean transport ends (resumed
        #: by its informer); aiohttp's watches have no such limit
        self.watch_idle_s = WATCH_IDLE_S
        #: seconds a watch over the lean transport leaves its socket unread after each batch
        #: of events, so that the events arriving meanwhile come in one batch
        #: (:class:`~carbonshift.k8s.wire.WatchStream`); default :data:`WATCH_BATCH_S`
        #: (0.02), 0 reads each at once
        self.watch_batch_s = WATCH_BATCH_S

    async def close(self) -> None:
        if self._direct is not None and self._direct.lean is not None:
            self._direct.lean.close()
        await self._client.close()

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout_s: float | None = 30.0,
        gzip: bool = False,
    ) -> Any:
        """One request; returns the raw aiohttp response (the caller reads and releases it)."""
        if self._direct is not None:
            return await self._direct.send(
                method,
                path,
                query,
                body,
                content_type,
                timeout_s,
                self.watch_idle_s,
                gzip,
                self.watch_batch_s,
            )
        return await self._client.call_api(
            path,
            method,
            query_params=list((query or {}).items()),
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=timeout_s,
        )

    async def _call(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        gzip: bool = False,
    ) -> Obj:
        if method in ("POST", "PUT", "PATCH") and not (query or {}).get("fieldManager"):
            query = {**(query or {}), "fieldManager": FIELD_MANAGER}
        delay = self._first_backoff_s
        last = ""
        for attempt in range(self._retries + 1):
            if self.limiter is not None:
                await self.limiter.wait()
            try:
                try:
                    response = await self._send(
                        method, path, query=query, body=body, content_type=content_type, gzip=gzip
                    )
                except TypeError:
                    if body is None:
                        raise
                    # not plain JSON (send_plain_json): nothing was sent; the library's walk
                    body = library_json(self._client, body)
                    response = await self._send(
                        method, path, query=query, body=body, content_type=content_type
                    )
                try:
                    status = int(response.status)
                    raw = await _read_bounded(response)
                    retry_after = response.headers.get("Retry-After")
                finally:
                    response.release()
            except (OSError, TimeoutError) as exc:
                status, raw, retry_after = 0, str(exc).encode(), None
            except Exception as exc:  # aiohttp.ClientError and friends: transport failures
                if type(exc).__module__.startswith("aiohttp"):
                    status, raw, retry_after = 0, str(exc).encode(), None
                else:
                    raise
            try:
                parsed: Any = parse_json(raw) if raw else {}
            except ValueError:
                parsed = raw.decode(errors="replace")
            if 200 <= status < 300:
                if not isinstance(parsed, dict):
                    raise TemporaryError(f"{method} {path}: the API answered no JSON object")
                return parsed
            if status != 0 and status != 429 and status < 500:
                raise error_for(status, parsed)
            last = f"HTTP {status or 'connection error'}: {str(parsed)[:200]}"
            if attempt == self._retries:
                break
            wait = delay
            if retry_after is not None:
                with contextlib.suppress(ValueError):
                    wait = max(wait, float(retry_after))
            _LOG.info("%s %s failed (%s); retrying in %.2fs", method, path, last, wait)
            await self._clock.backoff(wait)
            delay = min(delay * 2, 10.0)
        raise TemporaryError(f"{method} {path} kept failing after {self._retries} retries: {last}")

    async def get(self, path: str) -> Obj:
        return await self._call("GET", path)

    async def list(self, path: str, **query: str) -> Obj:
        return await self._call("GET", path, query=query, gzip=LIST_GZIP)

    async def create(self, path: str, body: Obj) -> Obj:
        return await self._call("POST", path, body=body)

    async def replace(self, path: str, body: Obj) -> Obj:
        return await self._call("PUT", path, body=body)

    async def patch(self, path: str, body: Any, content_type: str = MERGE_PATCH) -> Obj:
        return await self._call("PATCH", path, body=body, content_type=content_type)

    async def delete(self, path: str, options: Obj | None = None) -> Obj:
        """Delete, with optional ``DeleteOptions`` (e.g. ``propagationPolicy``)."""
        return await self._call("DELETE", path, body=options)

    async def apply(self, path: str, body: Obj, field_manager: str, *, force: bool = True) -> Obj:
        """Server-side apply of ``body`` as ``field_manager`` (``force``: take the fields)."""
        query = {"fieldManager": field_manager, "force": "true" if force else "false"}
        return await self._call("PATCH", path, query=query, body=body, content_type=APPLY_PATCH)

    async def watch(self, path: str, resource_version: str, **query: str) -> AsyncIterator[Obj]:
        """Watch events (``{"type", "object"}``) from ``resource_version``, with bookmarks
        (``query``: e.g. ``labelSelector``).

        Ends when the server closes the stream, when the stream drops, or (over the lean
        transport) when no byte came for :attr:`watch_idle_s`: the caller resumes from the
        last event's version. An ``ERROR`` event with code 410 (or a 410 answer) raises
        :class:`GoneError`; a line that is no event object raises
        :class:`~carbonshift.errors.TemporaryError` (logged: the caller relists); other
        failures raise :class:`KubeError` or :class:`~carbonshift.errors.TemporaryError`.
        Over the lean transport events are read in bulk: every whole line that has arrived
        is parsed in one turn of the event loop.
        """
        query = {
            **query,
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(WATCH_TIMEOUT_S),
        }
        try:
            response = await self._send("GET", path, query=query, timeout_s=None)
        except (OSError, TimeoutError) as exc:
            raise TemporaryError(f"watch {path} could not start: {exc}") from exc
        try:
            if response.status != 200:
                try:
                    raw = await _read_bounded(response)
                except (OSError, TimeoutError) as exc:
                    raise TemporaryError(f"watch {path}: HTTP {response.status}: {exc}") from exc
                try:
                    body: Any = parse_json(raw)
                except ValueError:
                    body = raw.decode(errors="replace")
                if response.status == 429 or response.status >= 500:
                    raise TemporaryError(f"watch {path}: HTTP {response.status}")
                raise error_for(int(response.status), body)
            batches: AsyncGenerator[list[bytes], None]
            if isinstance(response, WatchStream):
                batches = response.lines()
            else:
                batches = _lines_of(response, path)
            try:
                async for lines in batches:
                    for line in lines:
                        if not line.strip():
                            continue
                        event = _event_of(line, path)
                        if event.get("type") == "ERROR":
                            status = event.get("object") or {}
                            raise error_for(int(status.get("code", 500)), status)
                        yield event
            except OSError as exc:  # the answer broke HTTP's framing
                raise TemporaryError(f"watch {path} failed: {exc}") from exc
            finally:
                await batches.aclose()
            if isinstance(response, WatchStream) and response.stalled:
                _LOG.info("watch %s stalled for %.0f s; resuming", path, self.watch_idle_s)
        finally:
            response.release()


async def _read_bounded(response: Any) -> bytes:
    """An answer's body, at most :data:`~carbonshift.k8s.wire.MAX_ANSWER_BYTES` as sent and
    once decoded, as the lean transport reads it. An aiohttp response (through a proxy, or
    without httptools) is read chunk by chunk, a :class:`RawAnswer`'s decoded here in bounded
    pieces, and closed past the bound, or before a byte is read when its ``Content-Length``
    declares more (:class:`~carbonshift.k8s.wire.AnswerTooLargeError`, retried as a dropped
    connection)."""
    raw = isinstance(response, RawAnswer)
    aiohttp_response = response.response if raw else response
    content: Any = getattr(aiohttp_response, "content", None)
    if isinstance(response, Answer) or not hasattr(content, "iter_any"):
        return bytes(await response.read())
    body = answer_buffer()
    coding = response.headers.get("Content-Encoding") if raw else None
    try:
        body.expect(response.headers.get("Content-Length"))
        decoder = BoundedDecoder(coding, body)
        async for chunk in content.iter_any():
            decoder.feed(chunk)
        decoder.end()
    except TooLargeError as exc:
        aiohttp_response.close()
        raise answer_refused(exc) from exc
    except UndecodableError as exc:
        aiohttp_response.close()
        raise WireError(f"the API server's {coding} answer does not decode: {exc.reason}") from exc
    return body.take()


def _event_of(line: bytes, path: str) -> Obj:
    """One watch event parsed; a line that is no JSON object raises
    :class:`~carbonshift.errors.TemporaryError`, logged (the informer relists)."""
    try:
        event = parse_json(line)
    except ValueError:
        event = None
    if not isinstance(event, dict) or not isinstance(event.get("object", {}), dict):
        _LOG.warning("watch %s sent a line that is no event: %r", path, line[:200])
        raise TemporaryError(f"watch {path} sent a line that is no event: {line[:80]!r}")
    return event


async def _lines_of(response: Any, path: str) -> AsyncGenerator[list[bytes], None]:
    """An aiohttp watch response's lines, one at a time; a dropped stream ends them."""
    while True:
        try:
            line = await response.content.readline()
        except Exception as exc:  # a dropped stream ends the watch; the caller resumes
            _LOG.info("watch %s ended: %s", path, exc)
            return
        if not line:
            return
        yield [line]


async def connect(
    kubeconfig: str | None, clock: Clock, *, qps: float = 0.0, burst: int = 0
) -> ApiKube:
    """An :class:`ApiKube` from a kubeconfig file, or the in-cluster service account;
    ``qps`` > 0 limits its requests to ``qps`` per second with bursts of ``burst``."""
    require("kubernetes_asyncio", needed_for="the Kubernetes client")  # carbonshift[k8s]
    from kubernetes_asyncio import client, config

    if kubeconfig:
        api_client = await config.new_client_from_config(config_file=kubeconfig)
    else:
        try:
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            api_client = client.ApiClient(configuration)
        except config.ConfigException:
            api_client = await config.new_client_from_config()
    return ApiKube(api_client, clock, limiter=bucket_or_none(qps, burst))
