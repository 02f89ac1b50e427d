"""CustomResourceDefinitions of the kinds the multi-cluster layer touches.

- ``CarbonCluster`` (``carbonshift.io/v1alpha1``, cluster-scoped): our spoke inventory; open
  schema.
- Kueue v0.19 (``kueue.x-k8s.io/v1beta2`` only; v1beta1 is not served): ``Workload`` and
  ``LocalQueue`` (namespaced), ``AdmissionCheck``, ``ClusterQueue``, ``MultiKueueConfig`` and
  ``MultiKueueCluster`` (cluster-scoped), as in ``apis/kueue/v1beta2/*_types.go`` of
  kubernetes-sigs/kueue, including ``requeueAfterSeconds`` / ``retryCount`` of an admission
  check state (feature gate ``ACRequeueAfter``, KEP-3258).
- MCAD ``AppWrapper`` (``workload.codeflare.dev/v1beta1``, namespaced), the multi-cluster
  MCAD that Caspian ran on (github.com/tardieu/mcad ``api/v1beta1/appwrapper_types.go``),
  plus the ``status.state``/``status.message`` of project-codeflare's MCAD that the hub
  reads today (see :mod:`.appwrapper`).

Each schema is a structural ``openAPIV3Schema`` that states the fields carbonshift or the
emulations touch, with their types, enums, ``required`` and ``maxItems``; objects whose other
fields we do not describe (``spec``, ``status``, pod templates, wrapped resources) carry
``x-kubernetes-preserve-unknown-fields: true`` so nothing is pruned. Every kind has the
status subresource.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

__all__ = [
    "APPWRAPPER_API",
    "KUEUE_API",
    "all_crds",
    "appwrapper_crd",
    "appwrapper_schema",
    "crd",
    "kueue_crds",
    "kueue_schemas",
]

Obj = dict[str, Any]

KUEUE_API = "kueue.x-k8s.io/v1beta2"
APPWRAPPER_API = "workload.codeflare.dev/v1beta1"

_OPEN: Obj = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def crd(
    group: str,
    kind: str,
    plural: str,
    *,
    versions: tuple[str, ...],
    namespaced: bool,
    short_names: tuple[str, ...] = (),
    printer_columns: tuple[Obj, ...] = (),
    schema: Obj | None = None,
) -> Obj:
    """A CRD with the first of ``versions`` as storage and a status subresource; ``schema``
    is the ``openAPIV3Schema`` of every version (open when None)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced" if namespaced else "Cluster",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                **({"shortNames": list(short_names)} if short_names else {}),
            },
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": i == 0,
                    "schema": {"openAPIV3Schema": copy.deepcopy(schema or _OPEN)},
                    "subresources": {"status": {}},
                    **(
                        {"additionalPrinterColumns": list(printer_columns)}
                        if printer_columns
                        else {}
                    ),
                }
                for i, version in enumerate(versions)
            ],
        },
    }


# -- schema pieces ---------------------------------------------------------------------------

_STR: Obj = {"type": "string"}
_INT: Obj = {"type": "integer", "format": "int32"}
_TIME: Obj = {"type": "string", "format": "date-time"}
_STR_MAP: Obj = {"type": "object", "additionalProperties": {"type": "string"}}
_QUANTITY: Obj = {"x-kubernetes-int-or-string": True}
_ANY_OBJECT: Obj = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_NAME: Obj = {"type": "string", "minLength": 1, "maxLength": 316}


def _object(properties: Obj, *, required: tuple[str, ...] = (), open_: bool = False) -> Obj:
    out: Obj = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    if open_:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _array(items: Obj, *, max_items: int | None = None, map_keys: tuple[str, ...] = ()) -> Obj:
    out: Obj = {"type": "array", "items": items}
    if max_items is not None:
        out["maxItems"] = max_items
    if map_keys:
        out["x-kubernetes-list-type"] = "map"
        out["x-kubernetes-list-map-keys"] = list(map_keys)
    return out


def _root(spec: Obj, status: Obj | None = None) -> Obj:
    properties: Obj = {
        "apiVersion": _STR,
        "kind": _STR,
        "metadata": {"type": "object"},
        "spec": spec,
    }
    if status is not None:
        properties["status"] = status
    return {"type": "object", "properties": properties}


