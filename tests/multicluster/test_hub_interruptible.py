"""Interruptible work of every kind is planned again while it runs: suspended when the plan
moves it to later (Job: spoke copy deleted; Kueue: our check back to Retry, which evicts it;
AppWrapper: our gate put back), resumed in any spoke with its restart overhead counted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from carbonshift.k8s.multicluster import HubConfig
from carbonshift.units import parse_utc
from tests.multicluster.harness import HOLD_OFF, KUEUE, Fleet, appwrapper, fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)
# persistence forecasts change every hour, so plans of running work change too
CONFIG = HubConfig.model_validate(
    {"planning": {"policy": "fluidos", "forecast": "persistence", **HOLD_OFF}}
)
OVERHEAD = timedelta(minutes=30)
AW = "workload.codeflare.dev/v1beta1"
COPIED_AW = "AppWrapper-copied"
"""An AppWrapper labelled for the hub under the real MCAD CRD: suspended by deleting its copy."""


def manifest(kind: str, name: str, runtime_h: float) -> dict[str, Any]:
    args: dict[str, Any] = {
        "cpu": 2,
        "runtime_h": runtime_h,
        "deadline_h": 30,
        "interruptible": True,
        "overhead": "30m",
    }
    if kind.startswith("AppWrapper"):
        return appwrapper(name, copied=kind == COPIED_AW, **args)
    return hub_job(name, queue="batch" if kind == "Workload" else "", **args)


async def finished_at(f: Fleet, kind: str, name: str) -> datetime | None:
    if kind.startswith("AppWrapper"):
        aw = await f.get(f.hub, "AppWrapper", name, "batch", AW)
        status = aw.get("status") or {}
        # tardieu/mcad's status has no completionTime: the transition to Completed says when
        ended = [t["time"] for t in status.get("transitions") or [] if t["state"] == "Completed"]
        done = status.get("state") == "Completed" and (status.get("completionTime") or ended[-1])
    else:
        job = await f.get(f.hub, "Job", name, "batch", "batch/v1")
        status = job.get("status") or {}
        done = status.get("succeeded") == 1 and status.get("completionTime")
    return parse_utc(str(done)) if done else None


@pytest.mark.parametrize("kind", ["Job", "Workload", "AppWrapper", COPIED_AW])
async def test_suspended_work_resumes_and_runs_its_runtime_plus_one_overhead_per_restart(
    kind: str,
) -> None:
    spokes = {"de": ("DE", 10.0), "jp": ("JP-TK", 10.0)}
    runtimes_h = {"i0": 4.0, "i1": 5.0, "i2": 6.0}
    async with fleet(START, config=CONFIG, spokes=spokes, real_mcad_crd=kind == COPIED_AW) as f:
        for name, runtime_h in runtimes_h.items():
            await f.create(f.hub, manifest(kind, name, runtime_h))
        controller = await f.start_controller()
        done: dict[str, datetime | None] = {}
        for _ in range(2 * 30):
            await f.step(30)
            done = {n: await finished_at(f, kind, n) for n in runtimes_h}
            if all(done.values()):
                break
        assert all(done.values()), done
        suspended = [e for e in controller.events if e.what == "suspended"]
        assert suspended, "no running work was suspended: the scenario no longer tests this"
        for name, runtime_h in runtimes_h.items():
            key = f"{kind.split('-')[0]}/batch/{'job-' if kind == 'Workload' else ''}{name}"
            mine = [e for e in controller.events if e.key == key]
            starts = [e.at for e in mine if e.what == "released"]
            stops = [e.at for e in mine if e.what == "suspended"]
            end = done[name]
            assert end is not None
            assert len(starts) == len(stops) + 1, [(e.at, e.what) for e in mine]
            ran = sum((b - a for a, b in zip(starts, [*stops, end], strict=True)), timedelta())
            want_ran = timedelta(hours=runtime_h) + OVERHEAD * len(stops)
            assert ran == want_ran, (name, [(e.at, e.what, e.cluster) for e in mine])
            assert end <= START + timedelta(hours=30)
        if kind == "Workload":  # Kueue counted the admitted time before each eviction
            evicted = suspended[0].key.rsplit("/", 1)[1]
            wl = await f.get(f.hub, "Workload", evicted, "batch", KUEUE)
            assert wl["status"].get("accumulatedPastExecutionTimeSeconds", 0) > 0, wl["status"]
