"""Interruptible hub Jobs are planned again while they run: suspended when the plan moves
them to later, resumed (in any spoke) with their restart overhead counted (fast tier)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from carbonshift.k8s.multicluster import HubConfig
from carbonshift.units import parse_utc
from tests.multicluster.harness import fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)
# persistence forecasts change every hour, so plans of running work change too
CONFIG = HubConfig.model_validate({"planning": {"policy": "fluidos", "forecast": "persistence"}})
OVERHEAD = timedelta(minutes=30)


async def test_suspended_work_resumes_and_runs_its_runtime_plus_one_overhead_per_restart() -> None:
    spokes = {"de": ("DE", 10.0), "jp": ("JP-TK", 10.0)}
    runtimes_h = {"i0": 4.0, "i1": 5.0, "i2": 6.0}
    async with fleet(START, config=CONFIG, spokes=spokes) as f:
        for name, runtime_h in runtimes_h.items():
            await f.create(
                f.hub,
                hub_job(
                    name,
                    cpu=2,
                    runtime_h=runtime_h,
                    deadline_h=30,
                    interruptible=True,
                    overhead="30m",
                ),
            )
        controller = await f.start_controller()
        jobs: dict[str, dict] = {}  # type: ignore[type-arg]
        for _ in range(2 * 30):
            await f.step(30)
            jobs = {n: await f.get(f.hub, "Job", n, "batch", "batch/v1") for n in runtimes_h}
            if all(j.get("status", {}).get("succeeded") == 1 for j in jobs.values()):
                break
        suspended = [e for e in controller.events if e.what == "suspended"]
        assert suspended, "no running work was suspended: the scenario no longer tests this"
        for name, runtime_h in runtimes_h.items():
            key = f"Job/batch/{name}"
            mine = [e for e in controller.events if e.key == key]
            starts = [e.at for e in mine if e.what == "released"]
            stops = [e.at for e in mine if e.what == "suspended"]
            done = parse_utc(jobs[name]["status"]["completionTime"])
            assert len(starts) == len(stops) + 1, [(e.at, e.what) for e in mine]
            ran = sum((b - a for a, b in zip(starts, [*stops, done], strict=True)), timedelta())
            want_ran = timedelta(hours=runtime_h) + OVERHEAD * len(stops)
            assert ran == want_ran, (name, [(e.at, e.what, e.cluster) for e in mine])
            assert done <= START + timedelta(hours=30)
