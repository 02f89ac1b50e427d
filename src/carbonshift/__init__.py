"""carbonshift: move flexible batch work to the times and places where electricity is cleanest.

The Python API (docs/python-api.md)::

    import carbonshift as cs
    r = cs.simulate("examples/caspian.toml")       # a scenario: path, TOML text or dict
    r.summary["carbon_saving_pct"]; r.jobs_df(); r.slots_df(); r.report("out/caspian")
    p = cs.plan("examples/instance.json", policy="srr", samples=50)
    s = cs.load_carbon("DE", "2023-11-14", "2023-11-15")   # pandas Series, g/kWh

    @cs.register_policy("greenest")                # your own policy (see carbonshift.policy)
    def greenest(instance, context=None): ...

Everything but the exceptions is imported on first use, so ``import carbonshift`` loads
neither the simulator, nor pandas, nor matplotlib (the controller imports this package).
See :mod:`carbonshift.domain` for the vocabulary, :mod:`carbonshift.formats` for the
contract files and :mod:`carbonshift.carbon` for signals and forecasts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from carbonshift.errors import CarbonshiftError, InputError

if TYPE_CHECKING:
    from carbonshift import policy
    from carbonshift._facade import PlanResult, load_carbon, plan, simulate
    from carbonshift.planning.registry import ParamSpec, register_policy
    from carbonshift.planning.types import PlanContext, PolicyResult
    from carbonshift.policy import CapacityLedger, build_result
    from carbonshift.sim.results import SimulationResult

__all__ = [
    "CapacityLedger",
    "CarbonshiftError",
    "InputError",
    "ParamSpec",
    "PlanContext",
    "PlanResult",
    "PolicyResult",
    "SimulationResult",
    "__version__",
    "build_result",
    "load_carbon",
    "plan",
    "policy",
    "register_policy",
    "simulate",
]

__version__ = "0.1.0"

#: Public name -> the module that defines it (imported on first access).
_LAZY = {
    "simulate": "carbonshift._facade",
    "plan": "carbonshift._facade",
    "load_carbon": "carbonshift._facade",
    "PlanResult": "carbonshift._facade",
    "SimulationResult": "carbonshift.sim.results",
    "register_policy": "carbonshift.policy",
    "build_result": "carbonshift.policy",
    "CapacityLedger": "carbonshift.policy",
    "ParamSpec": "carbonshift.policy",
    "PlanContext": "carbonshift.policy",
    "PolicyResult": "carbonshift.policy",
}


def __getattr__(name: str) -> Any:
    if name == "policy":
        return importlib.import_module("carbonshift.policy")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'carbonshift' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
