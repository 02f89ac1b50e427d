"""Implausible points in a carbon series: a robust outlier rule, and what to do with them.

Real exports hold points no grid produced: GB on 2023-06-07 reads 9 g/kWh for two hours
between 149 and 77. The rule is a Hampel filter: a point is **suspect** when it lies more
than ``n_mad`` scaled median absolute deviations (1.4826 x MAD, the normal-consistent
scale) from the median of the ``half_window`` points on each side, *and* more than both
``min_relative`` of that median and ``min_abs_g_per_kwh`` away (so a flat night with a tiny
MAD, or a clean grid swinging between 5 and 15 g/kWh, does not flag ordinary steps).
Defaults: 6 hours each side, 2 MADs, 60 %, 50 g/kWh. A suspect is a *spike*, not a new
level: such points come in runs of at most ``max_run`` (3), and every point of a run lies
below both points that bound the run (or above both) by more than half the nearer one and
``min_abs_g_per_kwh`` (a smooth evening peak passes its neighbours by little, so it stays).
Runs at the ends of the data, with nothing to bound them, are never suspect.

What a user does with them (:class:`OutlierAction`): ``keep`` the data as they are (the
simulator's accounting always charges the actual signal), ``flag`` them (shown, not
changed), or ``interpolate`` them linearly from the nearest unsuspected neighbours.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from enum import StrEnum

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from carbonshift.carbon.series import CarbonSeries
from carbonshift.errors import InputError

__all__ = [
    "BoolArray",
    "OutlierAction",
    "OutlierRule",
    "apply_outlier_action",
    "interpolate_suspect",
    "suspect_in_span",
    "suspect_points",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_MAD_SCALE = 1.4826  # MAD x this estimates the standard deviation of normal data


class OutlierAction(StrEnum):
    """What to do with suspect points."""

    KEEP = "keep"
    FLAG = "flag"
    INTERPOLATE = "interpolate"


class OutlierRule:
    """The Hampel rule's settings (see the module docstring)."""

    __slots__ = ("half_window", "max_run", "min_abs_g_per_kwh", "min_relative", "n_mad")

    def __init__(
        self,
        *,
        half_window: int = 6,
        n_mad: float = 2.0,
        min_relative: float = 0.6,
        min_abs_g_per_kwh: float = 50.0,
        max_run: int = 3,
    ) -> None:
        if not 1 <= half_window <= 1000:
            raise InputError(
                f"outlier half window {half_window} points is outside 1..1000; give e.g. 6"
            )
        if not n_mad > 0 or not 0 <= min_relative <= 10:
            raise InputError(
                f"outlier rule n_mad={n_mad}, min_relative={min_relative}: give n_mad > 0 "
                "and min_relative in 0..10 (a fraction of the local median)"
            )
        self.half_window = half_window
        self.n_mad = n_mad
        self.min_relative = min_relative
        if not 0 <= min_abs_g_per_kwh <= 1e4:
            raise InputError(
                f"outlier floor {min_abs_g_per_kwh} g/kWh is outside 0..10000; give e.g. 50"
            )
        self.min_abs_g_per_kwh = min_abs_g_per_kwh
        self.max_run = max(1, int(max_run))


def suspect_points(values: FloatArray, rule: OutlierRule | None = None) -> BoolArray:
    """True where ``values`` (one series, evenly spaced) breaks the rule; NaN is never suspect.

    >>> bool(suspect_points(np.array([150.0, 149, 148, 9, 120, 110, 100]))[3])
    True
    """
    rule = rule or OutlierRule()
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    if n < 3:
        return np.zeros(n, dtype=bool)
    k = min(rule.half_window, (n - 1) // 2)
    padded = np.pad(x, k, mode="reflect")
    windows = sliding_window_view(padded, 2 * k + 1)
    # the point itself stays out of its own reference: median of its neighbours only
    neighbours = np.delete(windows, k, axis=1)
    median = np.nanmedian(neighbours, axis=1)
    mad = np.nanmedian(np.abs(neighbours - median[:, None]), axis=1)
    deviation = np.abs(x - median)
    with np.errstate(invalid="ignore"):
        margin = np.maximum(rule.min_relative * np.abs(median), rule.min_abs_g_per_kwh)
        candidate = (deviation > rule.n_mad * _MAD_SCALE * mad) & (deviation > margin)
    candidate &= np.isfinite(x)
    suspect = np.zeros(n, dtype=bool)
    starts = np.flatnonzero(candidate & ~np.concatenate(([False], candidate[:-1])))
    for a in starts:  # one iteration per candidate run: rare by construction
        b = int(a)
        while b + 1 < n and candidate[b + 1]:
            b += 1
        if b - a + 1 > rule.max_run or a == 0 or b == n - 1:
            continue
        low, high = min(x[a - 1], x[b + 1]), max(x[a - 1], x[b + 1])
        run = x[a : b + 1]
        below = np.all(run < low - max(0.5 * abs(low), rule.min_abs_g_per_kwh))
        above = np.all(run > high + max(0.5 * abs(high), rule.min_abs_g_per_kwh))
        if below or above:
            suspect[a : b + 1] = True
    return suspect


def interpolate_suspect(values: FloatArray, suspect: BoolArray) -> FloatArray:
    """``values`` with suspect points replaced linearly from their unsuspected neighbours
    (the nearest one at either end)."""
    x = np.asarray(values, dtype=np.float64).copy()
    good = ~suspect & np.isfinite(x)
    if not suspect.any() or not good.any():
        return x
    index = np.arange(x.size)
    x[suspect] = np.interp(index[suspect], index[good], x[good])
    return x


def apply_outlier_action(
    series: CarbonSeries, action: OutlierAction, rule: OutlierRule | None = None
) -> tuple[CarbonSeries, BoolArray]:
    """``series`` as ``action`` says (only ``interpolate`` changes it) and its suspect mask."""
    suspect = suspect_points(series.values_g_per_kwh, rule)
    if action is OutlierAction.INTERPOLATE and suspect.any():
        fixed = interpolate_suspect(series.values_g_per_kwh, suspect)
        return replace(series, values_g_per_kwh=fixed), suspect
    return series, suspect


def suspect_in_span(
    series: CarbonSeries, suspect: BoolArray, start: datetime, end: datetime
) -> list[tuple[datetime, float]]:
    """The suspect points of ``series`` (time, value) inside ``[start, end)``."""
    step = timedelta(minutes=series.step_minutes)
    first = max(0, int((start - series.start) // step))
    last = min(len(series), int(-(-(end - series.start) // step)))
    return [
        (series.start + i * step, float(series.values_g_per_kwh[i]))
        for i in range(first, max(first, last))
        if suspect[i]
    ]
