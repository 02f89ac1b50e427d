"""The arithmetic of advice: lowest-average windows and a job's emissions per start slot.

Pure functions over numpy arrays of slot values; the routes translate to and from the wire.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["RunCost", "best_window", "run_costs", "slot_weights"]

FloatArray = npt.NDArray[np.float64]


def best_window(values: FloatArray, points: int) -> tuple[int, float]:
    """The first index whose ``points`` consecutive values have the lowest mean, and that mean.

    >>> best_window(np.array([5.0, 1.0, 2.0, 9.0]), 2)
    (1, 1.5)
    """
    if points < 1 or points > len(values):
        raise ValueError(f"a window of {points} points does not fit in {len(values)} values")
    sums = np.convolve(values, np.ones(points), mode="valid")
    index = int(np.argmin(sums))
    return index, float(sums[index] / points)


def slot_weights(duration_minutes: float, slot_minutes: int) -> FloatArray:
    """Fraction of each occupied slot a run of ``duration_minutes`` uses (the last may be partial).

    >>> slot_weights(90, 60).tolist()
    [1.0, 0.5]
    """
    slots = math.ceil(duration_minutes / slot_minutes - 1e-9)
    weights = np.ones(slots)
    rest = duration_minutes - (slots - 1) * slot_minutes
    weights[-1] = rest / slot_minutes
    return weights


@dataclass(frozen=True, slots=True)
class RunCost:
    """A run starting at slot ``start_slot``: its mean intensity and its emissions."""

    start_slot: int
    ci_g_per_kwh: float
    emissions_g: float


def run_costs(
    values_g_per_kwh: FloatArray, weights: FloatArray, power_kw: float, slot_minutes: int
) -> list[RunCost]:
    """Every start slot whose run fits inside the values, with its cost."""
    n, d = len(values_g_per_kwh), len(weights)
    if d > n:
        return []
    # weighted sums over each start: correlate values with the weights
    sums = np.correlate(values_g_per_kwh, weights, mode="valid")
    total_w = float(weights.sum())
    slot_h = slot_minutes / 60.0
    return [
        RunCost(s, float(sums[s] / total_w), float(power_kw * slot_h * sums[s]))
        for s in range(n - d + 1)
    ]
