"""Hold only when it pays: the rules every online caller applies after the policy's plan.

docs/design/0002 ("Holding only when it pays"). A policy answers a start for every pending
job; holding a workload (starting it later than now) costs its user waiting, so the seam
keeps a later start only when it pays, in this order:

1. **Hysteresis.** A job that an earlier round planned to start at slot ``p`` keeps ``p``
   unless the new plan saves at least ``replan_min_improvement_g`` grams AND
   ``replan_min_improvement_pct`` % against it (and ``p`` is still on time and fits).
   Re-plans therefore do not move a planned start back and forth for crumbs. Jobs that the
   new plan swapped (each alone finds its ``p`` taken by the other) go back together. The
   jobs are taken in the order of the policy's plan (its assignments), so one plan always
   gives one result; it matters only where two jobs compete for the same room (on Caspian's
   day, largest saving first gave the same plans: bench/online.md, 2026-11-28). A critical job
   is never put back to a later start than the new plan's; a job is never put back where it
   would be late, before its release, past the horizon or in the room the policy keeps
   for work still to arrive.
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
from carbonshift.planning.problem import InstanceArrays, Starts, arrays_of, carbon_g
from carbonshift.planning.types import PlanContext

__all__ = ["HoldOutcome", "HoldRule", "PlanMove", "apply_hold_rule", "plan_moves"]


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


@dataclass(frozen=True, slots=True)
class PlanMove:
    """A pending job whose planned (cluster, start slot) a re-plan changed; slots are this
    round's (slot 0 is now). ``gain_g``: the grams the move saves by this round's forecast
    (the earlier start's grams minus the new start's; negative: the move costs)."""

    job: JobId
    from_cluster: ClusterName
    from_slot: int
    to_cluster: ClusterName
    to_slot: int
    gain_g: float


def plan_moves(
    instance: Instance,
    context: PlanContext | None,
    plan: Plan,
    previous: Mapping[str, tuple[str, int]],
) -> tuple[PlanMove, ...]:
    """The jobs of ``plan`` whose (cluster, start slot) differs from ``previous`` (job id ->
    the cluster and start slot an earlier round planned, relative to this round's slot 0),
    each with the grams the move is worth by this round's forecast (one vectorised call:
    the policies' ``c_ijs``). An earlier start before slot 0 is counted from slot 0, as the
    hysteresis compares it; one on a cluster no longer offered is a move worth NaN."""
    job_index = {job.id: j for j, job in enumerate(instance.jobs)}
    cluster_index = {c.name: m for m, c in enumerate(instance.clusters)}
    changed: list[tuple[Assignment, str, int]] = []
    for a in plan.assignments:
        before = previous.get(a.job)
        if before is None or a.job not in job_index or a.cluster not in cluster_index:
            continue
        if (before[0], max(0, before[1])) != (a.cluster, a.start_slot):
            changed.append((a, before[0], max(0, before[1])))
    if not changed:  # most rounds: no arrays to build
        return ()
    arrays = arrays_of(instance, context)
    known = [(a, pc, ps) for a, pc, ps in changed if ClusterName(pc) in cluster_index]
    g_before = _grams(
        instance,
        arrays,
        [(job_index[a.job], cluster_index[ClusterName(pc)], ps) for a, pc, ps in known],
    )
    g_after = _grams(
        instance,
        arrays,
        [(job_index[a.job], cluster_index[a.cluster], a.start_slot) for a, _, _ in known],
    )
    gains = {a.job: float(b - n) for (a, _, _), b, n in zip(known, g_before, g_after, strict=True)}
    return tuple(
        PlanMove(
            a.job, ClusterName(pc), ps, a.cluster, a.start_slot, gains.get(a.job, float("nan"))
        )
        for a, pc, ps in changed
    )


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
    reserved_units: npt.NDArray[np.float64] | None = None,
) -> HoldOutcome:
    """Apply ``rule`` to ``plan`` (module doc). ``previous`` maps a job id to the cluster and
    start slot (relative to this round's slot 0) that an earlier round planned; ``exempt``
    jobs (running work planned again) do not count against the release limit;
    ``released_this_slot`` is what earlier passes in the same slot already released;
    ``reserved_units`` (:attr:`PolicyResult.reserved_units`), the room the plan keeps for
    work still to arrive: the hysteresis moves no job back into it.

    Every gram it compares comes from one vectorised call per rule
    (:func:`carbonshift.planning.problem.carbon_g`, the policies' ``c_ijs``); the loops over
    jobs only move jobs, in plan order, through the capacity ledger."""
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
    _place_all(ledger, arrays, [(job_index[k], m, s) for k, (m, s) in starts.items()])
    reasons: dict[JobId, str] = {}

    def grams(triples: list[tuple[int, int, int]]) -> npt.NDArray[np.float64]:
        """Grams of each (job, cluster, start slot) (see the function doc)."""
        return _grams(instance, arrays, triples)

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
        reserve = _reserve(reserved_units, ledger.free_units.shape)
        ledger.free_units -= reserve  # the plan's room for future work is not free to go back to
        keep: list[tuple[JobId, int, int, int, int, int]] = []
        blocked: list[tuple[JobId, int, int, str]] = []  # (job, earlier cluster, start, why)
        for job_id, (m, s) in starts.items():
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
            if arrays.critical[j] and ps > s:
                continue  # a critical job is never moved later
            keep.append((job_id, j, pm, ps, m, s))
        g_prev = grams([(j, pm, ps) for _, j, pm, ps, _, _ in keep])
        g_new = grams([(j, m, s) for _, j, _, _, m, s in keep])
        # in the plan's order (module doc)
        for (job_id, _, pm, ps, _, _), before_g, new_g in zip(keep, g_prev, g_new, strict=True):
            why = _below(
                float(before_g - new_g),
                float(before_g),
                rule.replan_min_improvement_g,
                rule.replan_min_improvement_pct,
                "replan_min_improvement",
            )
            if why is None:
                continue
            if move(job_id, pm, ps):
                reasons[job_id] = f"kept its planned start: the new plan's saving {why}"
            else:
                blocked.append((job_id, pm, ps, why))
        # jobs that swapped starts block each other one at a time: move them back together
        for job_id, why in _move_back_together(ledger, arrays, job_index, starts, blocked):
            reasons[job_id] = f"kept its planned start: the new plan's saving {why}"
        ledger.free_units += reserve
    # 2. minimum saving: start now unless holding saves enough
    if rule.holds_on_saving:
        later = [
            (job_id, job_index[job_id], m, s)
            for job_id, (m, s) in starts.items()
            if s > 0
            and not arrays.critical[job_index[job_id]]
            and arrays.release_slot[job_index[job_id]] <= 0
        ]  # else it starts now, is critical (already earliest), or cannot start now
        g_planned = grams([(j, m, s) for _, j, m, s in later])
        rows = np.asarray([j for _, j, _, _ in later], dtype=np.int64)
        g_now = _grams_now(instance, arrays)[rows]  # (jobs of ``later``, clusters)
        for (job_id, j, m, _), planned_g, now_g in zip(later, g_planned, g_now, strict=True):
            if int(arrays.runtime_slots[j]) > arrays.horizon_slots:
                continue
            # the clusters where it could start now, least grams first (ties: listed first)
            fits_now = ledger.fits_now_everywhere(j)
            fits_now[m] = True
            for c in np.lexsort((np.arange(arrays.n_clusters), now_g)):
                c = int(c)
                if not (arrays.allowed[j, c] and fits_now[c]):
                    continue
                why = _below(
                    float(now_g[c] - planned_g),
                    float(now_g[c]),
                    rule.min_saving_g,
                    rule.min_saving_pct,
                    "min_saving",
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


def _reserve(
    reserved_units: npt.NDArray[np.float64] | None, shape: tuple[int, ...]
) -> npt.NDArray[np.float64]:
    """``reserved_units`` cut or padded with zeros to the ledger's (clusters, resources,
    slots); zeros when there is none."""
    out = np.zeros(shape)
    if reserved_units is not None:
        c, r, s = (min(a, b) for a, b in zip(shape, reserved_units.shape, strict=True))
        out[:c, :r, :s] = reserved_units[:c, :r, :s]
    return out


def _unplace(
    ledger: CapacityLedger, demand: npt.NDArray[np.float64], m: int, s: int, runtime: int
) -> None:
    """Give back what :meth:`CapacityLedger.place` took."""
    ledger.free_units[m, :, s : s + runtime] += demand[:, None]


def _move_back_together(
    ledger: CapacityLedger,
    arrays: InstanceArrays,
    job_index: Mapping[JobId, int],
    starts: dict[JobId, tuple[int, int]],
    blocked: list[tuple[JobId, int, int, str]],
    *,
    tries: int = 4,
) -> list[tuple[JobId, str]]:
    """Move ``blocked`` jobs (job, earlier cluster, earlier start, why) back to their earlier
    starts as one batch: each, alone, found its earlier start taken by another that the new
    plan moved there (two jobs that swapped starts, or a longer ring).

    All leave the ledger, each goes back where it fits, the rest return to the new plan's
    start. When one of the rest finds that start taken by a job that went back, the batch is
    undone and tried again without the jobs that took it (at most ``tries`` times), so
    capacity holds and every job keeps a start. Answers the (job, why) that moved back;
    ``starts`` and ``ledger`` follow.
    """
    runtime = arrays.runtime_slots
    inside = ledger.free_units.shape[2]

    def fits_horizon(j: int, s: int) -> bool:
        return s >= 0 and s + int(runtime[j]) <= inside

    batch = list(blocked)
    for _ in range(tries):
        if not batch:
            return []
        saved_units = ledger.free_units.copy()
        saved = {job_id: starts[job_id] for job_id, _, _, _ in batch}
        for job_id, (m, s) in saved.items():
            j = job_index[job_id]
            if fits_horizon(j, s):
                _unplace(ledger, arrays.demand_units[j], m, s, int(runtime[j]))
        back: list[tuple[JobId, str]] = []
        for job_id, pm, ps, why in batch:
            j = job_index[job_id]
            if ledger.fits(j, pm, ps):
                ledger.place(j, pm, ps)
                starts[job_id] = (pm, ps)
                back.append((job_id, why))
        moved_back = {job_id for job_id, _ in back}
        stuck: list[tuple[int, int, int]] = []  # (cluster, first slot, end slot) not kept
        for job_id, (m, s) in saved.items():
            j = job_index[job_id]
            if job_id in moved_back or not fits_horizon(j, s):
                continue
            if ledger.fits(j, m, s):
                ledger.place(j, m, s)
            else:
                stuck.append((m, s, s + int(runtime[j])))
        if not stuck:
            return back
        ledger.free_units[...] = saved_units  # undo, and leave out whoever took those starts
        starts.update(saved)
        takers = {
            job_id
            for job_id, pm, ps, _ in batch
            if job_id in moved_back
            and any(
                pm == m and ps < end and first < ps + int(runtime[job_index[job_id]])
                for m, first, end in stuck
            )
        }
        batch = [b for b in batch if b[0] not in takers]
    return []


def _place_all(
    ledger: CapacityLedger, arrays: InstanceArrays, triples: list[tuple[int, int, int]]
) -> None:
    """:meth:`CapacityLedger.place` every (job, cluster, start slot) whose run fits the
    horizon, at once (a difference array summed over slots, not one call per job)."""
    runtime = arrays.runtime_slots
    keep = [(j, m, s) for j, m, s in triples if 0 <= s <= arrays.horizon_slots - int(runtime[j])]
    if not keep:
        return
    job, cluster, start = (np.asarray(x, dtype=np.int64) for x in zip(*keep, strict=True))
    n_clusters, n_resources, horizon = ledger.free_units.shape
    change = np.zeros((n_clusters, horizon + 1, n_resources))
    demand = arrays.demand_units[job]
    np.add.at(change, (cluster, start), demand)
    np.add.at(change, (cluster, start + runtime[job]), -demand)
    ledger.free_units -= np.cumsum(change, axis=1)[:, :horizon, :].transpose(0, 2, 1)


def _grams(
    instance: Instance, arrays: InstanceArrays, triples: list[tuple[int, int, int]]
) -> npt.NDArray[np.float64]:
    """Grams of each (job, cluster, start slot): ``c_ijs`` of the policies, in one call."""
    if not triples:
        return np.zeros(0)
    job, cluster, start = (np.asarray(x, dtype=np.int64) for x in zip(*triples, strict=True))
    return _grams_of(instance, arrays, job, cluster, start)


def _grams_of(
    instance: Instance,
    arrays: InstanceArrays,
    job: npt.NDArray[np.int64],
    cluster: npt.NDArray[np.int64],
    start: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]:
    """:func:`_grams` on parallel arrays; a run past the horizon counts the slots inside it,
    as :func:`job_carbon_g`."""
    out = np.zeros(job.shape[0])
    inside = (start >= 0) & (start + arrays.runtime_slots[job] <= arrays.horizon_slots)
    out[inside] = carbon_g(arrays, Starts(job[inside], cluster[inside], start[inside]))
    for i in np.flatnonzero(~inside):
        out[i] = job_carbon_g(
            instance,
            instance.jobs[int(job[i])],
            instance.clusters[int(cluster[i])],
            max(0, int(start[i])),
        )
    return out


def _grams_now(instance: Instance, arrays: InstanceArrays) -> npt.NDArray[np.float64]:
    """Grams of every job started at slot 0 on every cluster, shape (jobs, clusters)."""
    n, m = arrays.n_jobs, arrays.n_clusters
    job = np.repeat(np.arange(n, dtype=np.int64), m)
    cluster = np.tile(np.arange(m, dtype=np.int64), n)
    return _grams_of(instance, arrays, job, cluster, np.zeros(n * m, dtype=np.int64)).reshape(n, m)
