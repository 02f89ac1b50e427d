"""The hub under the shipped RBAC: spokes answer, and a refusal reads as a misconfiguration.

Every fleet here enforces RBAC (tests.multicluster.harness): the hub runs as ServiceAccount
carbonshift-hub under deploy/hub/rbac.yaml and reaches each spoke as an identity bound to
deploy/hub/spoke-rbac.yaml. Issue 14: the shipped spoke role lacked ``pods: list``, so every
spoke was Unreachable and nothing was placed.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import yaml

from carbonshift.k8s.multicluster import HubConfig
from carbonshift.k8s.multicluster.workloads import PLACED_CLUSTER
from tests.k8s import rbac
from tests.multicluster.harness import HOLD_OFF, SPOKES, fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)
CC = "carbonshift.io/v1alpha1"
FLUIDOS = HubConfig.model_validate(
    {"planning": {"policy": "fluidos", "forecast": "oracle", **HOLD_OFF}}
)


async def test_every_spoke_is_healthy_under_the_shipped_spoke_rbac() -> None:
    async with fleet(START) as f:
        await f.create(f.hub, hub_job("now", cpu=2, runtime_h=1, deadline_h=1))
        await f.start_controller()
        await f.step(0)
        health = {
            name: (await f.get(f.hub, "CarbonCluster", name, "", CC))["status"]["health"]
            for name in f.spokes
        }
        assert health == dict.fromkeys(f.spokes, "Healthy")
        job = await f.get(f.hub, "Job", "now", "batch", "batch/v1")
        assert job["metadata"]["annotations"].get(PLACED_CLUSTER) in f.spokes


def _without_pods(tmp_path: Path) -> tuple[Path, ...]:
    """spoke-rbac.yaml as it shipped before issue 14 (no ``pods: list``)."""
    docs = list(yaml.safe_load_all(rbac.SPOKE_RBAC[0].read_text()))
    for doc in docs:
        if doc["metadata"]["name"] == "carbonshift-spoke":
            doc["rules"] = [r for r in doc["rules"] if "pods" not in r["resources"]]
    path = tmp_path / "spoke-rbac.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return (path,)


async def test_a_spoke_that_refuses_a_verb_is_forbidden_naming_the_verb_not_unreachable(
    tmp_path: Path,
) -> None:
    async with fleet(START, spoke_rbac=_without_pods(tmp_path)) as f:
        await f.create(f.hub, hub_job("now", cpu=2, runtime_h=1, deadline_h=1))
        controller = await f.start_controller()
        for _ in range(3):  # past spoke_timeout_failures: still no outage
            await f.step(15)
        for name in f.spokes:
            status = (await f.get(f.hub, "CarbonCluster", name, "", CC))["status"]
            want_message = (
                f"the hub's identity in spoke {name} cannot list pods; grant it in spoke-rbac.yaml"
            )
            assert status["health"] == "Forbidden"
            assert status["message"].startswith(want_message), status["message"]
            assert status["conditions"][0]["reason"] == "Forbidden"
            assert "downSince" not in status
        job = await f.get(f.hub, "Job", "now", "batch", "batch/v1")
        assert PLACED_CLUSTER not in job["metadata"]["annotations"]
        assert {e.what for e in controller.events if e.cluster in f.spokes} >= {"forbidden"}
        assert not [e for e in controller.events if e.what == "unreachable"]


async def test_work_placed_in_a_spoke_that_turns_forbidden_is_not_recalled() -> None:
    async with fleet(START, config=FLUIDOS) as f:
        await f.create(f.hub, hub_job("now", cpu=2, runtime_h=3, deadline_h=3))
        controller = await f.start_controller()
        await f.step(0)
        job = await f.get(f.hub, "Job", "now", "batch", "batch/v1")
        placed = job["metadata"]["annotations"][PLACED_CLUSTER]
        # an administrator narrows the spoke's role: the hub may no longer list pods there
        spoke = f.spokes[placed]
        role = await asyncio.to_thread(
            spoke.get, "ClusterRole", "carbonshift-spoke", "", "rbac.authorization.k8s.io/v1"
        )
        role["rules"] = [r for r in role["rules"] if "pods" not in r["resources"]]

        def narrow() -> None:
            api = spoke.cluster.api
            rt = api.kind("ClusterRole", "rbac.authorization.k8s.io/v1")
            spoke._call(api.update(rt, "", "carbonshift-spoke", role))

        await asyncio.to_thread(narrow)
        for _ in range(4):  # an hour > spoke_lost_timeout_s (15 min)
            await f.step(15)
        status = (await f.get(f.hub, "CarbonCluster", placed, "", CC))["status"]
        assert status["health"] == "Forbidden"
        job = await f.get(f.hub, "Job", "now", "batch", "batch/v1")
        assert job["metadata"]["annotations"][PLACED_CLUSTER] == placed
        assert not [e for e in controller.events if e.what == "recalled"]
        assert [j["metadata"]["name"] for j in await f.list(spoke, "Job", "batch", "batch/v1")] == [
            "now"
        ]


async def test_the_hub_reads_only_the_secrets_its_role_names() -> None:
    spokes = sorted(SPOKES)
    async with fleet(START, readable_secrets=[f"spoke-{n}" for n in spokes[1:]]) as f:
        await f.start_controller()
        await f.step(0)
        left_out = spokes[0]
        status = (await f.get(f.hub, "CarbonCluster", left_out, "", CC))["status"]
        assert status["health"] == "Misconfigured"
        want = f"add 'spoke-{left_out}' to resourceNames of Role carbonshift-hub-secrets"
        assert want in status["message"], status["message"]
        for name in spokes[1:]:
            health = (await f.get(f.hub, "CarbonCluster", name, "", CC))["status"]["health"]
            assert health == "Healthy"


def test_the_shipped_hub_role_names_its_secrets() -> None:
    # an empty or missing resourceNames would let the hub read every Secret of its namespace
    docs = rbac.rbac_documents(rbac.HUB_RBAC)
    secret_rules = [
        rule
        for doc in docs
        if doc["kind"] in ("Role", "ClusterRole")
        for rule in doc["rules"]
        if "secrets" in rule["resources"]
    ]
    assert secret_rules
    assert all(rule.get("resourceNames") for rule in secret_rules)
    assert all(
        doc["kind"] == "Role"
        for doc in docs
        if any("secrets" in r["resources"] for r in doc.get("rules", []))
    )


async def test_the_hub_writes_jobs_only_in_namespaces_bound_on_the_spoke() -> None:
    """Issue 12: the spoke identity reads cluster-wide but writes Jobs only where a RoleBinding
    of carbonshift-spoke-jobs exists (``batch`` in this fleet); a hub Job in another namespace
    is refused there, said in an event with the fix, and stays placed, not recalled."""
    async with fleet(START, config=FLUIDOS) as f:
        await f.create(
            f.hub, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "research"}}
        )
        await f.create(f.hub, hub_job("ok", cpu=2, runtime_h=2, deadline_h=3))
        await f.create(
            f.hub, hub_job("elsewhere", cpu=2, runtime_h=2, deadline_h=3, namespace="research")
        )
        controller = await f.start_controller()
        await f.step(0)
        ok = await f.get(f.hub, "Job", "ok", "batch", "batch/v1")
        ok_spoke = f.spokes[ok["metadata"]["annotations"][PLACED_CLUSTER]]
        assert [
            j["metadata"]["name"] for j in await f.list(ok_spoke, "Job", "batch", "batch/v1")
        ] == ["ok"]
        refused = [e for e in controller.events if e.what == "copy-refused"]
        assert refused
        assert all("carbonshift-spoke-jobs" in e.detail for e in refused), refused
        assert all(e.key.endswith("/research/elsewhere") for e in refused)
        for spoke in f.spokes.values():
            namespaces = {n["metadata"]["name"] for n in await f.list(spoke, "Namespace")}
            assert "research" not in namespaces
        elsewhere = await f.get(f.hub, "Job", "elsewhere", "research", "batch/v1")
        assert PLACED_CLUSTER in elsewhere["metadata"]["annotations"]
        assert not [e for e in controller.events if e.what == "recalled"]
