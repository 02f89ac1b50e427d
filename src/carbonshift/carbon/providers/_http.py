"""The HTTP layer shared by every live provider: timeouts, retries with back-off, 429.

Only this module and the provider modules speak HTTP (httpx). Failures are translated at the
boundary into the error families of :mod:`carbonshift.errors`:

- no answer, 5xx, 429 past the retry budget: :class:`TemporaryError` (``delay_s`` set);
- 401/403: :class:`AuthError`; unknown zone: :class:`UnknownZoneError` (both permanent);
- a body that is not the documented JSON: :class:`UpstreamFormatError` (temporary), a body
  above :data:`MAX_REPLY_BYTES` once decoded (gzip) among them: it is read as it arrives and
  the connection closed past the limit, so that a broken or hostile service cannot fill the
  memory of the controller, the hub or ``serve``.

Every message is scrubbed of the provider's secrets before it is raised or logged.
"""

from __future__ import annotations

import email.utils
import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx

from carbonshift.bounded import (
    BoundedBuffer,
    BoundedDecoder,
    TooLargeError,
    UndecodableError,
    shown_bytes,
)
from carbonshift.carbon.providers.clock import Clock, SystemClock
from carbonshift.carbon.providers.secrets import Secret, scrub
from carbonshift.errors import PermanentError, TemporaryError

__all__ = [
    "MAX_REPLY_BYTES",
    "AuthError",
    "HttpSource",
    "RetryPolicy",
    "ScrubSecrets",
    "UnknownZoneError",
    "UpstreamFormatError",
]

_LOG = logging.getLogger("carbonshift.carbon.providers")

#: the most bytes a provider's answer may hold once decoded (16 MiB): the longest answer
#: asked for, WattTime's 31 days of 5-minute points, is about 0.5 MiB of JSON
MAX_REPLY_BYTES = 16 << 20

# Credentials as libraries log them at debug level: httpcore's header tuples
# (b'auth-token', b'...'), "Authorization: Bearer ...", and token=/key= in URLs.
_SECRET_PATTERNS = (
    re.compile(
        r"(\(b['\"](?:authorization|auth-token|x-api-key|api-key|apikey|x-auth-token)['\"],\s*b)"
        r"(['\"])[^'\"]*\2",
        re.IGNORECASE,
    ),
    re.compile(
        r"((?:authorization|auth-token|x-api-key|api-key|apikey)['\"]?\s*[:=]\s*['\"]?)"
        r"(?:bearer\s+|basic\s+)?[^\s'\",;&)]+",
        re.IGNORECASE,
    ),
    re.compile(r"((?:[?&]|\b)(?:token|api_key|apikey|key|access_token)=)[^&\s'\"]+", re.IGNORECASE),
    re.compile(r"(\bbearer\s+)[A-Za-z0-9._~+/=-]+", re.IGNORECASE),
)


def _mask(match: re.Match[str]) -> str:
    """The credential's prefix (and its closing quote, when quoted) around ``***``."""
    quote = match.group(2) if match.lastindex == 2 else ""
    return f"{match.group(1)}{quote}***{quote}"


