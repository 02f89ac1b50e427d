"""MCAD AppWrappers under tardieu/mcad's own CRD (../shared/k8s-crds/mcad, no dispatching
gate), labelled ``carbonshift.io/hub: "true"``: the hub holds them on the hub (which runs no
MCAD) and, at the planned start, creates a copy in the planned spoke, whose MCAD dispatches
it; the copy's status comes back to the hub object and the copy goes with it (fast tier,
every cluster under the shipped RBAC)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from carbonshift.k8s.keys import (
    HUB_LABEL,
    HUB_UID_LABEL,
    LOST_FROM,
    MANAGED_LABEL,
    PLACED_CLUSTER,
    PLANNED_CLUSTER,
    PLANNED_START,
    RUNTIME,
    SPOKE_STATUS,
    STATE,
    STATE_LABEL,
)
from carbonshift.k8s.multicluster import HubConfig
from carbonshift.units import parse_utc
from fakekube import Fault
from fakekube.plugins.appwrapper import APPWRAPPER_LABEL
from tests.multicluster.harness import HOLD_OFF, Fleet, appwrapper, fleet

START = datetime(2023, 6, 1, tzinfo=UTC)
FLUIDOS = HubConfig.model_validate(
    {"planning": {"policy": "fluidos", "forecast": "oracle", **HOLD_OFF}}
)
AW = "workload.codeflare.dev/v1beta1"


async def copies(f: Fleet) -> dict[str, list[dict]]:  # type: ignore[type-arg]
    """The AppWrappers in each spoke."""
    return {name: await f.list(kube, "AppWrapper", "batch", AW) for name, kube in f.spokes.items()}


async def wrapped(f: Fleet) -> dict[str, list[str]]:
    """The names of the Jobs MCAD created in each spoke."""
    return {
        name: [
            j["metadata"]["name"]
            for j in await f.list(kube, "Job", "batch", "batch/v1")
            if APPWRAPPER_LABEL in (j["metadata"].get("labels") or {})
        ]
        for name, kube in f.spokes.items()
    }


async def test_a_labelled_appwrapper_is_held_on_the_hub_then_copied_to_the_planned_spoke() -> None:
    async with fleet(START, config=FLUIDOS, real_mcad_crd=True) as f:
        await f.create(f.hub, appwrapper("sim", cpu=4, runtime_h=2, deadline_h=16, copied=True))
        controller = await f.start_controller()
        await f.step(0)
        held = await f.get(f.hub, "AppWrapper", "sim", "batch", AW)
        notes = held["metadata"]["annotations"]
        want_cluster, want_start = notes[PLANNED_CLUSTER], parse_utc(notes[PLANNED_START])
        assert want_start > START  # the scenario holds it: otherwise it tests no hold
        assert held["metadata"]["labels"][STATE_LABEL] == "held"
        assert notes.get(STATE) != "not-held"
        first_copy: tuple[datetime, str, dict] | None = None  # type: ignore[type-arg]
        for _ in range(4 * 16):
            await f.step(15)
            if first_copy is None:
                for name, found in (await copies(f)).items():
                    if found:
                        assert len(found) == 1
                        first_copy = (f.now(), name, found[0])
            hub = await f.get(f.hub, "AppWrapper", "sim", "batch", AW)
            if (hub.get("status") or {}).get("state") == "Completed":
                break
        assert first_copy is not None, "the AppWrapper never reached a spoke"
        copied_at, ran_in, copy_ = first_copy
        assert (ran_in, copied_at) == (want_cluster, want_start)
        labels = copy_["metadata"]["labels"]
        assert labels[HUB_UID_LABEL] == held["metadata"]["uid"]
        assert labels[MANAGED_LABEL] == "false"
        assert HUB_LABEL not in labels
        assert copy_["metadata"]["annotations"][PLACED_CLUSTER] == want_cluster
        template = copy_["spec"]["resources"]["GenericItems"][0]["generictemplate"]
        assert template["spec"]["template"]["metadata"]["annotations"][RUNTIME] == "7200s"
        # the copy's status, as the spoke's MCAD wrote it, is now the hub object's
        assert hub["status"]["state"] == "Completed"
        assert hub["status"]["restarts"] == 0
        assert parse_utc(hub["status"]["dispatchTimestamp"]) == want_start
        assert hub["metadata"]["annotations"][PLACED_CLUSTER] == want_cluster
        assert json.loads(hub["metadata"]["annotations"][SPOKE_STATUS])["cluster"] == want_cluster
        assert hub["metadata"]["labels"][STATE_LABEL] == "released"
        # dispatched once, in the planned spoke only; the copy and its Job cleaned up
        assert f.spoke_mcad is not None
        assert f.spoke_mcad.dispatches == 1
        assert f.spoke_mcad.created == {"batch/sim": 1}
        assert await copies(f) == {name: [] for name in f.spokes}
        assert await wrapped(f) == {name: [] for name in f.spokes}
        whats = [e.what for e in controller.events if e.key == "AppWrapper/batch/sim"]
        assert "created-in-spoke" in whats
        assert "finished-complete" in whats


async def test_a_running_copys_status_is_mirrored_on_the_hub_appwrapper() -> None:
    async with fleet(START, config=FLUIDOS, real_mcad_crd=True) as f:
        # no slack: released at once
        await f.create(f.hub, appwrapper("now", cpu=2, runtime_h=2, deadline_h=2, copied=True))
        await f.start_controller()
        await f.step(0)
        await f.step(15)
        hub = await f.get(f.hub, "AppWrapper", "now", "batch", AW)
        placed = hub["metadata"]["annotations"][PLACED_CLUSTER]
        summary = json.loads(hub["metadata"]["annotations"][SPOKE_STATUS])
        assert summary == {"cluster": placed, "state": "Running", "step": "created", "restarts": 0}
        assert (await wrapped(f))[placed] == ["now"]


async def test_deleting_the_hub_appwrapper_deletes_its_copy_and_what_it_runs() -> None:
    async with fleet(START, config=FLUIDOS, real_mcad_crd=True) as f:
        await f.create(f.hub, appwrapper("gone", cpu=2, runtime_h=4, deadline_h=4, copied=True))
        controller = await f.start_controller()
        await f.step(0)
        await f.step(15)
        placed = [name for name, found in (await copies(f)).items() if found]
        assert len(placed) == 1, "the AppWrapper was not copied to one spoke"
        assert (await wrapped(f))[placed[0]] == ["gone"]
        await f.delete(f.hub, "AppWrapper", "gone", "batch", AW)
        await f.step(15)
        assert await copies(f) == {name: [] for name in f.spokes}
        assert await wrapped(f) == {name: [] for name in f.spokes}
        assert [e.what for e in controller.events if e.key == "AppWrapper/batch/gone"][-1] == (
            "cleaned"
        )


async def test_a_copy_in_a_spoke_that_stays_away_is_recalled_and_placed_again() -> None:
    # as a hub Job's (docs/multicluster.md): after spoke_lost_timeout_s (15 min) the hub
    # plans it again on the healthy spokes, and deletes the stale copy when the spoke is back
    async with fleet(START, config=FLUIDOS, real_mcad_crd=True) as f:
        await f.create(f.hub, appwrapper("now", cpu=2, runtime_h=3, deadline_h=3, copied=True))
        controller = await f.start_controller()
        await f.step(0)
        hub = await f.get(f.hub, "AppWrapper", "now", "batch", AW)
        lost = hub["metadata"]["annotations"][PLACED_CLUSTER]
        assert [c["metadata"]["name"] for c in (await copies(f))[lost]] == ["now"]
        f.spokes[lost].add_fault(Fault(code=503))
        await f.step(15)  # away, but not for long enough: still placed there
        hub = await f.get(f.hub, "AppWrapper", "now", "batch", AW)
        assert hub["metadata"]["annotations"][PLACED_CLUSTER] == lost
        await f.step(15)  # 30 min away: planned again elsewhere
        hub = await f.get(f.hub, "AppWrapper", "now", "batch", AW)
        notes = hub["metadata"]["annotations"]
        assert notes[LOST_FROM] == lost
        moved_to = notes[PLACED_CLUSTER]
        assert moved_to != lost
        assert [c["metadata"]["name"] for c in (await copies(f))[moved_to]] == ["now"]
        f.spokes[lost].clear_faults()  # back: its stale copy is deleted, never mirrored
        await f.step(15)
        assert (await copies(f))[lost] == []
        assert (await wrapped(f))[lost] == []
        for _ in range(4 * 4):
            await f.step(15)
            hub = await f.get(f.hub, "AppWrapper", "now", "batch", AW)
            if (hub.get("status") or {}).get("state") == "Completed":
                break
        assert hub["status"]["state"] == "Completed"
        mine = [e for e in controller.events if e.key == "AppWrapper/batch/now"]
        assert [e.cluster for e in mine if e.what == "released"] == [lost, moved_to]
        assert [e.cluster for e in mine if e.what == "recalled"] == [lost]
        assert [e.cluster for e in mine if e.what == "finished-complete"] == [moved_to]


@pytest.mark.parametrize("with_mcad", ["ca-on", "de"])
async def test_a_copy_goes_only_to_spokes_that_run_mcad(with_mcad: str) -> None:
    async with fleet(START, config=FLUIDOS, real_mcad_crd=True, mcad_spokes=(with_mcad,)) as f:
        await f.create(f.hub, appwrapper("sim", cpu=4, runtime_h=2, deadline_h=16, copied=True))
        controller = await f.start_controller()
        await f.step(0)
        hub = await f.get(f.hub, "AppWrapper", "sim", "batch", AW)
        assert hub["metadata"]["annotations"][PLANNED_CLUSTER] == with_mcad
        for _ in range(4 * 16):
            await f.step(15)
            hub = await f.get(f.hub, "AppWrapper", "sim", "batch", AW)
            if (hub.get("status") or {}).get("state") == "Completed":
                break
        assert hub["status"]["state"] == "Completed"
        released = [e.cluster for e in controller.events if e.what == "released"]
        assert released == [with_mcad]
        assert not [e for e in controller.events if e.what == "copy-refused"]
