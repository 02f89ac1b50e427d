"""The simulation scenario file (TOML) of docs/formats.md (scenario), as a validated model.

:func:`load_scenario` reads a scenario with :mod:`tomllib`, checks every key and value, and
returns a frozen :class:`Scenario` whose paths are absolute (paths in the file are relative
to the file). Defaults are exactly those of docs/formats.md (scenario). Unknown keys in the named
tables (``[simulation]``, ``[[clusters]]``, ``[workload]``, and the top level) are refused
with a "did you mean" hint; ``[policy_params]``, ``[baseline_params]`` and
``[forecast_params]`` are free tables checked by the policy and forecaster registries.
Every problem becomes one :class:`~carbonshift.errors.InputError` naming the file, the key,
the value, its unit and the fix.

Keys carbonshift adds to the contract (all optional): ``[simulation] demand_forecast`` (a
method of :data:`carbonshift.workloads.DEMAND_FORECASTS` for the rounds' future demand, or
``none``; not set: the policy's online default, ``moving-average`` for ``carbonshift``, none
for the others; sim.experiment.online_settings) and ``title``; ``[workload] trace`` (a CSV,
SWF or GWF file, by its name), ``strict`` (refuse a trace with malformed rows, default true)
and ``params`` (the generator's parameters; they may also be written directly in
``[workload]``, where, next to a ``generator``, ``trace`` is the generator's own parameter,
e.g. the co2 family's pattern source).
"""

from __future__ import annotations

import difflib
import math
import tomllib
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from carbonshift.carbon.forecast import make_forecaster
from carbonshift.carbon.zones import resolve_zone
from carbonshift.errors import InputError
from carbonshift.files import read_input_text
from carbonshift.formats import amount_in, check_depth
from carbonshift.planning.hold import HoldRule
from carbonshift.planning.registry import online_hold, parse_params
from carbonshift.units import parse_utc, to_utc
from carbonshift.workloads import (
    DEMAND_FORECASTS,
    GENERATORS,
    TIME_UNITS,
    Workload,
    generate,
    read_trace_csv,
    read_workload,
)

__all__ = [
    "ClusterSpec",
    "Scenario",
    "SimulationSpec",
    "WorkloadSpec",
    "load_scenario",
    "parse_scenario",
]

_FROZEN = ConfigDict(extra="forbid", frozen=True, strict=True)

#: limits of a scenario (docs/reliability.md): inside them nothing overflows a date or a float
MAX_HOURS = 87_600.0  # ten years of arrivals, or of drain
MAX_SLOT_MINUTES = 7 * 24 * 60
MAX_SLOTS = 10_000
MAX_SEED = 2**63 - 1
MAX_PATH_CHARS = 4_096
#: generator parameters: numbers are finite and at most this large (n_jobs: MAX_GENERATED_JOBS)
MAX_GENERATOR_NUMBER = 1e6
MAX_GENERATED_JOBS = 100_000

Units = Annotated[float, AfterValidator(amount_in("units", 1e12))]
Watts = Annotated[float, AfterValidator(amount_in("W per unit", 1e6))]
Embodied = Annotated[float, AfterValidator(amount_in("g per unit hour", 1e6))]

