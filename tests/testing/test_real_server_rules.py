"""Rules a real API server enforces that the fake must enforce too, each with the real code
and message (issue 14, item 2): patch options, Lease validation, strategic-merge list order,
and the control endpoints answering JSON Status on bad input (issue 12, item 11)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.testing.builders import APPLY, JSONPATCH, MERGE, PODS, STRATEGIC, pod

Obj = dict[str, Any]
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


# -- patch options: ValidatePatchOptions ------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "params", "want_code", "want_message"),
    [
        (APPLY, {}, 422,
         'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required '
         "for apply patch"),
        (MERGE, {"force": "true"}, 422,
         'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for '
         "non-apply patch"),
        (MERGE, {"force": "false"}, 422,
         'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for '
         "non-apply patch"),
        (APPLY, {"fieldManager": "m" * 129}, 422,
         'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than '
         "128 bytes"),
        (APPLY, {"fieldManager": "mgr", "force": "true"}, 200, None),
        (MERGE, {}, 200, None),
    ],
    ids=["apply-without-manager", "force-on-merge-patch", "force-false-is-still-given",
         "manager-too-long", "apply-with-manager", "merge-without-force"],
)  # fmt: skip
def test_patch_options_are_validated_before_the_patch(
    http: httpx.Client, headers: dict[str, str], params: dict[str, str], want_code: int,
    want_message: str | None,
) -> None:  # fmt: skip
    http.post(CONFIGMAPS, json={"metadata": {"name": "c"}, "data": {"a": "1"}}).raise_for_status()
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "2"}}

    answer = http.patch(f"{CONFIGMAPS}/c", json=body, headers=headers, params=params)

    assert answer.status_code == want_code, answer.text
    if want_message is not None:
        status = answer.json()
        assert (status["reason"], status["message"]) == ("Invalid", want_message)
        assert status["details"]["kind"] == "PatchOptions"
        assert status["details"]["group"] == "meta.k8s.io"


def test_an_apply_conflict_names_the_update_manager_without_a_time(http: httpx.Client) -> None:
    http.post(
        CONFIGMAPS, json={"metadata": {"name": "c"}, "data": {"x": "1"}},
        params={"fieldManager": "mgr"},
    ).raise_for_status()  # fmt: skip
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"x": "2"}}

    answer = http.patch(f"{CONFIGMAPS}/c", json=body, headers=APPLY, params={"fieldManager": "a"})

    assert answer.status_code == 409
    assert answer.json()["message"] == (
        'Apply failed with 1 conflict: conflict with "mgr" using v1: .data.x'
    )


# -- Lease: MicroTime and ValidateLeaseSpec ----------------------------------------------------


def lease(**spec: Any) -> Obj:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l"},
        "spec": {"holderIdentity": "a", **spec},
    }


MICRO = "2023-06-01T00:00:00.000000Z"
LAYOUT = "2006-01-02T15:04:05.000000Z07:00"


@pytest.mark.parametrize(
    ("spec", "want_code", "want_message"),
    [
        ({"renewTime": "2023-06-01T00:00:00Z"}, 400,
         f'Lease in version "v1" cannot be handled as a Lease: parsing time '
         f'"2023-06-01T00:00:00Z" as "{LAYOUT}": cannot parse "Z" as ".000000"'),
        ({"acquireTime": "2023-06-01T00:00:00.123Z"}, 400,
         f'Lease in version "v1" cannot be handled as a Lease: parsing time '
         f'"2023-06-01T00:00:00.123Z" as "{LAYOUT}": cannot parse ".123Z" as ".000000"'),
        ({"renewTime": "yesterday"}, 400,
         f'Lease in version "v1" cannot be handled as a Lease: parsing time "yesterday" as '
         f'"{LAYOUT}": cannot parse "yesterday" as "2006"'),
        ({"leaseDurationSeconds": 0}, 422,
         'Lease.coordination.k8s.io "l" is invalid: spec.leaseDurationSeconds: Invalid value: '
         "0: must be greater than 0"),
        ({"leaseTransitions": -1}, 422,
         'Lease.coordination.k8s.io "l" is invalid: spec.leaseTransitions: Invalid value: -1: '
         "must be greater than or equal to 0"),
        ({"preferredHolder": "b"}, 422,
         'Lease.coordination.k8s.io "l" is invalid: spec.preferredHolder: Forbidden: may only '
         "be specified if `strategy` is defined"),
        ({"renewTime": MICRO, "acquireTime": "2023-06-01T00:00:00.000000+02:00",
          "leaseDurationSeconds": 15, "leaseTransitions": 0}, 201, None),
    ],
    ids=["seconds-only-time", "milliseconds", "not-a-time", "zero-duration",
         "negative-transitions", "preferred-holder-without-strategy", "valid"],
)  # fmt: skip
def test_leases_are_checked_like_a_real_server(
    http: httpx.Client, spec: Obj, want_code: int, want_message: str | None
) -> None:
    answer = http.post(LEASES, json=lease(**spec))

    assert answer.status_code == want_code, answer.text
    if want_message is not None:
        assert answer.json()["message"] == want_message


@pytest.mark.parametrize(
    ("headers", "patch", "want_code"),
    [
        (MERGE, {"spec": {"renewTime": "2023-06-01T01:00:00Z"}}, 422),
        (JSONPATCH, [{"op": "replace", "path": "/spec/leaseDurationSeconds", "value": -5}], 422),
        (MERGE, {"spec": {"renewTime": "2023-06-01T01:00:00.000000Z"}}, 200),
    ],
    ids=["merge-patch-seconds-time", "json-patch-negative-duration", "merge-patch-micro-time"],
)
def test_lease_patches_are_checked_too(
    http: httpx.Client, headers: dict[str, str], patch: Any, want_code: int
) -> None:
    http.post(LEASES, json=lease(renewTime=MICRO, leaseDurationSeconds=15)).raise_for_status()

    answer = http.patch(f"{LEASES}/l", json=patch, headers=headers)

    assert answer.status_code == want_code, answer.text
    if want_code == 422:
        assert answer.json()["reason"] == "Invalid"


# -- strategic merge patch: the element order of merged lists ----------------------------------


@pytest.mark.parametrize(
    ("live", "patch", "want"),
    [
        (["a", "b"], {"env": [{"name": "c", "value": "3"}]}, ["c", "a", "b"]),
        (["a", "b"], {"env": [{"name": "b", "value": "9"}]}, ["a", "b"]),
        (["a", "b"], {"env": [{"name": "c", "value": "3"}, {"name": "a", "value": "9"}]},
         ["c", "a", "b"]),
        (["a", "b", "c"], {"env": [{"name": "b", "$patch": "delete"}]}, ["a", "c"]),
        (["a", "b"], {"$setElementOrder/env": [{"name": "b"}, {"name": "a"}, {"name": "c"}],
                      "env": [{"name": "c", "value": "3"}]}, ["b", "a", "c"]),
    ],
    ids=["new-item-goes-first", "changed-item-keeps-its-place", "new-before-named-live-item",
         "delete-keeps-the-rest", "set-element-order-wins"],
)  # fmt: skip
def test_strategic_merge_orders_lists_as_apimachinery_does(
    live: list[str], patch: Obj, want: list[str]
) -> None:
    from fakekube.patch import strategic_merge_patch

    doc = {"env": [{"name": n, "value": "1"} for n in live]}

    merged = strategic_merge_patch(doc, patch)

    assert [e["name"] for e in merged["env"]] == want


def test_a_strategic_patch_prepends_a_new_finalizer(http: httpx.Client) -> None:
    http.post(CONFIGMAPS, json={"metadata": {"name": "c", "finalizers": ["x.io/a"]}})

    answer = http.patch(
        f"{CONFIGMAPS}/c", json={"metadata": {"finalizers": ["x.io/b"]}}, headers=STRATEGIC
    )

    assert answer.json()["metadata"]["finalizers"] == ["x.io/b", "x.io/a"]


# -- control endpoints: bad input is a 400 JSON Status, never a 500 ----------------------------


@pytest.mark.parametrize(
    ("method", "path", "kwargs"),
    [
        ("POST", "/fakekube/clock/advance", {"params": {"seconds": "soon"}}),
        ("POST", "/fakekube/clock/advance", {"params": {"seconds": "nan"}}),
        ("POST", "/fakekube/clock/advance", {"params": {"seconds": "1e300"}}),
        ("POST", "/fakekube/clock/advance", {"params": {"seconds": "-60"}}),
        ("POST", "/fakekube/faults", {"json": {"colour": "red"}}),
        ("POST", "/fakekube/faults", {"json": [1, 2]}),
        ("POST", "/fakekube/service-endpoints", {"json": {"name": "x"}}),
    ],
    ids=["advance-word", "advance-nan", "advance-huge", "advance-backwards", "fault-unknown-field",
         "fault-not-an-object", "endpoint-missing-fields"],
)  # fmt: skip
def test_control_endpoints_answer_400_json_on_bad_input(
    http: httpx.Client, method: str, path: str, kwargs: Obj
) -> None:
    answer = http.request(method, path, **kwargs)

    assert answer.status_code == 400, answer.text
    status = answer.json()
    assert (status["kind"], status["reason"]) == ("Status", "BadRequest")


def test_a_pod_patch_on_a_merge_keyed_list_lands_in_real_order(http: httpx.Client) -> None:
    body = pod("p")
    body["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    http.post(PODS, json=body).raise_for_status()

    patch = {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}}
    answer = http.patch(f"{PODS}/p", json=patch, headers=STRATEGIC)

    assert answer.status_code == 200, answer.text
    assert [c["name"] for c in answer.json()["spec"]["containers"]] == ["main"]


# -- Jobs: server defaults, the generated selector, the status shape ---------------------------

JOBS = "/apis/batch/v1/namespaces/default/jobs"


def bare_job(name: str = "j", **spec: Any) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox:1.36"}],
                }
            },
            **spec,
        },
    }


def test_a_created_job_carries_the_real_server_defaults(http: httpx.Client) -> None:
    created = http.post(JOBS, json=bare_job()).json()

    spec, uid = created["spec"], created["metadata"]["uid"]
    want_labels = {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "j",
        "controller-uid": uid,
        "job-name": "j",
    }
    assert {k: spec[k] for k in ("completions", "parallelism", "backoffLimit")} == {
        "completions": 1, "parallelism": 1, "backoffLimit": 6,
    }  # fmt: skip
    assert spec["completionMode"] == "NonIndexed"
    assert spec["suspend"] is False
    assert spec["manualSelector"] is False  # SetDefaults_Job sets it since 1.30
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"] == want_labels
    assert created["metadata"]["labels"] == want_labels  # read back, defaulted again


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ({"parallelism": 3}, {"parallelism": 3}),
        ({"completions": 4}, {"completions": 4, "parallelism": 1}),
    ],
    ids=["parallelism-only-leaves-completions-unset", "completions-only-defaults-parallelism"],
)
def test_completions_default_only_when_neither_is_given(
    http: httpx.Client, spec: Obj, want: Obj
) -> None:
    created = http.post(JOBS, json=bare_job(**spec)).json()["spec"]

    assert {k: created[k] for k in ("completions", "parallelism") if k in created} == want


def test_a_job_with_its_own_labels_keeps_them(http: httpx.Client) -> None:
    body = bare_job()
    body["metadata"]["labels"] = {"team": "a"}

    created = http.post(JOBS, json=body).json()

    assert created["metadata"]["labels"] == {"team": "a"}


@pytest.mark.parametrize(
    ("change", "want_code", "want_fragment"),
    [
        ({"template_labels": {"controller-uid": "0000", "job-name": "j"}}, 422,
         "spec.template.metadata.labels[controller-uid]: Invalid value: "
         'map[string]string{"batch.kubernetes.io/controller-uid":"UID", '
         '"batch.kubernetes.io/job-name":"j", "controller-uid":"0000", "job-name":"j"}: '
         "must be 'UID'"),
        ({"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "0000"}}}, 422,
         "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"
         '"batch.kubernetes.io/controller-uid":"0000"}, MatchExpressions:'
         "[]v1.LabelSelectorRequirement(nil)}: `selector` not auto-generated"),
        ({"selector": {"matchLabels": {"app": "x"}}, "manualSelector": True,
          "template_labels": {"app": "x"}}, 201, None),
        ({"restartPolicy": "Always"}, 422,
         'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: '
         '"OnFailure", "Never"'),
    ],
    ids=["copied-template-uid", "copied-selector", "manual-selector-is-free",
         "restart-always"],
)  # fmt: skip
def test_jobs_refuse_what_a_real_server_refuses(
    http: httpx.Client, change: Obj, want_code: int, want_fragment: str | None
) -> None:
    body = bare_job()
    spec = body["spec"]
    if "template_labels" in change:
        spec["template"]["metadata"] = {"labels": change["template_labels"]}
    if "selector" in change:
        spec["selector"] = change["selector"]
    if "manualSelector" in change:
        spec["manualSelector"] = change["manualSelector"]
    if "restartPolicy" in change:
        spec["template"]["spec"]["restartPolicy"] = change["restartPolicy"]

    answer = http.post(JOBS, json=body)

    assert answer.status_code == want_code, answer.text
    if want_fragment is not None:
        message = answer.json()["message"]
        uid = message.split("must be '")[1].split("'")[0] if "must be '" in message else ""
        assert want_fragment.replace("UID", uid) in message


def test_zero_job_counters_are_omitted(http: httpx.Client) -> None:
    http.post(JOBS, json=bare_job(suspend=True)).raise_for_status()
    written = http.put(
        f"{JOBS}/j/status",
        json={**http.get(f"{JOBS}/j").json(), "status": {"active": 0, "ready": 0, "failed": 0}},
    )

    assert written.status_code == 200, written.text
    assert written.json()["status"] == {"ready": 0}


# -- CRDs: the structural-schema rules a real server applies to the CRD itself -----------------

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
_ROOT = "spec.versions[0].schema.openAPIV3Schema"


def crd_with(spec_schema: Obj) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.tests.fakekube.io"},
        "spec": {
            "group": "tests.fakekube.io",
            "scope": "Namespaced",
            "names": {"kind": "Thing", "plural": "things"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": spec_schema},
                        }
                    },
                }
            ],
        },
    }


def slots(item: Obj, **extra: Any) -> Obj:
    return {
        "type": "object",
        "properties": {
            "slots": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": item,
                **extra,
            }
        },
    }


_SLOTS = f"{_ROOT}.properties[spec].properties[slots]"


@pytest.mark.parametrize(
    ("spec_schema", "want_fragment"),
    [
        (slots({"type": "object", "properties": {"name": {"type": "string"}}}),
         f"{_SLOTS}.items.properties[name].default: Required value: this property is in "
         "x-kubernetes-list-map-keys, so it must have a default or be a required property"),
        (slots({"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string", "nullable": True}}}),
         f"{_SLOTS}.items.properties[name].nullable: Forbidden: this property is in "
         "x-kubernetes-list-map-keys, so it cannot be nullable"),
        (slots({"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}),
         f'{_SLOTS}.x-kubernetes-list-map-keys: Invalid value: []string{{"name"}}: entries '
         "must all be names of item properties"),
        (slots({"type": "string"}),
         f"{_SLOTS}.items.type: Invalid value: \"string\": must be object if parent array's "
         "x-kubernetes-list-type is map"),
        ({"type": "object", "properties": {"size": {"description": "no type"}}},
         f"{_ROOT}.properties[spec].properties[size].type: Required value: must not be empty "
         "for specified object fields"),
        ({"type": "null"},
         f"{_ROOT}.properties[spec].type: Forbidden: type cannot be set to null, use nullable "
         "as an alternative"),
    ],
    ids=["list-map-key-without-default", "nullable-list-map-key", "key-not-an-item-property",
         "list-map-of-strings", "property-without-type", "null-type"],
)  # fmt: skip
def test_crds_with_non_structural_schemas_are_refused(
    http: httpx.Client, spec_schema: Obj, want_fragment: str
) -> None:
    answer = http.post(CRDS, json=crd_with(spec_schema))

    assert answer.status_code == 422, answer.text
    message = answer.json()["message"]
    assert message.startswith(
        'CustomResourceDefinition.apiextensions.k8s.io "things.tests.fakekube.io" is invalid: '
    )
    assert want_fragment in message


@pytest.mark.parametrize(
    "spec_schema",
    [
        slots({"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}),
        slots({"type": "object", "properties": {"name": {"type": "string", "default": "main"}}}),
        {"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": True}}},
        {"type": "object", "properties": {"raw": {"x-kubernetes-preserve-unknown-fields": True}}},
    ],
    ids=["required-key", "defaulted-key", "int-or-string", "preserve-unknown"],
)
def test_structural_crds_install(http: httpx.Client, spec_schema: Obj) -> None:
    answer = http.post(CRDS, json=crd_with(spec_schema))

    assert answer.status_code == 201, answer.text


def test_every_crd_the_fake_ships_is_structural() -> None:
    from fakekube.crdschema import validate_crd_schemas
    from fakekube.plugins import appwrapper_crd, upstream_crds

    shipped = [*upstream_crds(), appwrapper_crd()]

    assert {
        c["metadata"]["name"]: [e.text() for e in validate_crd_schemas(c)] for c in shipped
    } == {c["metadata"]["name"]: [] for c in shipped}


# -- node field selectors: one value per requirement, required and preferred terms -------------

_NA = "spec.affinity.nodeAffinity"


@pytest.mark.parametrize(
    ("affinity", "want_fragment"),
    [
        ({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}]}},
         f"{_NA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
         ".matchFields[0].values: Required value: must be only one value when `operator` is "
         "'In' or 'NotIn' for node field selector"),
        ({"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {
            "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": []}]}}]},
         f"{_NA}.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields[0]"
         ".values: Required value: must be only one value"),
        ({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}]}},
         None),
    ],
    ids=["required-term-two-nodes", "preferred-term-no-node", "one-term-per-node-is-valid"],
)  # fmt: skip
def test_node_field_selectors_take_one_value(
    http: httpx.Client, affinity: Obj, want_fragment: str | None
) -> None:
    body = pod("p")
    body["spec"]["affinity"] = {"nodeAffinity": affinity}

    answer = http.post(PODS, json=body)

    if want_fragment is None:
        assert answer.status_code == 201, answer.text
    else:
        assert answer.status_code == 422, answer.text
        assert want_fragment in answer.json()["message"]
