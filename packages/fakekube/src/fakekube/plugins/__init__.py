"""Custom kinds for fake clusters: CRDs and small emulations (docs/multicluster.md).

The CRDs of :mod:`.crds` install through ``FakeKubeConfig(custom_resources=all_crds())``.
"""

from fakekube.plugins.crds import (
    APPWRAPPER_API,
    KUEUE_API,
    all_crds,
    appwrapper_crd,
    upstream_crds,
)

__all__ = [
    "APPWRAPPER_API",
    "KUEUE_API",
    "all_crds",
    "appwrapper_crd",
    "upstream_crds",
]