class ScrubSecrets(logging.Filter):
    """A handler filter that masks provider keys and credential headers in every record.

    Known values (the keys carbonshift was given) become ``***`` wherever they appear;
    ``Authorization``/``auth-token`` headers, ``Bearer`` tokens and ``token=`` parameters
    are masked whatever their value (an upstream may echo a key back, and httpcore logs
    response headers at debug level).
    """

    values: ClassVar[set[str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler
            return True
        clean = text
        for value in sorted(self.values, key=len, reverse=True):
            clean = clean.replace(value, "***")
        for pattern in _SECRET_PATTERNS:
            clean = pattern.sub(_mask, clean)
        if clean != text:
            record.msg, record.args = clean, None
        return True

    @classmethod
    def install(cls, *secrets: Secret | None) -> None:
        """Remember ``secrets`` and filter every handler of the root logger (idempotent)."""
        for secret in secrets:
            if secret is not None and len(secret.reveal()) >= 4:
                cls.values.add(secret.reveal())
        for handler in logging.getLogger().handlers:
            if not any(isinstance(f, cls) for f in handler.filters):
                handler.addFilter(cls())


class AuthError(PermanentError):
    """The service refused the credentials (HTTP 401 or 403; 0 when none were configured)."""

    def __init__(self, message: str, *, status_code: int = 0) -> None:
        super().__init__(message)
        self.status_code = status_code


class UnknownZoneError(PermanentError):
    """The service does not know the zone or region asked for."""


class UpstreamFormatError(TemporaryError):
    """The service answered, but not with the documented shape."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How patiently a provider talks to its service.

    ``attempts`` tries in all; the wait before try ``n+1`` is ``backoff_s * factor**(n-1)``,
    capped at ``max_backoff_s``. A 429 waits its ``Retry-After`` (seconds or HTTP date) when
    that is at most ``max_retry_after_s``; a longer one fails at once with that delay.
    """

    attempts: int = 3
    timeout_s: float = 10.0
    backoff_s: float = 0.5
    backoff_factor: float = 2.0
    max_backoff_s: float = 30.0
    max_retry_after_s: float = 60.0

    def backoff_after(self, attempt: int) -> float:
        """Seconds to wait after failed try number ``attempt`` (1-based)."""
        return min(self.max_backoff_s, self.backoff_s * self.backoff_factor ** (attempt - 1))


#: (response) -> an exception to raise for a 4xx other than 401/403/429, or None for default.
ClientErrorHook = Callable[[httpx.Response], Exception | None]


class HttpSource:
    """A JSON-over-HTTP service at ``base_url`` reached through one :class:`httpx.Client`."""

    def __init__(
        self,
        name: str,
        base_url: str,
        *,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        secrets: tuple[Secret | None, ...] = (),
        auth_hint: str = "check the key",
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.clock = clock or SystemClock()
        self.secrets = secrets
        ScrubSecrets.install(*secrets)
        self.auth_hint = auth_hint
        self._client = httpx.Client(
            base_url=self.base_url,
            timeout=self.retry.timeout_s,
            transport=transport,
            # the codings BoundedDecoder reads (httpx would add br or zstd when installed)
            headers={"user-agent": "carbonshift", "accept-encoding": "gzip, deflate"},
        )
        self.requests_made = 0

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def _scrub(self, text: str) -> str:
        return scrub(text, self.secrets)

    def get_json(
        self,
        path: str,
        *,
        params: Mapping[str, str | list[str]] | None = None,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | tuple[str, str] | None = None,
        on_client_error: ClientErrorHook | None = None,
    ) -> Any:
        """GET ``path`` and decode its JSON body, retrying what may go away."""
        policy = self.retry
        last: TemporaryError | None = None
        for attempt in range(1, policy.attempts + 1):
            try:
                self.requests_made += 1
                response = self._get(path, params, headers, auth)
            except httpx.TimeoutException as exc:
                last = TemporaryError(
                    f"{self.name}: no answer from {self.base_url}{path} within "
                    f"timeout_s {policy.timeout_s} s after {attempt} tries; check the network "
                    "or raise the timeout",
                    delay_s=policy.backoff_after(attempt),
                )
                last.__cause__ = exc
            except httpx.TransportError as exc:
                reason = self._scrub(type(exc).__name__)
                last = TemporaryError(
                    f"{self.name}: cannot reach {self.base_url}{path} ({reason}) after "
                    f"{attempt} tries; check the network and the base URL",
                    delay_s=policy.backoff_after(attempt),
                )
                last.__cause__ = exc
            else:
                _LOG.debug("%s GET %s -> %s", self.name, path, response.status_code)
                if response.status_code == 429:
                    wait_s = _retry_after_s(response, self.clock, policy.backoff_after(attempt))
                    last = TemporaryError(
                        f"{self.name}: rate limited (HTTP 429), Retry-After {wait_s:g} s; "
                        "ask less often or raise the plan's quota",
                        delay_s=wait_s,
                    )
                    if wait_s > policy.max_retry_after_s or attempt == policy.attempts:
                        raise last
                    self.clock.sleep(wait_s)
                    continue
                if response.status_code == 204:
                    return None
                if response.status_code >= 500:
                    # a 503 may say when to come back; beyond the budget, give up at once
                    wait_s = _retry_after_s(response, self.clock, policy.backoff_after(attempt))
                    last = TemporaryError(
                        f"{self.name}: server error HTTP {response.status_code} from "
                        f"{self.base_url}{path} after {attempt} tries; retry later",
                        delay_s=wait_s,
                    )
                    if wait_s > policy.max_retry_after_s:
                        raise last
                elif response.status_code in (401, 403):
                    raise AuthError(
                        f"{self.name}: the service refused the credentials "
                        f"(HTTP {response.status_code}); {self.auth_hint}",
                        status_code=response.status_code,
                    )
                elif response.status_code >= 400:
                    hooked = on_client_error(response) if on_client_error is not None else None
                    if hooked is not None:
                        raise hooked
                    raise PermanentError(
                        f"{self.name}: HTTP {response.status_code} for {path}: "
                        f"{self.body_snippet(response)}"
                    )
                else:
                    return self._decode(response, path)
            if attempt < policy.attempts:
                self.clock.sleep(
                    last.delay_s if last is not None else policy.backoff_after(attempt)
                )
        assert last is not None
        raise last

    def _get(
        self,
        path: str,
        params: Mapping[str, str | list[str]] | None,
        headers: Mapping[str, str] | None,
        auth: httpx.Auth | tuple[str, str] | None,
    ) -> httpx.Response:
        """GET ``path``, its body read (decoded) up to :data:`MAX_REPLY_BYTES`; past it
        :class:`UpstreamFormatError` and the connection is closed."""
        request = self._client.build_request("GET", path, params=params, headers=headers)
        response = self._client.send(
            request, auth=auth if auth is not None else httpx.USE_CLIENT_DEFAULT, stream=True
        )
        body = BoundedBuffer(
            MAX_REPLY_BYTES,
            what=f"{self.name}: {path}'s answer (decoded)",
            fix="the service may be broken, or the base URL points elsewhere: check it",
        )
        coding = response.headers.get("content-encoding")
        try:
            # raw bytes, decoded here in bounded pieces: httpx's own decoding expands each
            # network read (up to 64 KiB, about 64 MiB of a gzip bomb) at once
            body.expect(response.headers.get("content-length"))
            raws: Iterable[bytes]
            if response.is_stream_consumed:
                # an answer made whole in memory (httpx.MockTransport): httpx decoded it
                raws, decoder = [response.content], BoundedDecoder(None, body)
            else:
                raws, decoder = response.iter_raw(), BoundedDecoder(coding, body)
            for raw in raws:
                decoder.feed(raw)
            decoder.end()
        except TooLargeError as exc:
            raise UpstreamFormatError(
                f"{self.name}: {path} answered {exc.size_text}, above the limit of "
                f"{shown_bytes(MAX_REPLY_BYTES)} for one answer (decoded); the service may be "
                "broken, or the base URL points elsewhere: check it"
            ) from exc
        except UndecodableError as exc:
            raise UpstreamFormatError(
                f"{self.name}: {path} answered a body that does not decode "
                f"({coding or 'no encoding'}); retry later"
            ) from exc
        finally:
            response.close()
        response._content = body.take()  # what response.read() keeps: .text, .json()
        return response

    def body_snippet(self, response: httpx.Response, limit: int = 200) -> str:
        """The start of a response body, secrets removed, on one line."""
        text = " ".join(response.text.split())
        return self._scrub(text[:limit])

    def _decode(self, response: httpx.Response, path: str) -> Any:
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UpstreamFormatError(
                f"{self.name}: {path} answered HTTP {response.status_code} with a body that is "
                f"not JSON ({self.body_snippet(response, 60)!r}); the service may be degraded, "
                "retry later"
            ) from exc


def _retry_after_s(response: httpx.Response, clock: Clock, default_s: float) -> float:
    """The wait a 429 asks for: ``Retry-After`` as seconds or an HTTP date, else ``default_s``."""
    header = response.headers.get("retry-after")
    if header is None:
        return default_s
    header = header.strip()
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return default_s
    return max(0.0, (when - clock.now()).total_seconds())
