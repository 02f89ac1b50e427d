"""The policies by name: an explicit dict of name -> (function, parameters with defaults, doc).

:func:`run_policy` is the one entry point the CLI, the simulator and the controller use:
it validates parameters (unknown key or bad value: :class:`~carbonshift.errors.InputError`
with a hint) and calls the policy.

:func:`policy_spec` is the one lookup. A name is, in this order: a built-in or a policy
registered with :func:`register_policy` (in :data:`POLICIES`); an entry point of the group
``carbonshift.policies`` (an installed package's own policy, loaded and registered on first
use); or ``package.module:function``, imported on use, unless the caller forbids imports
(``import_modules=False``: the HTTP server never imports a module named in a request).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import inspect
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from carbonshift.domain import Instance, Plan
from carbonshift.errors import InputError
from carbonshift.planning.backends.highs import LpMethod
from carbonshift.planning.critical import critical_first
from carbonshift.planning.hold import HoldRule
from carbonshift.planning.lookahead import PHANTOM_SHAPES, planned_with_reserve
from carbonshift.planning.output_check import check_policy_output
from carbonshift.planning.policies.asap import asap
from carbonshift.planning.policies.carbonshift import (
    BOUND_METHODS,
    CORE_LP_METHODS,
    OBJECTIVES,
    carbonshift,
)
from carbonshift.planning.policies.caspian import caspian
from carbonshift.planning.policies.cjps import EXACT_OBJECTIVES, exact, rr, srr
from carbonshift.planning.policies.fluidos import fluidos
from carbonshift.planning.policies.threshold import threshold
from carbonshift.planning.policies.window import window
from carbonshift.planning.types import PlanContext, PlanStatus, PolicyResult

__all__ = [
    "ENTRY_POINT_GROUP",
    "POLICIES",
    "OnlineDefaults",
    "ParamSpec",
    "Params",
    "PolicySpec",
    "available_policies",
    "load_policy_module",
    "online_hold",
    "parse_params",
    "policy_spec",
    "register_policy",
    "round_params",
    "run_policy",
]

#: The entry-point group an installed package declares its policies in (name = "mod:fn").
ENTRY_POINT_GROUP = "carbonshift.policies"

_LOG = logging.getLogger("carbonshift.planning")

ParamValue = int | float | bool | str


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """One policy parameter: its type, default, allowed range or choices, and meaning."""

    name: str
    kind: type[int] | type[float] | type[bool] | type[str]
    default: ParamValue
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()

    def parse(self, policy: str, raw: object) -> ParamValue:
        """Turn a CLI string or a typed value (TOML, JSON) into the parameter's type."""
        where = f"parameter {self.name}={raw!r} of policy {policy!r}"
        value: ParamValue
        if self.kind is bool:
            if isinstance(raw, bool):
                value = raw
            elif isinstance(raw, str) and raw.lower() in ("true", "1", "yes", "false", "0", "no"):
                value = raw.lower() in ("true", "1", "yes")
            else:
                raise InputError(f"{where} is not a boolean; give true or false")
        elif self.kind is int:
            try:
                if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                    raise ValueError
                value = int(raw)  # type: ignore[call-overload]
            except (TypeError, ValueError):
                raise InputError(
                    f"{where} is not a whole number; give e.g. {self.default}"
                ) from None
        elif self.kind is float:
            try:
                if isinstance(raw, bool):
                    raise ValueError
                value = float(raw)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise InputError(f"{where} is not a number; give e.g. {self.default}") from None
            if not math.isfinite(value):
                raise InputError(f"{where} is not finite; give a finite number")
        else:
            value = str(raw)
            if self.choices and value not in self.choices:
                raise InputError(f"{where} is not one of {', '.join(self.choices)}")
        if isinstance(value, int | float) and not isinstance(value, bool):
            if self.minimum is not None and value < self.minimum:
                raise InputError(f"{where} is below its minimum {self.minimum:g}")
            if self.maximum is not None and value > self.maximum:
                raise InputError(f"{where} is above its maximum {self.maximum:g}")
        return value


class Params:
    """Validated parameters with typed getters (every key is present, defaults filled)."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, ParamValue]) -> None:
        self._values = dict(values)

    def get_int(self, name: str) -> int:
        value = self._values[name]
        assert isinstance(value, int)
        return value

    def get_float(self, name: str) -> float:
        value = self._values[name]
        assert isinstance(value, int | float)
        return float(value)

    def get_bool(self, name: str) -> bool:
        value = self._values[name]
        assert isinstance(value, bool)
        return value

    def get_str(self, name: str) -> str:
        value = self._values[name]
        assert isinstance(value, str)
        return value

    def as_dict(self) -> dict[str, ParamValue]:
        return dict(self._values)


Runner = Callable[[Instance, PlanContext | None, Params], PolicyResult]


@dataclass(frozen=True, slots=True)
class OnlineDefaults:
    """How a policy plans in the simulator's rounds when the scenario does not say.

    ``demand_forecast`` (a method of :data:`carbonshift.workloads.DEMAND_FORECASTS`) fills
    the rounds' ``future_demand`` when the scenario names no demand forecast; ``params``
    are the defaults that go with that forecast, applied under the scenario's own
    parameters whenever the rounds carry it (named or not); ``round_params``, defaults of
    every round whatever its forecast (under ``params`` and the scenario's). A static plan
    (:func:`run_policy`) never sees them.
    """

    demand_forecast: str
    params: Mapping[str, ParamValue]
    round_params: Mapping[str, ParamValue] = field(default_factory=dict)
    replan_min_improvement_g: float = 0.0
    """The hold rule's hysteresis in the rounds when the scenario does not set it (a re-plan
    moves a planned start only for at least this many grams more, g; :func:`online_hold`)."""
    replan_min_improvement_pct: float = 0.0
    """... and at least this share more of the job's grams at its planned start, %."""