_CONDITION = _object(
    {
        "type": {"type": "string", "maxLength": 316},
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "reason": {"type": "string", "maxLength": 1024},
        "message": {"type": "string", "maxLength": 32768},
        "lastTransitionTime": _TIME,
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
    },
    required=("type", "status", "lastTransitionTime", "reason", "message"),
)
_CONDITIONS = _array(_CONDITION, max_items=16, map_keys=("type",))
_STATUS_WITH_CONDITIONS = _object({"conditions": _CONDITIONS}, open_=True)

_POD_SET_UPDATE = _object(
    {
        "name": {"type": "string", "maxLength": 63},
        "labels": _STR_MAP,
        "annotations": _STR_MAP,
        "nodeSelector": _STR_MAP,
        "tolerations": _array(_ANY_OBJECT, max_items=8),
    },
    required=("name",),
)

#: ``AdmissionCheckState`` (``workload_types.go``)
ADMISSION_CHECK_STATE = _object(
    {
        "name": _NAME,
        "state": {"type": "string", "enum": ["Pending", "Ready", "Retry", "Rejected"]},
        "lastTransitionTime": _TIME,
        "message": {"type": "string", "maxLength": 32768},
        "requeueAfterSeconds": {**_INT, "minimum": 0},
        "retryCount": {**_INT, "minimum": 0},
        "podSetUpdates": _array(_POD_SET_UPDATE, max_items=8),
    },
    required=("name", "state", "lastTransitionTime", "message"),
)

_POD_SET = _object(
    {
        "name": {"type": "string", "maxLength": 63, "default": "main"},
        "count": {**_INT, "minimum": 0, "default": 1},
        "minCount": {**_INT, "minimum": 1},
        "template": _ANY_OBJECT,
    },
    required=("template",),
    open_=True,
)

_WORKLOAD = _root(
    _object(
        {
            "queueName": {"type": "string", "maxLength": 253},
            "podSets": _array(_POD_SET, max_items=8, map_keys=("name",)) | {"minItems": 1},
            "priority": _INT,
            "active": {"type": "boolean", "default": True},
            "maximumExecutionTimeSeconds": {**_INT, "minimum": 1},
        },
        open_=True,
    ),
    _object(
        {
            "conditions": _CONDITIONS,
            "admission": _object(
                {
                    "clusterQueue": _STR,
                    "podSetAssignments": _array(
                        _object(
                            {
                                # a list-map key must be required or defaulted, or a real
                                # server refuses the CRD (the real one defaults it to main)
                                "name": {"type": "string", "maxLength": 63, "default": "main"},
                                "flavors": _STR_MAP,
                                "resourceUsage": {
                                    "type": "object",
                                    "additionalProperties": _QUANTITY,
                                },
                                "count": {**_INT, "minimum": 0},
                            },
                            open_=True,
                        ),
                        max_items=8,
                        map_keys=("name",),
                    ),
                },
                required=("clusterQueue", "podSetAssignments"),
            ),
            "requeueState": _object(
                {"count": {**_INT, "minimum": 0}, "requeueAt": _TIME},
            ),
            "admissionChecks": _array(ADMISSION_CHECK_STATE, max_items=8, map_keys=("name",)),
            "accumulatedPastExecutionTimeSeconds": _INT,
            "nominatedClusterNames": _array({"type": "string", "maxLength": 256}, max_items=10),
            "clusterName": {"type": "string", "maxLength": 256},
        },
        open_=True,
    ),
)

_FLAVOR_QUOTAS = _object(
    {
        "name": {"type": "string", "maxLength": 253},
        "resources": _array(
            _object(
                {"name": _STR, "nominalQuota": _QUANTITY},
                required=("name", "nominalQuota"),
                open_=True,
            ),
            max_items=64,
            map_keys=("name",),
        ),
    },
    required=("name", "resources"),
)

