"""The hub beside tardieu/mcad's own AppWrapper CRD (../shared/k8s-crds/mcad), which has no
``spec.dispatchingGates``: the API server drops the hold gate at creation, so the hub cannot
hold a gated AppWrapper, and it says so on the object (pointing to the hub label, which the
hub places by a copy: test_hub_appwrapper_copies.py) instead of leaving it silently to MCAD."""

from __future__ import annotations

from datetime import UTC, datetime

from carbonshift.k8s.keys import REASON, STATE, STATE_LABEL
from tests.multicluster.harness import appwrapper as make_appwrapper
from tests.multicluster.harness import fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)
AW = "workload.codeflare.dev/v1beta1"


async def test_an_appwrapper_whose_gate_the_real_crd_drops_is_noted_not_held_once() -> None:
    async with fleet(START, real_mcad_crd=True) as f:
        created = await f.create(f.hub, make_appwrapper("train"))
        assert "dispatchingGates" not in created["spec"]  # pruned by the real schema
        controller = await f.start_controller()
        await f.step(0)
        aw = await f.get(f.hub, "AppWrapper", "train", "batch", AW)
        notes = aw["metadata"]["annotations"]
        assert notes[STATE] == "not-held"
        assert "has no spec.dispatchingGates" in notes[REASON]
        assert aw["metadata"]["labels"][STATE_LABEL] == "not-held"
        version = aw["metadata"]["resourceVersion"]
        for _ in range(3):  # noted once: later passes write nothing more
            await f.step(15)
        again = await f.get(f.hub, "AppWrapper", "train", "batch", AW)
        assert again["metadata"]["resourceVersion"] == version
        assert [e.what for e in controller.events if e.key == "batch/train"] == ["not-held"]


async def test_hub_jobs_still_run_beside_the_real_mcad_crd() -> None:
    async with fleet(START, real_mcad_crd=True) as f:
        await f.create(f.hub, hub_job("plain", cpu=2, runtime_h=1, deadline_h=2))
        await f.start_controller()
        for _ in range(4 * 3):
            await f.step(15)
        done = await f.get(f.hub, "Job", "plain", "batch", "batch/v1")
        assert done["status"]["succeeded"] == 1
