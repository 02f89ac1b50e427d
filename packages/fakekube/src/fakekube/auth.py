"""Who is asking, and may they: bearer tokens, impersonation and RBAC, as the API server does.

Authentication. A request carries ``Authorization: Bearer <token>``. The cluster issues two kinds
of token: the admin token (user ``kubernetes-admin`` in group ``system:masters``, which every
authorizer lets through, as kubeadm's admin.conf does) and ServiceAccount tokens
(:meth:`Authenticator.issue`), which authenticate as ``system:serviceaccount:<ns>:<name>`` with
groups ``system:serviceaccounts``, ``system:serviceaccounts:<ns>`` and ``system:authenticated``
for as long as the ServiceAccount exists. No token: ``system:anonymous`` in
``system:unauthenticated`` (anonymous auth on, as the API server's default). An unknown token is
401. Served over TLS (``run_fakekube(tls=True)``, ``--tls``), a client certificate signed by
the cluster's CA authenticates first, as the x509 authenticator does: ``CN`` is the user, each
``O`` a group (:func:`certificate_identity`).

Impersonation (``kubectl --as`` / ``--as-group``): headers ``Impersonate-User`` and
``Impersonate-Group``; the requester needs ``impersonate`` on ``users`` / ``groups`` (or on
``serviceaccounts`` in the namespace, for a ServiceAccount user name), as
``k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`` checks.

Authorization: RBAC only (``plugin/pkg/auth/authorizer/rbac/rbac.go``): the rules of the
ClusterRoles bound by ClusterRoleBindings apply everywhere, those bound by RoleBindings only in
the binding's namespace. Verbs, apiGroups, resources (``*``, ``res/sub``, ``*/sub``) and
resourceNames match as there; aggregated ClusterRoles (``aggregationRule``) are not expanded;
non-resource URLs (discovery, /version, /openapi) are open to everyone. A refusal is the real
403: ``pods is forbidden: User "u" cannot list resource "pods" in API group "" in the namespace
"x"`` (``responsewriters/errors.go`` ``forbiddenMessage``, wrapped by ``errors.NewForbidden``).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from fakekube._errors import ApiError, FieldError, invalid
from fakekube.clock import format_time
from fakekube.resources import Registry
from fakekube.store import Store

__all__ = ["ADMIN", "Authenticator", "Identity", "authorize", "forbidden", "token_request"]

Obj = dict[str, Any]
MASTERS = "system:masters"
SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True, slots=True)
class Identity:
    """An authenticated user: its name and groups."""

    user: str
    groups: tuple[str, ...] = ()

    @property
    def is_admin(self) -> bool:
        return MASTERS in self.groups


ADMIN = Identity("kubernetes-admin", (MASTERS, "system:authenticated"))
ANONYMOUS = Identity("system:anonymous", ("system:unauthenticated",))


def service_account_identity(namespace: str, name: str) -> Identity:
    return Identity(
        f"{SA_PREFIX}{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
    )


def certificate_identity(subject: Sequence[Sequence[tuple[str, str]]]) -> Identity:
    """Who a verified client certificate names, as the API server's x509 authenticator reads
    it: ``CN`` the user, each ``O`` a group (``getpeercert()``'s ``subject``); no ``CN`` is
    401, as there ("common name of user is empty")."""
    names = [value for rdn in subject for key, value in rdn if key == "commonName"]
    groups = [value for rdn in subject for key, value in rdn if key == "organizationName"]
    if not names or not names[-1]:
        raise _unauthorized()
    return Identity(names[-1], (*groups, "system:authenticated"))


@dataclass(frozen=True, slots=True)
class Request:
    """What RBAC decides on (``authorizer.Attributes`` of a resource request)."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""


def forbidden(who: Identity, req: Request) -> ApiError:
    """The API server's 403 for ``req``, word for word."""
    resource = f"{req.resource}/{req.subresource}" if req.subresource else req.resource
    where = f'in the namespace "{req.namespace}"' if req.namespace else "at the cluster scope"
    why = (
        f'User "{who.user}" cannot {req.verb} resource "{resource}" '
        f'in API group "{req.group}" {where}'
    )
    qualified = f"{req.resource}.{req.group}" if req.group else req.resource
    subject = f'{qualified} "{req.name}"' if req.name else qualified
    details: Obj = {"kind": req.resource}
    if req.name:
        details["name"] = req.name
    if req.group:
        details["group"] = req.group
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {why}", details=details)


class Authenticator:
    """The tokens one fake cluster accepts."""

    def __init__(self) -> None:
        self.admin_token = "fakekube-admin-" + secrets.token_hex(8)
        self._service_accounts: dict[str, tuple[str, str]] = {}

    def issue(self, namespace: str, name: str) -> str:
        """A bearer token for ServiceAccount ``namespace/name`` (valid while it exists)."""
        token = f"fakekube-sa-{namespace}-{name}-" + secrets.token_hex(8)
        self._service_accounts[token] = (namespace, name)
        return token

    def authenticate(self, headers: Mapping[str, str], sa_exists: Any) -> Identity:
        auth = headers.get("authorization", "")
        if not auth:
            return ANONYMOUS
        scheme, _, token = auth.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise _unauthorized()
        if token == self.admin_token:
            return ADMIN
        sa = self._service_accounts.get(token)
        if sa is None or not sa_exists(*sa):
            raise _unauthorized()
        return service_account_identity(*sa)


#: ``authentication.k8s.io`` TokenRequest bounds (pkg/apis/authentication/validation) and
#: the default expiry the API server fills in
MIN_TOKEN_S = 600
MAX_TOKEN_S = 1 << 32
DEFAULT_TOKEN_S = 3600
AUDIENCE = "https://kubernetes.default.svc.cluster.local"


def token_request(
    auth: Authenticator, namespace: str, name: str, body: Obj, now: datetime, *, dry_run: bool
) -> Obj:
    """``POST serviceaccounts/<name>/token`` (what ``kubectl create token`` sends): a
    TokenRequest answered with a bearer token for ServiceAccount ``namespace/name``.

    ``spec.expirationSeconds`` is checked as the API server does (10 minutes to 2^32 s,
    default 3600) and echoed with ``status.expirationTimestamp``; the fake's tokens do not
    expire, they stop working when the ServiceAccount is deleted (docs/fakekube.md)."""
    if body.get("kind", "TokenRequest") != "TokenRequest":
        raise ApiError.bad_request(
            f"the body is a {body.get('kind')!r}; a TokenRequest (authentication.k8s.io/v1) "
            "is expected"
        )
    given = body.get("spec")
    spec: Obj = given if isinstance(given, dict) else {}
    seconds = spec.get("expirationSeconds", DEFAULT_TOKEN_S)
    errors: list[FieldError] = []
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        raise ApiError.bad_request(
            f"json: cannot unmarshal {type(seconds).__name__} into Go struct field "
            "TokenRequestSpec.spec.expirationSeconds of type int64"
        )
    if seconds < MIN_TOKEN_S:
        errors.append(
            invalid(
                "spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes"
            )
        )
    if seconds > MAX_TOKEN_S:
        errors.append(
            invalid(
                "spec.expirationSeconds",
                seconds,
                "may not specify a duration larger than 2^32 seconds",
            )
        )
    if errors:
        raise ApiError.invalid("authentication.k8s.io", "TokenRequest", name, errors)
    audiences = spec.get("audiences") or [AUDIENCE]
    token = "" if dry_run else auth.issue(namespace, name)
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
        "spec": {
            "audiences": list(audiences),
            "expirationSeconds": seconds,
            "boundObjectRef": spec.get("boundObjectRef"),
        },
        "status": {
            "token": token,
            "expirationTimestamp": format_time(now + timedelta(seconds=seconds)),
        },
    }


