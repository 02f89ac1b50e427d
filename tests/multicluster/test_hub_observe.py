"""The hub's Events, metrics and leader election, on a fake hub and spokes in virtual time."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from carbonshift.errors import InputError
from carbonshift.k8s.client import connect
from carbonshift.k8s.leader import LeaderElector, micro_time
from carbonshift.k8s.multicluster import HubConfig, HubController, HubObserver, HubRunner
from carbonshift.k8s.multicluster.api import HubApi
from carbonshift.k8s.multicluster.config import HubLeaderSection, load_hub_config
from carbonshift.k8s.multicluster.hub import HubEvent
from carbonshift.k8s.multicluster.observe import REASONS, event_reason
from carbonshift.k8s.multicluster.workloads import PLANNED_CLUSTER, PLANNED_START
from carbonshift.units import parse_utc
from fakekube import Fault
from tests.multicluster.harness import HOLD_OFF, HUB_NS, Fleet, fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)
FLUIDOS = HubConfig.model_validate(
    {"planning": {"policy": "fluidos", "forecast": "oracle", **HOLD_OFF}}
)
Obj = dict[str, Any]


async def step(f: Fleet, observer: HubObserver, minutes: float) -> None:
    await f.step(minutes)
    await observer.observe()


async def events_on(f: Fleet, namespace: str, name: str) -> list[Obj]:
    """The hub's Events about ``name``, oldest first (the fake Job controller writes its own)."""
    ours = [
        e
        for e in await f.list(f.hub, "Event", namespace)
        if e["involvedObject"].get("name") == name
        and e.get("source", {}).get("component") == "carbonshift-hub"
    ]
    return sorted(ours, key=lambda e: int(e["metadata"]["resourceVersion"]))


def metric_lines(observer: HubObserver) -> list[str]:
    text = generate_latest(observer.metrics.registry).decode()
    return [line for line in text.splitlines() if not line.startswith("#")]


def complete(job: Obj) -> bool:
    return any(c["type"] == "Complete" for c in job.get("status", {}).get("conditions", []))


async def hold_then_run(f: Fleet, observer: HubObserver, name: str) -> Obj:
    """Step 15 min at a time until the hub Job ``name`` completes; its final hub object."""
    for _ in range(4 * 14):
        await step(f, observer, 15)
        job = await f.get(f.hub, "Job", name, "batch", "batch/v1")
        if complete(job):
            return job
    raise AssertionError(f"{name} never completed")


async def test_a_held_then_released_job_has_events_with_its_uid_and_reasons() -> None:
    async with fleet(START, config=FLUIDOS) as f:
        await f.create(f.hub, hub_job("train", cpu=4, runtime_h=2, deadline_h=16))
        observer = HubObserver(await f.start_controller())
        await step(f, observer, 0)
        held = await f.get(f.hub, "Job", "train", "batch", "batch/v1")
        notes = held["metadata"]["annotations"]
        want_uid, want_cluster = held["metadata"]["uid"], notes[PLANNED_CLUSTER]
        want_start = parse_utc(notes[PLANNED_START]).strftime("%Y-%m-%dT%H:%MZ")
        assert want_start != START.strftime("%Y-%m-%dT%H:%MZ"), "not held: test needs a wait"
        planned = await events_on(f, "batch", "train")
        assert [e["reason"] for e in planned] == ["CarbonPlanned"]
        assert want_cluster in planned[0]["message"]
        assert want_start in planned[0]["message"]

        await hold_then_run(f, observer, "train")
        events = await events_on(f, "batch", "train")
        reasons = [e["reason"] for e in events]
        want_reasons = ["CarbonPlanned", "CarbonReleased", "CreatedInSpoke", "FinishedComplete"]
        assert reasons == want_reasons
        for event in events:
            assert event["involvedObject"] == {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "namespace": "batch",
                "name": "train",
                "uid": want_uid,
            }
            assert want_cluster in event["message"], event["message"]
            assert event["type"] == "Normal"
            assert event["source"] == {"component": "carbonshift-hub"}
        released = events[1]
        assert released["lastTimestamp"].startswith(want_start.removesuffix("Z"))
        assert observer.handled == len(observer.controller.events)


def anonymous_reader() -> dict[str, Any]:
    rules = [
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["events", "pods"], "verbs": ["get", "list"]},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["get", "list"]},
    ]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "anonymous-reader", "namespace": "batch"},
        "rules": rules,
    }


