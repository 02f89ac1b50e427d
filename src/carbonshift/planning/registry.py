"""The policies by name: an explicit dict of name -> (function, parameters with defaults, doc).

:func:`run_policy` is the one entry point the CLI, the simulator and the controller use:
it validates parameters (unknown key or bad value: :class:`~carbonshift.errors.InputError`
with a hint) and calls the policy.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from carbonshift.domain import Instance
from carbonshift.errors import InputError
from carbonshift.planning.backends.highs import LpMethod
from carbonshift.planning.policies.asap import asap
from carbonshift.planning.policies.caspian import caspian
from carbonshift.planning.policies.cjps import exact, rr, srr
from carbonshift.planning.policies.fluidos import fluidos
from carbonshift.planning.policies.threshold import threshold
from carbonshift.planning.policies.window import window
from carbonshift.planning.types import PlanContext, PolicyResult

__all__ = [
    "POLICIES",
    "ParamSpec",
    "Params",
    "PolicySpec",
    "parse_params",
    "policy_spec",
    "run_policy",
]

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
class PolicySpec:
    """A policy: how to run it, its parameters and a one-line summary."""

    name: str
    run: Runner
    params: tuple[ParamSpec, ...]
    summary: str
    function: Callable[..., PolicyResult]

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


POLICIES: dict[str, PolicySpec] = {
    spec.name: spec
    for spec in (
        PolicySpec(
            "asap",
            lambda inst, ctx, p: asap(inst, ctx),
            (),
            "carbon-agnostic FIFO: earliest fitting start, clusters in listed order",
            asap,
        ),
        PolicySpec(
            "threshold",
            lambda inst, ctx, p: threshold(
                inst,
                ctx,
                threshold_g_per_kwh=p.get_float("threshold_g_per_kwh"),
                quantile=p.get_float("quantile"),
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
            lambda inst, ctx, p: window(
                inst,
                ctx,
                window_hours=p.get_float("window_hours"),
                lookahead_hours=p.get_float("lookahead_hours"),
                max_wait_hours=p.get_float("max_wait_hours"),
                base_limit=p.get_float("base_limit"),
                load_factor=p.get_float("load_factor"),
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
            lambda inst, ctx, p: fluidos(inst, ctx, late_fallback=p.get_bool("late_fallback")),
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
            lambda inst, ctx, p: caspian(
                inst,
                ctx,
                omega1=p.get_float("omega1"),
                omega2=p.get_float("omega2"),
                omega3=p.get_float("omega3"),
                lp_method=LpMethod(p.get_str("lp_method")),
                lp_time_limit_s=p.get_float("lp_time_limit_s"),
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
            lambda inst, ctx, p: rr(
                inst,
                ctx,
                future_weight=p.get_float("future_weight"),
                seed=p.get_int("seed"),
                lp_method=LpMethod(p.get_str("lp_method")),
                lp_time_limit_s=p.get_float("lp_time_limit_s"),
            ),
            (_FUTURE, _SEED, _LP_METHOD, _LP_LIMIT),
            "CJPS RR-APX: one randomised rounding of the GRU LP (may overload)",
            rr,
        ),
        PolicySpec(
            "srr",
            lambda inst, ctx, p: srr(
                inst,
                ctx,
                samples=p.get_int("samples"),
                future_weight=p.get_float("future_weight"),
                seed=p.get_int("seed"),
                lp_method=LpMethod(p.get_str("lp_method")),
                lp_time_limit_s=p.get_float("lp_time_limit_s"),
                late_fallback=p.get_bool("late_fallback"),
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
            lambda inst, ctx, p: exact(
                inst,
                ctx,
                future_weight=p.get_float("future_weight"),
                time_limit_s=p.get_float("time_limit_s"),
                mip_gap=p.get_float("mip_gap"),
                late_fallback=p.get_bool("late_fallback"),
            ),
            (
                _FUTURE,
                _LATE,
                ParamSpec("time_limit_s", float, 60.0, "MILP wall-time limit (s)", 0.001, _DAY_S),
                ParamSpec("mip_gap", float, 1e-4, "relative MIP gap to stop at", 0, 0.999),
            ),
            "CJPS-MILP optimum of GRU by HiGHS, with time limit and gap",
            exact,
        ),
    )
}


def policy_spec(name: str) -> PolicySpec:
    """The policy called ``name``; InputError with the close names when unknown."""
    spec = POLICIES.get(name)
    if spec is None:
        close = difflib.get_close_matches(name, POLICIES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise InputError(
            f"unknown policy {name!r}{hint} known: {', '.join(POLICIES)} "
            "(carbonshift plan --list-policies)"
        )
    return spec


def parse_params(name: str, raw: Mapping[str, Any] | None = None) -> Params:
    """Validate ``raw`` (strings from the CLI, or typed values) against the policy's specs."""
    spec = policy_spec(name)
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
) -> PolicyResult:
    """Run policy ``name`` on ``instance`` with ``params`` (validated first)."""
    parsed = parse_params(name, params)
    return POLICIES[name].run(instance, context, parsed)
