"""Just enough of the Kubernetes protobuf encoding to accept ``kubectl create <kind> ...``.

kubectl's generator commands (``create namespace``, ``create configmap``, ``create secret
generic``, ``create serviceaccount``) send typed objects as ``application/vnd.kubernetes.protobuf``:
the magic ``k8s\\x00`` then a ``runtime.Unknown`` whose ``raw`` field holds the object. This
module decodes those four kinds (field numbers from ``k8s.io/api/core/v1/generated.proto``);
any other protobuf body is refused with 415 and a hint to use ``kubectl create -f``.
"""

from __future__ import annotations

import base64
from typing import Any

from fakekube._errors import ApiError

__all__ = ["decode_object"]

Obj = dict[str, Any]
_MAGIC = b"k8s\x00"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _varint(data, pos)
            out.append((number, data[pos : pos + length]))
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def _text(value: int | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _entry(value: int | bytes) -> tuple[str, bytes]:
    key, val = "", b""
    for number, item in _fields(value if isinstance(value, bytes) else b""):
        if number == 1:
            key = _text(item)
        elif number == 2 and isinstance(item, bytes):
            val = item
    return key, val


def _meta(data: bytes) -> Obj:
    meta: Obj = {}
    names = {1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}
    for number, value in _fields(data):
        if number in names:
            meta[names[number]] = _text(value)
        elif number in (11, 12):
            key, val = _entry(value)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = val.decode()
        elif number == 14:
            meta.setdefault("finalizers", []).append(_text(value))
    return meta


def _decode_kind(kind: str, raw: bytes) -> Obj:
    obj: Obj = {}
    for number, value in _fields(raw):
        if number == 1 and isinstance(value, bytes):
            obj["metadata"] = _meta(value)
        elif kind == "ConfigMap" and number in (2, 3):
            key, val = _entry(value)
            if number == 2:
                obj.setdefault("data", {})[key] = val.decode()
            else:
                obj.setdefault("binaryData", {})[key] = base64.b64encode(val).decode()
        elif kind == "Secret" and number == 2:
            key, val = _entry(value)
            obj.setdefault("data", {})[key] = base64.b64encode(val).decode()
        elif kind == "Secret" and number == 3:
            obj["type"] = _text(value)
        elif kind in ("ConfigMap", "Secret") and number == (4 if kind == "ConfigMap" else 5):
            obj["immutable"] = bool(value)
        elif kind == "ServiceAccount" and number == 4:
            obj["automountServiceAccountToken"] = bool(value)
    return obj


_KINDS = ("ConfigMap", "Secret", "Namespace", "ServiceAccount")


def decode_object(body: bytes) -> Obj:
    """The JSON form of a protobuf-encoded ConfigMap, Secret, Namespace or ServiceAccount."""
    if not body.startswith(_MAGIC):
        raise ApiError.bad_request("protobuf body does not start with the k8s magic number")
    try:
        api_version, kind, raw = "", "", b""
        for number, value in _fields(body[len(_MAGIC) :]):
            if number == 1 and isinstance(value, bytes):
                for inner, item in _fields(value):
                    if inner == 1:
                        api_version = _text(item)
                    elif inner == 2:
                        kind = _text(item)
            elif number == 2 and isinstance(value, bytes):
                raw = value
        if kind not in _KINDS or api_version != "v1":
            raise ApiError.unsupported_media_type(
                f"fakekube decodes protobuf only for {', '.join(_KINDS)}; got {api_version}/{kind}: "  # noqa: E501
                "write the object to a file and use kubectl create -f or kubectl apply -f"
            )
        obj = _decode_kind(kind, raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError.bad_request(f"malformed protobuf body: {exc}") from exc
    return {"apiVersion": api_version, "kind": kind, **obj}