async def test_kubectl_describe_job_shows_the_hub_events(tmp_path: Path) -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    async with fleet(START, config=FLUIDOS) as f:
        await f.create(f.hub, hub_job("train", cpu=4, runtime_h=2, deadline_h=16))
        observer = HubObserver(await f.start_controller())
        await hold_then_run(f, observer, "train")
        # kubectl sends no credentials over plain HTTP (clientcmd reads auth info only for
        # TLS): the fake hub lets the anonymous user read what describe shows
        await f.create(f.hub, anonymous_reader())
        await f.create(
            f.hub,
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "anonymous-reader", "namespace": "batch"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "anonymous-reader",
                },
                "subjects": [{"kind": "User", "name": "system:anonymous"}],
            },
        )
        env = {
            **os.environ,
            "KUBECONFIG": str(f.hub.kubeconfig),
            "KUBECACHEDIR": str(tmp_path / "cache"),
        }
        done = await asyncio.to_thread(
            subprocess.run,
            ["kubectl", "-n", "batch", "describe", "job", "train"],
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        block = done.stdout[done.stdout.index("Events:") :]
        print(block)
        for reason in ("CarbonPlanned", "CarbonReleased", "CreatedInSpoke", "FinishedComplete"):
            assert f" {reason} " in block, block
        assert "carbonshift-hub" in block


async def test_repeats_are_aggregated_and_failed_writes_are_counted_not_raised() -> None:
    async with fleet(START) as f:
        controller = await f.start_controller()
        observer = HubObserver(controller)
        job = await f.create(f.hub, hub_job("x"))
        uid = job["metadata"]["uid"]
        again = HubEvent(f.now(), "Job/batch/x", "planned", "de", "waiting", uid)
        controller.events += [again, again, HubEvent(f.now(), "Job/nowhere/y", "planned")]
        await observer.observe()
        events = await events_on(f, "batch", "x")
        assert [(e["reason"], e["count"]) for e in events] == [("CarbonPlanned", 2)]
        assert 'carbonshift_hub_observer_errors_total{stage="event"} 1.0' in metric_lines(observer)
        await observer.observe()  # nothing new: nothing posted again
        assert [e["count"] for e in await events_on(f, "batch", "x")] == [2]


@pytest.mark.parametrize(
    ("events", "want_written", "want_dropped"),
    [({"qps": 0.001, "burst": 2}, 2, 3), ({"qps": 0, "burst": 1}, 5, 0)],
    ids=["budget of 2", "qps 0: every Event"],
)
async def test_events_past_the_budget_are_dropped_and_counted(
    events: dict[str, float], want_written: int, want_dropped: int
) -> None:
    config = HubConfig.model_validate({"events": events})
    async with fleet(START, config=config) as f:
        controller = await f.start_controller()
        observer = HubObserver(controller)
        names = [f"w{i}" for i in range(5)]
        for name in names:
            job = await f.create(f.hub, hub_job(name))
            uid = job["metadata"]["uid"]
            controller.events.append(
                HubEvent(f.now(), f"Job/batch/{name}", "planned", "de", "", uid)
            )
        await observer.observe()
        written = [e for name in names for e in await events_on(f, "batch", name)]
        assert len(written) == want_written
        assert {e["reason"] for e in written} <= {"CarbonPlanned"}
        dropped = (
            f'carbonshift_hub_events_dropped_total{{reason="CarbonPlanned"}} {want_dropped:.1f}'
        )
        if want_dropped:
            assert dropped in metric_lines(observer)
        else:
            assert not any("events_dropped_total{" in line for line in metric_lines(observer))
        assert observer.handled == len(controller.events)  # dropped ones are not tried again


async def test_spoke_events_go_on_the_carbon_cluster_and_health_shows_in_metrics() -> None:
    async with fleet(START) as f:
        observer = HubObserver(await f.start_controller())
        await step(f, observer, 0)
        assert 'carbonshift_hub_spoke_healthy{spoke="de"} 1.0' in metric_lines(observer)
        f.spokes["de"].add_fault(Fault(code=503))
        await step(f, observer, 15)
        lines = metric_lines(observer)
        assert 'carbonshift_hub_spoke_healthy{spoke="de"} 0.0' in lines
        assert 'carbonshift_hub_spoke_healthy{spoke="ca-on"} 1.0' in lines
        f.spokes["de"].clear_faults()
        await step(f, observer, 15)
        cc = await f.get(f.hub, "CarbonCluster", "de", "", "carbonshift.io/v1alpha1")
        events = await events_on(f, "default", "de")
        assert [(e["reason"], e["type"]) for e in events] == [
            ("SpokeUnreachable", "Warning"),
            ("SpokeHealthy", "Normal"),
        ]
        for event in events:
            assert event["involvedObject"] == {
                "apiVersion": "carbonshift.io/v1alpha1",
                "kind": "CarbonCluster",
                "name": "de",
                "uid": cc["metadata"]["uid"],
            }
        assert 'carbonshift_hub_spoke_healthy{spoke="de"} 1.0' in metric_lines(observer)


async def test_metrics_count_held_released_and_placed_work_and_spoke_capacity() -> None:
    async with fleet(START, nodes=1, cpu="16", config=FLUIDOS) as f:
        await f.create(f.hub, hub_job("now", cpu=2, runtime_h=1, deadline_h=1))
        await f.create(f.hub, hub_job("later", cpu=2, runtime_h=2, deadline_h=16))
        observer = HubObserver(await f.start_controller())
        await step(f, observer, 0)
        now_job = await f.get(f.hub, "Job", "now", "batch", "batch/v1")
        ran_in = now_job["metadata"]["annotations"][PLANNED_CLUSTER]
        lines = metric_lines(observer)
        want = [
            'carbonshift_hub_held_workloads{kind="Job"} 1.0',
            'carbonshift_hub_held_workloads{kind="Workload"} 0.0',
            f'carbonshift_hub_placed_workloads{{cluster="{ran_in}",kind="Job"}} 1.0',
            f'carbonshift_hub_releases_total{{cluster="{ran_in}",kind="Job"}} 1.0',
            'carbonshift_hub_spoke_capacity{resource="cpu",spoke="de"} 16.0',
            'carbonshift_hub_spoke_copies_total{action="created"} 1.0',
            "carbonshift_hub_plans_total 1.0",
            "carbonshift_hub_plan_duration_seconds_count 1.0",
        ]
        for line in want:
            assert line in lines, (line, lines)
        assert any(
            line.startswith('carbonshift_hub_forecast_age_seconds{spoke="de"}') for line in lines
        )
        # observe() alone does not time the pass (reconcile() does)
        assert "carbonshift_hub_reconcile_duration_seconds_count 0.0" in lines

        await hold_then_run(f, observer, "later")
        lines = metric_lines(observer)
        assert 'carbonshift_hub_held_workloads{kind="Job"} 0.0' in lines
        released = [line for line in lines if line.startswith("carbonshift_hub_releases_total")]
        assert sum(float(line.rsplit(" ", 1)[1]) for line in released) == 2.0, released
        assert not any(
            line.startswith("carbonshift_hub_placed_workloads") and not line.endswith(" 0.0")
            for line in lines
        ), "finished work still counted as placed"
        assert "carbonshift_hub_errors_total 0.0" in lines


async def test_observer_reconcile_times_the_pass() -> None:
    async with fleet(START) as f:
        observer = HubObserver(await f.start_controller())
        await observer.reconcile()
        await observer.reconcile()
        assert "carbonshift_hub_reconcile_duration_seconds_count 2.0" in metric_lines(observer)


@pytest.mark.parametrize(
    ("what", "want"),
    [
        ("planned", ("CarbonPlanned", "Normal")),
        ("finished-failed", ("FinishedFailed", "Warning")),
        ("removed-stale-copy", ("SpokeCopyRemoved", "Warning")),
        ("something-new", ("SomethingNew", "Normal")),
    ],
    ids=["known", "failed-is-a-warning", "renamed", "unknown-is-camel-cased"],
)
def test_event_reasons_are_camel_case(what: str, want: tuple[str, str]) -> None:
    assert event_reason(what) == want
    assert all(reason[0].isupper() and "-" not in reason for reason, _ in REASONS.values())


# -- configuration -----------------------------------------------------------------------


def test_the_metrics_and_leader_election_sections_default_like_the_controller() -> None:
    config = HubConfig()
    assert (config.metrics.enabled, config.metrics.port) == (True, 9090)
    want = ("carbonshift-hub", "carbonshift-system", 15.0, 5.0, True)
    le = config.leader_election
    assert (le.lease_name, le.namespace, le.lease_duration_s, le.renew_every_s, le.enabled) == want


@pytest.mark.parametrize(
    ("text", "want_message"),
    [
        ("leader_election: {renew_every_s: 20}\n", "renew_every_s 20.0 s must be shorter"),
        ("leader_election: {lease_duration_s: 0}\n", "leader_election.lease_duration_s"),
        ("metrics: {port: 70000}\n", "metrics.port"),
        ("leader_election: {lease: x}\n", "did you mean 'lease_name'"),
        ("metrix: {port: 9090}\n", "did you mean 'metrics'"),
    ],
    ids=["renew-slower-than-lease", "zero-lease", "port-out-of-range", "typo-in-section", "typo"],
)
def test_bad_sections_name_the_field_and_the_fix(
    tmp_path: Path, text: str, want_message: str
) -> None:
    path = tmp_path / "hub.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=re.escape(want_message)):
        load_hub_config(path)


# -- leader election -----------------------------------------------------------------------


async def wait_for(done: Callable[[], bool], *, real_s: float = 5.0) -> bool:
    for _ in range(int(real_s / 0.01)):
        if done():
            return True
        await asyncio.sleep(0.01)
    return done()


async def tick(f: Fleet, seconds: float) -> None:
    """Move every fake clock ``seconds`` on and wake the sleepers."""
    for kube in f.kubes:
        await kube.advance_async(minutes=seconds / 60)
    f.clock.poke()
    await asyncio.sleep(0.2)  # real time for the woken tasks


async def test_only_the_leader_reconciles_and_a_follower_takes_over_when_it_stops() -> None:
    async with fleet(START) as f:
        await f.create(f.hub, hub_job("train", cpu=4, runtime_h=2, deadline_h=14))
        section = HubLeaderSection(lease_duration_s=15, renew_every_s=5)
        first = await f.start_controller()
        as_hub = await asyncio.to_thread(
            f.hub.service_account_kubeconfig, HUB_NS, "carbonshift-hub"
        )
        second_api = HubApi(await connect(str(as_hub), f.clock))
        second = HubController(f.config, second_api, f.clock)
        electors = {
            name: LeaderElector(section, c.hub.kube, f.clock, name)
            for name, c in (("a", first), ("b", second))
        }
        runners = {
            name: HubRunner(HubObserver(c), resync_s=10, elector=electors[name])
            for name, c in (("a", first), ("b", second))
        }
        tasks: dict[str, list[asyncio.Task[None]]] = {}
        try:
            tasks["a"] = [asyncio.create_task(electors["a"].run())]
            assert await wait_for(electors["a"].is_leader.is_set)
            tasks["a"].append(asyncio.create_task(runners["a"].run()))
            tasks["b"] = [asyncio.create_task(t.run()) for t in (electors["b"], runners["b"])]
            assert await wait_for(lambda: first.counters.plans >= 1)
            for _ in range(8):  # 40 s, more than twice the lease: "a" renews, "b" waits
                await tick(f, 5)
            # passes run on woken tasks in real time: wait for them, a loaded machine is slow
            assert await wait_for(lambda: runners["a"].passes >= 4)
            assert (runners["b"].passes, second.counters.plans, len(second.events)) == (0, 0, 0)
            assert not electors["b"].is_leader.is_set()
            assert "carbonshift_hub_leader 0.0" in metric_lines(runners["b"].observer)
            assert "carbonshift_hub_leader 1.0" in metric_lines(runners["a"].observer)

            for task in tasks.pop("a"):  # "a" dies without giving the lease up
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            stopped_at = f.now()
            await tick(f, 5)
            assert runners["b"].passes == 0, "took over before the lease expired"
            for _ in range(4):
                await tick(f, 5)
            assert await wait_for(lambda: second.counters.plans >= 1)
            assert f.now() - stopped_at >= timedelta(seconds=15)
            lease = await f.get(f.hub, "Lease", "carbonshift-hub", HUB_NS, "coordination.k8s.io/v1")
            assert lease["spec"]["holderIdentity"] == "b"
            assert "carbonshift_hub_leader 1.0" in metric_lines(runners["b"].observer)
        finally:
            for group in tasks.values():
                for task in group:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            await second.close()
            await second_api.close()


async def test_a_leader_that_loses_the_lease_stops_reconciling() -> None:
    async with fleet(START) as f:
        controller = await f.start_controller()
        section = HubLeaderSection(lease_duration_s=15, renew_every_s=5)
        elector = LeaderElector(section, controller.hub.kube, f.clock, "a")
        runner = HubRunner(HubObserver(controller), resync_s=10, elector=elector)
        tasks = [asyncio.create_task(elector.run()), asyncio.create_task(runner.run())]
        try:
            assert await wait_for(lambda: runner.passes >= 1)
            path = f"/apis/coordination.k8s.io/v1/namespaces/{HUB_NS}/leases/carbonshift-hub"
            lease = await controller.hub.get(path)
            lease["spec"].update(
                holderIdentity="intruder", renewTime=micro_time(f.now()), leaseDurationSeconds=3600
            )
            await controller.hub.replace(path, lease)  # another replica renewed it meanwhile
            await tick(f, 5)
            assert await wait_for(lambda: not elector.is_leader.is_set())
            passes = runner.passes
            for _ in range(4):  # 20 s: two resync periods, within the intruder's lease
                await tick(f, 5)
            assert runner.passes == passes, "reconciled without the lease"
            assert "carbonshift_hub_leader 0.0" in metric_lines(runner.observer)
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
