"""Run the product under the shipped RBAC on any cluster, real or fake, as an operator would.

The opt-in real-cluster tier and its fake-cluster twin share this: apply the ServiceAccount
and RBAC objects of ``deploy/`` as the admin (server-side apply, field manager
``carbonshift-e2e``), then ask the API server for the ServiceAccount's token with a
TokenRequest (``POST .../serviceaccounts/<name>/token``, what ``kubectl create token`` sends)
and write a kubeconfig that keeps the admin's server and CA but authenticates as that
ServiceAccount. The product under test never runs as the admin.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from carbonshift.k8s.client import ApiKube, ConflictError
from tests.k8s.rbac import NAMESPACE, rbac_documents, with_spoke_secrets

Obj = dict[str, Any]
FIELD_MANAGER = "carbonshift-e2e"
_PATHS = {
    "ServiceAccount": ("/api/v1", "serviceaccounts"),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles"),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings"),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles"),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings"),
}


def object_path(doc: Obj) -> str:
    """The API path of one RBAC object (or ServiceAccount) of ``deploy/``."""
    prefix, plural = _PATHS[doc["kind"]]
    meta = doc["metadata"]
    if "namespace" in meta:
        return f"{prefix}/namespaces/{meta['namespace']}/{plural}/{meta['name']}"
    return f"{prefix}/{plural}/{meta['name']}"


async def apply_shipped_rbac(
    admin: ApiKube,
    files: Iterable[Path],
    *,
    extra: Iterable[Obj] = (),
    spoke_secrets: Iterable[str] | None = None,
) -> list[str]:
    """Apply the ServiceAccounts and RBAC objects of ``files`` (and ``extra``) as the admin,
    the hub Role reading ``spoke_secrets`` if given (tests/k8s/rbac.py); their paths."""
    with contextlib.suppress(ConflictError):  # there already: an installation, an earlier run
        await admin.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        )
    applied = []
    for doc in with_spoke_secrets([*rbac_documents(files), *extra], spoke_secrets):
        path = object_path(doc)
        await admin.apply(path, doc, FIELD_MANAGER)
        applied.append(path)
    return applied


async def service_account_kubeconfig(
    admin: ApiKube, admin_kubeconfig: Path, namespace: str, name: str, out: Path
) -> Path:
    """A kubeconfig at ``out`` for ServiceAccount ``namespace/name``: a token from the
    TokenRequest API (an hour), the admin kubeconfig's current cluster (server and CA, the
    CA inlined), self-contained so that it can go into a hub's spoke Secret."""
    answer = await admin.create(
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        },
    )
    token = answer["status"]["token"]
    config = yaml.safe_load(admin_kubeconfig.read_text())
    contexts = {c["name"]: c["context"] for c in config.get("contexts") or []}
    context = contexts[config["current-context"]]
    clusters = {c["name"]: c["cluster"] for c in config.get("clusters") or []}
    cluster = dict(clusters[context["cluster"]])
    ca_file = cluster.pop("certificate-authority", None)
    if ca_file:  # inlined: the hub refuses file references in a spoke's kubeconfig
        ca_path = admin_kubeconfig.parent / ca_file  # a relative path is the kubeconfig's
        cluster["certificate-authority-data"] = base64.b64encode(ca_path.read_bytes()).decode()
    user = f"{namespace}-{name}"
    out.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "target", "cluster": cluster}],
                "users": [{"name": user, "user": {"token": token}}],
                "contexts": [
                    {
                        "name": user,
                        "context": {"cluster": "target", "user": user, "namespace": namespace},
                    }
                ],
                "current-context": user,
            }
        )
    )
    out.chmod(0o600)
    return out
