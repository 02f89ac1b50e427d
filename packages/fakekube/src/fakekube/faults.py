"""Fault injection: refuse, delay or cut requests, for a share of them or at chosen moments.

A :class:`Fault` matches requests by verb, resource and name (``None`` matches anything) and
then answers with an error code (409 Conflict, 429 TooManyRequests with ``Retry-After``,
500 InternalError, 503, 504), adds latency, or both; ``probability`` takes a share of the
matching requests (drawn from a seeded generator, so runs repeat) and ``times`` bounds how
often it fires. Open watches are cut with ``FakeKube.drop_watches()``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from fakekube._errors import ApiError
from fakekube.errors import ConfigError

__all__ = ["Fault", "FaultInjector"]

_REASONS = {
    409: None,
    429: None,
    500: None,
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "the server was unable to return a response in the time allotted"),
}


@dataclass(slots=True)
class Fault:
    """One rule. ``verb`` is get, list, watch, create, update, patch, delete."""

    code: int | None = None
    latency_s: float = 0.0
    verb: str | None = None
    resource: str | None = None
    name: str | None = None
    probability: float = 1.0
    times: int | None = None

    def __post_init__(self) -> None:
        if self.code is not None and self.code not in _REASONS:
            raise ConfigError(
                f"fault code {self.code} is not injectable; use one of {sorted(_REASONS)}"
            )
        if not 0.0 <= self.probability <= 1.0:
            raise ConfigError(
                f"fault probability {self.probability} is outside [0, 1]; use 0.1 for 10 %"
            )

    def error(self, resource: str, name: str) -> ApiError:
        if self.code == 409:
            return ApiError.conflict(
                "",
                resource,
                name or "",
                "the object has been modified; please apply your changes to the latest version and try again (injected)",  # noqa: E501
            )
        if self.code == 429:
            return ApiError.too_many_requests(1)
        if self.code == 500:
            return ApiError.internal("injected fault")
        reason, message = _REASONS[self.code or 500] or ("InternalError", "injected")
        return ApiError(self.code or 500, reason, message)


class FaultInjector:
    """Holds the active faults; :meth:`pick` returns the first one that fires."""

    def __init__(self, seed: int = 0) -> None:
        self.faults: list[Fault] = []
        self._random = random.Random(seed)
        self.fired = 0

    def add(self, fault: Fault) -> Fault:
        self.faults.append(fault)
        return fault

    def clear(self) -> None:
        self.faults.clear()

    def pick(self, verb: str, resource: str, name: str) -> Fault | None:
        for fault in self.faults:
            if fault.times is not None and fault.times <= 0:
                continue
            if fault.verb not in (None, verb) or fault.resource not in (None, resource):
                continue
            if fault.name not in (None, name):
                continue
            if fault.probability < 1.0 and self._random.random() >= fault.probability:
                continue
            if fault.times is not None:
                fault.times -= 1
            self.fired += 1
            return fault
        return None
