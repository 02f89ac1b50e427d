"""Mutating admission webhooks, called as the API server calls them (AdmissionReview v1).

For a CREATE or UPDATE the server walks the stored MutatingWebhookConfiguration objects in
name order; each webhook whose rules match the operation and resource, whose
``namespaceSelector`` matches the namespace's labels and whose ``objectSelector`` matches the
object's labels is POSTed an ``admission.k8s.io/v1`` AdmissionReview over TLS, verified with
the webhook's ``caBundle``. A ``JSONPatch`` response is applied; a denial becomes the
webhook's Status (400 by default); a failed call honours ``failurePolicy``
(``Fail`` -> 500 InternalError, ``Ignore`` -> skipped). ``clientConfig.url`` is called as
written; ``clientConfig.service`` is resolved through endpoints registered with the fake
server (a real cluster would route it to the Service), with the TLS server name
``<service>.<namespace>.svc`` as the API server uses.
"""

from __future__ import annotations

import base64
import json
import ssl
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from fakekube._errors import ApiError
from fakekube.patch import json_patch
from fakekube.resources import ResourceType
from fakekube.selection import label_selector_matches

__all__ = ["WebhookCaller"]

Obj = dict[str, Any]


def _rule_matches(rule: Obj, operation: str, rt: ResourceType, subresource: str) -> bool:
    def has(values: Any, want: str) -> bool:
        return "*" in (values or []) or want in (values or [])

    resource = f"{rt.plural}/{subresource}" if subresource else rt.plural
    resources = rule.get("resources") or []
    scope = rule.get("scope", "*")
    if (scope == "Namespaced" and not rt.namespaced) or (scope == "Cluster" and rt.namespaced):
        return False
    return (
        has(rule.get("operations"), operation)
        and has(rule.get("apiGroups"), rt.group)
        and has(rule.get("apiVersions"), rt.version)
        and (
            resource in resources
            or "*" in resources
            or (bool(subresource) and f"{rt.plural}/*" in resources)
        )
    )


class WebhookCaller:
    """Calls the matching mutating webhooks for one admission request."""

    def __init__(
        self,
        configurations: Callable[[], list[Obj]],
        namespace_labels: Callable[[str], dict[str, str]],
        service_endpoints: dict[tuple[str, str], str],
    ) -> None:
        self._configurations = configurations
        self._namespace_labels = namespace_labels
        self.service_endpoints = service_endpoints

    def _target(self, hook: Obj) -> tuple[str, str | None]:
        client = hook.get("clientConfig") or {}
        if client.get("url"):
            return str(client["url"]), None
        service = client.get("service") or {}
        ns, name = service.get("namespace", ""), service.get("name", "")
        base = self.service_endpoints.get((ns, name))
        if base is None:
            raise ConnectionError(
                f'service "{name}" in namespace "{ns}" has no endpoint registered with the fake '
                "server (FakeKube.register_service_endpoint or --service-endpoint)"
            )
        return base.rstrip("/") + (service.get("path") or ""), f"{name}.{ns}.svc"

    async def _call(self, hook: Obj, review: Obj) -> Obj:
        url, server_name = self._target(hook)
        bundle = (hook.get("clientConfig") or {}).get("caBundle")
        context = ssl.create_default_context()
        if bundle:
            context = ssl.create_default_context(cadata=base64.b64decode(bundle).decode())
        extensions = {"sni_hostname": server_name} if server_name else {}
        timeout = float(hook.get("timeoutSeconds", 10))
        async with httpx.AsyncClient(verify=context, timeout=timeout) as client:
            request = client.build_request("POST", url, json=review, extensions=extensions)
            if server_name:
                # Verify the certificate against the Service DNS name, as the API server does.
                request.headers["Host"] = server_name
            response = await client.send(request)
        if response.status_code != 200:
            raise ConnectionError(
                f"webhook answered HTTP {response.status_code}: {response.text[:200]}"
            )
        answer: Obj = response.json()
        return answer

    async def admit(
        self,
        rt: ResourceType,
        operation: str,
        obj: Obj,
        old: Obj | None,
        *,
        subresource: str = "",
        dry_run: bool = False,
        username: str = "fakekube-admin",
    ) -> Obj:
        """Return ``obj`` as mutated by every matching webhook, or raise the refusal."""
        meta = obj.get("metadata", {})
        namespace = meta.get("namespace", "")
        for config in sorted(self._configurations(), key=lambda c: c["metadata"]["name"]):
            for hook in config.get("webhooks") or []:
                if not any(
                    _rule_matches(r, operation, rt, subresource) for r in hook.get("rules") or []
                ):
                    continue
                if rt.namespaced and not label_selector_matches(
                    hook.get("namespaceSelector"), self._namespace_labels(namespace)
                ):
                    continue
                labels = (obj.get("metadata") or {}).get("labels") or {}
                if not label_selector_matches(hook.get("objectSelector"), labels):
                    continue
                if dry_run and hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
                    raise ApiError.bad_request(
                        f'admission webhook "{hook.get("name")}" does not support dry run'
                    )
                obj = await self._admit_one(
                    hook, rt, operation, obj, old, subresource, dry_run, username
                )
        return obj

    async def _admit_one(
        self,
        hook: Obj,
        rt: ResourceType,
        operation: str,
        obj: Obj,
        old: Obj | None,
        subresource: str,
        dry_run: bool,
        username: str,
    ) -> Obj:
        name = hook.get("name", "")
        uid = str(uuid.uuid4())
        meta = obj.get("metadata", {})
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        gvr = {"group": rt.group, "version": rt.version, "resource": rt.plural}
        request: Obj = {
            "uid": uid,
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": meta.get("name", ""),
            "operation": operation,
            "userInfo": {
                "username": username,
                "groups": ["system:masters", "system:authenticated"],
            },
            "object": obj,
            "oldObject": old,
            "dryRun": dry_run,
            "options": {
                "kind": "CreateOptions" if operation == "CREATE" else "UpdateOptions",
                "apiVersion": "meta.k8s.io/v1",
            },
        }
        if subresource:
            request["subResource"] = subresource
        if rt.namespaced:
            request["namespace"] = meta.get("namespace", "")
        review = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": request,
        }
        try:
            answer = await self._call(hook, review)
            response = answer.get("response") or {}
            if response.get("uid") != uid:
                raise ConnectionError(f"expected response.uid={uid!r}, got {response.get('uid')!r}")
        except (httpx.HTTPError, ConnectionError, ssl.SSLError, ValueError, OSError) as exc:
            if hook.get("failurePolicy", "Fail") == "Ignore":
                return obj
            raise ApiError.internal(f'failed calling webhook "{name}": {exc}') from exc
        if not response.get("allowed"):
            status = response.get("status") or {}
            code = int(status.get("code") or 400)
            message = status.get("message") or ""
            reason = status.get("reason") or ("BadRequest" if code == 400 else "Forbidden")
            raise ApiError(
                code,
                reason,
                f'admission webhook "{name}" denied the request: {message}'.rstrip(": "),
            )
        patch = response.get("patch")
        if not patch:
            return obj
        if response.get("patchType") != "JSONPatch":
            raise ApiError.internal(
                f'webhook "{name}" returned patchType {response.get("patchType")!r}; only JSONPatch is supported'  # noqa: E501
            )
        try:
            ops = json.loads(base64.b64decode(patch))
            mutated: Obj = json_patch(obj, ops)
        except (ValueError, ApiError) as exc:
            raise ApiError.internal(f'webhook "{name}" returned an unusable patch: {exc}') from exc
        return mutated