@dataclass(frozen=True, slots=True)
class PolicySpec:
    """A policy: how to run it, its parameters and a one-line summary; ``online``: what
    the simulator plans it with by default (None: the scenario's settings alone)."""

    name: str
    run: Runner
    params: tuple[ParamSpec, ...]
    summary: str
    function: Callable[..., PolicyResult]
    online: OnlineDefaults | None = None

    @property
    def doc(self) -> str:
        """The policy function's docstring (cites the paper)."""
        return (self.function.__doc__ or "").strip()


_LP_METHOD = ParamSpec(
    "lp_method",
    str,
    "auto",
    "HiGHS LP algorithm (auto: interior point, crossover to a vertex up to 50k columns)",
    choices=tuple(m.value for m in LpMethod),
)
_DAY_S = 86_400.0
_YEAR_H = 8_760.0
_WEIGHT_MAX = 1e6
_LP_LIMIT = ParamSpec(
    "lp_time_limit_s", float, 60.0, "wall-time limit of each LP (s)", 0.001, _DAY_S
)
_FUTURE = ParamSpec(
    "future_weight", float, 1.0, "weight f of reserved future demand in GRU (CJPS gamma)", 0, 1
)
_LATE = ParamSpec(
    "late_fallback",
    bool,
    True,
    "a job that can no longer finish on time takes its earliest start with room (fail open)",
)
_SEED = ParamSpec("seed", int, 0, "random seed of the rounding", 0, 2**32 - 1)


def _critical_first(runner: Runner) -> Runner:
    """``runner`` with critical jobs placed first, at their earliest start (critical.py)."""
    return lambda inst, ctx, p: critical_first(lambda i, c: runner(i, c, p), inst, ctx)


def _run_exact(inst: Instance, ctx: PlanContext | None, p: Params) -> PolicyResult:
    """``exact``; under ``objective=grams`` critical jobs first (critical.py), under ``gru``
    the CJPS reference optimum untouched."""
    objective = p.get_str("objective")

    def run(i: Instance, c: PlanContext | None) -> PolicyResult:
        return exact(
            i,
            c,
            objective=objective,
            future_weight=p.get_float("future_weight"),
            time_limit_s=p.get_float("time_limit_s"),
            mip_gap=p.get_float("mip_gap"),
            late_fallback=p.get_bool("late_fallback"),
        )

    return critical_first(run, inst, ctx) if objective == "grams" else run(inst, ctx)


