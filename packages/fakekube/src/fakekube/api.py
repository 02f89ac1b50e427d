"""The API verbs: create, get, list, update, patch, delete, bind, with the server's rules.

This is the layer between HTTP and the store. It applies, in the API server's order:
namespace and name checks, ``generateName``, defaulting, mutating admission webhooks,
validation (422), optimistic concurrency on ``resourceVersion`` (409), the status
subresource split, ``dryRun``, finalizers and ``deletionTimestamp``, and the garbage
collection of dependents through ``ownerReferences``. The emulated controllers write through
the same verbs, so they obey the same rules.
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
import uuid
from collections.abc import Iterable
from typing import Any

from fakekube import jobs, kinds, managed, schema
from fakekube._errors import ApiError, FieldError
from fakekube._errors import forbidden as forbidden_field
from fakekube._errors import invalid as invalid_field
from fakekube._errors import required as required_field
from fakekube.admission import WebhookCaller
from fakekube.clock import Clock, format_time
from fakekube.patch import (
    apply_merge,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from fakekube.podindex import PodIndex
from fakekube.resources import Registry, ResourceType
from fakekube.selection import FieldSelector, LabelSelector
from fakekube.store import Store

__all__ = ["PATCH_TYPES", "FakeApi"]

Obj = dict[str, Any]

PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
# Kinds whose DELETE answers the object rather than a Status (ReturnDeletedObject).
_RETURNS_OBJECT = {"Pod", "Service", "Namespace"}


def _spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _owned_by(obj: Obj, uid: str) -> bool:
    return any(
        ref.get("uid") == uid for ref in obj.get("metadata", {}).get("ownerReferences") or []
    )


class FakeApi:
    """Verbs over the store; every refusal is an :class:`ApiError`."""

    def __init__(self, registry: Registry, store: Store, clock: Clock, *, seed: int = 0) -> None:
        self.registry = registry
        self.store = store
        self.clock = clock
        self.random = random.Random(seed)
        self.pods = PodIndex()
        store.observers.append(self.pods.observe)
        self.service_endpoints: dict[tuple[str, str], str] = {}
        self.webhooks = WebhookCaller(
            self._webhook_configurations, self._namespace_labels, self.service_endpoints
        )

    # -- lookups --------------------------------------------------------------------------

    def resource(self, group: str, version: str, plural: str) -> ResourceType:
        rt = self.registry.find(group, version, plural)
        if rt is None:
            raise ApiError(
                404, "NotFound", "the server could not find the requested resource", details={}
            )
        return rt

    def kind(self, kind: str, api_version: str = "v1") -> ResourceType:
        rt = self.registry.by_kind(api_version, kind)
        if rt is None:
            raise ApiError.bad_request(f"no resource of kind {kind!r} in {api_version!r}")
        return rt

    def _webhook_configurations(self) -> list[Obj]:
        rt = self.registry.find(
            "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"
        )
        return [copy.deepcopy(o) for o in self.store.items(rt)] if rt else []

    def _namespace_labels(self, namespace: str) -> dict[str, str]:
        ns = self.store.peek(self.kind("Namespace"), "", namespace)
        labels: dict[str, str] = (ns or {}).get("metadata", {}).get("labels") or {}
        return dict(labels)

    def _out(self, rt: ResourceType, obj: Obj, version: str | None = None) -> Obj:
        out = copy.deepcopy(obj)
        out["apiVersion"] = f"{rt.group}/{version}" if (rt.group and version) else rt.api_version
        out["kind"] = rt.kind
        return out

    def _check_namespace(self, rt: ResourceType, namespace: str, name: str) -> None:
        if not rt.namespaced:
            return
        ns = self.store.peek(self.kind("Namespace"), "", namespace)
        if ns is None:
            raise ApiError.not_found("", "namespaces", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise ApiError.forbidden(
                rt.group,
                rt.plural,
                name,
                f"unable to create new content in namespace {namespace} because it is being terminated",  # noqa: E501
            )

    # -- reads ----------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str, name: str, version: str | None = None) -> Obj:
        stored = self.store.peek(rt, namespace if rt.namespaced else "", name)
        if stored is None:
            raise ApiError.not_found(rt.group, rt.plural, name)
        return self._out(rt, stored, version)  # one copy (store.get would make a second)

    def list_page(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        version: str | None = None,
        start: int = 0,
        limit: int = 0,
    ) -> tuple[list[Obj], int, int]:
        """The matching objects from ``start`` on, at most ``limit`` (0: all), the store's
        version and how many match in all; only the page is converted for the answer (a
        paged list of 10,000 objects converted all of them for each page)."""
        labels = LabelSelector(label_selector)
        fields = FieldSelector(field_selector, rt.kind)
        matching = [
            obj
            for obj in self.store.items(rt, namespace if rt.namespaced else None)
            if labels.matches(obj.get("metadata", {}).get("labels") or {}) and fields.matches(obj)
        ]
        page = matching[start : start + limit] if limit > 0 else matching[start:]
        items = [self._out(rt, obj, version) for obj in page]
        for item in items:
            item.pop("apiVersion", None)
            item.pop("kind", None)
        return items, self.store.rv, len(matching)

    def list(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        version: str | None = None,
    ) -> tuple[list[Obj], int]:
        items, rv, _total = self.list_page(
            rt,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            version=version,
        )
        return items, rv

    # -- create ---------------------------------------------------------------------------

    def _generate_name(self, prefix: str) -> str:
        return prefix + "".join(self.random.choice(_NAME_CHARS) for _ in range(5))

    async def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Obj,
        *,
        dry_run: bool = False,
        version: str | None = None,
        field_manager: str = "",
        user_agent: str = "",
        applied: set[managed.Path] | None = None,
    ) -> Obj:
        if not isinstance(body, dict):
            raise ApiError.bad_request("the body of the request was in an unknown format")
        obj = copy.deepcopy(body)
        if obj.get("kind") and obj["kind"] != rt.kind:
            raise ApiError.bad_request(
                f"the API version in the data ({obj.get('apiVersion')}) does not match the expected "  # noqa: E501
                f"API version ({rt.api_version}) or kind {obj['kind']!r} is not {rt.kind!r}"
            )
        _check_decodes(rt, obj, version)
        meta = obj.setdefault("metadata", {})
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise ApiError.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"  # noqa: E501
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise ApiError.internal("resourceVersion should not be set on objects to be created")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self._generate_name(meta["generateName"])
        name = meta.get("name", "")
        self._check_namespace(rt, namespace, name)
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"):
            meta.pop(key, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = format_time(self.clock.now())
        if rt.generational:
            meta["generation"] = 1
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        builtin = not rt.custom
        structural = self._structural_schema(rt, version)
        if rt.custom and rt.has_status:
            obj.pop("status", None)  # customResourceStrategy.PrepareForCreate
        if structural is not None:
            schema.prepare(obj, structural)
        kinds.default_object(rt.kind, obj, builtin=builtin)
        if rt.kind == "Pod" and builtin:
            self._admit_priority(obj)
        obj = await self.webhooks.admit(rt, "CREATE", obj, None, dry_run=dry_run)
        obj["metadata"]["uid"], obj["metadata"]["namespace"] = meta["uid"], meta.get("namespace")
        if not rt.namespaced:
            obj["metadata"].pop("namespace", None)
        kinds.default_object(rt.kind, obj, builtin=builtin)
        if rt.has_status and builtin:
            obj["status"] = self._initial_status(rt, obj)
        elif rt.has_status:
            obj.pop("status", None)
        if structural is not None:
            schema.prepare(obj, structural)
        errors = kinds.validate_create(rt.kind, obj, namespaced=rt.namespaced, builtin=builtin)
        if rt.kind == "Job" and builtin:
            errors.extend(jobs.validate_managed_by(obj.get("spec") or {}))
        if structural is not None:
            errors.extend(schema.validate(obj, structural))
        if errors:
            raise ApiError.invalid(rt.group, rt.kind, name, errors)
        if builtin:
            kinds.drop_empty(rt.kind, obj)
        if self.store.peek(rt, obj["metadata"].get("namespace", ""), name) is not None:
            raise ApiError.already_exists(rt.group, rt.plural, name)
        manager = managed.manager_name(field_manager, user_agent)
        if manager:
            self._track(rt, version, None, obj, manager, "", applied, ())
        if dry_run:
            return self._out(rt, obj, version)
        stored = self.store.commit(rt, "ADDED", obj, None)
        self._after_write(rt, None, stored)
        return self._out(rt, stored, version)

    def _admit_priority(self, pod: Obj) -> None:
        """The Priority admission plugin: resolve ``priorityClassName`` into ``priority``."""
        spec = pod.setdefault("spec", {})
        rt = self.kind("PriorityClass", "scheduling.k8s.io/v1")
        name = spec.get("priorityClassName")
        if name:
            found = self.store.peek(rt, "", name)
            if found is None:
                raise ApiError.forbidden(
                    "",
                    "pods",
                    pod["metadata"].get("name", ""),
                    f"no PriorityClass with name {name} was found",
                )
        else:
            found = next((pc for pc in self.store.items(rt) if pc.get("globalDefault")), None)
            if found is not None:
                spec["priorityClassName"] = found["metadata"]["name"]
        value = int(found.get("value", 0)) if found else 0
        if spec.get("priority") is not None and spec["priority"] != value:
            raise ApiError.forbidden(
                "",
                "pods",
                pod["metadata"].get("name", ""),
                f"the integer value of priority ({spec['priority']}) must not be provided in pod "
                f"spec; priority admission controller computed {value} from the given "
                "PriorityClass name",
            )
        spec["priority"] = value
        spec.setdefault(
            "preemptionPolicy", (found or {}).get("preemptionPolicy", "PreemptLowerPriority")
        )

    def _initial_status(self, rt: ResourceType, obj: Obj) -> Obj:
        if rt.kind == "Pod" and not rt.custom:
            status: Obj = {"phase": "Pending", "qosClass": _qos_class(obj.get("spec") or {})}
            if (obj.get("spec") or {}).get("schedulingGates"):
                status["conditions"] = [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "SchedulingGated",
                        "message": "Scheduling is blocked due to non-empty scheduling gates",
                        "lastProbeTime": None,
                        "lastTransitionTime": format_time(self.clock.now()),
                    }
                ]
            return status
        if rt.kind == "Namespace" and not rt.custom:
            return {"phase": "Active"}
        if rt.kind == "Node" and not rt.custom:
            return copy.deepcopy(obj.get("status") or {})
        return {}

    # -- update and patch -----------------------------------------------------------------

    async def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Obj,
        *,
        subresource: str = "",
        dry_run: bool = False,
        version: str | None = None,
        field_manager: str = "",
        user_agent: str = "",
    ) -> Obj:
        if not isinstance(body, dict):
            raise ApiError.bad_request("the body of the request was in an unknown format")
        ns = namespace if rt.namespaced else ""
        old = self.store.get(rt, ns, name)
        new = copy.deepcopy(body)
        meta = new.setdefault("metadata", {})
        if meta.get("name") and meta["name"] != name:
            raise ApiError.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"  # noqa: E501
            )
        if rt.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
            raise ApiError.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"  # noqa: E501
            )
        _check_decodes(rt, new, version)
        rv = meta.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise ApiError.stale(rt.group, rt.plural, name)
        return await self._write_update(
            rt,
            old,
            new,
            subresource=subresource,
            dry_run=dry_run,
            version=version,
            manager=managed.manager_name(field_manager, user_agent),
        )

    async def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        raw: bytes,
        *,
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str = "",
        version: str | None = None,
        user_agent: str = "",
        force: bool = False,
    ) -> Obj:
        ns = namespace if rt.namespaced else ""
        applied: set[managed.Path] | None = None
        forced: set[managed.Path] = set()
        if content_type not in PATCH_TYPES or (
            rt.custom and content_type == "application/strategic-merge-patch+json"
        ):
            accepted = ", ".join(t for t in PATCH_TYPES if not (rt.custom and "strategic" in t))
            raise ApiError.unsupported_media_type(
                f"the body of the request was in an unknown format - accepted media types include: {accepted}"  # noqa: E501
            )
        check_patch_options(content_type, field_manager=field_manager, force_given=force)
        patch = _decode(raw, yaml_ok=content_type == "application/apply-patch+yaml")
        if content_type == "application/apply-patch+yaml":
            if not isinstance(patch, dict):
                raise ApiError.bad_request("apply patch must be an object")
            current = self.store.peek(rt, ns, name)
            if current is None:
                if subresource:
                    raise ApiError.not_found(rt.group, rt.plural, name)
                body = copy.deepcopy(patch)
                body.setdefault("metadata", {})["name"] = name
                return await self.create(
                    rt,
                    namespace,
                    body,
                    dry_run=dry_run,
                    version=version,
                    field_manager=field_manager,
                    applied=managed.field_paths(body, subresource="", has_status=rt.has_status),
                )
            old = copy.deepcopy(current)
            rv = (patch.get("metadata") or {}).get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise ApiError.stale(rt.group, rt.plural, name)
            applied = managed.field_paths(patch, subresource=subresource, has_status=rt.has_status)
            conflicts = managed.apply_conflicts(old, patch, applied, field_manager, subresource)
            if conflicts and not force:
                message, causes = managed.conflict_message(conflicts)
                raise ApiError(409, "Conflict", message, details={"causes": causes})
            forced = {p for paths in conflicts.values() for p in paths}
            new = apply_merge(old, patch)
            others = managed.owned_by_others(old, field_manager, subresource)
            dropped = managed.previously_applied(old, field_manager, subresource) - applied
            managed.remove_paths(new, managed.unshared(dropped, others))
        else:
            old = self.store.get(rt, ns, name)
            if content_type == "application/json-patch+json":
                new = json_patch(old, patch)
            elif content_type == "application/merge-patch+json":
                new = merge_patch(old, patch)
            else:
                new = strategic_merge_patch(old, patch)
            if not isinstance(new, dict):
                raise ApiError.bad_request("the patch did not produce an object")
            new_meta = new.setdefault("metadata", {})
            rv = new_meta.get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise ApiError.stale(rt.group, rt.plural, name)
            if new_meta.get("name") != name:
                raise ApiError.bad_request(
                    f"the name of the object ({new_meta.get('name')}) does not match the name on the URL ({name})"  # noqa: E501
                )
        why = None if rt.custom else kinds.decode_error(rt.kind, new)
        if why is not None:
            # The patch handler decodes the patched JSON into the Go type; a failure is 422
            # on the field "patch" with the patched document as the value.
            shown = json.dumps(new, separators=(",", ":"))
            raise ApiError.invalid("", "", "", [invalid_field("patch", shown, why)])
        return await self._write_update(
            rt,
            old,
            new,
            subresource=subresource,
            dry_run=dry_run,
            version=version,
            manager=field_manager
            if applied is not None
            else managed.manager_name(field_manager, user_agent),
            applied=applied,
            forced=forced,
        )

    async def _write_update(
        self,
        rt: ResourceType,
        old: Obj,
        new: Obj,
        *,
        subresource: str,
        dry_run: bool,
        version: str | None,
        manager: str = "",
        applied: set[managed.Path] | None = None,
        forced: set[managed.Path] | None = None,
    ) -> Obj:
        old_meta = old["metadata"]
        structural = self._structural_schema(rt, version)
        if subresource == "status":
            result = copy.deepcopy(old)
            if rt.custom and "status" not in new:
                result.pop("status", None)
            else:
                result["status"] = copy.deepcopy(new.get("status") or {})
            new = result
            errors = []
            if structural is not None:
                schema.prepare(new, structural)
                errors = schema.validate(new, structural, old)
            elif rt.kind == "Job" and not rt.custom:
                errors = jobs.validate_status_update(old, new)
            if errors:
                raise ApiError.invalid(rt.group, rt.kind, old_meta["name"], errors)
        elif subresource:
            raise ApiError(
                404, "NotFound", f"the server could not find the requested resource ({subresource})"
            )
        else:
            if rt.custom and rt.has_status and "status" not in old:
                new.pop("status", None)
            elif rt.has_status:
                new["status"] = copy.deepcopy(old.get("status") or {})
            meta = new.setdefault("metadata", {})
            for key in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ):
                if key in old_meta:
                    meta[key] = old_meta[key]
                else:
                    meta.pop(key, None)
            meta["name"] = old_meta["name"]
            if rt.namespaced:
                meta["namespace"] = old_meta["namespace"]
            new["apiVersion"], new["kind"] = rt.api_version, rt.kind
            builtin = not rt.custom
            if structural is not None:
                schema.prepare(new, structural)
            kinds.default_object(rt.kind, new, builtin=builtin)
            new = await self.webhooks.admit(rt, "UPDATE", new, old, dry_run=dry_run)
            if structural is not None:
                schema.prepare(new, structural)
            errors = kinds.validate_update(
                rt.kind, old, new, namespaced=rt.namespaced, builtin=builtin
            )
            if structural is not None:
                errors.extend(schema.validate(new, structural, old))
            if rt.kind == "Job" and builtin:
                errors.extend(_job_spec_update(old, new))
            if errors:
                raise ApiError.invalid(rt.group, rt.kind, old_meta["name"], errors)
            if rt.generational and _spec_part(old) != _spec_part(new):
                new["metadata"]["generation"] = int(old_meta.get("generation", 1)) + 1
        if not rt.custom:
            kinds.drop_empty(rt.kind, new)
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if "managedFields" in old_meta and "managedFields" not in new["metadata"]:
            new["metadata"]["managedFields"] = copy.deepcopy(old_meta["managedFields"])
        if manager and (new != old or applied is not None):
            self._track(rt, version, old, new, manager, subresource, applied, forced or ())
        if _without_times(new) == _without_times(old):
            return self._out(rt, old, version)
        if dry_run:
            return self._out(rt, new, version)
        if (
            new["metadata"].get("deletionTimestamp")
            and not new["metadata"].get("finalizers")
            and rt.kind != "Namespace"
        ):
            stored = self.store.commit(rt, "DELETED", new, old)
            self._after_delete(rt, stored)
            return self._out(rt, stored, version)
        stored = self.store.commit(rt, "MODIFIED", new, old)
        self._after_write(rt, old, stored)
        return self._out(rt, stored, version)

    # -- delete ---------------------------------------------------------------------------

    def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        options: Obj | None = None,
        *,
        dry_run: bool = False,
        propagation: str | None = None,
        version: str | None = None,
    ) -> Obj:
        ns = namespace if rt.namespaced else ""
        old = self.store.get(rt, ns, name)
        options = options or {}
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != old["metadata"].get("uid"):
            raise ApiError.conflict(
                rt.group,
                rt.plural,
                name,
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {old['metadata'].get('uid')}",  # noqa: E501
            )
        if (
            pre.get("resourceVersion")
            and pre["resourceVersion"] != old["metadata"]["resourceVersion"]
        ):
            raise ApiError.conflict(
                rt.group,
                rt.plural,
                name,
                f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                f"ResourceVersion in object meta: {old['metadata']['resourceVersion']}",
            )
        policy = (
            propagation
            or options.get("propagationPolicy")
            or ("Orphan" if rt.kind == "Job" else "Background")
        )
        if dry_run:
            return self._deleted_answer(rt, old, version)
        if old["metadata"].get("finalizers") or (rt.kind == "Namespace" and not rt.custom):
            if old["metadata"].get("deletionTimestamp"):
                return self._out(rt, old, version)
            new = copy.deepcopy(old)
            new["metadata"]["deletionTimestamp"] = format_time(self.clock.now())
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            if rt.kind == "Namespace":
                new["status"] = {**(new.get("status") or {}), "phase": "Terminating"}
            stored = self.store.commit(rt, "MODIFIED", new, old)
            return self._out(rt, stored, version)
        stored = self.store.commit(rt, "DELETED", copy.deepcopy(old), old)
        self._after_delete(rt, stored, policy=policy)
        return self._deleted_answer(rt, stored, version)

    def _deleted_answer(self, rt: ResourceType, obj: Obj, version: str | None) -> Obj:
        if rt.kind in _RETURNS_OBJECT and not rt.custom:
            return self._out(rt, obj, version)
        details: Obj = {
            "name": obj["metadata"]["name"],
            "kind": rt.plural,
            "uid": obj["metadata"].get("uid"),
        }
        if rt.group:
            details["group"] = rt.group
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }

    def _after_delete(self, rt: ResourceType, obj: Obj, *, policy: str = "Background") -> None:
        uid = obj["metadata"].get("uid", "")
        for other in self.registry.all():
            for dep in list(self.store.items(other)):
                if not _owned_by(dep, uid):
                    continue
                meta = dep["metadata"]
                if policy == "Orphan":
                    new = copy.deepcopy(dep)
                    new["metadata"]["ownerReferences"] = [
                        r for r in meta.get("ownerReferences") or [] if r.get("uid") != uid
                    ] or None
                    if new["metadata"]["ownerReferences"] is None:
                        del new["metadata"]["ownerReferences"]
                    self.store.commit(other, "MODIFIED", new, dep)
                else:
                    with contextlib.suppress(ApiError):
                        self.delete(other, meta.get("namespace", ""), meta["name"])
        if rt.kind == "CustomResourceDefinition" and not rt.custom:
            names = obj.get("spec", {}).get("names", {})
            group = obj.get("spec", {}).get("group", "")
            found = self.registry.find(group, _storage_version(obj), names.get("plural", ""))
            if found is not None:
                self.store.drop_all(found)
                self.registry.remove(group, names.get("plural", ""))

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None,
        field_selector: str | None,
        dry_run: bool,
    ) -> Obj:
        items, _ = self.list(
            rt, namespace, label_selector=label_selector, field_selector=field_selector
        )
        for item in items:
            meta = item["metadata"]
            try:
                self.delete(rt, meta.get("namespace", ""), meta["name"], dry_run=dry_run)
            except ApiError as exc:
                if exc.code != 404:
                    raise
        return {
            "kind": f"{rt.kind}List",
            "apiVersion": rt.api_version,
            "metadata": {"resourceVersion": str(self.store.rv)},
            "items": items,
        }

    # -- binding --------------------------------------------------------------------------

    def bind(self, namespace: str, name: str, binding: Obj, *, dry_run: bool = False) -> Obj:
        rt = self.kind("Pod")
        old = self.store.get(rt, namespace, name)
        target = (binding.get("target") or {}).get("name", "")
        if not target:
            raise ApiError.invalid("", "Binding", name, [required_field("target.name")])
        if old["spec"].get("nodeName"):
            raise ApiError.conflict(
                "",
                "pods",
                name,
                f'pod {name} is already assigned to node "{old["spec"]["nodeName"]}"',
            )
        if old["spec"].get("schedulingGates"):
            raise ApiError.conflict(
                "", "pods", name, f"pod {name} has non-empty .spec.schedulingGates"
            )
        if old["metadata"].get("deletionTimestamp"):
            raise ApiError.conflict(
                "", "pods", name, f"pod {name} is being deleted, cannot be assigned to a host"
            )
        new = copy.deepcopy(old)
        new["spec"]["nodeName"] = target
        conditions = [
            c
            for c in new.setdefault("status", {}).get("conditions") or []
            if c.get("type") != "PodScheduled"
        ]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": format_time(self.clock.now()),
            }
        )
        new["status"]["conditions"] = conditions
        if not dry_run:
            self.store.commit(rt, "MODIFIED", new, old)
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }

    # -- hooks ----------------------------------------------------------------------------

    def _structural_schema(self, rt: ResourceType, version: str | None) -> Obj | None:
        """The ``openAPIV3Schema`` of a custom resource's requested version, if any."""
        if not rt.custom:
            return None
        crd_rt = self.registry.find("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        if crd_rt is None:
            return None
        crd = self.store.peek(crd_rt, "", f"{rt.plural}.{rt.group}")
        if crd is None:
            return None
        return schema.find_schema(crd, version or rt.version)

    def _track(
        self,
        rt: ResourceType,
        version: str | None,
        old: Obj | None,
        new: Obj,
        manager: str,
        subresource: str,
        applied: set[managed.Path] | None,
        forced: Iterable[managed.Path],
    ) -> None:
        """Record ``manager``'s write of ``new`` in its managedFields (an Apply when
        ``applied`` is the applied configuration, else an Update)."""
        managed.track(
            old,
            new,
            manager=manager,
            operation="Apply" if applied is not None else "Update",
            api_version=_api_version(rt, version),
            now=format_time(self.clock.now()),
            subresource=subresource,
            has_status=rt.has_status,
            applied=applied,
            forced=forced,
        )

    def printer_columns(self, rt: ResourceType, version: str | None) -> tuple[Obj, ...]:
        """A custom resource version's ``additionalPrinterColumns`` (empty: none, or built in)."""
        if not rt.custom:
            return ()
        crd_rt = self.registry.find("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        crd = None if crd_rt is None else self.store.peek(crd_rt, "", f"{rt.plural}.{rt.group}")
        if crd is None:
            return ()
        spec = crd.get("spec") or {}
        for entry in spec.get("versions") or []:
            if entry.get("name") == (version or rt.version):
                return tuple(entry.get("additionalPrinterColumns") or ())
        return tuple(spec.get("additionalPrinterColumns") or ())

    def _after_write(self, rt: ResourceType, old: Obj | None, obj: Obj) -> None:
        if rt.kind == "CustomResourceDefinition" and not rt.custom:
            self.register_crd(obj)

    def register_crd(self, crd: Obj) -> ResourceType:
        """Serve the custom resource a CRD defines; mark the CRD Established."""
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
        storage = _storage_version(crd)
        storage_entry: Obj = next(
            (v for v in spec.get("versions") or [] if v.get("name") == storage), {}
        )
        subresources = storage_entry.get("subresources") or {}
        rt = ResourceType(
            group=spec.get("group", ""),
            version=storage,
            kind=names.get("kind", ""),
            plural=names.get("plural", ""),
            namespaced=spec.get("scope") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()),
            subresources=tuple(s for s in ("status", "scale") if s in subresources),
            generational=True,
            categories=tuple(names.get("categories") or ()),
            served_versions=tuple(v["name"] for v in versions),
            custom=True,
        )
        self.registry.add(rt)
        crd_rt = self.kind("CustomResourceDefinition", "apiextensions.k8s.io/v1")
        current = self.store.peek(crd_rt, "", crd["metadata"]["name"])
        if current is not None and not (current.get("status") or {}).get("conditions"):
            new = copy.deepcopy(current)
            now = format_time(self.clock.now())
            new["status"] = {
                "acceptedNames": dict(names.items()),
                "storedVersions": [storage],
                "conditions": [
                    {
                        "type": "NamesAccepted",
                        "status": "True",
                        "reason": "NoConflicts",
                        "message": "no conflicts found",
                        "lastTransitionTime": now,
                    },
                    {
                        "type": "Established",
                        "status": "True",
                        "reason": "InitialNamesAccepted",
                        "message": "the initial names have been accepted",
                        "lastTransitionTime": now,
                    },
                ],
            }
            self.store.commit(crd_rt, "MODIFIED", new, current)
        return rt

    def record_event(
        self,
        involved: Obj,
        reason: str,
        message: str,
        *,
        type_: str = "Normal",
        component: str = "",
    ) -> None:
        """Write a core/v1 Event about ``involved`` (as a controller's EventRecorder does)."""
        meta = involved.get("metadata", {})
        namespace = meta.get("namespace") or "default"
        rt = self.kind("Event")
        now = format_time(self.clock.now())
        name = f"{meta.get('name', 'object')}.{self.random.getrandbits(64):016x}"
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": str(uuid.uuid4()),
                "creationTimestamp": now,
            },
            "involvedObject": {
                "kind": involved.get("kind", ""),
                "namespace": meta.get("namespace", ""),
                "name": meta.get("name", ""),
                "uid": meta.get("uid", ""),
                "apiVersion": involved.get("apiVersion", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "reason": reason,
            "message": message,
            "source": {"component": component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": type_,
            "reportingComponent": component,
            "reportingInstance": "",
        }
        if self.store.peek(self.kind("Namespace"), "", namespace) is not None:
            self.store.commit(rt, "ADDED", event, None)


def _api_version(rt: ResourceType, version: str | None) -> str:
    return f"{rt.group}/{version}" if (rt.group and version) else rt.api_version


def _without_times(obj: Obj) -> Obj:
    """``obj`` with managedFields times blanked: a write that changes nothing is a no-op."""
    entries = (obj.get("metadata") or {}).get("managedFields")
    if not entries:
        return obj
    out = {**obj, "metadata": {**obj["metadata"]}}
    out["metadata"]["managedFields"] = [{**e, "time": ""} for e in entries]
    return out


def _job_spec_update(old: Obj, new: Obj) -> list[FieldError]:
    """``spec.managedBy``: valid, and immutable (``ValidateJobSpecUpdate``)."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    errors = jobs.validate_managed_by(new_spec)
    if old_spec.get("managedBy") != new_spec.get("managedBy"):
        errors.append(
            invalid_field("spec.managedBy", new_spec.get("managedBy"), "field is immutable")
        )
    return errors


def _storage_version(crd: Obj) -> str:
    for version in (crd.get("spec") or {}).get("versions") or []:
        if version.get("storage"):
            return str(version.get("name", "v1"))
    return "v1"


def _qos_class(spec: Obj) -> str:
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    requests_any = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {} if isinstance(container, dict) else {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        if requests or limits:
            requests_any = True
        for res in ("cpu", "memory"):
            if res not in limits or requests.get(res, limits.get(res)) != limits.get(res):
                guaranteed = False
    if not requests_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _decode(raw: bytes, *, yaml_ok: bool) -> Any:
    try:
        return json.loads(raw or b"null")
    except ValueError as exc:
        if yaml_ok:
            import importlib

            yaml: Any = importlib.import_module("yaml")
            try:
                return yaml.safe_load(raw)
            except Exception as yaml_exc:
                raise ApiError.bad_request(f"error decoding YAML: {yaml_exc}") from yaml_exc
        raise ApiError.bad_request(f"error decoding patch: {exc}") from exc


def _check_decodes(rt: ResourceType, obj: Obj, version: str | None) -> None:
    """A create or update body the server cannot decode into its Go type answers 400, as
    ``transformDecodeError`` words it."""
    why = None if rt.custom else kinds.decode_error(rt.kind, obj)
    if why is not None:
        raise ApiError.bad_request(
            f'{rt.kind} in version "{version or rt.version}" cannot be handled as a '
            f"{rt.kind}: {why}"
        )


def check_patch_options(content_type: str, *, field_manager: str, force_given: bool) -> None:
    """``ValidatePatchOptions`` (apimachinery ``meta/v1/validation``), which the patch handler
    runs before it reads the body or the object: an apply needs a ``fieldManager``, ``force``
    belongs to applies only, a manager is at most 128 printable characters."""
    errors: list[FieldError] = []
    if content_type == "application/apply-patch+yaml":
        if not field_manager:
            errors.append(required_field("fieldManager", "is required for apply patch"))
    elif force_given:
        errors.append(forbidden_field("force", "may not be specified for non-apply patch"))
    if len(field_manager) > _FIELD_MANAGER_MAX:
        errors.append(
            FieldError(
                "fieldManager", "Too long", f"may not be more than {_FIELD_MANAGER_MAX} bytes"
            )
        )
    elif any(not ch.isprintable() for ch in field_manager):
        errors.append(
            invalid_field(
                "fieldManager", field_manager, "manager may only contain printable characters"
            )
        )
    if errors:
        raise ApiError.invalid("meta.k8s.io", "PatchOptions", "", errors)


_FIELD_MANAGER_MAX = 128
