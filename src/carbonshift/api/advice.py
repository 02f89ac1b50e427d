"""Advice: lowest-average windows, a job's emissions per start slot, the best zone and start.

:func:`advise_job` answers "when and where should this job run?" from any source of carbon
answers; the HTTP route (and a CLI) only translate to and from it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt

from carbonshift.carbon.providers import Answer
from carbonshift.domain.grams import grams_of
from carbonshift.errors import InputError
from carbonshift.units import format_utc

__all__ = [
    "Advice",
    "AnswerFor",
    "JobAsk",
    "Run",
    "RunCost",
    "advise_job",
    "best_window",
    "floor_to_slot",
    "power_w_of",
    "run_costs",
    "slot_weights",
]

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
    # the one grams formula (domain.grams): no PUE or embodied part in an advice request
    emissions_g = grams_of(power_kw, sums * (slot_minutes / 60.0), 0.0, 0.0)
    return [RunCost(s, float(sums[s] / total_w), float(emissions_g[s])) for s in range(n - d + 1)]


#: (zone, start, end, slot_minutes) -> the carbon answer for that window
AnswerFor = Callable[[str, datetime, datetime, int], Answer]

#: assumed power when a request gives neither power nor demand x watts
DEFAULT_POWER_W = 1000.0


@dataclass(frozen=True, slots=True)
class JobAsk:
    """A job to place: its length, candidate zones, earliest start, deadline and power."""

    duration: timedelta
    zones: tuple[str, ...]
    earliest: datetime
    deadline: datetime
    power_w: float
    slot_minutes: int = 60


@dataclass(frozen=True, slots=True)
class Run:
    """One way to run the job, with the carbon answer it was costed on."""

    zone: str
    start: datetime
    end: datetime
    ci_g_per_kwh: float
    emissions_g: float
    answer: Answer


@dataclass(frozen=True, slots=True)
class Advice:
    """The best run, running now in the first zone, and the best run of every zone."""

    best: Run
    now: Run
    per_zone: tuple[Run, ...]
    power_w: float
    energy_kwh: float

    @property
    def saving_g(self) -> float:
        """Grams saved by the advised run over running now."""
        return self.now.emissions_g - self.best.emissions_g

    @property
    def saving_pct(self) -> float | None:
        """The saving as a share of running now (None when running now emits nothing)."""
        return 100.0 * self.saving_g / self.now.emissions_g if self.now.emissions_g else None


def floor_to_slot(moment: datetime, slot_minutes: int) -> datetime:
    """``moment`` floored to a multiple of ``slot_minutes`` since midnight (UTC)."""
    moment = moment.replace(second=0, microsecond=0)
    since_midnight = moment.hour * 60 + moment.minute
    return moment - timedelta(minutes=since_midnight % slot_minutes)


def power_w_of(
    power_w: float | None, demand: Mapping[str, float], watts_per_unit: Mapping[str, float]
) -> float:
    """``power_w`` if given, else demand x watts per unit, else :data:`DEFAULT_POWER_W`."""
    if power_w is not None:
        return power_w
    if not demand:
        return DEFAULT_POWER_W
    unknown = set(demand) - set(watts_per_unit)
    if unknown:
        raise InputError(
            f"demand names {sorted(unknown)} without watts_per_unit; give their W per unit "
            "or power_w"
        )
    return sum(amount * watts_per_unit[r] for r, amount in demand.items())


def advise_job(job: JobAsk, answer_for: AnswerFor) -> Advice:
    """The cheapest (zone, start) for ``job``: starts on slot boundaries from ``earliest``
    (floored), ending by ``deadline``; a partial last slot counts its fraction."""
    slot = job.slot_minutes
    duration_min = job.duration.total_seconds() / 60.0
    if duration_min <= 0:
        raise InputError("duration is zero; give a positive run time, like 3h")
    start = floor_to_slot(job.earliest, slot)
    if start + job.duration > job.deadline:
        raise InputError(
            f"a run of {duration_min:g} min from {format_utc(start)} cannot finish by "
            f"{format_utc(job.deadline)}; give a later deadline or a longer 'within'"
        )
    slots = math.floor((job.deadline - start) / timedelta(minutes=slot))
    end = start + timedelta(minutes=slot * slots)
    weights = slot_weights(duration_min, slot)
    per_zone: list[Run] = []
    now: Run | None = None
    for zone in job.zones:
        answer = answer_for(zone, start, end, slot)
        costs = run_costs(answer.window.values_g_per_kwh, weights, job.power_w / 1000.0, slot)
        if not costs:
            raise InputError(f"no start for zone {zone!r} fits before the deadline")

        def run(cost: RunCost, zone: str = zone, answer: Answer = answer) -> Run:
            begin = start + timedelta(minutes=slot * cost.start_slot)
            return Run(
                zone, begin, begin + job.duration, cost.ci_g_per_kwh, cost.emissions_g, answer
            )

        per_zone.append(run(min(costs, key=lambda c: c.emissions_g)))
        if now is None:
            now = run(costs[0])
    if now is None:
        raise InputError("zones is empty; name at least one zone, like DE")
    return Advice(
        best=min(per_zone, key=lambda r: r.emissions_g),
        now=now,
        per_zone=tuple(per_zone),
        power_w=job.power_w,
        energy_kwh=job.power_w / 1000.0 * duration_min / 60.0,
    )
