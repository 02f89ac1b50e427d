"""Kubernetes API errors as the API server writes them: a ``metav1.Status`` body and a code.

Every refusal of the fake server is an :class:`ApiError`; the HTTP layer turns it into the
JSON ``Status`` object real clients (client-go, kubectl, kubernetes-asyncio) decode. Reasons
and codes follow ``k8s.io/apimachinery/pkg/api/errors``; field errors follow
``k8s.io/apimachinery/pkg/util/validation/field`` (``spec.x: Forbidden: ...``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["ApiError", "FieldError"]

_CAUSE_REASON = {
    "Forbidden": "FieldValueForbidden",
    "Invalid value": "FieldValueInvalid",
    "Required value": "FieldValueRequired",
    "Unsupported value": "FieldValueNotSupported",
    "Duplicate value": "FieldValueDuplicate",
    "Too many": "FieldValueTooMany",
    "Too long": "FieldValueTooLong",
}


def go_value(value: Any) -> str:
    """Render a field value roughly as the API server's messages do (JSON for composites)."""
    if value is None:
        return "null"
    return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class FieldError:
    """One ``field.Error``: a path, a type ("Forbidden", "Invalid value", ...), a detail."""

    field: str
    type: str
    detail: str = ""
    value: Any = None
    supported: tuple[str, ...] = ()
    reason: str = ""
    """The cause's reason when it differs from the type's (``FieldValueTypeInvalid``)."""
    shown: str | None = None
    """The value as Go prints it, when JSON would not (a ``*metav1.Time``, a struct);
    ``""`` omits the value, as ``field.OmitValueType{}`` does."""

    def body(self) -> str:
        """The text after ``<field>: `` in the API server's message."""
        if self.type == "Invalid value":
            shown = go_value(self.value) if self.shown is None else self.shown
            text = f"Invalid value: {shown}" if shown else "Invalid value"
            return f"{text}: {self.detail}" if self.detail else text
        if self.type == "Unsupported value":
            allowed = ", ".join(f'"{s}"' for s in self.supported)
            return f"Unsupported value: {go_value(self.value)}: supported values: {allowed}"
        if self.type == "Duplicate value":
            return f"Duplicate value: {go_value(self.value)}"
        if self.type == "Too many":
            return f"Too many: {go_value(self.value)}: {self.detail}"
        return f"{self.type}: {self.detail}" if self.detail else self.type

    def text(self) -> str:
        return f"{self.field}: {self.body()}"

    def cause(self) -> dict[str, Any]:
        reason = self.reason or _CAUSE_REASON[self.type]
        return {"reason": reason, "message": self.body(), "field": self.field}


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError(field, "Forbidden", detail)


def invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(field, "Invalid value", detail, value)


def required(field: str, detail: str = "") -> FieldError:
    return FieldError(field, "Required value", detail)


def unsupported(field: str, value: Any, supported: tuple[str, ...]) -> FieldError:
    return FieldError(field, "Unsupported value", "", value, supported)


def duplicate(field: str, value: Any) -> FieldError:
    return FieldError(field, "Duplicate value", "", value)


class ApiError(Exception):
    """A refusal with an HTTP code, a ``Status.reason`` and a message."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        """The ``metav1.Status`` body."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body

    # Constructors named after apimachinery's errors.NewXxx -------------------------------

    @classmethod
    def not_found(cls, group: str, plural: str, name: str) -> ApiError:
        qualified = f"{plural}.{group}" if group else plural
        return cls(
            404,
            "NotFound",
            f'{qualified} "{name}" not found',
            details={"name": name, "group": group, "kind": plural}
            if group
            else {"name": name, "kind": plural},
        )

    @classmethod
    def already_exists(cls, group: str, plural: str, name: str) -> ApiError:
        qualified = f"{plural}.{group}" if group else plural
        details: dict[str, Any] = {"name": name, "kind": plural}
        if group:
            details["group"] = group
        return cls(409, "AlreadyExists", f'{qualified} "{name}" already exists', details=details)

    @classmethod
    def conflict(cls, group: str, plural: str, name: str, why: str) -> ApiError:
        qualified = f"{plural}.{group}" if group else plural
        details: dict[str, Any] = {"name": name, "kind": plural}
        if group:
            details["group"] = group
        return cls(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {qualified} "{name}": {why}',
            details=details,
        )

    @classmethod
    def stale(cls, group: str, plural: str, name: str) -> ApiError:
        return cls.conflict(
            group,
            plural,
            name,
            "the object has been modified; please apply your changes to the latest version "
            "and try again",
        )

    @classmethod
    def invalid(cls, group: str, kind: str, name: str, errors: list[FieldError]) -> ApiError:
        qualified = f"{kind}.{group}" if group else kind
        texts = [e.text() for e in errors]
        joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
        details: dict[str, Any] = {
            "name": name,
            "kind": kind,
            "causes": [e.cause() for e in errors],
        }
        if group:
            details["group"] = group
        return cls(422, "Invalid", f'{qualified} "{name}" is invalid: {joined}', details=details)

    @classmethod
    def gone(cls, message: str) -> ApiError:
        return cls(410, "Expired", message)

    @classmethod
    def bad_request(cls, message: str) -> ApiError:
        return cls(400, "BadRequest", message)

    @classmethod
    def forbidden(cls, group: str, plural: str, name: str, why: str) -> ApiError:
        qualified = f"{plural}.{group}" if group else plural
        return cls(
            403,
            "Forbidden",
            f'{qualified} "{name}" is forbidden: {why}',
            details={"name": name, "kind": plural},
        )

    @classmethod
    def method_not_allowed(cls, message: str) -> ApiError:
        return cls(405, "MethodNotAllowed", message)

    @classmethod
    def unsupported_media_type(cls, message: str) -> ApiError:
        return cls(415, "UnsupportedMediaType", message)

    @classmethod
    def internal(cls, message: str) -> ApiError:
        return cls(
            500,
            "InternalError",
            f"Internal error occurred: {message}",
            details={"causes": [{"message": message}]},
        )

    @classmethod
    def too_many_requests(cls, retry_after_s: int = 1) -> ApiError:
        return cls(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
            details={"retryAfterSeconds": retry_after_s},
            headers={"Retry-After": str(retry_after_s)},
        )

    @classmethod
    def patch_rejected(cls, why: str) -> ApiError:
        return cls(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
            details={"causes": [{"message": why}]},
        )
