"""The HTTP face of the fake cluster: REST paths, discovery, OpenAPI, tables and watches.

Paths follow the API server: ``/api/v1/...`` for the core group, ``/apis/<group>/<version>/...``
for the others, ``namespaces/<ns>/<plural>/<name>/<subresource>``. Discovery is served in the
legacy form (``/api``, ``/apis``, ``APIResourceList`` per group version); OpenAPI v3 documents
list each resource's PATCH operation with its ``x-kubernetes-group-version-kind`` and
``fieldValidation`` parameter, which is what kubectl checks before sending requests (no
schemas are served). ``kubectl get`` receives ``meta.k8s.io/v1`` Tables. Control endpoints
for tests and the command line live under ``/fakekube/``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from fakekube._errors import ApiError
from fakekube._protobuf import decode_object
from fakekube.api import PATCH_TYPES, check_patch_options
from fakekube.auth import (
    Identity,
    authorize,
    certificate_identity,
    forbidden,
    impersonate,
    token_request,
)
from fakekube.auth import Request as AuthRequest
from fakekube.cluster import FakeCluster
from fakekube.faults import Fault
from fakekube.resources import ALL_VERBS, ResourceType
from fakekube.selection import FieldSelector, LabelSelector
from fakekube.store import Watcher
from fakekube.tables import to_table

__all__ = ["build_app"]

Obj = dict[str, Any]
_NS_SUBRESOURCES = ("status", "finalize")
#: subresources that only take a POST of another kind: (its group, its kind)
_CREATE_ONLY = {"binding": ("", "Binding"), "token": ("authentication.k8s.io", "TokenRequest")}
_MAX_WATCH_S = 1800.0


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(body, separators=(",", ":")),
        status_code=status,
        media_type="application/json",
        headers=headers,
    )


def _error(exc: ApiError) -> Response:
    return _json(exc.status(), exc.code, exc.headers)


class _Target:
    """A parsed resource path."""

    def __init__(self, group: str, version: str, rest: list[str]) -> None:
        self.group, self.version = group, version
        self.namespace: str | None = None
        self.plural = ""
        self.name = ""
        self.sub = ""
        if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in _NS_SUBRESOURCES:
            self.namespace = rest[1]
            rest = rest[2:]
        if rest:
            self.plural = rest[0]
        if len(rest) > 1:
            self.name = rest[1]
        if len(rest) > 2:
            self.sub = "/".join(rest[2:])


def _resource_list(cluster: FakeCluster, group: str, version: str) -> Obj:
    resources: list[Obj] = []
    for rt in sorted(cluster.registry.in_group_version(group, version), key=lambda r: r.plural):
        entry: Obj = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": list(ALL_VERBS),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        resources.append(entry)
        for sub in rt.subresources:
            if sub in _CREATE_ONLY:
                sub_group, sub_kind = _CREATE_ONLY[sub]
                entry = {"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": True}
                if sub_group:  # another group's kind is named with it, as the real list does
                    entry |= {"group": sub_group, "version": "v1"}
                resources.append(entry | {"kind": sub_kind, "verbs": ["create"]})
            else:
                resources.append(
                    {
                        "name": f"{rt.plural}/{sub}",
                        "singularName": "",
                        "namespaced": rt.namespaced,
                        "kind": rt.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


_MAX_ADVANCE_S = 100 * 365 * 86400.0


def _group(group: str, versions: list[str]) -> Obj:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


_PATCH_PARAMS = [
    {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
    for name in ("dryRun", "fieldManager", "fieldValidation", "force")
]


def _openapi_gv(cluster: FakeCluster, group: str, version: str) -> Obj:
    paths: Obj = {}
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    for rt in cluster.registry.in_group_version(group, version):
        gvk = {"group": group, "version": version, "kind": rt.kind}
        scope = (
            f"{prefix}/namespaces/{{namespace}}/{rt.plural}"
            if rt.namespaced
            else f"{prefix}/{rt.plural}"
        )
        op = {
            "x-kubernetes-group-version-kind": gvk,
            "parameters": _PATCH_PARAMS,
            "responses": {"200": {"description": "OK"}},
        }
        paths[f"{scope}/{{name}}"] = {
            "patch": op,
            "get": {
                "x-kubernetes-group-version-kind": gvk,
                "responses": {"200": {"description": "OK"}},
            },
        }
        for sub in rt.subresources:
            if sub == "status":
                paths[f"{scope}/{{name}}/status"] = {"patch": op}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (fakekube)", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def _openapi_root(cluster: FakeCluster) -> Obj:
    paths = {"api/v1": {"serverRelativeURL": f"/openapi/v3/api/v1?hash={cluster.store.rv}"}}
    for group, versions in cluster.registry.groups():
        for version in versions:
            paths[f"apis/{group}/{version}"] = {
                "serverRelativeURL": f"/openapi/v3/apis/{group}/{version}?hash={cluster.store.rv}"
            }
    return {"paths": paths}


def _flag(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true")


def _dry_run(request: Request) -> bool:
    values = request.query_params.getlist("dryRun")
    for value in values:
        if value != "All":
            raise ApiError.bad_request(
                f'unsupported dry run directive "{value}"; valid values: "All"'
            )
    return bool(values)


def _wants_table(request: Request) -> bool:
    return "as=Table" in request.headers.get("accept", "")


async def _body(request: Request) -> Any:
    content_type = request.headers.get("content-type", "")
    if "vnd.kubernetes.protobuf" in content_type:
        return decode_object(await request.body())
    if "protobuf" in content_type or "cbor" in content_type:
        raise ApiError.unsupported_media_type(
            f"the body of the request was in an unknown format - accepted media types include: "
            f"application/json, application/yaml (got {content_type})"
        )
    raw = await request.body()
    try:
        return json.loads(raw or b"null")
    except ValueError:
        import importlib

        yaml: Any = importlib.import_module("yaml")
        try:
            return yaml.safe_load(raw)
        except Exception as exc:
            raise ApiError.bad_request(
                f"the body of the request was in an unknown format: {exc}"
            ) from exc


def build_app(cluster: FakeCluster) -> Starlette:
    """The Starlette application serving ``cluster``."""

    async def handle(request: Request) -> Response:
        path = request.url.path.strip("/")
        parts = [p for p in path.split("/") if p]
        try:
            if not parts:
                return _json(
                    {
                        "paths": [
                            "/api",
                            "/api/v1",
                            "/apis",
                            "/openapi/v2",
                            "/openapi/v3",
                            "/version",
                            "/healthz",
                            "/fakekube",
                        ]
                    }
                )
            head = parts[0]
            if head in ("healthz", "livez", "readyz"):
                return Response("ok", media_type="text/plain")
            if head == "version":
                return _json(
                    {
                        "major": "1",
                        "minor": "32",
                        "gitVersion": "v1.32.0-fakekube",
                        "gitCommit": "fakekube",
                        "gitTreeState": "clean",
                        "buildDate": "2024-12-11T00:00:00Z",
                        "goVersion": "go1.23.0",
                        "compiler": "gc",
                        "platform": "linux/amd64",
                    }
                )
            if head == "fakekube":
                return await control(request, parts[1:])
            if head == "openapi":
                return openapi(request, parts[1:])
            if head == "api":
                if len(parts) == 1:
                    return _json(
                        {
                            "kind": "APIVersions",
                            "versions": ["v1"],
                            "serverAddressByClientCIDRs": [
                                {"clientCIDR": "0.0.0.0/0", "serverAddress": cluster.host}
                            ],
                        }
                    )
                return await resource(request, "", parts[1], parts[2:])
            if head == "apis":
                if len(parts) == 1:
                    groups = [_group(g, vs) for g, vs in cluster.registry.groups()]
                    return _json({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
                if len(parts) == 2:
                    for group, versions in cluster.registry.groups():
                        if group == parts[1]:
                            return _json(
                                {"kind": "APIGroup", "apiVersion": "v1", **_group(group, versions)}
                            )
                    raise ApiError(
                        404, "NotFound", "the server could not find the requested resource"
                    )
                return await resource(request, parts[1], parts[2], parts[3:])
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        except ApiError as exc:
            return _error(exc)

    def openapi(request: Request, rest: list[str]) -> Response:
        if rest[:1] == ["v2"]:
            if "protobuf" in request.headers.get("accept", ""):
                return Response(
                    b"", media_type="application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
                )
            return _json(
                {
                    "swagger": "2.0",
                    "info": {"title": "Kubernetes (fakekube)", "version": "v1.32.0"},
                    "paths": {},
                    "definitions": {},
                }
            )
        if rest[:1] == ["v3"]:
            if len(rest) == 1:
                return _json(_openapi_root(cluster))
            if rest[1] == "api" and len(rest) == 3:
                return _json(_openapi_gv(cluster, "", rest[2]))
            if rest[1] == "apis" and len(rest) == 4:
                return _json(_openapi_gv(cluster, rest[2], rest[3]))
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    async def control(request: Request, rest: list[str]) -> Response:
        what = "/".join(rest)
        if what == "clock" and request.method == "GET":
            return _json({"now": cluster.clock.now().isoformat(), "virtual": cluster.clock.virtual})
        if what == "clock/advance" and request.method == "POST":
            text = request.query_params.get("seconds", "0")
            try:
                seconds = float(text)
                step = timedelta(seconds=seconds)
            except (ValueError, OverflowError) as exc:
                raise ApiError.bad_request(
                    f"seconds {text!r} is not a number of seconds; write it like seconds=3600"
                ) from exc
            if not 0 <= seconds < _MAX_ADVANCE_S:
                raise ApiError.bad_request(
                    f"seconds {text!r} is out of range; advance by 0 to {_MAX_ADVANCE_S:.0f} "
                    "seconds (100 years) at a time"
                )
            now = await cluster.advance(step)
            return _json({"now": now.isoformat(), "virtual": cluster.clock.virtual})
        if what == "settle" and request.method == "POST":
            return _json({"rounds": await cluster.settle()})
        if what == "faults" and request.method == "POST":
            fields = await _body(request)
            try:
                fault = cluster.faults.add(Fault(**fields))
            except (TypeError, ValueError) as exc:
                raise ApiError.bad_request(f"not a fault: {exc}") from exc
            return _json(asdict(fault), 201)
        if what == "faults" and request.method == "DELETE":
            cluster.faults.clear()
            return _json({"faults": []})
        if what == "watches/drop" and request.method == "POST":
            return _json({"dropped": cluster.drop_watches()})
        if what == "compact" and request.method == "POST":
            cluster.store.compact()
            return _json({"compactedAt": str(cluster.store.rv)})
        if what == "bookmarks" and request.method == "POST":
            cluster.send_bookmarks()
            return _json({"resourceVersion": str(cluster.store.rv)})
        if what == "service-endpoints" and request.method == "POST":
            body = await _body(request)
            if not all(isinstance(body.get(k), str) for k in ("namespace", "name", "url")):
                raise ApiError.bad_request(
                    'a service endpoint needs the strings "namespace", "name" and "url"'
                )
            cluster.api.service_endpoints[(body["namespace"], body["name"])] = body["url"]
            return _json(body, 201)
        raise ApiError(
            404, "NotFound", f"no fakekube control endpoint {request.method} /fakekube/{what}"
        )

    async def resource(request: Request, group: str, version: str, rest: list[str]) -> Response:
        watch = _flag(request.query_params.get("watch"))
        if rest[:1] == ["watch"]:
            watch, rest = True, rest[1:]
        if not rest:
            if cluster.registry.in_group_version(group, version) or (not group and version == "v1"):
                return _json(_resource_list(cluster, group, version))
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        target = _Target(group, version, rest)
        rt = cluster.api.resource(group, version, target.plural)
        namespace = target.namespace or ""
        if not rt.namespaced and target.namespace is not None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if rt.namespaced and target.name and target.namespace is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        verb = _verb(request.method, bool(target.name), watch)
        if cluster.rbac:
            check_access(request, rt, verb, target)
        fault = cluster.faults.pick(verb, rt.plural, target.name)
        if fault is not None:
            if fault.latency_s:
                await asyncio.sleep(fault.latency_s)
            if fault.code is not None:
                raise fault.error(rt.plural, target.name)
        api = cluster.api
        method = request.method
        dry_run = _dry_run(request) if method in ("POST", "PUT", "PATCH", "DELETE") else False
        if target.sub and target.sub not in rt.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not target.name:
            if method == "GET" and watch:
                return await watch_stream(request, rt, target.namespace, version)
            if method == "GET":
                return list_response(request, rt, target.namespace, version)
            if method == "POST":
                obj = await api.create(
                    rt,
                    namespace,
                    await _body(request),
                    dry_run=dry_run,
                    version=version,
                    field_manager=request.query_params.get("fieldManager", ""),
                    user_agent=request.headers.get("user-agent", ""),
                )
                return _json(obj, 201)
            if method == "DELETE":
                return _json(
                    api.delete_collection(
                        rt,
                        target.namespace,
                        label_selector=request.query_params.get("labelSelector"),
                        field_selector=request.query_params.get("fieldSelector"),
                        dry_run=dry_run,
                    )
                )
            raise ApiError.method_not_allowed(
                f"the server does not allow this method on the requested resource ({method})"
            )
        if method == "GET":
            obj = api.get(rt, namespace, target.name, version)
            if target.sub == "status" or not target.sub:
                return _json(
                    to_table(
                        rt,
                        [obj],
                        cluster.clock.now(),
                        obj["metadata"]["resourceVersion"],
                        printer_columns=api.printer_columns(rt, version),
                    )
                    if _wants_table(request)
                    else obj
                )
        if method == "POST" and target.sub == "binding":
            return _json(
                api.bind(namespace, target.name, await _body(request), dry_run=dry_run), 201
            )
        if method == "POST" and target.sub == "token":
            api.get(rt, namespace, target.name, version)  # 404 for a missing ServiceAccount
            return _json(
                token_request(
                    cluster.auth,
                    namespace,
                    target.name,
                    await _body(request),
                    cluster.clock.now(),
                    dry_run=dry_run,
                ),
                201,
            )
        if method == "PUT":
            obj = await api.update(
                rt,
                namespace,
                target.name,
                await _body(request),
                subresource=target.sub,
                dry_run=dry_run,
                version=version,
                field_manager=request.query_params.get("fieldManager", ""),
                user_agent=request.headers.get("user-agent", ""),
            )
            return _json(obj)
        if method == "PATCH":
            content_type = request.headers.get("content-type", "").split(";")[0].strip()
            if content_type not in PATCH_TYPES:
                raise ApiError.unsupported_media_type(
                    "the body of the request was in an unknown format - accepted media types include: "  # noqa: E501
                    + ", ".join(PATCH_TYPES)
                )
            check_patch_options(
                content_type,
                field_manager=request.query_params.get("fieldManager", ""),
                force_given="force" in request.query_params,
            )
            existed = (
                api.store.peek(rt, namespace if rt.namespaced else "", target.name) is not None
            )
            obj = await api.patch(
                rt,
                namespace,
                target.name,
                content_type,
                await request.body(),
                subresource=target.sub,
                dry_run=dry_run,
                field_manager=request.query_params.get("fieldManager", ""),
                version=version,
                user_agent=request.headers.get("user-agent", ""),
                force=_flag(request.query_params.get("force")),
            )
            return _json(obj, 200 if existed else 201)
        if method == "DELETE":
            raw = await request.body()
            options = json.loads(raw) if raw.strip() else {}
            if request.query_params.get("propagationPolicy"):
                options["propagationPolicy"] = request.query_params["propagationPolicy"]
            dry_run = dry_run or "All" in (options.get("dryRun") or [])
            answer = api.delete(
                rt, namespace, target.name, options, dry_run=dry_run, version=version
            )
            pending = (
                answer.get("kind") != "Status"
                and bool(answer.get("metadata", {}).get("deletionTimestamp"))
                and api.store.peek(rt, namespace if rt.namespaced else "", target.name) is not None
            )
            return _json(answer, 202 if pending else 200)
        raise ApiError.method_not_allowed(
            f"the server does not allow this method on the requested resource ({method})"
        )

    def check_access(request: Request, rt: ResourceType, verb: str, target: _Target) -> None:
        who = identity(request)
        sub = target.sub
        wanted = AuthRequest(
            verb if sub not in _CREATE_ONLY else "create",
            rt.group,
            rt.plural,
            sub,
            target.namespace or "",
            target.name if not (verb == "create" and not sub) else "",
        )
        if not authorize(who, wanted, cluster.registry, cluster.store):
            raise forbidden(who, wanted)

    def identity(request: Request) -> Identity:
        sa_rt = cluster.api.kind("ServiceAccount")

        def sa_exists(namespace: str, name: str) -> bool:
            return cluster.store.peek(sa_rt, namespace, name) is not None

        tls = request.scope.get("extensions", {}).get("tls") or {}
        subject = tls.get("client_cert_subject")
        # the x509 authenticator comes before the token authenticators, as in the API server
        if subject:
            who = certificate_identity(subject)
        else:
            who = cluster.auth.authenticate(request.headers, sa_exists)
        groups = request.headers.getlist("impersonate-group")
        return impersonate(
            who,
            request.headers.get("impersonate-user"),
            groups,
            cluster.registry,
            cluster.store,
        )

    def list_response(
        request: Request, rt: ResourceType, namespace: str | None, version: str
    ) -> Response:
        params = request.query_params
        limit = int(params.get("limit") or 0)
        start = int(params.get("continue") or 0) if (params.get("continue") or "").isdigit() else 0
        if limit <= 0:
            start = 0
        items, rv, total = cluster.api.list_page(
            rt,
            namespace,
            label_selector=params.get("labelSelector"),
            field_selector=params.get("fieldSelector"),
            version=version,
            start=start,
            limit=limit,
        )
        if (
            params.get("resourceVersionMatch") == "Exact"
            and params.get("resourceVersion")
            and int(params["resourceVersion"]) != rv
        ):
            raise ApiError.gone(f"too old resource version: {params['resourceVersion']} ({rv})")
        meta: Obj = {"resourceVersion": str(rv)}
        if limit > 0 and start + limit < total:
            meta["continue"] = str(start + limit)
            meta["remainingItemCount"] = total - start - limit
        if _wants_table(request):
            return _json(
                to_table(
                    rt,
                    items,
                    cluster.clock.now(),
                    str(rv),
                    continue_=meta.get("continue"),
                    printer_columns=cluster.api.printer_columns(rt, version),
                )
            )
        group_version = f"{rt.group}/{version}" if rt.group else version
        return _json(
            {"kind": rt.list_kind, "apiVersion": group_version, "metadata": meta, "items": items}
        )

    async def watch_stream(
        request: Request, rt: ResourceType, namespace: str | None, version: str
    ) -> Response:
        params = request.query_params
        api_version = f"{rt.group}/{version}" if rt.group else version
        watcher = Watcher(
            rt,
            namespace,
            LabelSelector(params.get("labelSelector")),
            FieldSelector(params.get("fieldSelector"), rt.kind),
            api_version,
        )
        watcher.bookmarks = _flag(params.get("allowWatchBookmarks"))
        table = _wants_table(request)
        initial = _flag(params.get("sendInitialEvents"))
        rv_text = params.get("resourceVersion") or ""
        since = None if (rv_text in ("", "0") or initial) else int(rv_text)
        timeout = min(float(params.get("timeoutSeconds") or _MAX_WATCH_S), _MAX_WATCH_S)
        try:
            cluster.store.watch(watcher, since)
        except ApiError as exc:
            expired = exc.status()

            async def gone() -> AsyncIterator[bytes]:
                yield (json.dumps({"type": "ERROR", "object": expired}) + "\n").encode()

            return StreamingResponse(gone(), media_type="application/json")
        if initial:
            watcher.send(
                {
                    "type": "BOOKMARK",
                    "object": {
                        "kind": rt.kind,
                        "apiVersion": api_version,
                        "metadata": {
                            "resourceVersion": str(cluster.store.rv),
                            "annotations": {"k8s.io/initial-events-end": "true"},
                        },
                    },
                }
            )

        async def events() -> AsyncIterator[bytes]:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            first = True
            try:
                while True:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        break
                    try:
                        event = await asyncio.wait_for(watcher.queue.get(), remaining)
                    except TimeoutError:
                        break
                    if event is None:
                        break
                    if table and event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        obj = event["object"]
                        event = {
                            "type": event["type"],
                            "object": to_table(
                                rt,
                                [obj],
                                cluster.clock.now(),
                                obj["metadata"].get("resourceVersion", ""),
                                columns=first,
                                printer_columns=cluster.api.printer_columns(rt, version),
                            ),
                        }
                        first = False
                    yield (json.dumps(event, separators=(",", ":")) + "\n").encode()
            finally:
                watcher.close()
                cluster.store.unwatch(watcher)

        return StreamingResponse(events(), media_type="application/json")

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    return Starlette(routes=[Route("/{path:path}", handle, methods=methods)])


def _verb(method: str, named: bool, watch: bool) -> str:
    if method == "GET":
        return "get" if named else ("watch" if watch else "list")
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower()
    )