POLICIES: dict[str, PolicySpec] = {
    spec.name: spec
    for spec in (
        PolicySpec(
            "carbonshift",
            lambda inst, ctx, p: planned_with_reserve(
                inst,
                p.get_float("reserve_future_demand"),
                lambda planned: carbonshift(
                    planned,
                    ctx,
                    objective=p.get_str("objective"),
                    bound=p.get_str("bound"),
                    dual_iterations=p.get_int("dual_iterations"),
                    improve_passes=p.get_int("improve_passes"),
                    lp_max_columns=p.get_int("lp_max_columns"),
                    lp_columns_per_job=p.get_float("lp_columns_per_job"),
                    lp_time_limit_s=p.get_float("lp_time_limit_s"),
                    exact_max_starts=p.get_int("exact_max_starts"),
                    exact_time_limit_s=p.get_float("exact_time_limit_s"),
                    exact_nodes=p.get_int("exact_nodes"),
                    search_factor=p.get_float("search_factor"),
                    search_seed=p.get_int("search_seed"),
                    polish_steps=p.get_int("polish_steps"),
                    polish_jobs=p.get_int("polish_jobs"),
                    polish_columns=p.get_int("polish_columns"),
                    polish_nodes=p.get_int("polish_nodes"),
                    polish_lp_iterations=p.get_int("polish_lp_iterations"),
                    polish_cpu_s=p.get_float("polish_cpu_s"),
                    late_repair_jobs=p.get_int("late_repair_jobs"),
                    late_repair_columns=p.get_int("late_repair_columns"),
                    late_repair_nodes=p.get_int("late_repair_nodes"),
                    late_repair_cpu_s=p.get_float("late_repair_cpu_s"),
                    core_columns=p.get_int("core_columns"),
                    core_max_jobs=p.get_int("core_max_jobs"),
                    core_small_jobs=p.get_int("core_small_jobs"),
                    core_lp_method=p.get_str("core_lp_method"),
                    core_fallback_last=p.get_bool("core_fallback_last"),
                    core_repair_columns=p.get_int("core_repair_columns"),
                    core_bound_gap=p.get_float("core_bound_gap"),
                    core_fix_cheapest=p.get_bool("core_fix_cheapest"),
                    support_nodes=p.get_int("support_nodes"),
                    support_time_limit_s=p.get_float("support_time_limit_s"),
                    band_columns=p.get_int("band_columns"),
                    band_lp_iterations=p.get_int("band_lp_iterations"),
                    cluster_band_columns=p.get_int("cluster_band_columns"),
                    cluster_band_lp_iterations=p.get_int("cluster_band_lp_iterations"),
                    lp_bands=p.get_bool("lp_bands"),
                    late_bound=p.get_bool("late_bound"),
                    late_milp_columns=p.get_int("late_milp_columns"),
                    late_milp_cpu_s=p.get_float("late_milp_cpu_s"),
                    polish_chain_jobs=p.get_int("polish_chain_jobs"),
                    polish_chain_lp_iterations=p.get_int("polish_chain_lp_iterations"),
                    pair_columns=p.get_int("pair_columns"),
                    pair_lp_iterations=p.get_int("pair_lp_iterations"),
                    pair_cpu_s=p.get_float("pair_cpu_s"),
                    move_penalty_g=p.get_float("move_penalty_g"),
                    move_penalty_pct=p.get_float("move_penalty_pct"),
                ),
                context=ctx,
                bound_iterations=(
                    None if p.get_str("bound") == "none" else p.get_int("dual_iterations")
                ),
                shapes=p.get_str("reserve_shapes"),
            ),
            (
                ParamSpec(
                    "objective",
                    str,
                    "carbon",
                    "carbon: operational + embodied grams; operational: operational grams only",
                    choices=OBJECTIVES,
                ),
                ParamSpec(
                    "bound",
                    str,
                    "auto",
                    "lower bound: auto (class LP when small, and Lagrangian), lagrangian, lp, none",
                    choices=BOUND_METHODS,
                ),
                ParamSpec(
                    "dual_iterations", int, 300, "subgradient steps on the Lagrangian prices", 0
                ),
                ParamSpec("improve_passes", int, 3, "re-insertion passes after the greedy", 0),
                ParamSpec(
                    "lp_max_columns", int, 60_000, "solve the class LP up to this many columns", 0
                ),
                ParamSpec(
                    "lp_columns_per_job",
                    float,
                    1.0,
                    "and up to this many columns per job (0: lp_max_columns alone)",
                    0,
                ),
                ParamSpec(
                    "lp_time_limit_s",
                    float,
                    60.0,
                    "HiGHS guard on each class LP: CPU s of this thread (wall s for IPM)",
                    0.001,
                ),
                ParamSpec(
                    "exact_max_starts",
                    int,
                    400,
                    "up to this many starts, also try the exact MILP (0: never)",
                    0,
                ),
                ParamSpec(
                    "exact_time_limit_s",
                    float,
                    2.0,
                    "limit of that MILP: CPU seconds of the planning thread",
                    0.001,
                ),
                ParamSpec("exact_nodes", int, 500, "HiGHS branch-and-bound nodes of that MILP", 1),
                ParamSpec(
                    "search_factor",
                    float,
                    30.0,
                    "ruin-and-recreate: placements tried per job (of at most 1,000; 0: off)",
                    0,
                ),
                ParamSpec("search_seed", int, 0, "seed of the ruin-and-recreate and the polish", 0),
                ParamSpec(
                    "polish_steps",
                    int,
                    200,
                    "MIP neighbourhood search after the ruin-and-recreate: sub-MILPs of a "
                    "window of jobs re-planned exactly (up to 3,000 jobs; 0: off)",
                    0,
                ),
                ParamSpec(
                    "support_nodes",
                    int,
                    100,
                    "HiGHS branch-and-bound nodes of the last step up to 3,000 jobs: the job "
                    "MILP restricted to the class LP's support and the plan's starts (0: off)",
                    0,
                ),
                ParamSpec(
                    "support_time_limit_s",
                    float,
                    60.0,
                    "CPU seconds (of the planning thread) at most for that MILP, a guard (the "
                    "node limit ends it)",
                    0.01,
                ),
                ParamSpec(
                    "band_columns",
                    int,
                    300,
                    "where the cores stand in for the class LP (401-3,000 jobs): time bands "
                    "re-planned by sub-MILPs of at most this many starts (0: off)",
                    0,
                ),
                ParamSpec(
                    "band_lp_iterations",
                    int,
                    30_000,
                    "budget of the time bands: HiGHS simplex iterations, 100 more per band "
                    "(of 1,000 jobs and more; below, times 1,000 / jobs, at most 3)",
                    0,
                ),
                ParamSpec(
                    "cluster_band_columns",
                    int,
                    400,
                    "after the time bands: one cluster's slots at a time, with the jobs that "
                    "want them, re-planned by sub-MILPs of at most this many starts (0: off)",
                    0,
                ),
                ParamSpec(
                    "cluster_band_lp_iterations",
                    int,
                    30_000,
                    "budget of the cluster bands: HiGHS simplex iterations, 100 more per "
                    "band (of 1,000 jobs and more; below, times 1,000 / jobs, at most 3)",
                    0,
                ),
                ParamSpec(
                    "lp_bands",
                    bool,
                    True,
                    "the time bands also where the whole class LP is solved (up to 3,000 "
                    "jobs), on its support; false: only where the cores stand in for it",
                ),
                ParamSpec(
                    "late_bound",
                    bool,
                    True,
                    "give a late plan the bound when the all-on-time LP is feasible (that "
                    "LP solved to say so: 0.2-8 s of CPU at 3,000-10,000 jobs); false: null",
                ),
                ParamSpec(
                    "late_milp_columns",
                    int,
                    300_000,
                    "when no plan puts every job on time: the least lateness (then grams) "
                    "by a MILP on the late LP's reduced-cost neighbourhood, up to this many "
                    "starts (every start of every job; 0: off)",
                    0,
                ),
                ParamSpec(
                    "late_milp_cpu_s",
                    float,
                    30.0,
                    "CPU seconds of that step's LPs and MILPs together (a guard: each MILP "
                    "also stops at 5,000 nodes)",
                    0.1,
                    3600.0,
                ),
                ParamSpec("polish_jobs", int, 40, "most jobs freed per sub-MILP", 2),
                ParamSpec(
                    "polish_chain_jobs",
                    int,
                    12,
                    "last (up to 3,000 jobs): sub-MILPs over ejection chains, each freeing "
                    "a job and the jobs that hold the room it would rather have, at most "
                    "this many jobs (and polish_columns starts)",
                    2,
                ),
                ParamSpec(
                    "polish_chain_lp_iterations",
                    int,
                    15_000,
                    "budget of the ejection chains' sub-MILPs: HiGHS simplex iterations, "
                    "100 more per sub-MILP (0: off)",
                    0,
                ),
                ParamSpec(
                    "pair_columns",
                    int,
                    800,
                    "after the chains (up to 1,000 jobs): sub-MILPs freeing every movable "
                    "job on two clusters with its starts on both, in windows along the "
                    "horizon of at most a quarter of this many starts, then this many, "
                    "then twice (0: off)",
                    0,
                ),
                ParamSpec(
                    "pair_lp_iterations",
                    int,
                    200_000,
                    "budget of the cluster pairs' sub-MILPs: HiGHS simplex iterations, "
                    "100 more per sub-MILP (0: off)",
                    0,
                ),
                ParamSpec(
                    "pair_cpu_s",
                    float,
                    60.0,
                    "CPU seconds the cluster pairs' sub-MILPs may take at most (a guard; "
                    "their simplex-iteration budget ends them first on most machines)",
                    0.1,
                    3600.0,
                ),
                ParamSpec("polish_columns", int, 1600, "most on-time starts per sub-MILP", 2),
                ParamSpec("polish_nodes", int, 20, "HiGHS branch-and-bound nodes per sub-MILP", 1),
                ParamSpec(
                    "polish_lp_iterations",
                    int,
                    15_000,
                    "budget of the neighbourhood search: HiGHS simplex iterations over its "
                    "sub-MILPs, 100 more per sub-MILP (the same on any machine; 1-3 s of CPU "
                    "at 100-1,000 jobs)",
                    0,
                ),
                ParamSpec(
                    "polish_cpu_s",
                    float,
                    60.0,
                    "guard on the CPU seconds of the neighbourhood search and of each kind of "
                    "band, against a hang only (their node limits and iteration budgets end "
                    "them first; where it binds, the plan depends on the machine)",
                    0.001,
                ),
                ParamSpec(
                    "late_repair_jobs",
                    int,
                    30,
                    "up to 3,000 jobs, solve the class LP whatever its size and re-plan its "
                    "rounding's late jobs with their neighbours by sub-MILPs of at most this "
                    "many jobs (0: off)",
                    0,
                ),
                ParamSpec(
                    "late_repair_columns", int, 1600, "most on-time starts per late-job sub-MILP", 2
                ),
                ParamSpec(
                    "late_repair_nodes",
                    int,
                    20,
                    "HiGHS branch-and-bound nodes per late-job sub-MILP",
                    1,
                ),
                ParamSpec(
                    "late_repair_cpu_s",
                    float,
                    30.0,
                    "guard on the late-job repair's CPU seconds (where it binds, the plan "
                    "depends on the machine)",
                    0.001,
                ),
                ParamSpec(
                    "core_columns",
                    int,
                    3,
                    "above core_small_jobs where the class LP is too large: solve its core "
                    "(this many columns of least priced grams per class and resource the "
                    "jobs ask for, and the best plan's starts), round it and repair its late "
                    "jobs (0: off)",
                    0,
                ),
                ParamSpec(
                    "core_max_jobs",
                    int,
                    100_000,
                    "the core LP only up to this many jobs (above: the price-guided greedy alone)",
                    0,
                ),
                ParamSpec(
                    "core_small_jobs",
                    int,
                    400,
                    "the core LP from above this many jobs where the class LP is beyond its "
                    "limits or has more than 50 columns per job; up to it (and to 3,000 jobs "
                    "with 3000) the whole class LP, rounded and repaired",
                    0,
                    3000,
                ),
                ParamSpec(
                    "core_lp_method",
                    str,
                    "ipm-vertex",
                    "how HiGHS solves the core LP: ipm-vertex (interior point and crossover, "
                    "dual simplex again if it fails) or simplex",
                    choices=CORE_LP_METHODS,
                ),
                ParamSpec(
                    "core_fallback_last",
                    bool,
                    True,
                    "above 3,000 jobs, run the price-guided placements only after the core, "
                    "when its plan is late, no better or over 1 % above the bound (false: "
                    "before it, always)",
                ),
                ParamSpec(
                    "core_repair_columns",
                    int,
                    800,
                    "most on-time starts per late-job sub-MILP after the core's rounding",
                    2,
                ),
                ParamSpec(
                    "core_bound_gap",
                    float,
                    0.005,
                    "above 3,000 jobs, after the core a second dual ascent raises the bound only "
                    "while the plan is more than this share above it, and stops once within it "
                    "(0: always, as up to 3,000 jobs)",
                    0.0,
                    1.0,
                ),
                ParamSpec(
                    "core_fix_cheapest",
                    bool,
                    True,
                    "above 3,000 jobs, fix in the core each class the plan before it puts "
                    "wholly at its start of least priced grams, and presolve the core LP "
                    "(false: every class keeps its core columns, no presolve)",
                ),
                ParamSpec(
                    "reserve_future_demand",
                    float,
                    0.0,
                    "plan phantom jobs for this share of the instance's future_demand, to "
                    "leave room for work not yet arrived (0: off; the bound is then the "
                    "Lagrangian dual's for the real jobs)",
                    0.0,
                    10.0,
                ),
                ParamSpec(
                    "reserve_shapes",
                    str,
                    "median",
                    "shapes of the phantom jobs of reserve_future_demand: median (one shape, "
                    "the pending work's median runtime, window and demand), sample (the "
                    "pending jobs' own shapes in turn: runtimes, windows, demands, clusters) "
                    "or arrivals (those shapes, each in proportion to 1 / (its slack as it "
                    "arrived + 1), as work arrives rather than as it waits) or stable "
                    "(sample's shapes, each phantom keeping its shape from round to round "
                    "while the job it took it from is pending: rendezvous hashing on its "
                    "arrival slot)",
                    choices=PHANTOM_SHAPES,
                ),
                ParamSpec(
                    "move_penalty_g",
                    float,
                    0.0,
                    "a re-plan's price for moving a job off the start the round before "
                    "planned (the incumbent), in the objective: grams (0: off; the bound and "
                    "the grams reported leave it out)",
                    0.0,
                    1e9,
                ),
                ParamSpec(
                    "move_penalty_pct",
                    float,
                    0.0,
                    "... plus this share of the job's grams at its incumbent start, % (0: off)",
                    0.0,
                    1000.0,
                ),
            ),
            "least grams with every deadline kept, certified lower bound (the default)",
            carbonshift,
            # online: room for all of the demand learned from past arrivals, in phantoms
            # shaped as the pending jobs are (chosen on Caspian's day, seeds 1-3;
            # bench/online.md 2026-11-27 (ii), docs/simulator.md); no cluster bands (step
            # 7d, 1-6 s of CPU a plan at 100-3,000 jobs) in every round: the quick Caspian
            # reproduction took 1.9 times as long with them (bench/planner.md (l)); nor
            # time bands where the whole LP is solved (lp_bands, bench/planner.md (r))
            OnlineDefaults(
                "moving-average",
                {"reserve_future_demand": 1.0, "reserve_shapes": "sample"},
                round_params={
                    "cluster_band_columns": 0,
                    "lp_bands": False,
                    "late_bound": False,
                    "late_milp_columns": 0,
                    "polish_chain_lp_iterations": 0,
                    "pair_lp_iterations": 0,
                    # the support MILP's node limit of before 2026-11-29: 100 gave the same
                    # static plans (bench/planner.md (z)) but changed the rounds' plans
                    # (bench_online.py seed 5: 94.16 % kept against 94.74 %)
                    "support_nodes": 500,
                },
                # the controller's and the hub's hysteresis, so the simulator re-plans as
                # they do (bench/online.md, "No flapping ... (branch `online`)")
                replan_min_improvement_g=1.0,
                replan_min_improvement_pct=1.0,
            ),
        ),
        PolicySpec(
            "asap",
            lambda inst, ctx, p: asap(inst, ctx),
            (),
            "carbon-agnostic FIFO: earliest fitting start, clusters in listed order (arrival "
            "order is the whole rule: critical jobs take no precedence)",
            asap,
        ),
        PolicySpec(
            "threshold",
            _critical_first(
                lambda inst, ctx, p: threshold(
                    inst,
                    ctx,
                    threshold_g_per_kwh=p.get_float("threshold_g_per_kwh"),
                    quantile=p.get_float("quantile"),
                )
            ),
            (
                ParamSpec(
                    "threshold_g_per_kwh",
                    float,
                    -1.0,
                    "start when the forecast is at or under this (g/kWh); < 0: quantile",
                    -1.0,
                    1e5,
                ),
                ParamSpec(
                    "quantile",
                    float,
                    0.5,
                    "quantile of the instance's forecast used when no threshold",
                    0,
                    1,
                ),
            ),
            "start when the forecast is under a threshold or the deadline forces it",
            threshold,
        ),
        PolicySpec(
            "window",
            _critical_first(
                lambda inst, ctx, p: window(
                    inst,
                    ctx,
                    window_hours=p.get_float("window_hours"),
                    lookahead_hours=p.get_float("lookahead_hours"),
                    max_wait_hours=p.get_float("max_wait_hours"),
                    base_limit=p.get_float("base_limit"),
                    load_factor=p.get_float("load_factor"),
                )
            ),
            (
                ParamSpec(
                    "window_hours", float, 6.0, "length W of the clean window (h)", 0, _YEAR_H
                ),
                ParamSpec(
                    "lookahead_hours", float, 24.0, "where the window is sought (h)", 0, _YEAR_H
                ),
                ParamSpec(
                    "max_wait_hours", float, 24.0, "a job never waits longer (h)", 0, _YEAR_H
                ),
                ParamSpec("base_limit", float, 0.95, "use limit without predicted load", 0, 1),
                ParamSpec(
                    "load_factor",
                    float,
                    0.1,
                    "limit falls by this x predicted load",
                    0,
                    _WEIGHT_MAX,
                ),
            ),
            "CO2 scheduler (Piontek): wait for the cleanest W-hour window, bounded",
            window,
        ),
        PolicySpec(
            "fluidos",
            _critical_first(
                lambda inst, ctx, p: fluidos(inst, ctx, late_fallback=p.get_bool("late_fallback"))
            ),
            (
                ParamSpec(
                    "late_fallback",
                    bool,
                    True,
                    "a job with no on-time room takes its earliest start with room",
                ),
            ),
            "FLUIDOS: per job, least operational + embodied grams meeting the deadline",
            fluidos,
        ),
        PolicySpec(
            "caspian",
            _critical_first(
                lambda inst, ctx, p: caspian(
                    inst,
                    ctx,
                    omega1=p.get_float("omega1"),
                    omega2=p.get_float("omega2"),
                    omega3=p.get_float("omega3"),
                    lp_method=LpMethod(p.get_str("lp_method")),
                    lp_time_limit_s=p.get_float("lp_time_limit_s"),
                )
            ),
            (
                ParamSpec(
                    "omega1",
                    float,
                    1.0,
                    "weight of sustainability Z1 (0: baseline)",
                    0,
                    _WEIGHT_MAX,
                ),
                ParamSpec("omega2", float, 1.0, "weight of lateness Z2", 0, _WEIGHT_MAX),
                ParamSpec("omega3", float, 1.0, "weight of completion time Z3", 0, _WEIGHT_MAX),
                _LP_METHOD,
                _LP_LIMIT,
            ),
            "Caspian Alg. 2-3: normalised multi-objective LP, then greedy allocation",
            caspian,
        ),
        PolicySpec(
            "rr",
            _critical_first(
                lambda inst, ctx, p: rr(
                    inst,
                    ctx,
                    future_weight=p.get_float("future_weight"),
                    seed=p.get_int("seed"),
                    lp_method=LpMethod(p.get_str("lp_method")),
                    lp_time_limit_s=p.get_float("lp_time_limit_s"),
                )
            ),
            (_FUTURE, _SEED, _LP_METHOD, _LP_LIMIT),
            "CJPS RR-APX: one randomised rounding of the GRU LP (may overload)",
            rr,
        ),
        PolicySpec(
            "srr",
            _critical_first(
                lambda inst, ctx, p: srr(
                    inst,
                    ctx,
                    samples=p.get_int("samples"),
                    future_weight=p.get_float("future_weight"),
                    seed=p.get_int("seed"),
                    lp_method=LpMethod(p.get_str("lp_method")),
                    lp_time_limit_s=p.get_float("lp_time_limit_s"),
                    late_fallback=p.get_bool("late_fallback"),
                )
            ),
            (
                ParamSpec("samples", int, 20, "number S of roundings", 1, 100_000),
                _FUTURE,
                _SEED,
                _LP_METHOD,
                _LP_LIMIT,
                _LATE,
            ),
            "CJPS SRR-APX: best of S roundings, overloading jobs dropped",
            srr,
        ),
        PolicySpec(
            "exact",
            _run_exact,
            (
                ParamSpec(
                    "objective",
                    str,
                    "grams",
                    "grams: least operational + embodied grams, deadlines hard (lateness first "
                    "when none fits); gru: the CJPS-MILP's GRU",
                    choices=EXACT_OBJECTIVES,
                ),
                _FUTURE,
                _LATE,
                ParamSpec("time_limit_s", float, 60.0, "MILP wall-time limit (s)", 0.001, _DAY_S),
                ParamSpec("mip_gap", float, 1e-4, "relative MIP gap to stop at", 0, 0.999),
            ),
            "MILP optimum by HiGHS, with time limit and gap, of grams with deadlines kept "
            "(default) or of CJPS's GRU (objective=gru: a reference optimum, so critical jobs "
            "take no precedence there)",
            exact,
        ),
    )
}


