"""Client retries, conflict-safe writes, leader election and dry-run against the fake server."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from carbonshift.errors import TemporaryError
from carbonshift.k8s.client import ConflictError, GoneError, connect
from carbonshift.k8s.clock import ExternalClock
from carbonshift.k8s.config import LeaderSection
from carbonshift.k8s.leader import LeaderElector
from fakekube import FakeKube
from fakekube.faults import Fault
from tests.k8s.harness import controller_config, make_harness
from tests.k8s.objects import job, pod

START = datetime(2023, 6, 1, tzinfo=UTC)
pytestmark = pytest.mark.fakekube_config(start=START, nodes=1, cpu="8")


async def test_429_and_5xx_are_retried_then_reported(fakekube: FakeKube) -> None:
    clock = ExternalClock(fakekube.now)
    kube = await connect(str(fakekube.kubeconfig), clock)
    try:
        await asyncio.to_thread(fakekube.add_fault, Fault(code=429, verb="list", times=2))
        await asyncio.to_thread(fakekube.add_fault, Fault(code=503, verb="list", times=1))
        listed = await kube.list("/api/v1/nodes")
        assert [n["metadata"]["name"] for n in listed["items"]] == ["node-0"]
        await asyncio.to_thread(fakekube.add_fault, Fault(code=500, verb="get"))
        with pytest.raises(TemporaryError, match="kept failing after 6 retries"):
            await kube.get("/api/v1/nodes/node-0")
    finally:
        await kube.close()


async def test_stale_writes_get_409_and_old_watches_410(fakekube: FakeKube) -> None:
    clock = ExternalClock(fakekube.now)
    kube = await connect(str(fakekube.kubeconfig), clock)
    try:
        node = await kube.get("/api/v1/nodes/node-0")
        stale = node["metadata"]["resourceVersion"]
        await kube.patch("/api/v1/nodes/node-0", {"metadata": {"labels": {"a": "1"}}})
        with pytest.raises(ConflictError):
            await kube.patch(
                "/api/v1/nodes/node-0",
                {"metadata": {"resourceVersion": stale, "labels": {"a": "2"}}},
            )
        await asyncio.to_thread(fakekube.compact)
        with pytest.raises(GoneError):
            async for _ in kube.watch("/api/v1/nodes", "1"):
                pass
    finally:
        await kube.close()


async def test_one_leader_at_a_time_and_takeover_after_expiry(fakekube: FakeKube) -> None:
    clock = ExternalClock(fakekube.now)
    kube = await connect(str(fakekube.kubeconfig), clock)
    section = LeaderSection(namespace="default", lease_duration_s=15, renew_every_s=5)
    a = LeaderElector(section, kube, clock, "a")
    b = LeaderElector(section, kube, clock, "b")
    try:
        assert await a.try_acquire()
        assert not await b.try_acquire()
        assert await a.try_acquire()  # renewal
        await asyncio.to_thread(fakekube.advance, seconds=10)
        assert not await b.try_acquire()  # renewed 10 s ago: still held
        await asyncio.to_thread(fakekube.advance, seconds=6)
        assert await b.try_acquire()  # 16 s without renewal: taken over
        assert not await a.try_acquire()
        lease = await kube.get(
            "/apis/coordination.k8s.io/v1/namespaces/default/leases/" + section.lease_name
        )
        assert lease["spec"]["holderIdentity"] == "b"
        assert lease["spec"]["leaseTransitions"] == 1
    finally:
        await kube.close()


async def test_dry_run_plans_and_reports_but_writes_nothing(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    h = await make_harness(fakekube, tmp_path)
    await h.start(controller_config(h.certs, dry_run=True))
    try:
        notes = {"carbonshift.io/deadline": "20h", "carbonshift.io/expected-runtime": "2h"}
        created = pod("p", created=None, annotations=notes)
        del created["metadata"]["uid"]
        await h.create(created)
        await h.step()
        got = await h.get("Pod", "p")
        assert "schedulingGates" not in got["spec"]  # the webhook did not gate it
        assert "carbonshift.io/state" not in got["metadata"]["annotations"]
        wrote = [a for a in h.controller.actions if not a.dry_run]
        assert wrote == []
        assert any(a.dry_run and a.key == "Pod/batch/p" for a in h.controller.actions)
        # dry run records nothing, not even the leader Lease (issue 12, item 12)
        assert fakekube.list("Lease", None, "coordination.k8s.io/v1") == []
        assert h.app is not None
        assert h.app.elector is None
    finally:
        await h.stop()


async def test_a_restart_releases_nothing_twice(fakekube: FakeKube, tmp_path: Path) -> None:
    h = await make_harness(fakekube, tmp_path)
    config = controller_config(h.certs)
    await h.start(config)
    try:
        soon = {"carbonshift.io/deadline": "1h", "carbonshift.io/expected-runtime": "1h"}
        late = {"carbonshift.io/deadline": "20h", "carbonshift.io/expected-runtime": "2h"}
        for name, notes in (("now", soon), ("later", late)):
            obj = pod(name, created=None, annotations=notes)
            del obj["metadata"]["uid"]
            await h.create(obj)
        await h.step()
        first = [a.key for a in h.controller.actions if a.verb == "release"]
        assert first == ["Pod/batch/now"]
        stamp = (await h.get("Pod", "now"))["metadata"]["annotations"]["carbonshift.io/released-at"]
        await h.stop()
        await h.step(minutes=30)
        await h.start(config.model_copy(update={"identity": "controller-b"}))
        await h.step()
        second = [a.key for a in h.controller.actions if a.verb == "release"]
        assert "Pod/batch/now" not in second
        again = (await h.get("Pod", "now"))["metadata"]["annotations"]["carbonshift.io/released-at"]
        assert again == stamp
        assert "schedulingGates" in (await h.get("Pod", "later"))["spec"]
        assert h.controller.outcomes["Pod/batch/later"].planned_start > START + timedelta(hours=1)
    finally:
        await h.stop()


@pytest.mark.fakekube_config(start=START, nodes=1, cpu="8", controllers=False)
async def test_a_job_the_webhook_missed_is_suspended_on_arrival(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    # kube-system is outside the webhook's namespaceSelector, and the fake Job controller is
    # off, so the Job arrives unsuspended and not started, as when the webhook was down.
    h = await make_harness(fakekube, tmp_path)
    await h.start(controller_config(h.certs))
    try:
        notes = {"carbonshift.io/deadline": "20h", "carbonshift.io/expected-runtime": "2h"}
        obj = job("missed", namespace="kube-system", created=None, annotations=notes)
        del obj["metadata"]["uid"]
        await h.create(obj)
        await h.step()
        got = await h.get("Job", "missed", "kube-system")
        assert got["spec"]["suspend"] is True
        assert got["metadata"]["annotations"]["carbonshift.io/state"] == "held"
        assert "carbonshift.io/planned-start" in got["metadata"]["annotations"]
        verbs = [a.verb for a in h.controller.actions if a.key.endswith("/missed")]
        assert verbs[:1] == ["hold"]
    finally:
        await h.stop()
