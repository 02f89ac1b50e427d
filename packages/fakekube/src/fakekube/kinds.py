"""Per-kind defaulting and validation: the rules a real API server enforces on our objects.

Messages follow ``k8s.io/kubernetes/pkg/apis/*/validation``. Each kind gets
``default(obj)``, ``validate_create(obj)`` and ``validate_update(old, new)`` returning
:class:`FieldError` lists; the API layer wraps them into one 422 ``Invalid`` Status.

What is checked (see docs/fakekube.md for the full list): object metadata (names, labels,
finalizers while deleting); Pod containers, scheduling gates (no additions after creation,
no ``nodeName`` while gated), the update fence of ``ValidatePodUpdate`` with the gated-pod
relaxations (``nodeSelector`` additions, narrowing required node affinity); Job restart
policy, selector and template immutability with the suspended-Job relaxations; a few
structural rules for Services, Deployments, RBAC, webhook configurations and CRDs.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from fakekube._errors import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    required,
    unsupported,
)
from fakekube._time import micro_time_error
from fakekube.crdschema import validate_crd_schemas
from fakekube.selection import label_selector_matches, parse_quantity

__all__ = ["default_object", "validate_create", "validate_update"]

Obj = dict[str, Any]

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)

# Kinds whose names are DNS-1123 labels rather than subdomains.
_LABEL_NAMED = {"Namespace", "Service"}


def is_qualified_name(text: str) -> bool:
    prefix, slash, name = text.rpartition("/")
    if slash and (not prefix or not _DNS1123_SUBDOMAIN.match(prefix) or len(prefix) > 253):
        return False
    return bool(_QUALIFIED_NAME.match(name)) and len(name) <= 63


# -- metadata -------------------------------------------------------------------------------


def validate_metadata(kind: str, obj: Obj, namespaced: bool) -> list[FieldError]:
    meta = obj.get("metadata") or {}
    errs: list[FieldError] = []
    name = meta.get("name", "")
    if not name:
        errs.append(required("metadata.name", "name or generateName is required"))
    elif kind in _LABEL_NAMED:
        if not _DNS1123_LABEL.match(name) or len(name) > 63:
            errs.append(invalid("metadata.name", name, LABEL_MSG))
    elif kind not in ("ClusterRole", "Role", "RoleBinding", "ClusterRoleBinding") and (
        not _DNS1123_SUBDOMAIN.match(name) or len(name) > 253
    ):
        errs.append(invalid("metadata.name", name, SUBDOMAIN_MSG))
    if namespaced and not meta.get("namespace"):
        errs.append(required("metadata.namespace"))
    for key, value in (meta.get("labels") or {}).items():
        if not is_qualified_name(str(key)):
            errs.append(invalid("metadata.labels", key, QUALIFIED_MSG))
        if not isinstance(value, str) or not _LABEL_VALUE.match(value) or len(value) > 63:
            errs.append(
                invalid(
                    "metadata.labels",
                    value,
                    "a valid label must be an empty string or consist of alphanumeric "
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                    "character",
                )
            )
    for key, value in (meta.get("annotations") or {}).items():
        if not isinstance(value, str):
            errs.append(invalid(f"metadata.annotations[{key}]", value, "must be a string"))
    return errs


def validate_metadata_update(old: Obj, new: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    old_meta, new_meta = old.get("metadata", {}), new.get("metadata", {})
    if old_meta.get("deletionTimestamp"):
        added = set(new_meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
        if added:
            errs.append(
                forbidden(
                    "metadata.finalizers",
                    f"no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {sorted(added)!r}",
                )
            )
    return errs


# -- pods -----------------------------------------------------------------------------------


def _pull_policy(image: str) -> str:
    tail = image.rsplit("/", 1)[-1]
    if "@" in tail:
        return "IfNotPresent"
    tag = tail.split(":", 1)[1] if ":" in tail else "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def default_pod_spec(spec: Obj) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    for group in ("containers", "initContainers"):
        for container in spec.get(group) or []:
            if not isinstance(container, dict):
                continue
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            if isinstance(container.get("image"), str):
                container.setdefault("imagePullPolicy", _pull_policy(container["image"]))
            container.setdefault("resources", {})
            for port in container.get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")


def _default_pod(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    default_pod_spec(spec)
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    tolerations = spec.setdefault("tolerations", [])
    keys = {t.get("key") for t in tolerations if isinstance(t, dict)}
    for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if taint not in keys:
            tolerations.append(
                {
                    "key": taint,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            )


def validate_pod_spec(
    spec: Obj, path: str, *, restart_policies: tuple[str, ...]
) -> list[FieldError]:
    errs: list[FieldError] = []
    containers = spec.get("containers")
    if not containers:
        errs.append(required(f"{path}.containers"))
    names: set[str] = set()
    for group in ("containers", "initContainers"):
        for i, container in enumerate(spec.get(group) or []):
            where = f"{path}.{group}[{i}]"
            if not isinstance(container, dict):
                errs.append(invalid(where, container, "must be an object"))
                continue
            name = container.get("name", "")
            if not name:
                errs.append(required(f"{where}.name"))
            elif not _DNS1123_LABEL.match(name):
                errs.append(invalid(f"{where}.name", name, LABEL_MSG))
            elif name in names:
                errs.append(duplicate(f"{where}.name", name))
            names.add(name)
            image = container.get("image")
            if not image:
                errs.append(required(f"{where}.image"))
            elif image != image.strip():
                errs.append(
                    invalid(f"{where}.image", image, "must not have leading or trailing whitespace")
                )
            resources = container.get("resources") or {}
            for section in ("requests", "limits"):
                for res, qty in (resources.get(section) or {}).items():
                    if parse_quantity(qty) is None:
                        errs.append(
                            invalid(
                                f"{where}.resources.{section}[{res}]",
                                qty,
                                "must match the regex ^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$",
                            )
                        )
    if spec.get("restartPolicy") not in restart_policies:
        errs.append(
            unsupported(f"{path}.restartPolicy", spec.get("restartPolicy"), restart_policies)
        )
    errs += _validate_node_affinity(spec, path)
    gates = spec.get("schedulingGates") or []
    seen: set[str] = set()
    for i, gate in enumerate(gates):
        name = gate.get("name", "") if isinstance(gate, dict) else ""
        if not is_qualified_name(name):
            errs.append(invalid(f"{path}.schedulingGates[{i}].name", name, QUALIFIED_MSG))
        elif name in seen:
            errs.append(duplicate(f"{path}.schedulingGates[{i}]", name))
        seen.add(name)
    return errs


def _validate_node_affinity(spec: Obj, path: str) -> list[FieldError]:
    """Required node affinity's field selectors, as ``validateNodeFieldSelectorRequirement``
    (``pkg/apis/core/validation``): ``In``/``NotIn`` with exactly one value, key
    ``metadata.name`` only (one value per requirement: pin several nodes with one term each)."""
    errs: list[FieldError] = []
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required_ = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    where = f"{path}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    terms = [
        (f"{where}.nodeSelectorTerms[{i}]", term)
        for i, term in enumerate(required_.get("nodeSelectorTerms") or [])
    ]
    preferred = f"{path}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    terms += [
        (f"{preferred}[{i}].preference", (entry or {}).get("preference"))
        for i, entry in enumerate(
            node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        )
    ]
    for term_path, term in terms:
        for j, req in enumerate((term or {}).get("matchFields") or []):
            at = f"{term_path}.matchFields[{j}]"
            if req.get("operator") in ("In", "NotIn"):
                if len(req.get("values") or []) != 1:
                    errs.append(
                        required(
                            f"{at}.values",
                            "must be only one value when `operator` is 'In' or 'NotIn' for "
                            "node field selector",
                        )
                    )
            else:
                errs.append(
                    invalid(f"{at}.operator", req.get("operator"), "not a valid selector operator")
                )
            if req.get("key") != "metadata.name":
                errs.append(invalid(f"{at}.key", req.get("key"), "not a valid field selector key"))
    return errs


def _validate_pod_create(obj: Obj) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs = validate_pod_spec(spec, "spec", restart_policies=("Always", "OnFailure", "Never"))
    if spec.get("nodeName") and spec.get("schedulingGates"):
        errs.append(
            forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared")
        )
    return errs


_POD_FENCE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)


def _required_terms(spec: Obj) -> list[Any] | None:
    node_aff = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required_ = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required_:
        return None
    terms = required_.get("nodeSelectorTerms")
    return list(terms) if terms else None


def _go_term(term: Obj) -> dict[str, Any]:
    def exprs(items: Any) -> Any:
        if not items:
            return None
        return [
            {"Key": e.get("key"), "Operator": e.get("operator"), "Values": e.get("values") or None}
            for e in items
        ]

    return {
        "MatchExpressions": exprs(term.get("matchExpressions")),
        "MatchFields": exprs(term.get("matchFields")),
    }


def _validate_gated_narrowing(old: Obj, new: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    old_sel, new_sel = old.get("nodeSelector") or {}, new.get("nodeSelector") or {}
    if any(new_sel.get(k) != v for k, v in old_sel.items()):
        errs.append(
            invalid(
                "spec.nodeSelector",
                new_sel,
                "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
            )
        )
    old_terms, new_terms = _required_terms(old), _required_terms(new)
    path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"  # noqa: E501
    if old_terms is not None:
        if new_terms is None or len(new_terms) != len(old_terms):
            errs.append(
                invalid(
                    path,
                    [_go_term(t) for t in new_terms or []],
                    "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
                )
            )
        else:
            for i, (o, n) in enumerate(zip(old_terms, new_terms, strict=True)):
                for part in ("matchExpressions", "matchFields"):
                    old_items, new_items = o.get(part) or [], n.get(part) or []
                    if new_items[: len(old_items)] != old_items:
                        errs.append(
                            invalid(
                                f"{path}[{i}]",
                                _go_term(n),
                                "only additions are allowed (no mutations or deletions)",
                            )
                        )
                        break
    return errs


def _strip_empty(value: Any) -> Any:
    """Semantic equality: empty lists and maps equal absent ones."""
    if isinstance(value, dict):
        return {k: _strip_empty(v) for k, v in value.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [_strip_empty(v) for v in value]
    return value


def _validate_pod_update(old: Obj, new: Obj) -> list[FieldError]:
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    errs: list[FieldError] = _validate_node_affinity(new_spec, "spec")
    old_tols, new_tols = old_spec.get("tolerations") or [], new_spec.get("tolerations") or []
    for tol in old_tols:
        if tol in new_tols:
            continue
        same_key = [
            t
            for t in new_tols
            if {**t, "tolerationSeconds": None} == {**tol, "tolerationSeconds": None}
        ]
        if not same_key:
            errs.append(
                forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            )
            break
    old_gates = [g.get("name") for g in old_spec.get("schedulingGates") or []]
    for i, gate in enumerate(new_spec.get("schedulingGates") or []):
        if gate.get("name") not in old_gates:
            errs.append(
                forbidden(
                    f"spec.schedulingGates[{i}].name",
                    f"only deletion is allowed, but found new scheduling gate '{gate.get('name')}'",
                )
            )
    gated = bool(old_spec.get("schedulingGates"))
    if gated:
        errs.extend(_validate_gated_narrowing(old_spec, new_spec))
    old_ads, new_ads = old_spec.get("activeDeadlineSeconds"), new_spec.get("activeDeadlineSeconds")
    if old_ads is not None and new_ads is None:
        errs.append(
            invalid(
                "spec.activeDeadlineSeconds",
                None,
                "must not update from a positive integer to nil value",
            )
        )
    elif old_ads is not None and new_ads > old_ads:
        errs.append(
            invalid(
                "spec.activeDeadlineSeconds",
                new_ads,
                "must be less than or equal to previous value",
            )
        )
    # The fence: everything else in the spec must be unchanged.
    masked_old, masked_new = copy.deepcopy(old_spec), copy.deepcopy(new_spec)
    for spec in (masked_old, masked_new):
        for key in ("tolerations", "activeDeadlineSeconds", "schedulingGates"):
            spec.pop(key, None)
        for group in ("containers", "initContainers"):
            for container in spec.get(group) or []:
                if isinstance(container, dict):
                    container.pop("image", None)
        if gated:
            spec.pop("nodeSelector", None)
            node_aff = (spec.get("affinity") or {}).pop("nodeAffinity", None)
            del node_aff
    old_grace, new_grace = (
        old_spec.get("terminationGracePeriodSeconds"),
        new_spec.get("terminationGracePeriodSeconds"),
    )
    if old_grace is not None and old_grace < 0 and new_grace == 1:
        masked_new["terminationGracePeriodSeconds"] = old_grace
    if len(old_spec.get("containers") or []) != len(new_spec.get("containers") or []):
        errs.append(forbidden("spec.containers", "pod updates may not add or remove containers"))
    elif _strip_empty(masked_old) != _strip_empty(masked_new):
        changed = sorted(
            k
            for k in set(masked_old) | set(masked_new)
            if _strip_empty(masked_old.get(k)) != _strip_empty(masked_new.get(k))
        )
        errs.append(
            forbidden("spec", f"{_POD_FENCE}\n(changed: {', '.join('spec.' + c for c in changed)})")
        )
    return errs


# -- jobs -----------------------------------------------------------------------------------


def _default_job(obj: Obj) -> None:
    """``SetDefaults_Job`` (``pkg/apis/batch/v1/defaults.go``) and, for a Job with a uid,
    ``generateSelector`` of the Job strategy's ``PrepareForCreate``."""
    spec = obj.setdefault("spec", {})
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 2**31 - 1 if spec.get("backoffLimitPerIndex") else 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault(
        "podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    )
    spec.setdefault("manualSelector", False)
    template = spec.setdefault("template", {})
    default_pod_spec(template.setdefault("spec", {}))
    meta = obj.setdefault("metadata", {})
    template_labels = (template.get("metadata") or {}).get("labels")
    if template_labels and not meta.get("labels"):
        meta["labels"] = dict(template_labels)  # decoding defaults a Job's labels
    uid = meta.get("uid")
    if not spec.get("manualSelector") and uid:
        name = meta.get("name", "")
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        for key in ("job-name", "batch.kubernetes.io/job-name"):
            labels.setdefault(key, name)
        for key in ("controller-uid", "batch.kubernetes.io/controller-uid"):
            labels.setdefault(key, uid)
        selector = spec.get("selector")
        if not isinstance(selector, dict):
            selector = spec["selector"] = {}
        match = selector.get("matchLabels")
        if not isinstance(match, dict):
            match = selector["matchLabels"] = {}
        match.setdefault("batch.kubernetes.io/controller-uid", uid)
        if not meta.get("labels"):
            # The stored Job read back is defaulted again: it takes the generated labels.
            meta["labels"] = dict(labels)


def _go_map(labels: dict[str, Any]) -> str:
    inner = ", ".join(f'"{k}":"{labels[k]}"' for k in sorted(labels))
    return f"map[string]string{{{inner}}}"


def _go_selector(selector: Obj) -> str:
    match = selector.get("matchLabels") or {}
    labels = ", ".join(f'"{k}":"{match[k]}"' for k in sorted(match))
    labels_text = f"map[string]string{{{labels}}}" if match else "map[string]string(nil)"
    expressions = "[]v1.LabelSelectorRequirement(nil)"
    if selector.get("matchExpressions"):
        expressions = "[]v1.LabelSelectorRequirement{...}"
    return f"v1.LabelSelector{{MatchLabels:{labels_text}, MatchExpressions:{expressions}}}"


def _validate_generated_selector(obj: Obj) -> list[FieldError]:
    """``validateGeneratedSelector`` (``pkg/apis/batch/validation``): unless
    ``manualSelector`` is true, the template carries this Job's own ``controller-uid`` and
    ``job-name`` labels (legacy and ``batch.kubernetes.io/``) and the selector matches them,
    so a Job copied with another Job's selector or labels is refused."""
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    meta = obj.get("metadata") or {}
    uid, name = meta.get("uid"), meta.get("name", "")
    if spec.get("manualSelector") or not isinstance(selector, dict) or not uid:
        return []
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    path = "spec.template.metadata.labels"
    expected = {
        "controller-uid": uid,
        "job-name": name,
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
    }
    errs: list[FieldError] = []
    for key, want in expected.items():
        if key not in labels:
            errs.append(required(f"{path}[{key}]", f"must be '{want}'"))
        elif labels[key] != want:
            errs.append(
                FieldError(
                    f"{path}[{key}]", "Invalid value", f"must be '{want}'", shown=_go_map(labels)
                )
            )
    if not label_selector_matches(selector, expected):
        errs.append(
            FieldError(
                "spec.selector",
                "Invalid value",
                "`selector` not auto-generated",
                shown=_go_selector(selector),
            )
        )
    return errs


def drop_empty(kind: str, obj: Obj) -> None:
    """Fields the API server never writes because Go's ``omitempty`` drops them: a Job's
    zero ``status.active``, ``succeeded`` and ``failed`` (``ready`` and ``terminating`` are
    pointers and stay, zero included)."""
    if kind == "Job":
        status = obj.get("status")
        if isinstance(status, dict):
            for key in ("active", "succeeded", "failed"):
                if status.get(key) == 0:
                    del status[key]


def _validate_job_create(obj: Obj) -> list[FieldError]:
    spec = obj.get("spec") or {}
    template = spec.get("template") or {}
    errs = validate_pod_spec(
        template.get("spec") or {}, "spec.template.spec", restart_policies=("OnFailure", "Never")
    )
    errs.extend(_validate_generated_selector(obj))
    for field in ("parallelism", "completions", "backoffLimit"):
        value = spec.get(field)
        if value is not None and (not isinstance(value, int) or value < 0):
            errs.append(invalid(f"spec.{field}", value, "must be greater than or equal to 0"))
    selector = spec.get("selector")
    labels = (template.get("metadata") or {}).get("labels") or {}
    if selector and not label_selector_matches(selector, labels):
        errs.append(
            invalid(
                "spec.template.metadata.labels",
                labels,
                "`selector` does not match template `labels`",
            )
        )
    return errs


_JOB_MUTABLE_TEMPLATE = ("nodeSelector", "tolerations", "schedulingGates")


def _validate_job_update(old: Obj, new: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if old_spec.get("selector") != new_spec.get("selector"):
        errs.append(invalid("spec.selector", new_spec.get("selector"), "field is immutable"))
    if old_spec.get("completions") != new_spec.get("completions"):
        errs.append(invalid("spec.completions", new_spec.get("completions"), "field is immutable"))
    if old_spec.get("completionMode") != new_spec.get("completionMode"):
        errs.append(
            invalid("spec.completionMode", new_spec.get("completionMode"), "field is immutable")
        )
    old_t, new_t = (
        copy.deepcopy(old_spec.get("template") or {}),
        copy.deepcopy(new_spec.get("template") or {}),
    )
    never_started = bool(old_spec.get("suspend")) and not (old.get("status") or {}).get("startTime")
    if never_started:
        for template in (old_t, new_t):
            meta = template.setdefault("metadata", {})
            meta.pop("labels", None)
            meta.pop("annotations", None)
            pod_spec = template.setdefault("spec", {})
            for key in _JOB_MUTABLE_TEMPLATE:
                pod_spec.pop(key, None)
            (pod_spec.get("affinity") or {}).pop("nodeAffinity", None)
    if _strip_empty(old_t) != _strip_empty(new_t):
        errs.append(invalid("spec.template", new_spec.get("template"), "field is immutable"))
    errs.extend(
        validate_pod_spec(
            (new_spec.get("template") or {}).get("spec") or {},
            "spec.template.spec",
            restart_policies=("OnFailure", "Never"),
        )
    )
    return errs


# -- other kinds ----------------------------------------------------------------------------


def _default_namespace(obj: Obj) -> None:
    name = obj.get("metadata", {}).get("name", "")
    obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
    obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])