_CLUSTER_QUEUE = _root(
    _object(
        {
            "cohortName": {"type": "string", "maxLength": 253},
            "namespaceSelector": _ANY_OBJECT,
            "resourceGroups": _array(
                _object(
                    {
                        "coveredResources": _array(_STR, max_items=64),
                        "flavors": _array(_FLAVOR_QUOTAS, max_items=64, map_keys=("name",)),
                    },
                    required=("coveredResources", "flavors"),
                ),
                max_items=16,
            ),
            "admissionChecksStrategy": _object(
                {
                    "admissionChecks": _array(
                        _object(
                            {
                                "name": _NAME,
                                "onFlavors": _array(
                                    {"type": "string", "maxLength": 253}, max_items=64
                                ),
                            },
                            required=("name",),
                        ),
                        max_items=64,
                    )
                }
            ),
            "stopPolicy": {"type": "string", "enum": ["None", "Hold", "HoldAndDrain"]},
        },
        open_=True,
    ),
    _STATUS_WITH_CONDITIONS,
)

_LOCAL_QUEUE = _root(
    _object(
        {"clusterQueue": {"type": "string", "maxLength": 253}},
        required=("clusterQueue",),
        open_=True,
    ),
    _STATUS_WITH_CONDITIONS,
)

_ADMISSION_CHECK = _root(
    _object(
        {
            "controllerName": {"type": "string", "maxLength": 253},
            "parameters": _object(
                {
                    "apiGroup": {"type": "string", "maxLength": 253},
                    "kind": {"type": "string", "maxLength": 63},
                    "name": {"type": "string", "maxLength": 63},
                },
                required=("apiGroup", "kind", "name"),
            ),
        },
        required=("controllerName",),
    ),
    _STATUS_WITH_CONDITIONS,
)

_MULTIKUEUE_CONFIG = _root(
    _object(
        {
            "clusters": _array({"type": "string", "maxLength": 256}, max_items=20)
            | {"minItems": 1, "x-kubernetes-list-type": "set"}
        },
        required=("clusters",),
    )
)

_MULTIKUEUE_CLUSTER = _root(
    _object(
        {
            "clusterSource": _object(
                {
                    "kubeConfig": _object(
                        {
                            "location": {"type": "string", "minLength": 1, "maxLength": 256},
                            "locationType": {
                                "type": "string",
                                "enum": ["Secret", "Path"],
                                "default": "Secret",
                            },
                        },
                        required=("location",),
                    ),
                    "clusterProfileRef": _object(
                        {"name": {"type": "string", "minLength": 1, "maxLength": 256}},
                        required=("name",),
                    ),
                }
            )
        },
        required=("clusterSource",),
    ),
    _STATUS_WITH_CONDITIONS,
)


def kueue_schemas() -> dict[str, Obj]:
    """Kind -> ``openAPIV3Schema`` of the Kueue kinds (a copy)."""
    return copy.deepcopy(
        {
            "Workload": _WORKLOAD,
            "LocalQueue": _LOCAL_QUEUE,
            "ClusterQueue": _CLUSTER_QUEUE,
            "AdmissionCheck": _ADMISSION_CHECK,
            "MultiKueueConfig": _MULTIKUEUE_CONFIG,
            "MultiKueueCluster": _MULTIKUEUE_CLUSTER,
        }
    )


def kueue_crds() -> tuple[Obj, ...]:
    """The Kueue kinds of ``kueue.x-k8s.io``, served as ``v1beta2`` only."""
    schemas = kueue_schemas()
    kinds: tuple[tuple[str, str, bool, tuple[str, ...]], ...] = (
        ("Workload", "workloads", True, ("wl",)),
        ("LocalQueue", "localqueues", True, ("queue", "queues", "lq")),
        ("AdmissionCheck", "admissionchecks", False, ()),
        ("ClusterQueue", "clusterqueues", False, ("cq",)),
        ("MultiKueueConfig", "multikueueconfigs", False, ()),
        ("MultiKueueCluster", "multikueueclusters", False, ()),
    )
    return tuple(
        crd(
            "kueue.x-k8s.io",
            kind,
            plural,
            versions=("v1beta2",),
            namespaced=namespaced,
            short_names=short,
            schema=schemas[kind],
        )
        for kind, plural, namespaced, short in kinds
    )


