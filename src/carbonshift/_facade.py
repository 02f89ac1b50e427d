"""The Python API behind ``carbonshift.simulate``, ``carbonshift.plan`` and
``carbonshift.load_carbon`` (imported on first use: ``import carbonshift`` stays light).

Each function is a thin front over the code paths the CLI uses: scenarios go through
``sim.scenario`` and ``sim.run.build_experiment``, plans through ``planning.registry``,
carbon through ``carbon.embedded`` / ``carbon.readers`` and ``carbon.signal.resample``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carbonshift.domain import Instance, Plan, Scores, Violation, check_feasibility, score_plan
from carbonshift.errors import InputError
from carbonshift.planning.types import PlanStatus, PolicyResult

if TYPE_CHECKING:
    import pandas as pd

    from carbonshift.sim.results import SimulationResult
    from carbonshift.sim.scenario import Scenario

__all__ = ["PlanResult", "load_carbon", "plan", "simulate"]

ScenarioSource = Mapping[str, Any] | str | os.PathLike[str]
InstanceSource = Instance | Mapping[str, Any] | str | os.PathLike[str]


def _scenario(source: ScenarioSource) -> Scenario:
    from carbonshift.sim.scenario import load_scenario, parse_scenario

    if isinstance(source, Mapping):
        return parse_scenario(source, source="scenario dict")
    if isinstance(source, os.PathLike):
        return load_scenario(Path(source))
    if not isinstance(source, str):
        raise InputError(
            f"scenario {source!r} is a {type(source).__name__}; give a dict, a path or TOML text"
        )
    text = source.strip()
    if text.endswith(".toml") or ("\n" not in text and Path(text).is_file()):
        return load_scenario(Path(text))
    try:
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(
            f"scenario text is not valid TOML ({exc}) and names no file; give a path to an "
            "existing .toml file, TOML text or a dict"
        ) from exc
    return parse_scenario(data, source="scenario text")


def simulate(
    scenario: ScenarioSource,
    *,
    policy: str | None = None,
    params: Mapping[str, Any] | None = None,
    seed: int | None = None,
    strict: bool = False,
) -> SimulationResult:
    """Simulate a scenario's policy and its carbon-agnostic baseline on the same input.

    ``scenario`` is a dict (the TOML tables), a path, or TOML text: a string that names an
    existing file or ends in ``.toml`` is a path. ``policy`` and ``params`` replace the
    scenario's policy and ``[policy_params]`` (a registered name or ``module:function``),
    ``seed`` its seed. Nothing is written to disk; call ``.report(dir)`` for the files.

    Example::

        import carbonshift as cs
        r = cs.simulate("examples/caspian.toml")
        print(r.summary["carbon_saving_pct"], r.jobs_df().shape)
        r.report("out/caspian")          # report.html, plots/, summary.json, jobs.csv
    """
    from carbonshift.sim.experiment import execute
    from carbonshift.sim.results import SimulationResult
    from carbonshift.sim.run import build_experiment, with_policy

    loaded = _scenario(scenario)
    if seed is not None:
        simulation = loaded.simulation.model_copy(update={"seed": seed})
        loaded = loaded.model_copy(update={"simulation": simulation})
    experiment = with_policy(build_experiment(loaded, strict=strict), policy, params)
    return SimulationResult(experiment, execute(experiment))


@dataclass(frozen=True, slots=True)
class PlanResult:
    """A policy's plan for an instance, with its scores and feasibility check.

    ``to_dict()`` / ``to_json()`` give the docs/formats.md plan format (with ``scores``).
    """

    instance: Instance
    result: PolicyResult
    scores: Scores
    violations: tuple[Violation, ...]

    @property
    def plan(self) -> Plan:
        """The plan: assignments and unscheduled job ids."""
        return self.result.plan

    @property
    def status(self) -> PlanStatus:
        """How far the plan can be trusted (optimal, feasible, time_limit, ...)."""
        return self.result.status

    @property
    def feasible(self) -> bool:
        """Whether the plan respects capacity, release, horizon and allowed clusters."""
        return not self.violations

    @property
    def assignments(self) -> dict[str, tuple[str, int]]:
        """Job id -> (cluster, start slot) for every assigned job."""
        return {a.job: (a.cluster, a.start_slot) for a in self.plan.assignments}

    @property
    def unscheduled(self) -> list[str]:
        """The ids of the jobs the policy left out."""
        return list(self.plan.unscheduled)

    @property
    def notes(self) -> dict[str, str]:
        """Per job, why the policy did what it did (what ``--explain`` shows)."""
        return {str(k): v for k, v in self.result.notes.items()}

    def to_dict(self) -> dict[str, Any]:
        """The plan as docs/formats.md's JSON object, with its ``scores`` and, for the policies
        that certify one, its ``bound`` (``lower_bound_g``, ``gap``): what the CLI writes."""
        from carbonshift.formats import plan_to_dict

        return plan_to_dict(self.plan, self.scores, self.result.bound)

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        """The plan JSON as text (the same text ``carbonshift plan`` writes); also written to
        ``path`` when given."""
        from carbonshift.formats import plan_json, write_plan

        if path is not None:
            write_plan(self.plan, Path(path), self.scores, self.result.bound)
        return plan_json(self.plan, self.scores, self.result.bound)


def _instance(source: InstanceSource) -> Instance:
    from carbonshift.formats import instance_from_dict, read_instance

    if isinstance(source, Instance):
        return source
    if isinstance(source, Mapping):
        return instance_from_dict(dict(source), what="instance")
    if isinstance(source, str | os.PathLike):
        return read_instance(Path(source))
    raise InputError(
        f"instance {source!r} is a {type(source).__name__}; give an Instance, a dict or a path"
    )


def plan(instance: InstanceSource, policy: str = "carbonshift", **params: Any) -> PlanResult:
    """Plan ``instance`` (an Instance, a docs/formats.md dict, or a JSON path) with ``policy``.

    ``policy`` is a registered name (``carbonshift plan --list-policies``) or
    ``package.module:function``; ``params`` are its parameters.

    Example::

        import carbonshift as cs
        p = cs.plan("examples/instance.json", policy="srr", samples=50)
        print(p.status, p.scores.carbon_g, p.assignments)
        p.to_json("plan.json")
    """
    from carbonshift.planning.registry import run_policy

    problem = _instance(instance)
    result = run_policy(policy, problem, params)
    return PlanResult(
        problem,
        result,
        score_plan(problem, result.plan),
        tuple(check_feasibility(problem, result.plan)),
    )


def load_carbon(
    zone: str,
    start: datetime | str,
    end: datetime | str,
    *,
    kind: str = "direct",
    slot_minutes: int | None = None,
    csv: str | os.PathLike[str] | None = None,
    allow_replay: bool = False,
) -> pd.Series:
    """Carbon intensity of ``zone`` over ``[start, end)`` as a pandas Series (g/kWh).

    The index holds the UTC start of each step. Values come from the embedded data, or from
    ``csv`` (an Electricity Maps hourly export or ``timestamp,value``); ``kind`` is
    ``direct`` or ``lca``. ``slot_minutes`` averages them (time-weighted) into slots aligned
    to ``start``; by default the data's own step. Times are UTC (``"2023-11-14T00:00Z"``).

    Example::

        import carbonshift as cs
        s = cs.load_carbon("DE", "2023-11-14", "2023-11-15")
        print(s.idxmin(), s.min())
    """
    import pandas as pd

    from carbonshift.carbon.embedded import load_series
    from carbonshift.carbon.readers import read_carbon_csv
    from carbonshift.carbon.signal import resample
    from carbonshift.units import parse_utc

    first = parse_utc(start) if isinstance(start, str) else start
    last = parse_utc(end) if isinstance(end, str) else end
    series = (
        read_carbon_csv(Path(csv), kind, zone=zone) if csv is not None else load_series(zone, kind)
    )
    step = slot_minutes if slot_minutes is not None else series.step_minutes
    window = resample(series, first, last, slot_minutes=step, allow_replay=allow_replay)
    index = pd.DatetimeIndex(window.slot_starts(), name="time_utc")
    return pd.Series(
        window.values_g_per_kwh, index=index, name=f"{window.zone} {window.kind.value} g/kWh"
    )