def _unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def impersonate(
    who: Identity, user: str | None, groups: list[str], registry: Registry, store: Store
) -> Identity:
    """The identity ``who`` acts as under ``Impersonate-User`` / ``Impersonate-Group``."""
    if not user:
        if groups:
            raise ApiError.internal(
                "requested [" + ", ".join(f"{{Group {g}}}" for g in groups) + "] without "
                "impersonating a user"
            )
        return who
    if user.startswith(SA_PREFIX) and user.count(":") == 3:
        _, _, ns, name = user.split(":")
        check = Request("impersonate", "", "serviceaccounts", namespace=ns, name=name)
        target = service_account_identity(ns, name)
    else:
        check = Request("impersonate", "", "users", name=user)
        target = Identity(user, ())
    if not authorize(who, check, registry, store):
        raise forbidden(who, check)
    for group in groups:
        check = Request("impersonate", "", "groups", name=group)
        if not authorize(who, check, registry, store):
            raise forbidden(who, check)
    extra = tuple(groups) if groups else target.groups
    if user != ANONYMOUS.user and "system:authenticated" not in extra:
        extra = (*extra, "system:authenticated")
    return Identity(user, extra)


def _subject_matches(subject: Obj, who: Identity, binding_ns: str) -> bool:
    kind = subject.get("kind")
    name = subject.get("name", "")
    if kind == "User":
        return bool(name == who.user)
    if kind == "Group":
        return name in who.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return who.user == f"{SA_PREFIX}{ns}:{name}"
    return False


def _has(values: Iterable[str], wanted: str) -> bool:
    return any(v == "*" or v == wanted for v in values)


def _rule_allows(rule: Obj, req: Request) -> bool:
    if not _has(rule.get("verbs") or [], req.verb):
        return False
    if not _has(rule.get("apiGroups") or [], req.group):
        return False
    combined = f"{req.resource}/{req.subresource}" if req.subresource else req.resource
    resources = rule.get("resources") or []
    if not any(
        r == "*" or r == combined or (req.subresource and r == f"*/{req.subresource}")
        for r in resources
    ):
        return False
    names = rule.get("resourceNames") or []
    return not names or req.name in names


def _rules(store: Store, registry: Registry, ref: Obj, namespace: str) -> list[Obj]:
    kind = ref.get("kind")
    if kind == "ClusterRole":
        rt = registry.find("rbac.authorization.k8s.io", "v1", "clusterroles")
        role = store.peek(rt, "", ref.get("name", "")) if rt else None
    elif kind == "Role":
        rt = registry.find("rbac.authorization.k8s.io", "v1", "roles")
        role = store.peek(rt, namespace, ref.get("name", "")) if rt else None
    else:
        role = None
    return list((role or {}).get("rules") or [])


def authorize(who: Identity, req: Request, registry: Registry, store: Store) -> bool:
    """Whether RBAC lets ``who`` do ``req`` (``system:masters`` may do anything)."""
    if who.is_admin:
        return True
    crb = registry.find("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
    rb = registry.find("rbac.authorization.k8s.io", "v1", "rolebindings")
    bindings: list[tuple[Obj, str]] = []
    if crb is not None:
        bindings += [(b, "") for b in store.items(crb)]
    if rb is not None and req.namespace:
        bindings += [(b, req.namespace) for b in store.items(rb, req.namespace)]
    for binding, ns in bindings:
        if not any(_subject_matches(s, who, ns) for s in binding.get("subjects") or []):
            continue
        for rule in _rules(store, registry, binding.get("roleRef") or {}, ns):
            if _rule_allows(rule, req):
                return True
    return False