_GENERIC_ITEM = _object(
    {
        "replicas": _INT,
        "completionstatus": _STR,
        "custompodresources": _array(
            _object(
                {
                    "replicas": _INT,
                    "requests": {"type": "object", "additionalProperties": _QUANTITY},
                    "limits": {"type": "object", "additionalProperties": _QUANTITY},
                },
                required=("replicas", "requests"),
            )
        ),
        "generictemplate": _ANY_OBJECT,
    },
    required=("generictemplate",),
)

_PHASE: Obj = {
    "type": "string",
    "enum": ["", "Queued", "Dispatching", "Running", "Succeeded", "Errored", "Failed", "Requeuing"],
}

#: ``AppWrapper`` of multi-cluster MCAD (tardieu/mcad ``api/v1beta1/appwrapper_types.go``)
_APPWRAPPER = _root(
    _object(
        {
            "priority": _INT,
            "dispatchingGates": _array(_STR),
            "schedulingSpec": _object(
                {
                    "minAvailable": _INT,
                    "requeuing": _object({"maxNumRequeuings": _INT}),
                    "clusterScheduling": _object(
                        {
                            "policyResult": _object(
                                {"targetCluster": _object({"name": _STR}, required=("name",))}
                            )
                        }
                    ),
                },
                open_=True,
            ),
            "resources": _object({"GenericItems": _array(_GENERIC_ITEM)}),
            "components": _array(_ANY_OBJECT),
            "dispatcherStatus": _object(
                {
                    "phase": _PHASE,
                    "lastDispatchingTime": _TIME,
                    "requeued": _INT,
                    "dispatchedNanos": {"type": "integer", "format": "int64"},
                    "transitions": _array(
                        _object(
                            {"time": _TIME, "reason": _STR, "phase": _PHASE},
                            required=("time", "phase"),
                        )
                    ),
                }
            ),
        },
        open_=True,
    ),
    _object(
        {
            "runnerStatus": _object({"phase": _PHASE}, open_=True),
            "state": {
                "type": "string",
                "enum": [
                    "Pending",
                    "Running",
                    "Deleted",
                    "Failed",
                    "Completed",
                    "RunningHoldCompletion",
                ],
            },
            "message": _STR,
        },
        open_=True,
    ),
)


def appwrapper_schema() -> Obj:
    """The ``openAPIV3Schema`` of MCAD's AppWrapper (a copy)."""
    return copy.deepcopy(_APPWRAPPER)


def appwrapper_crd() -> Obj:
    """MCAD's ``AppWrapper`` as the multi-cluster MCAD that Caspian ran on serves it."""
    return crd(
        "workload.codeflare.dev",
        "AppWrapper",
        "appwrappers",
        versions=("v1beta1",),
        namespaced=True,
        short_names=("aw",),
        schema=appwrapper_schema(),
    )


def upstream_crds(*sets: str) -> tuple[Obj, ...]:
    """The real CRDs shipped unchanged in ``plugins/upstream/<set>/`` (``"kueue"``,
    ``"mcad"``; none given: every set), sorted by file name; fresh copies each call."""
    return copy.deepcopy(tuple(c for name in sets or ("kueue", "mcad") for c in _upstream(name)))


@functools.cache
def _upstream(name: str) -> tuple[Obj, ...]:
    # parsed once per process: the Workload CRD alone is 1.3 MB of YAML (seconds to parse)
    import importlib
    import importlib.resources

    yaml: Any = importlib.import_module("yaml")  # no type stubs installed
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    folder = importlib.resources.files("fakekube.plugins") / "upstream" / name
    return tuple(
        yaml.load(entry.read_text(), Loader=loader)
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".yaml")
    )


def all_crds() -> tuple[Obj, ...]:
    """The emulations' hand-written CRDs (Kueue, AppWrapper), for
    ``FakeKubeConfig(custom_resources=all_crds())``. The product's own CRDs (carbonshift's
    CarbonCluster) come from its repository (``deploy/hub/crd-carboncluster.yaml``), passed
    in as dicts: fakekube never imports or copies them."""
    return (*kueue_crds(), appwrapper_crd())
