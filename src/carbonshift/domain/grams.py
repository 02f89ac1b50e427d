"""Grams of a run: the one formula of docs/formats.md (plan scores, ``jobs.csv`` ``carbon_g``).

A run of ``demand`` units on a cluster emits, over ``run_h`` hours,

    sum_k demand[k] * (watts_per_unit[k] / 1000 * pue * ci_integral
                       + embodied_g_per_unit_hour[k] * run_h)

where ``ci_integral`` is the carbon intensity integrated over the run, in g h / kWh (the
planner's forecast summed over the occupied slots times the slot length; the simulator's
actual signal integrated at its native resolution). A ``power_w`` hint, when given, replaces
``demand x watts_per_unit`` for the operational part (the controller's ``power-watts``).
Every caller (scores, the simulator, the controller, the hub, the hold rule) uses
:func:`run_grams`; vectorised planners use :func:`grams_of` on arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np
import numpy.typing as npt

__all__ = ["PowerModel", "embodied_g", "grams_of", "operational_g", "run_grams"]


class PowerModel(Protocol):
    """What a cluster contributes to the formula (domain ``Cluster`` and the adapters' own)."""

    @property
    def watts_per_unit(self) -> Mapping[str, float]: ...

    @property
    def pue(self) -> float: ...

    @property
    def embodied_g_per_unit_hour(self) -> Mapping[str, float]: ...


def grams_of(
    kw: npt.ArrayLike,
    ci_integral_g_h_per_kwh: npt.ArrayLike,
    embodied_g_per_h: npt.ArrayLike,
    run_h: npt.ArrayLike,
) -> npt.NDArray[np.float64]:
    """``kw * ci_integral + embodied_g_per_h * run_h`` on arrays (broadcast), for the
    vectorised planners (``kw`` already includes the PUE)."""
    kw_ = np.asarray(kw, dtype=np.float64)
    embodied = np.asarray(embodied_g_per_h, dtype=np.float64)
    result: npt.NDArray[np.float64] = kw_ * np.asarray(
        ci_integral_g_h_per_kwh, dtype=np.float64
    ) + embodied * np.asarray(run_h, dtype=np.float64)
    return result


def operational_g(
    demand: Mapping[str, float],
    cluster: PowerModel,
    ci_integral_g_h_per_kwh: float,
    *,
    power_w: float | None = None,
) -> float:
    """The operational part: power x PUE x the integrated intensity."""
    if power_w is not None:
        return power_w / 1000.0 * cluster.pue * ci_integral_g_h_per_kwh
    return (
        sum(
            (
                amount * cluster.watts_per_unit.get(resource, 0.0) / 1000.0 * cluster.pue
                for resource, amount in demand.items()
            ),
            0.0,
        )
        * ci_integral_g_h_per_kwh
    )


def embodied_g(demand: Mapping[str, float], cluster: PowerModel, run_h: float) -> float:
    """The embodied part: units x embodied grams per unit-hour x hours."""
    return (
        sum(
            (
                amount * cluster.embodied_g_per_unit_hour.get(resource, 0.0)
                for resource, amount in demand.items()
            ),
            0.0,
        )
        * run_h
    )


def run_grams(
    demand: Mapping[str, float],
    cluster: PowerModel,
    ci_integral_g_h_per_kwh: float,
    run_h: float,
    *,
    power_w: float | None = None,
) -> float:
    """Operational plus embodied grams of one run (see the module doc)."""
    return operational_g(demand, cluster, ci_integral_g_h_per_kwh, power_w=power_w) + embodied_g(
        demand, cluster, run_h
    )