def online_hold(name: str) -> HoldRule:
    """The hold rule policy ``name`` re-plans with in the simulator when the scenario does
    not set one: its :class:`OnlineDefaults` hysteresis (``carbonshift``: see its entry),
    nothing for a policy without online defaults."""
    defaults = policy_spec(name).online
    if defaults is None:
        return HoldRule()
    return HoldRule(
        replan_min_improvement_g=defaults.replan_min_improvement_g,
        replan_min_improvement_pct=defaults.replan_min_improvement_pct,
    )


def round_params(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters policy ``name`` re-plans with in a round (the simulator's rounds, each
    controller and hub pass): its :attr:`OnlineDefaults.round_params` under ``params``
    (``carbonshift``: no cluster bands, which would cost 1-6 s of CPU every round)."""
    defaults = policy_spec(name).online
    if defaults is None:
        return dict(params)
    return {**defaults.round_params, **params}


def policy_spec(name: str, *, import_modules: bool = True) -> PolicySpec:
    """The policy called ``name``: registered, an entry point, or ``package.module:function``.

    ``import_modules=False`` refuses a ``module:function`` name that is not registered (the
    HTTP server offers only what its operator loaded). Unknown: InputError with close names.
    """
    spec = POLICIES.get(name)
    if spec is not None:
        return spec
    if ":" in name:
        if not import_modules:
            raise InputError(
                f"policy {name!r} is not offered here: this server runs only registered "
                f"policies ({', '.join(POLICIES)}); its operator can load more with "
                "--policy-module"
            )
        spec = _BY_PATH.get(name)
        if spec is None:  # the simulator asks every round: import and inspect once
            spec = _BY_PATH[name] = _from_path(name)
        return spec
    spec = _from_entry_point(name)
    if spec is not None:
        return spec
    close = difflib.get_close_matches(name, POLICIES, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise InputError(
        f"unknown policy {name!r}{hint} known: {', '.join(POLICIES)} "
        "(carbonshift plan --list-policies), or name your own as package.module:function"
    )


def parse_params(
    name: str, raw: Mapping[str, Any] | None = None, *, import_modules: bool = True
) -> Params:
    """Validate ``raw`` (strings from the CLI, or typed values) against the policy's specs."""
    return _parse(policy_spec(name, import_modules=import_modules), name, raw)


def _parse(spec: PolicySpec, name: str, raw: Mapping[str, Any] | None) -> Params:
    known = {p.name: p for p in spec.params}
    values: dict[str, ParamValue] = {p.name: p.default for p in spec.params}
    for key, value in (raw or {}).items():
        param = known.get(key)
        if param is None:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            names = ", ".join(known) or "none"
            raise InputError(
                f"unknown parameter {key!r} for policy {name!r}; {hint}its parameters: {names}"
            )
        values[key] = param.parse(name, value)
    return Params(values)


def run_policy(
    name: str,
    instance: Instance,
    params: Mapping[str, Any] | None = None,
    context: PlanContext | None = None,
    *,
    import_modules: bool = True,
) -> PolicyResult:
    """Run policy ``name`` on ``instance`` with ``params`` (validated first); its plan is
    checked where it enters (:func:`~carbonshift.planning.output_check.check_policy_output`)."""
    spec = policy_spec(name, import_modules=import_modules)
    result = spec.run(instance, context, _parse(spec, name, params))
    check_policy_output(name, instance, result.plan)
    return result


# --- policies from outside the package: the decorator, entry points, module:function -------

PolicyFunction = Callable[..., PolicyResult | Plan]
F = TypeVar("F", bound=Callable[..., Any])

#: Attribute :func:`register_policy` sets on the function it registers.
_SPEC_ATTRIBUTE = "__carbonshift_policy__"

#: ``module:function`` names already resolved (kept apart from :data:`POLICIES`: a path is
#: not a registration, and the HTTP server never looks here).
_BY_PATH: dict[str, PolicySpec] = {}


def _check_call(name: str, function: Callable[..., Any]) -> None:
    """The function must take ``(instance, context)`` positionally."""
    try:
        listed = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: let the call tell
        return
    positional = [p for p in listed if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 2 and not any(p.kind is p.VAR_POSITIONAL for p in listed):
        raise InputError(
            f"policy {name!r} takes {len(positional)} positional argument(s); write it as "
            "def policy(instance, context=None, **params)"
        )


def _params_from_signature(name: str, function: Callable[..., Any]) -> tuple[ParamSpec, ...]:
    """Parameters after ``(instance, context)`` with a bool, int, float or str default."""
    out: list[ParamSpec] = []
    listed = list(inspect.signature(function).parameters.values())
    for param in listed[2:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        default = param.default
        if not isinstance(default, bool | int | float | str):
            raise InputError(
                f"parameter {param.name!r} of policy {name!r} has default {default!r}; give "
                "every parameter after (instance, context) a bool, int, float or str default"
            )
        out.append(ParamSpec(param.name, type(default), default, ""))
    return tuple(out)


def _param_specs(
    name: str,
    function: Callable[..., Any],
    params: Sequence[ParamSpec] | Mapping[str, ParamValue] | None,
) -> tuple[ParamSpec, ...]:
    if params is None:
        return _params_from_signature(name, function)
    if isinstance(params, Mapping):
        specs = []
        for key, default in params.items():
            if not isinstance(default, bool | int | float | str):
                raise InputError(
                    f"parameter {key!r} of policy {name!r} has default {default!r}; give a "
                    "bool, int, float or str"
                )
            specs.append(ParamSpec(key, type(default), default, ""))
        return tuple(specs)
    return tuple(params)


def _runner(name: str, function: Callable[..., Any]) -> Runner:
    def run(instance: Instance, context: PlanContext | None, params: Params) -> PolicyResult:
        out = function(instance, context, **params.as_dict())
        if isinstance(out, PolicyResult):
            return out
        if isinstance(out, Plan):
            return PolicyResult(plan=out, status=PlanStatus.FEASIBLE)
        raise InputError(
            f"policy {name!r} returned {type(out).__name__}; return a PolicyResult "
            "(carbonshift.policy.build_result) or a Plan"
        )

    return run


def _spec_of(
    name: str,
    function: Callable[..., Any],
    params: Sequence[ParamSpec] | Mapping[str, ParamValue] | None = None,
    summary: str | None = None,
) -> PolicySpec:
    if not callable(function):
        raise InputError(f"policy {name!r} is a {type(function).__name__}, not a function")
    attached = getattr(function, _SPEC_ATTRIBUTE, None)
    if isinstance(attached, PolicySpec) and params is None and summary is None:
        return attached if attached.name == name else replace(attached, name=name)
    _check_call(name, function)
    doc = (function.__doc__ or "").strip()
    return PolicySpec(
        name=name,
        run=_runner(name, function),
        params=_param_specs(name, function, params),
        summary=summary if summary is not None else (doc.splitlines() or [""])[0],
        function=function,
    )


def _same_function(a: Callable[..., Any], b: Callable[..., Any]) -> bool:
    key = ("__module__", "__qualname__")
    return all(getattr(a, k, None) == getattr(b, k, None) for k in key)


def register_policy(
    name: str,
    params: Sequence[ParamSpec] | Mapping[str, ParamValue] | None = None,
    *,
    summary: str | None = None,
) -> Callable[[F], F]:
    """Register the decorated function as policy ``name`` (returns it unchanged).

    The function is called as ``function(instance, context, **params)`` and returns a
    :class:`PolicyResult` (or a bare ``Plan``). ``params`` declares its parameters:
    :class:`ParamSpec` objects, a mapping of name to default, or ``None`` to read them from
    the function's keyword defaults. Registering a name twice with a different function is
    an InputError; importing the same module again is not.
    """
    if not name or ":" in name or name != name.strip():
        raise InputError(
            f"policy name {name!r} is not usable; give a plain name such as 'greenest' "
            "(names with ':' are module paths)"
        )

    def decorate(function: F) -> F:
        spec = _spec_of(name, function, params, summary)
        known = POLICIES.get(name)
        if known is not None and not _same_function(known.function, function):
            where = f"{known.function.__module__}.{known.function.__qualname__}"
            raise InputError(f"policy name {name!r} is already taken by {where}; pick another name")
        POLICIES[name] = spec
        setattr(function, _SPEC_ATTRIBUTE, spec)
        return function

    return decorate


def _import_path(name: str) -> object:
    """The object ``package.module:attribute`` names (InputError when it cannot be had)."""
    module_name, _, attribute = name.partition(":")
    if not module_name or not attribute:
        raise InputError(
            f"policy {name!r} is not package.module:function; write it like 'mypkg.mod:greenest'"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(
            f"policy {name!r}: cannot import module {module_name!r} ({exc}); install the "
            "package, or add its folder to PYTHONPATH (e.g. PYTHONPATH=.)"
        ) from exc
    target: object = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise InputError(
                f"policy {name!r}: module {module_name!r} has no {attribute!r}; check the "
                "function's name"
            ) from None
    return target


def _from_path(name: str) -> PolicySpec:
    target = _import_path(name)
    if not callable(target):
        raise InputError(f"policy {name!r} names a {type(target).__name__}, not a function")
    return _spec_of(name, target)


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _from_entry_point(name: str) -> PolicySpec | None:
    """Load, register and return the entry point ``name`` of the group (None when absent)."""
    entry = _entry_points().get(name)
    if entry is None:
        return None
    try:
        target = entry.load()
    except Exception as exc:  # a broken third-party package: say which one
        raise InputError(
            f"policy {name!r}: entry point {entry.value!r} of group {ENTRY_POINT_GROUP!r} "
            f"does not load ({type(exc).__name__}: {exc}); fix or uninstall that package"
        ) from exc
    spec = _spec_of(name, target)
    POLICIES.setdefault(name, spec)
    return POLICIES[name]


def available_policies() -> dict[str, PolicySpec]:
    """Every registered policy, with the installed entry points loaded: name -> spec.

    An entry point that does not load is logged and left out (``policy_spec`` of its name
    still raises, naming the package).
    """
    for name in _entry_points():
        if name not in POLICIES:
            try:
                _from_entry_point(name)
            except InputError as exc:
                _LOG.warning("%s", exc)
    return dict(POLICIES)


#: What :func:`load_policy_module` loaded in this process, in order (server workers load
#: the same again: they are forked from a clean process).
_OPERATOR_MODULES: list[str] = []


def operator_policy_modules() -> tuple[str, ...]:
    """The policy modules the operator named at start-up (``serve --policy-module``)."""
    return tuple(_OPERATOR_MODULES)


def load_policy_module(ref: str) -> list[str]:
    """Import ``ref`` so its policies are registered; return the names it added.

    ``ref`` is a module (its ``@register_policy`` functions register themselves) or
    ``module:function`` (registered under that name). The HTTP server calls this for each
    ``--policy-module`` its operator names at start-up.
    """
    before = set(POLICIES)
    if ref not in _OPERATOR_MODULES:
        _OPERATOR_MODULES.append(ref)
    if ":" in ref:
        POLICIES[ref] = _from_path(ref)
    else:
        try:
            importlib.import_module(ref)
        except ImportError as exc:
            raise InputError(
                f"policy module {ref!r} cannot be imported ({exc}); install it or add its "
                "folder to PYTHONPATH"
            ) from exc
    added = [n for n in POLICIES if n not in before]
    return added or ([ref] if ref in POLICIES else [])