#: Unit and fix named in error messages, per key.
_HINTS: dict[str, str] = {
    "start": 'a UTC time written like "2023-11-14T00:00:00Z"',
    "hours": "hours of arrivals, a number > 0",
    "max_drain_hours": "hours, a number >= 0",
    "allow_replay": "true or false",
    "slot_minutes": "minutes, a whole number >= 1",
    "horizon_slots": "slots, a whole number >= 1",
    "replan_every_slots": "slots, a whole number >= 1",
    "policy": 'a policy name like "caspian" (carbonshift plan --list-policies)',
    "baseline": 'a policy name like "asap"',
    "forecast": 'a forecaster name like "oracle"',
    "seed": "a whole number",
    "name": "a non-empty cluster name",
    "zone": 'an embedded zone like "DE"',
    "carbon_csv": "a file path, relative to the scenario file",
    "ci_kind": '"direct" or "lca"',
    "capacity": "units per resource, numbers >= 0, like { gpu = 32 }",
    "watts_per_unit": "W per unit of each resource, numbers >= 0, like { gpu = 200 }",
    "pue": "a ratio >= 0 (1 = no overhead)",
    "embodied_g_per_unit_hour": "g per unit-hour of each resource, numbers >= 0",
    "idle_watts": "W, a number >= 0",
    "trace_csv": "a file path, relative to the scenario file",
    "trace": "a .csv, .swf or .gwf file path, relative to the scenario file",
    "generator": f"one of {sorted(GENERATORS)}",
    "time_unit": '"hours" or "seconds"',
    "resource": 'a resource name like "gpu"',
    "deadline_factor": "a multiple of the job length, a number >= 0",
    "strict": "true or false",
    "min_saving_g": "grams, a number >= 0 (0: off)",
    "min_saving_pct": "percent, a number from 0 to 100 (0: off)",
    "replan_min_improvement_g": "grams, a number >= 0 (0: off)",
    "replan_min_improvement_pct": "percent, a number from 0 to 100 (0: off)",
    "max_releases_per_slot": "jobs per slot, a whole number >= 0 (0: no limit)",
}


