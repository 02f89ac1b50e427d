"""The controller against the fake API server, in virtual time (fast tier).

A Pod and a Job are created through the API (the webhook runs over TLS and gates / suspends
them), held with the reason and planned start written on them, and released once, at the
planned slot. Unusable annotations never block. Restarts release nothing twice.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from carbonshift.units import parse_utc
from fakekube import FakeKube
from tests.k8s.harness import controller_config, make_harness
from tests.k8s.objects import job, pod

# 2023-06-01 in DE: solar makes the early afternoon the cleanest hours.
START = datetime(2023, 6, 1, tzinfo=UTC)
pytestmark = pytest.mark.fakekube_config(start=START, nodes=2, cpu="8")


def fresh(obj: dict[str, Any]) -> dict[str, Any]:
    """An object as a user would send it (no uid, no creation time)."""
    meta = obj["metadata"]
    meta.pop("uid", None)
    meta.pop("creationTimestamp", None)
    return obj


def releases(actions: list[Any]) -> list[str]:
    return [a.key for a in actions if a.verb == "release"]


async def test_pod_and_job_are_held_then_released_once_at_the_planned_time(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    h = await make_harness(fakekube, tmp_path)
    app = await h.start(controller_config(h.certs))
    try:
        spec = {"carbonshift.io/deadline": "20h", "carbonshift.io/expected-runtime": "2h"}
        await h.create(fresh(pod("p", created=None, annotations=spec)))
        await h.create(fresh(job("j", created=None, annotations=spec)))
        created_pod = await h.get("Pod", "p")
        created_job = await h.get("Job", "j")
        assert [g["name"] for g in created_pod["spec"]["schedulingGates"]] == [
            "carbonshift.io/hold"
        ]
        assert created_job["spec"]["suspend"] is True

        await h.step()
        held = (await h.get("Pod", "p"))["metadata"]["annotations"]
        planned = parse_utc(held["carbonshift.io/planned-start"])
        assert held["carbonshift.io/state"] == "held"
        assert START < planned <= START + timedelta(hours=18)
        assert "cleaner power" in held["carbonshift.io/reason"]
        assert float(held["carbonshift.io/estimated-g-planned"]) < float(
            held["carbonshift.io/estimated-g-now"]
        )
        job_planned = parse_utc(
            (await h.get("Job", "j"))["metadata"]["annotations"]["carbonshift.io/planned-start"]
        )

        released_at: dict[str, datetime] = {}
        while fakekube.now() < START + timedelta(hours=20):
            await h.step(hours=1)
            for kind, name in (("Pod", "p"), ("Job", "j")):
                notes = (await h.get(kind, name))["metadata"]["annotations"]
                if "carbonshift.io/released-at" in notes and name not in released_at:
                    released_at[name] = parse_utc(notes["carbonshift.io/released-at"])
        assert released_at == {"p": planned, "j": job_planned}
        assert sorted(releases(app.controller.actions)) == ["Job/batch/j", "Pod/batch/p"]  # type: ignore[union-attr]
        final_pod = await h.get("Pod", "p")
        assert final_pod["status"]["phase"] == "Succeeded"
        assert final_pod["status"]["startTime"] == released_at["p"].strftime("%Y-%m-%dT%H:%M:%SZ")
        assert (await h.get("Job", "j"))["spec"]["suspend"] is False
    finally:
        await h.stop()


async def test_unusable_values_run_at_once_and_say_why(fakekube: FakeKube, tmp_path: Path) -> None:
    h = await make_harness(fakekube, tmp_path)
    await h.start(controller_config(h.certs))
    try:
        await h.create(
            fresh(pod("bad", created=None, annotations={"carbonshift.io/deadline": "soon"}))
        )
        await h.create(
            fresh(pod("crit", created=None, annotations={"carbonshift.io/critical": "true"}))
        )
        await h.step()
        bad = await h.get("Pod", "bad")
        assert "schedulingGates" not in bad["spec"]
        assert bad["status"]["phase"] == "Running"
        assert bad["metadata"]["annotations"]["carbonshift.io/state"] == "not-held"
        assert "neither an RFC 3339" in bad["metadata"]["annotations"]["carbonshift.io/reason"]
        events = await_events = fakekube.list("Event", "batch")
        assert any(
            e["reason"] == "UnusableIntent" and e["involvedObject"]["name"] == "bad"
            for e in await_events
        ), events
        assert (await h.get("Pod", "crit"))["status"]["phase"] == "Running"
        metrics = h.controller.metrics.registry
        assert (
            metrics.get_sample_value(
                "carbonshift_unusable_intent_total", {"annotation": "carbonshift.io/deadline"}
            )
            >= 1.0
        )
    finally:
        await h.stop()


async def test_a_tight_deadline_fails_open_at_the_latest_start(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    h = await make_harness(fakekube, tmp_path)
    await h.start(controller_config(h.certs, planning={"params": {"late_fallback": False}}))
    try:
        # 90 min of work due in 110 min: no whole slot meets it, so the policy (without its
        # late fallback) leaves it unscheduled; the latest start is 00:20.
        notes = {"carbonshift.io/deadline": "110m", "carbonshift.io/expected-runtime": "90m"}
        await h.create(fresh(pod("tight", created=None, annotations=notes)))
        await h.step(minutes=10)
        held = await h.get("Pod", "tight")
        assert "schedulingGates" in held["spec"]
        assert (
            held["metadata"]["annotations"]["carbonshift.io/planned-start"]
            == "2023-06-01T00:20:00Z"
        )
        await h.step(minutes=10)
        got = await h.get("Pod", "tight")
        assert "schedulingGates" not in got["spec"]
        assert (
            got["metadata"]["annotations"]["carbonshift.io/released-at"] == "2023-06-01T00:20:00Z"
        )
        assert (
            h.controller.metrics.registry.get_sample_value("carbonshift_failed_open_total") == 1.0
        )
    finally:
        await h.stop()


@pytest.mark.fakekube_config(start=START, nodes=2, cpu="4")
async def test_pinning_writes_node_affinity_in_the_release_patch(
    fakekube: FakeKube, tmp_path: Path
) -> None:
    h = await make_harness(fakekube, tmp_path)
    await h.start(controller_config(h.certs, pin_nodes=True))
    try:
        await h.create(fresh(pod("busy", created=None, managed=None, cpu="3")))
        await h.step()
        busy_node = (await h.get("Pod", "busy"))["spec"]["nodeName"]
        notes = {"carbonshift.io/deadline": "1h", "carbonshift.io/expected-runtime": "1h"}
        await h.create(fresh(pod("pinned", created=None, cpu="2", annotations=notes)))
        await h.step()
        got = await h.get("Pod", "pinned")
        terms = got["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        want_node = "node-1" if busy_node == "node-0" else "node-0"
        assert terms == [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [want_node]}]}
        ]
        assert got["spec"]["nodeName"] == want_node
        assert "schedulingGates" not in got["spec"]
    finally:
        await h.stop()


@pytest.mark.parametrize("kind", ["Pod", "Job"], ids=["pod-gate", "job-suspend"])
@pytest.mark.fakekube_config(start=START, nodes=3, cpu="4")
async def test_pinning_to_several_nodes_writes_one_term_per_node(
    fakekube: FakeKube, tmp_path: Path, kind: str
) -> None:
    # issue 14: one matchFields requirement with two values is refused by a real server
    # (422, one value per field selector), so such releases went out unpinned or not at all
    h = await make_harness(fakekube, tmp_path)
    await h.start(controller_config(h.certs, pin_nodes=True))
    try:
        await h.create(fresh(pod("busy", created=None, managed=None, cpu="3")))
        await h.step()
        busy_node = (await h.get("Pod", "busy"))["spec"]["nodeName"]
        notes = {"carbonshift.io/deadline": "1h", "carbonshift.io/expected-runtime": "1h"}
        if kind == "Pod":
            await h.create(fresh(pod("pinned", created=None, cpu="2", annotations=notes)))
        else:
            await h.create(fresh(job("pinned", created=None, cpu="2", annotations=notes)))
        await h.step()
        got = await h.get(kind, "pinned")
        spec = got["spec"] if kind == "Pod" else got["spec"]["template"]["spec"]
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        want_nodes = sorted({"node-0", "node-1", "node-2"} - {busy_node})
        assert terms == [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]}
            for n in want_nodes
        ]
        if kind == "Pod":
            assert "schedulingGates" not in got["spec"]
            assert got["spec"]["nodeName"] in want_nodes
        else:
            assert got["spec"]["suspend"] is False
    finally:
        await h.stop()
