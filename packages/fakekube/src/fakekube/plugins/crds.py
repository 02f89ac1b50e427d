"""CustomResourceDefinitions for the emulations of :mod:`fakekube.plugins`.

- Kueue: the real CRDs of kubernetes-sigs/kueue, unchanged, in ``upstream/kueue/``
  (``v1beta1`` and ``v1beta2`` served, ``v1beta2`` stored), loaded by :func:`upstream_crds`.
  There are no hand-written Kueue schemas.
- MCAD ``AppWrapper`` (``workload.codeflare.dev/v1beta1``, namespaced): the real MCAD CRD
  is in ``upstream/mcad/``, but it has neither ``spec.dispatchingGates`` nor
  ``spec.schedulingSpec.clusterScheduling``, the fields a multi-cluster MCAD dispatcher
  reads, so :func:`appwrapper_crd` also gives a hand-written structural schema of the
  multi-cluster MCAD that Caspian ran on (github.com/tardieu/mcad
  ``api/v1beta1/appwrapper_types.go``), plus the ``status.state``/``status.message`` of
  project-codeflare's MCAD (see :mod:`.appwrapper`). Objects whose other fields it does not
  describe carry ``x-kubernetes-preserve-unknown-fields: true``; it has the status
  subresource.
- ``CarbonCluster`` is carbonshift's own; the caller passes it in (fakekube never imports
  carbonshift).
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
_QUANTITY: Obj = {"x-kubernetes-int-or-string": True}
_ANY_OBJECT: Obj = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


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
    """The CRDs the emulations need, for ``FakeKubeConfig(custom_resources=all_crds())``: the
    real Kueue CRDs (:func:`upstream_crds`) and the gate-capable AppWrapper schema of
    :func:`appwrapper_crd` (the real MCAD CRD has no ``spec.dispatchingGates``). The
    product's own CRDs (carbonshift's CarbonCluster) come from its repository
    (``deploy/hub/crd-carboncluster.yaml``), passed in as dicts: fakekube never imports or
    copies them."""
    return (*upstream_crds("kueue"), appwrapper_crd())