def _choices_hint(value: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(value, choices, n=1)
    if close:
        return f"did you mean {close[0]!r}?"
    return f"known: {', '.join(sorted(choices))}"


class SimulationSpec(BaseModel):
    """``[simulation]``: time span, slots, policy, baseline, forecaster and seed."""

    model_config = _FROZEN

    start: datetime
    hours: float = Field(gt=0, le=MAX_HOURS)
    max_drain_hours: float = Field(168.0, ge=0, le=MAX_HOURS)
    allow_replay: bool = False
    slot_minutes: int = Field(60, ge=1, le=MAX_SLOT_MINUTES)
    horizon_slots: int = Field(24, ge=1, le=MAX_SLOTS)
    replan_every_slots: int = Field(1, ge=1, le=MAX_SLOTS)
    policy: str = Field(min_length=1, max_length=64)
    baseline: str = Field("asap", max_length=64)
    forecast: str = Field("oracle", max_length=64)
    seed: int = Field(1, ge=0, le=MAX_SEED)
    demand_forecast: str | None = None
    title: str | None = None
    interruptible: bool = False
    interrupt_overhead_minutes: float = Field(0.0, ge=0, le=MAX_SLOT_MINUTES)

    @field_validator("start", mode="before")
    @classmethod
    def _utc(cls, value: object) -> datetime:
        if isinstance(value, datetime):
            return to_utc(value)
        if isinstance(value, str):
            return parse_utc(value, what="start")
        raise ValueError(f"{value!r} is not a time")

    @field_validator("demand_forecast")
    @classmethod
    def _demand_method(cls, value: str | None) -> str | None:
        if value is not None and value not in (*DEMAND_FORECASTS, "none"):
            raise ValueError(
                f"{value!r} is not a demand forecast; "
                f"{_choices_hint(value, [*DEMAND_FORECASTS, 'none'])}"
            )
        return value


class ClusterSpec(BaseModel):
    """``[[clusters]]``: one cluster, its carbon source, capacity and power."""

    model_config = _FROZEN

    name: str = Field(min_length=1, max_length=256)
    zone: str | None = Field(None, max_length=64)
    carbon_csv: Path | None = None
    ci_kind: str = "direct"
    capacity: dict[str, Units] = Field(min_length=1)
    watts_per_unit: dict[str, Watts]
    pue: Annotated[float, AfterValidator(amount_in("(PUE)", 100.0))] = 1.0
    embodied_g_per_unit_hour: dict[str, Embodied] = Field(default_factory=dict)
    idle_watts: Annotated[float, AfterValidator(amount_in("W", 1e9))] = 0.0

    @field_validator("carbon_csv", mode="before")
    @classmethod
    def _path(cls, value: object) -> object:
        return _path_of(value)

    @field_validator("ci_kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        if value not in ("direct", "lca"):
            raise ValueError(f"{value!r} is not a kind; {_choices_hint(value, ['direct', 'lca'])}")
        return value

    @field_validator("capacity", "watts_per_unit", "embodied_g_per_unit_hour")
    @classmethod
    def _non_negative(cls, value: dict[str, float]) -> dict[str, float]:
        for resource, amount in value.items():
            if not amount >= 0 or amount == float("inf"):
                raise ValueError(f"{resource} = {amount!r} must be a finite number >= 0")
        return value


class WorkloadSpec(BaseModel):
    """``[workload]``: a trace file or a named generator with its parameters."""

    model_config = _FROZEN

    trace_csv: Path | None = None
    trace: Path | None = None
    generator: str | None = None
    time_unit: str = "hours"
    resource: str = "gpu"
    deadline_factor: float = Field(3.0, ge=0, le=1_000)
    strict: bool = True
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _gather_params(cls, data: object) -> object:
        """Keys that are not workload keys are the generator's parameters."""
        if not isinstance(data, Mapping):
            return data
        # with a generator, `trace` is the generator's parameter (co2: the pattern's source)
        taken = {"trace"} if data.get("generator") is not None else set()
        own = {k: v for k, v in data.items() if k in cls.model_fields and k not in taken}
        extra = {k: v for k, v in data.items() if k not in cls.model_fields or k in taken}
        if extra:
            params = own.get("params", {})
            own["params"] = {**params, **extra} if isinstance(params, Mapping) else params
        return own

    @field_validator("trace_csv", "trace", mode="before")
    @classmethod
    def _path(cls, value: object) -> object:
        return _path_of(value)

    @field_validator("time_unit")
    @classmethod
    def _unit(cls, value: str) -> str:
        if value not in TIME_UNITS:
            raise ValueError(
                f"{value!r} is not a time unit; {_choices_hint(value, list(TIME_UNITS))}"
            )
        return value

    def generator_params(self) -> dict[str, Any]:
        """The generator's parameters (``params`` and the other keys of ``[workload]``)."""
        return dict(self.params)


class HoldSpec(BaseModel):
    """``[hold]`` (optional): hold only when it pays (docs/design/0002). The thresholds
    default to 0 (off), except the re-plan hysteresis (``replan_min_improvement_*``), which
    defaults to the policy's online hold rule (``carbonshift``: no flapping; others: 0).
    Applied to the policy run, never to the baseline."""

    model_config = _FROZEN

    min_saving_g: float = Field(0.0, ge=0, le=1e12)
    min_saving_pct: float = Field(0.0, ge=0, le=100)
    replan_min_improvement_g: float | None = Field(None, ge=0, le=1e12)
    replan_min_improvement_pct: float | None = Field(None, ge=0, le=100)
    max_releases_per_slot: int = Field(0, ge=0, le=1_000_000)

    def rule(self, policy: str) -> HoldRule:
        """The seam's hold rule; the hysteresis not given is ``policy``'s online default
        (:func:`~carbonshift.planning.registry.online_hold`)."""
        default = online_hold(policy)
        values = self.model_dump()
        for name in ("replan_min_improvement_g", "replan_min_improvement_pct"):
            if values[name] is None:
                values[name] = getattr(default, name)
        return HoldRule(**values)


class Scenario(BaseModel):
    """A whole scenario file, validated, with absolute paths (see the module docstring)."""

    model_config = _FROZEN

    simulation: SimulationSpec
    policy_params: dict[str, Any] = Field(default_factory=dict)
    baseline_params: dict[str, Any] = Field(default_factory=dict)
    forecast_params: dict[str, Any] = Field(default_factory=dict)
    clusters: list[ClusterSpec] = Field(min_length=1)
    workload: WorkloadSpec
    hold: HoldSpec = Field(default_factory=HoldSpec)
    source: str = ""

    @property
    def resources(self) -> list[str]:
        """Every resource named by a cluster's capacity, in first-seen order."""
        names: dict[str, None] = {}
        for cluster in self.clusters:
            names.update(dict.fromkeys(cluster.capacity))
        return list(names)

    def workload_resource(self) -> str:
        """The resource the workload asks for (the trace's ``resource`` or the generator's)."""
        spec = self.workload
        if spec.generator is None or "resource" in spec.model_fields_set:
            return spec.resource
        explicit = spec.generator_params().get("resource")
        if isinstance(explicit, str):
            return explicit
        default = GENERATORS[spec.generator].defaults()["resource"]
        return str(default)

    def load_workload(self) -> Workload:
        """Read the trace or run the generator (seeded with ``[simulation] seed`` unless the
        generator's parameters name their own ``seed``)."""
        spec = self.workload
        if spec.trace_csv is not None:
            return read_trace_csv(
                spec.trace_csv,
                time_unit=spec.time_unit,
                resource=spec.resource,
                deadline_factor=spec.deadline_factor,
                strict=spec.strict,
                start=self.simulation.start,
            )
        if spec.trace is not None:
            return read_workload(
                spec.trace,
                resource=spec.resource if "resource" in spec.model_fields_set else None,
                deadline_factor=spec.deadline_factor,
                time_unit=spec.time_unit,
                strict=spec.strict,
            )
        assert spec.generator is not None  # checked by parse_scenario
        params = spec.generator_params()
        if "resource" in spec.model_fields_set:
            params.setdefault("resource", spec.resource)
        seed = None if "seed" in params else self.simulation.seed
        try:
            return generate(spec.generator, params, seed=seed)
        except InputError as exc:
            raise InputError(
                f"{self.source}: [workload] generator {spec.generator!r}: {exc}"
            ) from None


def _path_of(value: object) -> object:
    """A TOML string as a Path; an overlong one is refused before the file system sees it."""
    if isinstance(value, str):
        if len(value) > MAX_PATH_CHARS or any(len(p) > 255 for p in Path(value).parts):
            raise ValueError(
                f"a path of {len(value)} characters is too long; give at most {MAX_PATH_CHARS}, "
                "with no part longer than 255"
            )
        if "\x00" in value:
            raise ValueError("a path may not hold a NUL character")
        return Path(value)
    return value


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _short(text: str) -> str:
    return text if len(text) <= 200 else text[:197] + "..."


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate the scenario TOML at ``path``."""
    file = Path(path)
    shown = _short(str(file))
    text = read_input_text(file, "scenario")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{shown}: not valid TOML ({exc}); fix the syntax there") from None
    except RecursionError:
        raise InputError(
            f"{shown}: arrays or tables are nested too deep; a scenario needs at most 3 levels"
        ) from None
    check_depth(data, shown, most=16)
    return parse_scenario(data, base_dir=file.resolve().parent, source=str(file))


_TOP = (
    "simulation",
    "policy_params",
    "baseline_params",
    "forecast_params",
    "clusters",
    "workload",
    "hold",
)


def parse_scenario(
    data: Mapping[str, Any], *, base_dir: Path | None = None, source: str = "scenario"
) -> Scenario:
    """Validate a scenario already parsed from TOML; relative paths are joined to ``base_dir``."""
    check_depth(data, source, most=16)
    for key in data:
        if key not in _TOP:
            raise InputError(
                f"{source}: unknown table or key {key!r} at the top level; "
                f"{_choices_hint(key, list(_TOP))}"
            )
    try:
        scenario = Scenario.model_validate({**data, "source": source})
    except ValidationError as exc:
        raise InputError(_describe(exc, data, source)) from exc
    scenario = _resolve_paths(scenario, base_dir)
    _check_meaning(scenario, source)
    return scenario


def _resolve_paths(scenario: Scenario, base_dir: Path | None) -> Scenario:
    def absolute(path: Path | None) -> Path | None:
        if path is None or base_dir is None or path.is_absolute():
            return path
        return base_dir / path

    clusters = [
        c.model_copy(update={"carbon_csv": absolute(c.carbon_csv)}) for c in scenario.clusters
    ]
    spec = scenario.workload
    update: dict[str, Any] = {
        "trace_csv": absolute(spec.trace_csv),
        "trace": absolute(spec.trace),
    }
    workload = spec.model_copy(update=update)
    trace = workload.params.get("trace")
    if isinstance(trace, str) and base_dir is not None and not Path(trace).is_absolute():
        params = {**workload.params, "trace": str(base_dir / trace)}
        workload = workload.model_copy(update={"params": params})
    return scenario.model_copy(update={"clusters": clusters, "workload": workload})


def _check_meaning(scenario: Scenario, source: str) -> None:
    sim = scenario.simulation
    for table, policy, params in (
        ("policy_params", sim.policy, scenario.policy_params),
        ("baseline_params", sim.baseline, scenario.baseline_params),
    ):
        try:
            parse_params(policy, params)
        except InputError as exc:
            raise InputError(f"{source}: [simulation] / [{table}]: {exc}") from exc
    try:
        make_forecaster(sim.forecast, scenario.forecast_params)
    except InputError as exc:
        raise InputError(f"{source}: [simulation] forecast / [forecast_params]: {exc}") from exc

    names = [c.name for c in scenario.clusters]
    for i, cluster in enumerate(scenario.clusters, start=1):
        where = f"{source}: [[clusters]] #{i} ({cluster.name!r})"
        if len(set(names)) != len(names) and names.count(cluster.name) > 1:
            raise InputError(
                f"{where}: name is used by {names.count(cluster.name)} clusters; give each "
                "a unique name"
            )
        if cluster.zone is None and cluster.carbon_csv is None:
            raise InputError(
                f'{where}: needs zone (embedded carbon data, like "DE") or carbon_csv (a file in '
                "the Electricity Maps hourly export format)"
            )
        if cluster.carbon_csv is not None and not _is_file(cluster.carbon_csv):
            raise InputError(
                f"{where}: carbon_csv {str(cluster.carbon_csv)!r} does not exist; paths are "
                "relative to the scenario file"
            )
        if cluster.carbon_csv is None and cluster.zone is not None:
            try:
                resolve_zone(cluster.zone)
            except InputError as exc:
                raise InputError(f"{where}: {exc}") from exc
        for table in ("watts_per_unit", "embodied_g_per_unit_hour"):
            unlisted = set(getattr(cluster, table)) - set(cluster.capacity)
            if unlisted:
                raise InputError(
                    f"{where}: {table} names {sorted(unlisted)}, which capacity lacks "
                    f"{sorted(cluster.capacity)}; add them to capacity or remove them"
                )

    spec = scenario.workload
    given = [k for k in ("trace_csv", "trace", "generator") if getattr(spec, k) is not None]
    if len(given) != 1:
        raise InputError(
            f"{source}: [workload] needs exactly one of trace_csv, trace or generator; "
            f"it has {given or 'none'}"
        )
    extra = spec.generator_params()
    if spec.generator is None:
        if extra:
            key = next(iter(extra))
            known = list(WorkloadSpec.model_fields)
            raise InputError(
                f"{source}: [workload] has unknown key {key!r}; {_choices_hint(key, known)}"
            )
        trace = spec.trace_csv or spec.trace
        assert trace is not None
        if not _is_file(trace):
            raise InputError(
                f"{source}: [workload] trace {str(trace)!r} does not exist; paths are relative "
                "to the scenario file"
            )
    else:
        family = GENERATORS.get(spec.generator)
        if family is None:
            raise InputError(
                f"{source}: [workload] generator {spec.generator!r} is not known; "
                f"{_choices_hint(spec.generator, list(GENERATORS))}"
            )
        accepted = set(family.defaults()) - {"pattern"}
        for key in extra:
            if key not in accepted:
                known = sorted(accepted | (set(WorkloadSpec.model_fields) - {"trace_csv"}))
                raise InputError(
                    f"{source}: [workload] key {key!r} is neither a workload key nor a parameter "
                    f"of generator {spec.generator!r}; {_choices_hint(key, known)}"
                )
        for key, value in extra.items():
            _check_generator_value(source, key, value)
        trace_param = extra.get("trace")
        if isinstance(trace_param, str) and not _is_file(Path(trace_param)):
            raise InputError(
                f"{source}: [workload] trace {trace_param!r} (the generator's pattern source) "
                "does not exist; paths are relative to the scenario file"
            )
    resource = scenario.workload_resource()
    if resource not in scenario.resources:
        raise InputError(
            f"{source}: the workload asks for resource {resource!r} but no cluster has capacity "
            f"of it (clusters have {scenario.resources}); set [workload] resource or the "
            "clusters' capacity"
        )


def _check_generator_value(source: str, key: str, value: object) -> None:
    """Generator parameters: finite numbers of bounded size, short strings."""
    where = f"{source}: [workload] {key} = {value!r:.60}"
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        most = MAX_GENERATED_JOBS if key == "n_jobs" else MAX_GENERATOR_NUMBER
        if not (math.isfinite(value) and abs(value) <= most):
            raise InputError(f"{where}: must be a finite number of at most {most:g} in size")
    elif isinstance(value, str):
        if len(value) > MAX_PATH_CHARS:
            raise InputError(f"{where}: is {len(value)} characters; give at most {MAX_PATH_CHARS}")
    else:
        raise InputError(f"{where}: must be a number, a string or true/false")


def _location(loc: tuple[int | str, ...]) -> tuple[str, str]:
    """(table, key) of a pydantic error location, in TOML words."""
    if not loc:
        return "", ""
    head = loc[0]
    if head == "clusters" and len(loc) >= 2 and isinstance(loc[1], int):
        table = f"[[clusters]] #{loc[1] + 1}"
        rest = loc[2:]
    else:
        table = f"[{head}]" if head in _TOP else ""
        rest = loc[1:] if table else loc
    key = ".".join(str(part) for part in rest)
    return table, key


def _describe(exc: ValidationError, data: Mapping[str, Any], source: str) -> str:
    parts: list[str] = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        table, key = _location(loc)
        field = str(loc[-1]) if loc else ""
        if len(loc) >= 2 and str(loc[-2]) in _HINTS and str(loc[-2]) != "name":
            field = str(loc[-2])  # a value inside a table like capacity.gpu
        where = f"{table} {key}".strip() or "the file"
        kind = error["type"]
        if kind == "extra_forbidden":
            model = _model_at(loc)
            known = list(model.model_fields) if model is not None else []
            parts.append(
                f"{table} unknown key {key.split('.')[-1]!r}; {_choices_hint(str(loc[-1]), known)}"
            )
            continue
        hint = _HINTS.get(field, "")
        if kind == "missing":
            parts.append(f"{table} needs key {str(loc[-1])!r}" + (f" ({hint})" if hint else ""))
            continue
        message = str(error["msg"]).removeprefix("Value error, ")
        value = error.get("input")
        fix = f"; give {hint}" if hint and "write it like" not in message else ""
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        parts.append(f"{where} = {shown}: {message}{fix}")
    return f"{source}: " + "; ".join(parts)


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    if not loc or len(loc) == 1:
        return Scenario
    head = loc[0]
    if head == "simulation":
        return SimulationSpec
    if head == "clusters":
        return ClusterSpec
    if head == "workload":
        return WorkloadSpec
    return None