def _default_deployment(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    spec.setdefault(
        "strategy",
        {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
    )
    default_pod_spec(spec.setdefault("template", {}).setdefault("spec", {}))


def _validate_deployment(obj: Obj) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    template = spec.get("template") or {}
    if not spec.get("selector"):
        errs.append(required("spec.selector"))
    else:
        labels = (template.get("metadata") or {}).get("labels") or {}
        if not label_selector_matches(spec["selector"], labels):
            errs.append(
                invalid(
                    "spec.template.metadata.labels",
                    labels,
                    "`selector` does not match template `labels`",
                )
            )
    errs.extend(
        validate_pod_spec(
            template.get("spec") or {}, "spec.template.spec", restart_policies=("Always",)
        )
    )
    return errs


def _validate_deployment_update(old: Obj, new: Obj) -> list[FieldError]:
    errs = _validate_deployment(new)
    if (old.get("spec") or {}).get("selector") != (new.get("spec") or {}).get("selector"):
        errs.append(invalid("spec.selector", new["spec"].get("selector"), "field is immutable"))
    return errs


def _default_service(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))


def _validate_service(obj: Obj) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    if spec.get("type") not in ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"):
        errs.append(
            unsupported(
                "spec.type",
                spec.get("type"),
                ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort"),
            )
        )
    if (
        spec.get("type") != "ExternalName"
        and not spec.get("ports")
        and spec.get("clusterIP") != "None"
    ):
        errs.append(required("spec.ports"))
    for i, port in enumerate(spec.get("ports") or []):
        if (
            not isinstance(port, dict)
            or not isinstance(port.get("port"), int)
            or not 0 < port["port"] < 65536
        ):
            errs.append(
                invalid(
                    f"spec.ports[{i}].port",
                    (port or {}).get("port") if isinstance(port, dict) else port,
                    "must be between 1 and 65535, inclusive",
                )
            )
    return errs


def _validate_role(obj: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in enumerate(obj.get("rules") or []):
        if not rule.get("verbs"):
            errs.append(required(f"rules[{i}].verbs", "verbs must contain at least one value"))
        if not rule.get("nonResourceURLs") and "apiGroups" not in rule:
            errs.append(
                required(
                    f"rules[{i}].apiGroups", "resource rules must supply at least one api group"
                )
            )
    return errs


def _validate_binding(obj: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    ref = obj.get("roleRef") or {}
    if ref.get("kind") not in ("Role", "ClusterRole"):
        errs.append(unsupported("roleRef.kind", ref.get("kind"), ("ClusterRole", "Role")))
    if not ref.get("name"):
        errs.append(required("roleRef.name"))
    for i, subject in enumerate(obj.get("subjects") or []):
        if subject.get("kind") not in ("ServiceAccount", "User", "Group"):
            errs.append(
                unsupported(
                    f"subjects[{i}].kind", subject.get("kind"), ("Group", "ServiceAccount", "User")
                )
            )
        if not subject.get("name"):
            errs.append(required(f"subjects[{i}].name"))
    return errs


def _validate_binding_update(old: Obj, new: Obj) -> list[FieldError]:
    errs = _validate_binding(new)
    if old.get("roleRef") != new.get("roleRef"):
        errs.append(invalid("roleRef", new.get("roleRef"), "cannot change roleRef"))
    return errs


def _default_webhooks(obj: Obj) -> None:
    for hook in obj.get("webhooks") or []:
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", 10)
        hook.setdefault("reinvocationPolicy", "Never")
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")
        service = (hook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)


def _validate_webhooks(obj: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, hook in enumerate(obj.get("webhooks") or []):
        where = f"webhooks[{i}]"
        name = hook.get("name", "")
        if not name:
            errs.append(required(f"{where}.name"))
        elif name in names:
            errs.append(duplicate(f"{where}.name", name))
        names.add(name)
        client = hook.get("clientConfig") or {}
        if bool(client.get("url")) == bool(client.get("service")):
            errs.append(
                required(f"{where}.clientConfig", "exactly one of url or service is required")
            )
        url = client.get("url")
        if url and not str(url).startswith("https://"):
            errs.append(unsupported(f"{where}.clientConfig.url", url, ("https",)))
        if not hook.get("admissionReviewVersions"):
            errs.append(
                required(f"{where}.admissionReviewVersions", "must specify one of v1, v1beta1")
            )
        if hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            errs.append(
                unsupported(
                    f"{where}.sideEffects", hook.get("sideEffects"), ("None", "NoneOnDryRun")
                )
            )
        if hook.get("failurePolicy") not in ("Fail", "Ignore"):
            errs.append(
                unsupported(f"{where}.failurePolicy", hook.get("failurePolicy"), ("Fail", "Ignore"))
            )
    return errs


def _validate_crd(obj: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    group, plural = spec.get("group", ""), names.get("plural", "")
    if not group:
        errs.append(required("spec.group"))
    if not plural:
        errs.append(required("spec.names.plural"))
    if not names.get("kind"):
        errs.append(required("spec.names.kind"))
    name = obj.get("metadata", {}).get("name")
    if plural and group and name != f"{plural}.{group}":
        errs.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if spec.get("scope") not in ("Cluster", "Namespaced"):
        errs.append(unsupported("spec.scope", spec.get("scope"), ("Cluster", "Namespaced")))
    versions = spec.get("versions") or []
    if not versions:
        errs.append(
            required("spec.versions", "must have exactly one version marked as storage version")
        )
    elif sum(1 for v in versions if v.get("storage")) != 1:
        errs.append(
            invalid(
                "spec.versions", versions, "must have exactly one version marked as storage version"
            )
        )
    errs.extend(validate_crd_schemas(obj))
    return errs


def _validate_crd_update(old: Obj, new: Obj) -> list[FieldError]:
    errs = _validate_crd(new)
    for field in ("group", "scope"):
        if (old.get("spec") or {}).get(field) != (new.get("spec") or {}).get(field):
            errs.append(
                invalid(f"spec.{field}", (new.get("spec") or {}).get(field), "field is immutable")
            )
    return errs


def _default_secret(obj: Obj) -> None:
    import base64

    if not obj.get("type"):
        obj["type"] = "Opaque"
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict):
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def _validate_event(obj: Obj) -> list[FieldError]:
    inv = obj.get("involvedObject") or {}
    ns = obj.get("metadata", {}).get("namespace")
    if inv.get("namespace") and ns and inv["namespace"] != ns:
        return [
            invalid("involvedObject.namespace", inv["namespace"], "does not match event.namespace")
        ]
    return []


def _default_priority_class(obj: Obj) -> None:
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    obj.setdefault("globalDefault", False)


def _validate_priority_class(obj: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    value = obj.get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        errs.append(invalid("value", value, "must be an integer"))
    elif value > 1_000_000_000 and not str(obj["metadata"].get("name", "")).startswith("system-"):
        errs.append(
            invalid(
                "value", value, "maximum allowed value of a user defined priority is 1000000000"
            )
        )
    if obj.get("preemptionPolicy") not in ("PreemptLowerPriority", "Never"):
        errs.append(
            unsupported(
                "preemptionPolicy", obj.get("preemptionPolicy"), ("Never", "PreemptLowerPriority")
            )
        )
    return errs


def _validate_priority_class_update(old: Obj, new: Obj) -> list[FieldError]:
    errs = _validate_priority_class(new)
    if old.get("value") != new.get("value"):
        errs.append(forbidden("value", "may not be changed in an update."))
    if old.get("preemptionPolicy") != new.get("preemptionPolicy"):
        errs.append(invalid("preemptionPolicy", new.get("preemptionPolicy"), "field is immutable"))
    return errs


# -- leases ---------------------------------------------------------------------------------


def decode_error(kind: str, obj: Obj) -> str | None:
    """Why the API server could not decode ``obj`` into its Go type, or None: a Lease's
    ``acquireTime``/``renewTime`` are ``metav1.MicroTime``, read with Go's
    ``time.Parse(RFC3339Micro, ...)`` (six fractional digits), so ``2023-06-01T00:00:00Z``
    fails before validation runs."""
    if kind != "Lease":
        return None
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return None
    for field in ("acquireTime", "renewTime"):
        why = micro_time_error(spec.get(field))
        if why is not None:
            return why
    return None


def _validate_lease(obj: Obj) -> list[FieldError]:
    """``ValidateLeaseSpec`` (``pkg/apis/coordination/validation``)."""
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and isinstance(duration, int) and duration <= 0:
        errs.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if transitions is not None and isinstance(transitions, int) and transitions < 0:
        errs.append(
            invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0")
        )
    if spec.get("preferredHolder") and not spec.get("strategy"):
        errs.append(
            forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined")
        )
    return errs


_Defaulter = Callable[[Obj], None]
_CreateCheck = Callable[[Obj], list[FieldError]]
_UpdateCheck = Callable[[Obj, Obj], list[FieldError]]

_DEFAULTERS: dict[str, _Defaulter] = {
    "Pod": _default_pod,
    "Job": _default_job,
    "Namespace": _default_namespace,
    "Deployment": _default_deployment,
    "Service": _default_service,
    "MutatingWebhookConfiguration": _default_webhooks,
    "Secret": _default_secret,
    "PriorityClass": _default_priority_class,
}
_CREATE: dict[str, _CreateCheck] = {
    "Pod": _validate_pod_create,
    "Job": _validate_job_create,
    "Deployment": _validate_deployment,
    "Service": _validate_service,
    "Role": _validate_role,
    "ClusterRole": _validate_role,
    "RoleBinding": _validate_binding,
    "ClusterRoleBinding": _validate_binding,
    "MutatingWebhookConfiguration": _validate_webhooks,
    "CustomResourceDefinition": _validate_crd,
    "Event": _validate_event,
    "PriorityClass": _validate_priority_class,
    "Lease": _validate_lease,
}
_UPDATE: dict[str, _UpdateCheck] = {
    "Pod": _validate_pod_update,
    "Job": _validate_job_update,
    "Deployment": _validate_deployment_update,
    "Service": lambda old, new: _validate_service(new),
    "Role": lambda old, new: _validate_role(new),
    "ClusterRole": lambda old, new: _validate_role(new),
    "RoleBinding": _validate_binding_update,
    "ClusterRoleBinding": _validate_binding_update,
    "MutatingWebhookConfiguration": lambda old, new: _validate_webhooks(new),
    "CustomResourceDefinition": _validate_crd_update,
    "PriorityClass": _validate_priority_class_update,
    "Lease": lambda old, new: _validate_lease(new),
}


def default_object(kind: str, obj: Obj, *, builtin: bool) -> None:
    """Apply the defaults of ``kind`` in place (only built-in kinds have any)."""
    if builtin and kind in _DEFAULTERS:
        _DEFAULTERS[kind](obj)


def validate_create(kind: str, obj: Obj, *, namespaced: bool, builtin: bool) -> list[FieldError]:
    errs = validate_metadata(kind, obj, namespaced)
    if builtin and kind in _CREATE:
        errs.extend(_CREATE[kind](obj))
    return errs


def validate_update(
    kind: str, old: Obj, new: Obj, *, namespaced: bool, builtin: bool
) -> list[FieldError]:
    errs = validate_metadata(kind, new, namespaced) + validate_metadata_update(old, new)
    if builtin and kind in _UPDATE:
        errs.extend(_UPDATE[kind](old, new))
    return errs
