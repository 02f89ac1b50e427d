"""Shifting potential per zone: how much a job could save by waiting, moving, or both.

The method is that of the EuroSys'24 study of the limits of spatio-temporal workload shifting
(Sukprasert et al., "On the Limitations of Carbon-Aware Temporal and Spatial Workload Shifting
in the Cloud"): a job of ``runtime_hours`` arrives at every hour of the data; starting at once
in its home zone it sees the mean intensity of the next ``runtime_hours``. Waiting up to
``slack_hours`` it could instead see the lowest mean over any window that starts within the
slack (**temporal**); moving at once to the cleanest of the given zones gives **spatial**; both
together give **spatio-temporal**. Each arrival's relative saving is
``(at_once - best) / at_once``; a zone's potential is the mean over arrivals.

It is an upper bound on what scheduling can reach: capacity is unlimited, moving work costs
nothing, and the future is known. Real schedulers (and carbonshift's plans) reach less.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from carbonshift.errors import InputError

__all__ = ["ShiftingPotential", "shifting_potential"]

FloatArray = npt.NDArray[np.float64]

#: Above this, the window minimum over every arrival would cost more memory than it is worth.
MAX_SLACK_HOURS = 24 * 31
MAX_RUNTIME_HOURS = 24 * 31


@dataclass(frozen=True, slots=True)
class ShiftingPotential:
    """One home zone's potential, as fractions of the at-once intensity (0.25 = 25 % less).

    ``*_mean`` is the mean over arrivals; ``*_p10`` and ``*_p90`` the 10th and 90th
    percentiles of the per-arrival savings, to show their spread. ``arrivals`` counts the
    arrivals that entered the means (those whose at-once intensity is above 0; a zero-carbon
    start cannot be improved and has no relative saving).
    """

    zone: str
    arrivals: int
    at_once_mean_g_per_kwh: float
    temporal_mean: float
    temporal_p10: float
    temporal_p90: float
    spatial_mean: float
    spatial_p10: float
    spatial_p90: float
    spatiotemporal_mean: float
    spatiotemporal_p10: float
    spatiotemporal_p90: float


def _window_means(hourly_g_per_kwh: FloatArray, runtime_hours: int) -> FloatArray:
    """Mean intensity of a job of ``runtime_hours`` started at each hour that lets it finish."""
    cumulative = np.concatenate(([0.0], np.cumsum(hourly_g_per_kwh)))
    return (cumulative[runtime_hours:] - cumulative[:-runtime_hours]) / runtime_hours


def _best_within(means: FloatArray, slack_hours: int, arrivals: int) -> FloatArray:
    """For each of the first ``arrivals`` hours, the least mean over starts t .. t + slack."""
    best: FloatArray = sliding_window_view(means, slack_hours + 1)[:arrivals].min(axis=1)
    return best


def _spread(savings: FloatArray) -> tuple[float, float, float]:
    if savings.size == 0:
        return (float("nan"), float("nan"), float("nan"))
    p10, p90 = np.percentile(savings, [10, 90])
    return (float(savings.mean()), float(p10), float(p90))


def shifting_potential(
    hourly_g_per_kwh: Mapping[str, Sequence[float] | FloatArray],
    *,
    slack_hours: int,
    runtime_hours: int,
) -> list[ShiftingPotential]:
    """The potential of every zone in ``hourly_g_per_kwh`` (aligned hourly values, same start).

    Every zone is a home zone in turn; the spatial options are all the zones given. Only
    arrivals whose whole slack and run fit inside the data count, so every arrival has the
    same choices.

    >>> flat_then_clean = {"A": [100.0] * 4 + [50.0] * 4, "B": [80.0] * 8}
    >>> [(p.zone, p.temporal_mean, p.spatiotemporal_mean) for p in shifting_potential(
    ...     flat_then_clean, slack_hours=4, runtime_hours=2)]
    [('A', 0.5, 0.5), ('B', 0.0, 0.375)]
    """
    if not hourly_g_per_kwh:
        raise InputError("no zones given; name at least one zone, e.g. --zones DE,FR")
    if not 1 <= runtime_hours <= MAX_RUNTIME_HOURS:
        raise InputError(
            f"runtime {runtime_hours} h is outside 1..{MAX_RUNTIME_HOURS} h; give a job length "
            "in whole hours"
        )
    if not 0 <= slack_hours <= MAX_SLACK_HOURS:
        raise InputError(
            f"slack {slack_hours} h is outside 0..{MAX_SLACK_HOURS} h; give how long a job "
            "may wait, in whole hours"
        )
    arrays = {z: np.asarray(v, dtype=np.float64) for z, v in hourly_g_per_kwh.items()}
    lengths = {len(a) for a in arrays.values()}
    if len(lengths) != 1:
        raise InputError(
            f"zones cover different numbers of hours ({sorted(lengths)}); give aligned series"
        )
    hours = lengths.pop()
    arrivals = hours - runtime_hours - slack_hours + 1
    if arrivals < 1:
        raise InputError(
            f"the data hold {hours} h, too few for a {runtime_hours} h job with "
            f"{slack_hours} h of slack; choose a longer period or shorter times"
        )
    for zone, values in arrays.items():
        if not np.all(np.isfinite(values)) or np.any(values < 0):
            raise InputError(
                f"zone {zone!r} has missing, negative or infinite intensities; "
                "fill or trim the data first"
            )

    means = {z: _window_means(a, runtime_hours) for z, a in arrays.items()}
    at_once = {z: m[:arrivals] for z, m in means.items()}
    temporal = {z: _best_within(m, slack_hours, arrivals) for z, m in means.items()}
    cleanest_now = np.min(np.stack(list(at_once.values())), axis=0)
    cleanest_ever = np.min(np.stack(list(temporal.values())), axis=0)

    results = []
    for zone in arrays:
        home = at_once[zone]
        counted = home > 0
        base = home[counted]
        results.append(
            ShiftingPotential(
                zone,
                int(counted.sum()),
                float(home.mean()),
                *_spread((base - temporal[zone][counted]) / base),
                *_spread((base - cleanest_now[counted]) / base),
                *_spread((base - cleanest_ever[counted]) / base),
            )
        )
    return results
