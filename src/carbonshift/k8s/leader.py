"""Leader election with a coordination.k8s.io/v1 Lease (the client-go protocol, simplified).

A replica holds the lease while it renews it within ``lease_duration_s``; another replica
takes it over only once ``renewTime + leaseDurationSeconds`` has passed. Every write carries
the resourceVersion it read, so two replicas cannot both win (409). Times come from the
clock seam, so tests run elections in virtual time.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta

from carbonshift.errors import TemporaryError
from carbonshift.k8s.client import ConflictError, Kube, KubeError, NotFoundError
from carbonshift.k8s.clock import Clock
from carbonshift.k8s.config import LeaderSection
from carbonshift.k8s.intent import Obj
from carbonshift.k8s.metrics import Metrics
from carbonshift.units import parse_utc

__all__ = ["LeaderElector", "micro_time"]

_LOG = logging.getLogger("carbonshift.k8s")


def micro_time(moment: datetime) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Acquire and renew a Lease; ``is_leader`` is set while this replica holds it."""

    def __init__(
        self,
        section: LeaderSection,
        kube: Kube,
        clock: Clock,
        identity: str,
        metrics: Metrics | None = None,
    ) -> None:
        self.section = section
        self.kube = kube
        self.clock = clock
        self.identity = identity
        self.metrics = metrics
        self.is_leader = asyncio.Event()
        self._path = (
            f"/apis/coordination.k8s.io/v1/namespaces/{section.namespace}/leases/"
            f"{section.lease_name}"
        )

    def _spec(self, now: datetime, old: Obj | None) -> Obj:
        spec = dict((old or {}).get("spec") or {})
        taking_over = spec.get("holderIdentity") != self.identity
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=max(1, round(self.section.lease_duration_s)),
            renewTime=micro_time(now),
        )
        if taking_over:
            spec["acquireTime"] = micro_time(now)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if old else 0)
        return spec

    async def try_acquire(self) -> bool:
        """One attempt to acquire or renew; True when this replica holds the lease."""
        now = self.clock.now()
        try:
            lease = await self.kube.get(self._path)
        except NotFoundError:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.section.lease_name, "namespace": self.section.namespace},
                "spec": self._spec(now, None),
            }
            try:
                await self.kube.create(self._path.rsplit("/", 1)[0], body)
            except (ConflictError, KubeError):
                return False
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        if holder and holder != self.identity:
            renewed = spec.get("renewTime")
            duration = float(spec.get("leaseDurationSeconds") or self.section.lease_duration_s)
            if renewed and parse_utc(str(renewed)) + timedelta(seconds=duration) > now:
                return False
        lease["spec"] = self._spec(now, lease)
        try:
            await self.kube.replace(self._path, lease)
        except (ConflictError, NotFoundError):
            return False
        return True

    async def run(self) -> None:
        """Keep trying and renewing until cancelled."""
        while True:
            try:
                held = await self.try_acquire()
            except (TemporaryError, KubeError) as exc:
                _LOG.warning("lease %s: %s", self._path, exc)
                held = False
            if held and not self.is_leader.is_set():
                _LOG.info("%s is now the leader", self.identity)
                self.is_leader.set()
            elif not held and self.is_leader.is_set():
                _LOG.warning("%s lost the lease", self.identity)
                self.is_leader.clear()
            if self.metrics is not None:
                self.metrics.is_leader.set(1 if held else 0)
            await self.clock.sleep_until(
                self.clock.now() + timedelta(seconds=self.section.renew_every_s)
            )

    async def release(self) -> None:
        """Give the lease up (on a clean shutdown) so another replica takes over at once."""
        if not self.is_leader.is_set():
            return
        self.is_leader.clear()
        try:
            lease = await self.kube.get(self._path)
            if (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = None
                await self.kube.replace(self._path, lease)
        except (KubeError, TemporaryError) as exc:
            _LOG.info("could not release the lease: %s", exc)
