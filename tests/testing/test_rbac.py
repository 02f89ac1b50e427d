"""RBAC in the fake: tokens, impersonation, Roles and bindings, and the real 403 text."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from fakekube import FakeKube

pytestmark = pytest.mark.fakekube_config(rbac=True, nodes=1)

Obj = dict[str, Any]
SA = "system:serviceaccount:team:bot"
RBAC = "rbac.authorization.k8s.io/v1"


def _setup(kube: FakeKube) -> str:
    """Namespace ``team``, ServiceAccount ``team/bot`` and its roles; the bot's token."""
    for obj in (
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "bot", "namespace": "team"},
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": {"name": "node-reader"},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}],
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "bot-nodes"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "node-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}],
        },
        {
            "apiVersion": RBAC,
            "kind": "Role",
            "metadata": {"name": "jobs", "namespace": "team"},
            "rules": [
                {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "create"]},
                {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["patch"]},
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "verbs": ["get"],
                    "resourceNames": ["mine"],
                },
            ],
        },
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": {"name": "bot-jobs", "namespace": "team"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "jobs"},
            "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}],
        },
    ):
        kube.create(obj)
    path = kube.service_account_kubeconfig("team", "bot")
    import yaml

    config = yaml.safe_load(path.read_text())
    token: str = config["users"][0]["user"]["token"]
    return token


CASES = [
    pytest.param("GET", "/api/v1/nodes", 200, "", id="cluster-role-lists-nodes"),
    pytest.param(
        "GET",
        "/api/v1/pods",
        403,
        f'pods is forbidden: User "{SA}" cannot list resource "pods" in API group "" at the cluster scope',  # noqa: E501
        id="no-rule-for-pods-at-cluster-scope",
    ),
    pytest.param(
        "GET",
        "/api/v1/namespaces/team/pods",
        403,
        f'pods is forbidden: User "{SA}" cannot list resource "pods" in API group "" in the namespace "team"',  # noqa: E501
        id="no-rule-for-pods-in-namespace",
    ),
    pytest.param("GET", "/apis/batch/v1/namespaces/team/jobs", 200, "", id="role-in-its-namespace"),
    pytest.param(
        "GET",
        "/apis/batch/v1/namespaces/other/jobs",
        403,
        f'jobs.batch is forbidden: User "{SA}" cannot list resource "jobs" in API group "batch" in the namespace "other"',  # noqa: E501
        id="role-not-in-other-namespace",
    ),
    pytest.param(
        "DELETE",
        "/apis/batch/v1/namespaces/team/jobs/x",
        403,
        f'jobs.batch "x" is forbidden: User "{SA}" cannot delete resource "jobs" in API group "batch" in the namespace "team"',  # noqa: E501
        id="verb-not-granted-names-the-object",
    ),
    pytest.param(
        "PUT",
        "/apis/batch/v1/namespaces/team/jobs/x/status",
        403,
        f'jobs.batch "x" is forbidden: User "{SA}" cannot update resource "jobs/status" in API group "batch" in the namespace "team"',  # noqa: E501
        id="subresource-is-its-own-resource",
    ),
    pytest.param(
        "GET", "/api/v1/namespaces/team/configmaps/mine", 404, "", id="resource-name-allowed"
    ),
    pytest.param(
        "GET",
        "/api/v1/namespaces/team/configmaps/theirs",
        403,
        f'configmaps "theirs" is forbidden: User "{SA}" cannot get resource "configmaps" in API group "" in the namespace "team"',  # noqa: E501
        id="resource-name-not-listed",
    ),
    pytest.param("GET", "/version", 200, "", id="non-resource-paths-open"),
]


@pytest.mark.parametrize(("method", "path", "want_code", "want_message"), CASES)
def test_service_account_is_held_to_its_roles(
    fakekube: FakeKube, method: str, path: str, want_code: int, want_message: str
) -> None:
    token = _setup(fakekube)
    with httpx.Client(
        base_url=fakekube.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=10
    ) as client:
        answer = client.request(method, path, json={} if method == "PUT" else None)
    assert answer.status_code == want_code, answer.text
    if want_message:
        body = answer.json()
        assert body["reason"] == "Forbidden"
        assert body["message"] == want_message


def test_unknown_token_is_401_and_anonymous_is_forbidden(fakekube: FakeKube) -> None:
    with httpx.Client(base_url=fakekube.base_url, timeout=10) as client:
        bad = client.get("/api/v1/nodes", headers={"Authorization": "Bearer nope"})
        anonymous = client.get("/api/v1/nodes")
    assert bad.status_code == 401
    assert anonymous.status_code == 403
    assert 'User "system:anonymous" cannot list' in anonymous.json()["message"]


