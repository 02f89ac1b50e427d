"""Install the shipped deploy/ RBAC into a fake cluster and hand out its ServiceAccount's
kubeconfig: the product under test never runs as an all-powerful client."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from fakekube import FakeKube

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
RBAC_KINDS = ("ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")

CONTROLLER_RBAC = (DEPLOY / "base" / "serviceaccount.yaml", DEPLOY / "base" / "rbac.yaml")
HUB_RBAC = (DEPLOY / "hub" / "deployment.yaml", DEPLOY / "hub" / "rbac.yaml")
SPOKE_RBAC = (DEPLOY / "hub" / "spoke-rbac.yaml",)
NAMESPACE = "carbonshift-system"


def rbac_documents(paths: Iterable[Path], namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The RBAC objects (and ServiceAccounts) of ``paths``, namespaced as kustomize would."""
    docs: list[dict[str, Any]] = []
    for path in paths:
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") not in RBAC_KINDS:
                continue
            if doc["kind"] in ("ServiceAccount", "Role", "RoleBinding"):
                doc["metadata"].setdefault("namespace", namespace)
            docs.append(doc)
    return docs


def install(
    kube: FakeKube,
    paths: Iterable[Path],
    *,
    extra: Iterable[dict[str, Any]] = (),
    spoke_secrets: Iterable[str] | None = None,
) -> None:
    """Create the RBAC objects of ``paths`` (and ``extra``) as the admin, in their namespace.

    ``spoke_secrets`` replaces the Secret names the hub may read (deploy/hub/rbac.yaml lists
    the example's), as an operator does for each spoke."""
    for doc in with_spoke_secrets([*rbac_documents(paths), *extra], spoke_secrets):
        kube.create(doc)


def with_spoke_secrets(
    docs: list[dict[str, Any]], spoke_secrets: Iterable[str] | None
) -> list[dict[str, Any]]:
    """``docs`` with the Secret names the hub's Role may read replaced by ``spoke_secrets``
    (None: as shipped)."""
    if spoke_secrets is not None:
        names = list(spoke_secrets)
        for doc in docs:
            if doc["kind"] == "Role":
                for rule in doc["rules"]:
                    if rule.get("resources") == ["secrets"]:
                        rule["resourceNames"] = names
    return docs


def spoke_binding(
    namespace: str, name: str, subject: dict[str, str] | None = None
) -> dict[str, Any]:
    """spoke-rbac.yaml's ClusterRole bound to ServiceAccount ``namespace/name`` (its file says:
    bind it to the identity whose kubeconfig the hub's Secret holds), or to ``subject``."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "carbonshift-spoke"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "carbonshift-spoke",
        },
        "subjects": [subject or {"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }


def spoke_jobs_binding(
    namespace: str, name: str, in_namespace: str, subject: dict[str, str] | None = None
) -> dict[str, Any]:
    """spoke-rbac.yaml's ClusterRole carbonshift-spoke-jobs bound in ``in_namespace`` only
    (a RoleBinding), as its file tells the operator to do for each namespace hub Jobs use."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "carbonshift-spoke-jobs", "namespace": in_namespace},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "carbonshift-spoke-jobs",
        },
        "subjects": [subject or {"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }


#: the namespaces the hub tests' Jobs run in; their spokes get them and a RoleBinding each
SPOKE_JOB_NAMESPACES = ("batch",)


def spoke_identity(
    kube: FakeKube,
    name: str = "carbonshift-hub-remote",
    *,
    rbac_files: tuple[Path, ...] = SPOKE_RBAC,
    job_namespaces: Iterable[str] = SPOKE_JOB_NAMESPACES,
) -> Path:
    """A spoke's ServiceAccount bound as spoke-rbac.yaml says (default: the shipped file):
    its read-only ClusterRole cluster-wide, its Jobs ClusterRole by a RoleBinding in each of
    ``job_namespaces`` (created here, as the operator does); its kubeconfig."""
    existing = {o["metadata"]["name"] for o in kube.list("Namespace")}
    namespaces = [ns for ns in dict.fromkeys([NAMESPACE, *job_namespaces]) if ns not in existing]
    for obj in (
        *({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces),
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": NAMESPACE},
        },
    ):
        kube.create(obj)
    bindings = [spoke_binding(NAMESPACE, name)]
    bindings += [spoke_jobs_binding(NAMESPACE, name, ns) for ns in job_namespaces]
    install(kube, rbac_files, extra=bindings)
    return kube.service_account_kubeconfig(NAMESPACE, name)


def spoke_certificate_identity(
    kube: FakeKube,
    user: str = "carbonshift-hub-remote",
    *,
    rbac_files: tuple[Path, ...] = SPOKE_RBAC,
    job_namespaces: Iterable[str] = SPOKE_JOB_NAMESPACES,
) -> Path:
    """As :func:`spoke_identity`, for a user with a client certificate from the spoke's CA
    (``run_fakekube(tls=True)``), as many real clusters hand out: spoke-rbac.yaml's roles
    bound to ``User user``; its kubeconfig, certificate and key inlined."""
    existing = {o["metadata"]["name"] for o in kube.list("Namespace")}
    for ns in dict.fromkeys(job_namespaces):
        if ns not in existing:
            kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    subject = {"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}
    bindings = [spoke_binding(NAMESPACE, user, subject)]
    bindings += [spoke_jobs_binding(NAMESPACE, user, ns, subject) for ns in job_namespaces]
    install(kube, rbac_files, extra=bindings)
    return kube.client_certificate_kubeconfig(user)
