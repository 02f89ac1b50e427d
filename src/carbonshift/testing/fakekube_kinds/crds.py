"""CustomResourceDefinitions of the kinds the multi-cluster layer touches.

- ``CarbonCluster`` (``carbonshift.io/v1alpha1``, cluster-scoped): our spoke inventory.
- Kueue (``kueue.x-k8s.io``): ``Workload`` (namespaced), ``AdmissionCheck``,
  ``ClusterQueue`` and ``MultiKueueCluster`` (cluster-scoped). Served as ``v1beta2`` (the
  storage version of recent Kueue releases) and ``v1beta1``; the fake server does not
  convert between versions, and the fields we touch have the same names in both.
- MCAD ``AppWrapper`` (``workload.codeflare.dev/v1beta1``, namespaced).

Schemas are open (``x-kubernetes-preserve-unknown-fields``): the fake server does not
validate custom resources against a schema, and ``deploy/hub`` carries the same shapes.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "APPWRAPPER_API",
    "CARBONCLUSTER_API",
    "KUEUE_API",
    "all_crds",
    "appwrapper_crd",
    "carboncluster_crd",
    "crd",
    "kueue_crds",
]

Obj = dict[str, Any]

CARBONCLUSTER_API = "carbonshift.io/v1alpha1"
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
) -> Obj:
    """A CRD with the first of ``versions`` as storage and a status subresource."""
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
                    "schema": {"openAPIV3Schema": _OPEN},
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


def carboncluster_crd() -> Obj:
    """The spoke inventory: one ``CarbonCluster`` per spoke, named as in plans."""
    return crd(
        "carbonshift.io",
        "CarbonCluster",
        "carbonclusters",
        versions=("v1alpha1",),
        namespaced=False,
        short_names=("ccl",),
        printer_columns=(
            {"name": "Zone", "type": "string", "jsonPath": ".spec.zone"},
            {"name": "Health", "type": "string", "jsonPath": ".status.health"},
            {"name": "Forecast-Age", "type": "integer", "jsonPath": ".status.forecastAgeSeconds"},
        ),
    )


def kueue_crds() -> tuple[Obj, ...]:
    """Workload, AdmissionCheck, ClusterQueue and MultiKueueCluster of ``kueue.x-k8s.io``."""
    versions = ("v1beta2", "v1beta1")
    return (
        crd(
            "kueue.x-k8s.io",
            "Workload",
            "workloads",
            versions=versions,
            namespaced=True,
            short_names=("wl",),
        ),
        crd(
            "kueue.x-k8s.io",
            "AdmissionCheck",
            "admissionchecks",
            versions=versions,
            namespaced=False,
        ),
        crd(
            "kueue.x-k8s.io",
            "ClusterQueue",
            "clusterqueues",
            versions=versions,
            namespaced=False,
            short_names=("cq",),
        ),
        crd(
            "kueue.x-k8s.io",
            "MultiKueueCluster",
            "multikueueclusters",
            versions=versions,
            namespaced=False,
        ),
    )


def appwrapper_crd() -> Obj:
    """MCAD's ``AppWrapper`` as the multi-cluster MCAD that Caspian ran on serves it."""
    return crd(
        "workload.codeflare.dev",
        "AppWrapper",
        "appwrappers",
        versions=("v1beta1",),
        namespaced=True,
        short_names=("aw",),
    )


def all_crds() -> tuple[Obj, ...]:
    """Every CRD above, for ``FakeKubeConfig(custom_resources=all_crds())``."""
    return (carboncluster_crd(), *kueue_crds(), appwrapper_crd())