def test_deleted_service_account_token_stops_working(fakekube: FakeKube) -> None:
    token = _setup(fakekube)
    admin = {"Authorization": f"Bearer {fakekube.cluster.auth.admin_token}"}
    with httpx.Client(base_url=fakekube.base_url, timeout=10) as client:
        client.delete("/api/v1/namespaces/team/serviceaccounts/bot", headers=admin)
        answer = client.get("/api/v1/nodes", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 401


def test_impersonation_needs_the_impersonate_verb(fakekube: FakeKube) -> None:
    token = _setup(fakekube)
    admin = {"Authorization": f"Bearer {fakekube.cluster.auth.admin_token}"}
    with httpx.Client(base_url=fakekube.base_url, timeout=10) as client:
        as_bot = client.get(
            "/api/v1/namespaces/team/pods", headers={**admin, "Impersonate-User": SA}
        )
        bot_as_admin = client.get(
            "/api/v1/pods",
            headers={"Authorization": f"Bearer {token}", "Impersonate-User": "kubernetes-admin"},
        )
    assert as_bot.status_code == 403
    assert f'User "{SA}" cannot list resource "pods"' in as_bot.json()["message"]
    assert bot_as_admin.status_code == 403
    assert bot_as_admin.json()["message"] == (
        f'users "kubernetes-admin" is forbidden: User "{SA}" cannot impersonate resource '
        '"users" in API group "" at the cluster scope'
    )


TOKEN_PATH = "/api/v1/namespaces/team/serviceaccounts/{name}/token"
TOKEN_CASES = [
    pytest.param("bot", {}, 201, "", id="default-an-hour"),
    pytest.param("bot", {"expirationSeconds": 600}, 201, "", id="ten-minutes-is-the-least"),
    pytest.param(
        "bot",
        {"expirationSeconds": 599},
        422,
        'TokenRequest.authentication.k8s.io "bot" is invalid: spec.expirationSeconds: Invalid '
        "value: 599: may not specify a duration less than 10 minutes",
        id="under-ten-minutes",
    ),
    pytest.param(
        "bot",
        {"expirationSeconds": (1 << 32) + 1},
        422,
        "may not specify a duration larger than 2^32 seconds",
        id="over-two-to-the-32-seconds",
    ),
    pytest.param(
        "ghost", {}, 404, 'serviceaccounts "ghost" not found', id="no-such-service-account"
    ),
]


@pytest.mark.parametrize(("name", "spec", "want_code", "want_message"), TOKEN_CASES)
def test_token_requests_are_answered_and_checked_as_the_api_server_does(
    fakekube: FakeKube, name: str, spec: Obj, want_code: int, want_message: str
) -> None:
    """``kubectl create token`` posts a TokenRequest; the token it gets authenticates as the
    ServiceAccount and is held to its roles."""
    _setup(fakekube)
    admin = {"Authorization": f"Bearer {fakekube.admin_token}"}
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    with httpx.Client(base_url=fakekube.base_url, timeout=10) as client:
        answer = client.post(TOKEN_PATH.format(name=name), json=body, headers=admin)
        assert answer.status_code == want_code, answer.text
        if want_message:
            assert want_message in answer.json()["message"]
            return
        got = answer.json()
        assert got["kind"] == "TokenRequest"
        assert got["spec"]["expirationSeconds"] == spec.get("expirationSeconds", 3600)
        bearer = {"Authorization": f"Bearer {got['status']['token']}"}
        assert client.get("/api/v1/nodes", headers=bearer).status_code == 200
        denied = client.get("/api/v1/pods", headers=bearer)
        assert denied.status_code == 403
        assert f'User "{SA}"' in denied.json()["message"]


def test_a_token_request_needs_create_on_serviceaccounts_token(fakekube: FakeKube) -> None:
    token = _setup(fakekube)  # the bot may not mint tokens, not even its own
    with httpx.Client(base_url=fakekube.base_url, timeout=10) as client:
        answer = client.post(
            TOKEN_PATH.format(name="bot"),
            json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
            headers={"Authorization": f"Bearer {token}"},
        )
    assert answer.status_code == 403
    assert answer.json()["message"] == (
        f'serviceaccounts "bot" is forbidden: User "{SA}" cannot create resource '
        '"serviceaccounts/token" in API group "" in the namespace "team"'
    )
