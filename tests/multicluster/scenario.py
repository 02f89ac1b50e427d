"""A day of mixed workloads on a fake hub and three spokes, and the same day simulated.

:func:`make_specs` draws Caspian's family (ALGORITHMS.md): arrivals on whole hours, r ~
U{1..4} cores, l ~ U{1..4} h, deadline = arrival + ceil(beta l), beta ~ U(2, 4); kinds
cycle through hub Job, Kueue-queued Job and AppWrapper. :func:`run_fleet` drives the hub
controller through the day (optionally with a spoke outage, hub faults and a controller
restart) and reads back where and when each workload ran; :func:`simulate` runs the same
jobs through the simulator with the same policy, forecast and clusters.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from carbonshift.carbon.embedded import load_series
from carbonshift.carbon.signal import integral_g_h_per_kwh
from carbonshift.k8s.multicluster import HubConfig
from carbonshift.k8s.multicluster.workloads import PLANNED_CLUSTER, PLANNED_START
from carbonshift.planning.registry import run_policy
from carbonshift.sim.engine import SimCluster, SimConfig, run_simulation
from carbonshift.sim.run import simulate_file
from carbonshift.units import parse_utc
from carbonshift.workloads.model import Workload, WorkloadJob
from fakekube import Fault
from tests.multicluster.harness import KUEUE, Fleet, appwrapper, fleet, hub_job

Obj = dict[str, Any]
KindName = Literal["Job", "Kueue", "AppWrapper"]
SPOKES3: dict[str, tuple[str, float]] = {
    "ca-on": ("CA-ON", 10.0),
    "de": ("DE", 10.0),
    "jp-tk": ("JP-TK", 10.0),
}
PUE, EMBODIED = 1.2, 1.0  # as in harness.carbon_cluster
NODES, CPU = 1, "16"  # one node per spoke: the plan pools capacity per cluster (no bin packing)
AW_API = "workload.codeflare.dev/v1beta1"


@dataclass(frozen=True)
class Spec:
    name: str
    kind: KindName
    submit_h: int
    cpu: int
    runtime_h: int
    deadline_h: int  # hours after submission


def make_specs(n: int, seed: int, *, arrival_hours: int = 12) -> list[Spec]:
    rng = random.Random(seed)
    kinds: tuple[KindName, ...] = ("Job", "Kueue", "AppWrapper")
    specs = []
    for i in range(n):
        runtime = rng.randint(1, 4)
        specs.append(
            Spec(
                name=f"w{i:03d}",
                kind=kinds[i % 3],
                submit_h=rng.randrange(arrival_hours),
                cpu=rng.randint(1, 4),
                runtime_h=runtime,
                deadline_h=math.ceil(rng.uniform(2, 4) * runtime),
            )
        )
    return specs


def manifest(spec: Spec) -> Obj:
    if spec.kind == "AppWrapper":
        return appwrapper(
            spec.name, cpu=spec.cpu, runtime_h=spec.runtime_h, deadline_h=spec.deadline_h
        )
    return hub_job(
        spec.name,
        cpu=spec.cpu,
        runtime_h=spec.runtime_h,
        deadline_h=spec.deadline_h,
        queue="batch" if spec.kind == "Kueue" else "",
    )


@dataclass
class Ran:
    cluster: str
    start: datetime
    end: datetime
    planned_cluster: str
    planned_start: datetime


@dataclass
class FleetResult:
    ran: dict[str, Ran]
    first_plan: dict[str, tuple[str, datetime]]
    creates: dict[str, int]
    releases: dict[str, int]
    leftovers: int
    unreachable_seen: bool = False
    events: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class Disturbance:
    outage: tuple[str, int, int] | None = None  # spoke, from hour, to hour
    hub_faults: bool = False
    restart_at_h: int | None = None


async def _read(f: Fleet, spec: Spec) -> tuple[Obj, Ran | None]:
    if spec.kind == "AppWrapper":
        aw = await f.get(f.hub, "AppWrapper", spec.name, "batch", AW_API)
        status, notes = aw.get("status") or {}, aw["metadata"].get("annotations") or {}
        if status.get("state") != "Completed":
            return aw, None
        return aw, Ran(
            status["targetClusterName"],
            parse_utc(status["startTime"]),
            parse_utc(status["completionTime"]),
            notes[PLANNED_CLUSTER],
            parse_utc(notes[PLANNED_START]),
        )
    job = await f.get(f.hub, "Job", spec.name, "batch", "batch/v1")
    holder = job
    if spec.kind == "Kueue":
        try:
            holder = await f.get(f.hub, "Workload", f"job-{spec.name}", "batch", KUEUE)
        except Exception:  # not created yet
            return job, None
    status, notes = job.get("status") or {}, holder["metadata"].get("annotations") or {}
    if not status.get("completionTime"):
        return holder, None
    cluster = (
        (holder.get("status") or {}).get("clusterName")
        if spec.kind == "Kueue"
        else notes.get("carbonshift.io/placed-cluster")
    )
    return holder, Ran(
        str(cluster),
        parse_utc(status["startTime"]),
        parse_utc(status["completionTime"]),
        notes[PLANNED_CLUSTER],
        parse_utc(notes[PLANNED_START]),
    )


async def run_fleet(
    specs: list[Spec],
    start: datetime,
    config: HubConfig,
    *,
    hours: int = 40,
    disturbance: Disturbance = Disturbance(),
) -> FleetResult:
    async with fleet(start, spokes=SPOKES3, nodes=NODES, cpu=CPU, config=config) as f:
        controller = await f.start_controller()
        events: list[Any] = []
        first_plan: dict[str, tuple[str, datetime]] = {}
        ran: dict[str, Ran] = {}
        unreachable = False
        for hour in range(hours):
            if disturbance.outage and hour == disturbance.outage[1]:
                f.spokes[disturbance.outage[0]].add_fault(Fault(code=503))
            if disturbance.outage and hour == disturbance.outage[2]:
                f.spokes[disturbance.outage[0]].clear_faults()
            if disturbance.hub_faults and hour == 2:
                f.hub.add_fault(Fault(code=409, verb="patch", probability=0.1))
                f.hub.add_fault(Fault(code=500, verb="update", probability=0.1))
            if disturbance.restart_at_h is not None and hour == disturbance.restart_at_h:
                events += controller.events
                await f.stop_controller()
                controller = await f.start_controller()
            if hour > 0:
                for kube in f.kubes:  # the clocks move; the hub plans at the next step
                    await kube.advance_async(hours=1)
            for spec in specs:
                if spec.submit_h == hour:
                    await f.create(f.hub, manifest(spec))
            await f.step(0)  # arrivals seen, Kueue reserves quota, the hub plans and acts
            await f.step(0)  # what the first pass started (Kueue admission, MCAD dispatch)
            if disturbance.outage:
                cc = await f.get(
                    f.hub, "CarbonCluster", disturbance.outage[0], "", "carbonshift.io/v1alpha1"
                )
                unreachable = unreachable or cc["status"]["health"] == "Unreachable"
            for spec in specs:
                if spec.name in ran or spec.submit_h > hour:
                    continue
                holder, done = await _read(f, spec)
                notes = holder["metadata"].get("annotations") or {}
                if spec.name not in first_plan and PLANNED_CLUSTER in notes:
                    first_plan[spec.name] = (
                        notes[PLANNED_CLUSTER],
                        parse_utc(notes[PLANNED_START]),
                    )
                if done is not None:
                    ran[spec.name] = done
            if len(ran) == len(specs):
                break
        events += controller.events
        assert f.kueue is not None
        assert f.mcad is not None
        creates: dict[str, int] = {}
        for e in events:
            if e.what == "created-in-spoke":
                creates[e.key.rsplit("/", 1)[1]] = creates.get(e.key.rsplit("/", 1)[1], 0) + 1
        for key, n in [*f.kueue.created.items(), *f.mcad.created.items()]:
            creates[key.rsplit("/", 1)[1]] = creates.get(key.rsplit("/", 1)[1], 0) + n
        leftovers = 0
        for spoke in f.spokes.values():
            leftovers += len(await f.list(spoke, "Job", None, "batch/v1"))
        releases: dict[str, int] = {}
        for e in events:
            if e.what == "released":
                releases[e.key] = releases.get(e.key, 0) + 1
        return FleetResult(ran, first_plan, creates, releases, leftovers, unreachable, events)


def carbon_g(spec: Spec, cluster: str, start: datetime, end: datetime) -> float:
    zone, watts = SPOKES3[cluster]
    hours = (end - start).total_seconds() / 3600
    integral = integral_g_h_per_kwh(load_series(zone), start, end)
    return spec.cpu * (watts / 1000 * PUE * integral + EMBODIED * hours)


def simulate(
    specs: list[Spec], start: datetime, policy: str, forecast_name: str = "oracle"
) -> dict[str, tuple[str, float, float]]:
    """The same jobs in the simulator: job -> (cluster, start h, end h)."""
    from carbonshift.carbon.forecast import make_forecaster

    clusters = [
        SimCluster(
            name=name,
            capacity={"cpu": float(NODES * int(CPU))},
            watts_per_unit={"cpu": watts},
            actual=load_series(zone),
            pue=PUE,
            embodied_g_per_unit_hour={"cpu": EMBODIED},
            zone=zone,
        )
        for name, (zone, watts) in SPOKES3.items()
    ]
    workload = Workload.from_jobs(
        [
            WorkloadJob(
                id=s.name,
                submit_h=float(s.submit_h),
                runtime_h=float(s.runtime_h),
                demand={"cpu": float(s.cpu)},
                deadline_h=float(s.submit_h + s.deadline_h),
            )
            for s in specs
        ],
        resources=["cpu"],
        start=start,
    )
    forecaster = make_forecaster(forecast_name, {})

    def forecast(ci: int, issued_at: datetime, horizon: int) -> Any:
        return forecaster.forecast(clusters[ci].actual, issued_at, horizon, 60)

    def plan(instance: Any, context: Any) -> Any:
        return run_policy(policy, instance, {}, context)

    result = run_simulation(SimConfig(start=start, hours=24), clusters, workload, plan, forecast)
    out = {}
    for rec in result.jobs:
        assert rec.cluster is not None
        assert rec.start_h is not None
        assert rec.end_h is not None
        out[rec.job] = (rec.cluster, rec.start_h, rec.end_h)
    return out


def write_scenario(specs: list[Spec], start: datetime, policy: str, folder: Path) -> Path:
    """The same jobs and spokes as a simulator scenario file (CONTRACTS.md section 3)."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = ["id,arrival_time,length,cpus,deadline"]
    rows += [
        f"{s.name},{s.submit_h},{s.runtime_h},{s.cpu},{s.submit_h + s.deadline_h}" for s in specs
    ]
    (folder / "jobs.csv").write_text("\n".join(rows) + "\n")
    clusters = "".join(
        f"""
[[clusters]]
name = "{name}"
zone = "{zone}"
capacity = {{ cpu = {NODES * int(CPU)} }}
watts_per_unit = {{ cpu = {watts} }}
pue = {PUE}
embodied_g_per_unit_hour = {{ cpu = {EMBODIED} }}
"""
        for name, (zone, watts) in SPOKES3.items()
    )
    text = f"""[simulation]
start = "{start:%Y-%m-%dT%H:%M:%SZ}"
hours = 24
policy = "{policy}"
baseline = "asap"
forecast = "oracle"
{clusters}
[workload]
trace_csv = "jobs.csv"
time_unit = "hours"
resource = "cpu"
"""
    path = folder / "scenario.toml"
    path.write_text(text)
    return path


def simulate_scenario(
    specs: list[Spec], start: datetime, policy: str, folder: Path
) -> dict[str, Any]:
    """Run the scenario file through ``carbonshift simulate``'s path; its summary.json."""
    path = write_scenario(specs, start, policy, folder)
    return simulate_file(path, folder / "out", report=False)


def fleet_grams(specs: list[Spec], result: FleetResult) -> float:
    by_name = {s.name: s for s in specs}
    return sum(carbon_g(by_name[n], r.cluster, r.start, r.end) for n, r in result.ran.items())


def sim_grams(
    specs: list[Spec], start: datetime, sim: dict[str, tuple[str, float, float]]
) -> float:
    by_name = {s.name: s for s in specs}
    return sum(
        carbon_g(by_name[n], c, start + timedelta(hours=a), start + timedelta(hours=b))
        for n, (c, a, b) in sim.items()
    )
