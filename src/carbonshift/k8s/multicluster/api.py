"""A thin adapter over :class:`carbonshift.k8s.client.ApiKube` for the verbs it lacks.

``ApiKube`` exposes get, list, create, replace and patch; the hub also deletes, and applies
status with a field manager (``?fieldManager=``). Both go through its one request path so
retries, backoff and error translation stay in one place. (Wish: a public
``ApiKube.delete`` and a ``query`` argument on ``patch``; then this module shrinks to
nothing.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from carbonshift.k8s.client import APPLY_PATCH, ApiKube, NotFoundError
from carbonshift.k8s.clock import Clock
from carbonshift.k8s.flowcontrol import bucket_or_none

__all__ = ["APPLY_PATCH", "HubApi", "connect_kubeconfig_text"]

Obj = dict[str, Any]


class HubApi:
    """An :class:`ApiKube` plus delete and field-managed patches."""

    def __init__(self, kube: ApiKube) -> None:
        self.kube = kube

    async def get(self, path: str) -> Obj:
        return await self.kube.get(path)

    async def list_items(self, path: str, **query: str) -> list[Obj]:
        answer = await self.kube.list(path, **query)
        items: list[Obj] = answer.get("items") or []
        return items

    def watch(self, path: str, resource_version: str, **query: str) -> AsyncIterator[Obj]:
        return self.kube.watch(path, resource_version, **query)

    async def create(self, path: str, body: Obj) -> Obj:
        return await self.kube.create(path, body)

    async def replace(self, path: str, body: Obj) -> Obj:
        return await self.kube.replace(path, body)

    async def patch(self, path: str, body: Any) -> Obj:
        return await self.kube.patch(path, body)

    async def apply(self, path: str, body: Obj, field_manager: str) -> Obj:
        """Server-side apply of ``body`` as ``field_manager`` (force: the field is ours)."""
        return await self.kube.apply(path, body, field_manager)

    async def delete(self, path: str) -> bool:
        """Delete with background propagation; False when it was already gone."""
        try:
            await self.kube.delete(
                path,
                {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"},
            )
        except NotFoundError:
            return False
        return True

    async def close(self) -> None:
        await self.kube.close()

    async def list(self, path: str, **query: str) -> Obj:  # last: it shadows list[...] below
        """The whole list answer (items and the collection's resourceVersion)."""
        return await self.kube.list(path, **query)


async def connect_kubeconfig_text(
    text: str,
    clock: Clock,
    *,
    retries: int = 1,
    allow_insecure_tls: bool = True,
    qps: float = 0.0,
    burst: int = 0,
) -> HubApi:
    """A client from kubeconfig text (as stored in a Secret), with few retries.

    A spoke that does not answer must be noticed within one reconcile, so spokes get one
    retry where the hub's own client gets six. ``qps`` > 0 limits its requests to ``qps``
    per second with bursts of ``burst`` (:class:`~carbonshift.k8s.flowcontrol.TokenBucket`).
    """
    from kubernetes_asyncio import config

    from carbonshift.k8s.multicluster.inventory import check_spoke_kubeconfig, parse_kubeconfig

    parsed = parse_kubeconfig(text)
    # Again here, whoever calls: no exec plugin or file reference reaches the client (the
    # hub checks insecure-skip-tls-verify against the CarbonCluster before it calls this).
    check_spoke_kubeconfig(parsed, allow_insecure_tls=allow_insecure_tls)
    api_client = await config.new_client_from_config_dict(config_dict=parsed)
    limiter = bucket_or_none(qps, burst)
    return HubApi(ApiKube(api_client, clock, retries=retries, first_backoff_s=0.2, limiter=limiter))
