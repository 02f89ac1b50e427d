"""Hold only when it pays: the rules every online caller applies after the policy's plan.

docs/design/0002 ("Holding only when it pays"). A policy answers a start for every pending
job; holding a workload (starting it later than now) costs its user waiting, so the seam
keeps a later start only when it pays, in this order:

1. **Hysteresis.** A job that an earlier round planned to start at slot ``p`` keeps ``p``
   unless the new plan saves at least ``replan_min_improvement_g`` grams AND
   ``replan_min_improvement_pct`` % against it (and ``p`` is still on time and fits).
   Re-plans therefore do not move a planned start back and forth for crumbs.
2. **Minimum saving.** A job planned later than slot 0 is held only when its planned saving
   against starting now (on the allowed cluster where it emits least now and fits) reaches
   BOTH ``min_saving_g`` and ``min_saving_pct``; otherwise it starts now, with a reason
   ("saving 0.0 g below min_saving_g 1 g: started now"). A job that fits nowhere now stays
   held (that hold is about room, not carbon).
3. **Release rate limit.** At most ``max_releases_per_slot`` pending jobs start at slot 0
   (running work planned again and critical jobs do not count); the most deadline-urgent
   (the smallest latest on-time start) go first and the others move to slot 1, except a job
   that slot 1 would make late or that does not fit there: it starts now anyway. 0: no limit.

Every comparison uses the planner's grams (:func:`carbonshift.domain.job_carbon_g` on the
forecast). A rule whose thresholds are all 0 does nothing, so the defaults of the scenario
(all 0) keep old results; the controller and the hub default to 1 g and 1 %.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from carbonshift.domain import Assignment, ClusterName, Instance, JobId, Plan, job_carbon_g
from carbonshift.errors import InputError
from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.problem import arrays_of
from carbonshift.planning.types import PlanContext

__all__ = ["HoldOutcome", "HoldRule", "apply_hold_rule"]


@dataclass(frozen=True, slots=True)
class HoldRule:
    """Thresholds of the hold rules (module doc); all 0 switches them off."""

    min_saving_g: float = 0.0
    min_saving_pct: float = 0.0
    replan_min_improvement_g: float = 0.0
    replan_min_improvement_pct: float = 0.0
    max_releases_per_slot: int = 0

    def __post_init__(self) -> None:
        for name in (
            "min_saving_g",
            "min_saving_pct",
            "replan_min_improvement_g",
            "replan_min_improvement_pct",
        ):
            value = getattr(self, name)
            unit = "%" if name.endswith("_pct") else "g"
            if not value >= 0:
                raise InputError(f"{name} is {value!r} {unit}; it must be a number >= 0")
        if self.max_releases_per_slot < 0:
            raise InputError(
                f"max_releases_per_slot is {self.max_releases_per_slot}; give a whole number "
                ">= 0 (0: no limit)"
            )

    @property
    def holds_on_saving(self) -> bool:
        return self.min_saving_g > 0 or self.min_saving_pct > 0

    @property
    def has_hysteresis(self) -> bool:
        return self.replan_min_improvement_g > 0 or self.replan_min_improvement_pct > 0


@dataclass(frozen=True, slots=True)
class HoldOutcome:
    """The plan after the hold rules, and why each changed job changed."""

    plan: Plan
    reasons: Mapping[JobId, str]


def _pct(saving_g: float, base_g: float) -> float:
    return 100.0 * saving_g / base_g if base_g > 0 else 0.0


def _below(saving_g: float, base_g: float, min_g: float, min_pct: float, name: str) -> str | None:
    """Why ``saving_g`` does not pay (None when it does), naming the threshold."""
    if saving_g < min_g:
        return f"{saving_g:.1f} g below {name}_g {min_g:g} g"
    pct = _pct(saving_g, base_g)
    if pct < min_pct:
        return f"{pct:.1f} % below {name}_pct {min_pct:g} %"
    return None


def apply_hold_rule(
    instance: Instance,
    context: PlanContext | None,
    plan: Plan,
    rule: HoldRule,
    *,
    previous: Mapping[str, tuple[str, int]] | None = None,
    exempt: frozenset[str] = frozenset(),
    released_this_slot: int = 0,
) -> HoldOutcome:
    """Apply ``rule`` to ``plan`` (module doc). ``previous`` maps a job id to the cluster and
    start slot (relative to this round's slot 0) that an earlier round planned; ``exempt``
    jobs (running work planned again) do not count against the release limit;
    ``released_this_slot`` is what earlier passes in the same slot already released."""
    previous = previous or {}
    if not (rule.holds_on_saving or rule.has_hysteresis or rule.max_releases_per_slot):
        return HoldOutcome(plan, {})
    arrays = arrays_of(instance, context)
    ledger = CapacityLedger(arrays)
    job_index = {job.id: j for j, job in enumerate(instance.jobs)}
    cluster_index = {c.name: m for m, c in enumerate(instance.clusters)}
    starts: dict[JobId, tuple[int, int]] = {}
    for a in plan.assignments:
        j, m = job_index.get(a.job), cluster_index.get(a.cluster)
        if j is None or m is None:
            continue
        starts[a.job] = (m, a.start_slot)
        if 0 <= a.start_slot <= arrays.horizon_slots - int(arrays.runtime_slots[j]):
            ledger.place(j, m, a.start_slot)
    reasons: dict[JobId, str] = {}

    def grams(j: int, m: int, s: int) -> float:
        job = instance.jobs[j]
        return job_carbon_g(instance, job, instance.clusters[m], s)

    def placed(j: int, s: int) -> bool:
        return s >= 0 and s + int(arrays.runtime_slots[j]) <= arrays.horizon_slots

    def move(job_id: JobId, m: int, s: int) -> bool:
        """Move the job to (m, s) when it fits there; False leaves it where it was."""
        j = job_index[job_id]
        old_m, old_s = starts[job_id]
        if placed(j, old_s):
            _unplace(ledger, arrays.demand_units[j], old_m, old_s, int(arrays.runtime_slots[j]))
        if ledger.fits(j, m, s):
            ledger.place(j, m, s)
            starts[job_id] = (m, s)
            return True
        if placed(j, old_s):
            ledger.place(j, old_m, old_s)
        return False

    on_time = arrays.latest_on_time_start
    # 1. hysteresis: keep an earlier planned start unless the new one pays enough more
    if rule.has_hysteresis:
        for job_id, (m, s) in list(starts.items()):
            before = previous.get(job_id)
            if before is None or before[0] not in cluster_index:
                continue
            pm, ps = cluster_index[ClusterName(before[0])], max(0, before[1])
            j = job_index[job_id]
            if (pm, ps) == (m, s) or not arrays.allowed[j, pm]:
                continue
            if ps < arrays.release_slot[j] or (ps > on_time[j] and s <= on_time[j]):
                continue  # the earlier start is before release, or would now be late
            if ps + int(arrays.runtime_slots[j]) > arrays.horizon_slots:
                continue
            g_prev, g_new = grams(j, pm, ps), grams(j, m, s)
            why = _below(
                g_prev - g_new,
                g_prev,
                rule.replan_min_improvement_g,
                rule.replan_min_improvement_pct,
                "replan_min_improvement",
            )
            if why is not None and move(job_id, pm, ps):
                reasons[job_id] = f"kept its planned start: the new plan's saving {why}"
    # 2. minimum saving: start now unless holding saves enough
    if rule.holds_on_saving:
        for job_id, (m, s) in list(starts.items()):
            j = job_index[job_id]
            if s <= 0 or arrays.critical[j] or arrays.release_slot[j] > 0:
                continue  # starts now, is critical (already earliest), or cannot start now
            now_options = [
                (grams(j, int(c), 0), int(c))
                for c in range(arrays.n_clusters)
                if arrays.allowed[j, c]
                and int(arrays.runtime_slots[j]) <= arrays.horizon_slots
                and (ledger.fits(j, int(c), 0) or int(c) == m)
            ]
            if not now_options:
                continue
            g_planned = grams(j, m, s)
            for g_now, c in sorted(now_options):
                why = _below(
                    g_now - g_planned, g_now, rule.min_saving_g, rule.min_saving_pct, "min_saving"
                )
                if why is None:
                    break  # holding pays against the cleanest start now
                if move(job_id, c, 0):
                    reasons[job_id] = f"saving {why}: started now"
                    break
    # 3. release rate limit: the most urgent first, the rest one slot later when that is safe
    limit = rule.max_releases_per_slot
    if limit:
        now_jobs = [
            job_id
            for job_id, (_, s) in starts.items()
            if s == 0 and job_id not in exempt and not arrays.critical[job_index[job_id]]
        ]
        now_jobs.sort(key=lambda k: (int(on_time[job_index[k]]), k))
        for job_id in now_jobs[max(0, limit - released_this_slot) :]:
            j = job_index[job_id]
            m, _ = starts[job_id]
            if on_time[j] < 1 or not move(job_id, m, 1):
                continue  # deferring would make it late, or no room: it starts now anyway
            reasons[job_id] = (
                f"release rate limit: {limit} per slot, more urgent work first; "
                "planned for the next slot"
            )
    if not reasons:
        return HoldOutcome(plan, {})
    assignments = tuple(
        Assignment(a.job, instance.clusters[starts[a.job][0]].name, starts[a.job][1])
        if a.job in starts
        else a
        for a in plan.assignments
    )
    return HoldOutcome(replace(plan, assignments=assignments), reasons)


def _unplace(
    ledger: CapacityLedger, demand: npt.NDArray[np.float64], m: int, s: int, runtime: int
) -> None:
    """Give back what :meth:`CapacityLedger.place` took."""
    ledger.free_units[m, :, s : s + runtime] += demand[:, None]
