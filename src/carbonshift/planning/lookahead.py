"""Room for the work that has not arrived yet: phantom jobs from the demand forecast.

An online round plans only the work that is pending. A clean slot it fills is then gone for
the work that arrives later, which a planner that knew the arrivals would have put there:
on Caspian's day the online ``carbonshift`` keeps about two thirds of its clairvoyant
plan's saving (bench/online.md). The capacity of the current slot, on the other hand, is
usable by nothing but the pending work.

:func:`with_phantoms` adds, for each slot of the horizon with forecast arriving demand
(``Instance.future_demand``, of the first resource, in units arriving in that slot),
phantom jobs shaped like the pending work as it arrived (its median runtime, its median
window from its first planning slot to its deadline, pieces of its median demand), scaled
by ``weight``, and released as that work will be: at the slot boundary after it arrives.
The policy plans them beside the real jobs, so the real ones leave room where the phantoms
are cheapest; :func:`real_part` keeps only the real jobs of the answer. The plan is as good
as the demand forecast: with the arrivals known (``oracle``) it keeps more of the
clairvoyant saving, with a forecast that expects work that never comes it keeps less
(figures: bench/online.md).
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Mapping, Set
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from carbonshift.domain import Instance, Job, JobId
from carbonshift.errors import InputError
from carbonshift.formats.plan import PlanBound
from carbonshift.planning.lagrangian import classes_of, dual_ascent, shape_costs, unit_grams
from carbonshift.planning.problem import arrays_of
from carbonshift.planning.types import PlanContext, PolicyResult

__all__ = [
    "PHANTOM_PREFIX",
    "PHANTOM_SHAPES",
    "planned_with_reserve",
    "real_bound",
    "real_part",
    "with_phantoms",
]

#: job ids of phantom jobs start with this (a real id that does is refused)
PHANTOM_PREFIX = "~future-"


#: how phantoms are shaped (``reserve_shapes``): ``median``, one shape per slot, the pending
#: work's medians; ``sample``, the shapes of the pending jobs themselves, in turn;
#: ``arrivals``, the same shapes weighted back to the mix in which work arrives (a pending
#: job by 1 / (its slack as it arrived + 1), the rounds it can stay pending at most);
#: ``stable``, ``sample``'s shapes, each phantom's taken by rendezvous hashing on (the slot
#: it arrives in on the caller's axis, its piece, the job's id), so it keeps its shape from
#: round to round while that job is pending
PHANTOM_SHAPES = ("median", "sample", "arrivals", "stable")


def with_phantoms(
    instance: Instance,
    weight: float,
    waited_slots: Mapping[str, int] | None = None,
    *,
    shapes: str = "median",
    origin_slot: int = 0,
) -> Instance:
    """``instance`` plus phantom jobs for ``weight`` x its forecast future demand.

    Unchanged when there is no forecast, no pending job or ``weight`` is 0. The demand
    forecast for slot ``k`` arrives during ``[k, k + 1)`` (workloads/demand.py), after this
    round, so its phantoms are released at slot ``k + 1``, the first round that will see
    them (as a real arrival is: the slot boundary after it). A pending job's window as it
    arrived is its release to deadline plus the slots it has already waited
    (``waited_slots``, :class:`~carbonshift.planning.types.PlanContext`).

    ``shapes="median"``: every phantom has the pending jobs' median runtime and median
    window as they arrived, and a piece of their median demand of the first resource; it may
    run on any cluster. ``shapes="sample"``: the forecast units of each slot are split into
    phantoms shaped as the pending jobs are, taken in turn across the slots (each job's
    runtime, window as it arrived, demand of every resource in its proportions, allowed
    clusters), so the arriving units spread over shapes as the pending units do, long and
    short, tight and loose. ``shapes="arrivals"``: as ``sample``, but the pending jobs are
    not the mix of the work that arrives: a job stays pending for up to its slack as it
    arrived (window minus runtime) + 1 rounds, so loose and long jobs (in the Caspian
    family the slack grows with the runtime) are over-represented among them, and the
    phantoms with them. Each shape is taken in proportion to 1 / (slack + 1) (a smooth
    weighted round robin: equal weights give ``sample``'s turn), the inverse of how long it
    can be seen pending. ``shapes="stable"``: ``sample``'s shapes, but piece ``c`` of the
    units arriving in slot ``k`` takes the shape of the pending job with the highest hash
    of (``origin_slot + k``, ``c``, its id) (rendezvous hashing, Thaler and Ravishankar
    1998): the same phantom, planned again a round later (``origin_slot`` one more, ``k``
    one less), keeps its shape unless the job whose shape it took has left, and a job that
    arrives takes over only the pieces it wins. ``sample``'s turn restarts at slot 1 each
    round, so one job starting reshuffles every phantom's shape, and the plan around them
    with it (bench/online.md, branch ``online2``). Each shape is still taken with equal
    chance per piece, as ``sample``'s in turn. Phantoms are never critical.
    """
    if not 0.0 <= weight <= 10.0 or not np.isfinite(weight):
        raise InputError(
            f"reserve_future_demand {weight!r} is outside 0-10; give the share of the forecast "
            "demand to reserve room for (0 off, 1 all of it)"
        )
    if shapes not in PHANTOM_SHAPES:
        raise InputError(
            f"reserve_shapes {shapes!r} is not known; give one of {', '.join(PHANTOM_SHAPES)}"
        )
    resource = instance.resources[0]
    jobs = instance.jobs
    future = (instance.future_demand or {}).get(resource)
    if weight == 0.0 or not future or not jobs:
        return instance
    clash = [job.id for job in jobs if job.id.startswith(PHANTOM_PREFIX)]
    if clash:
        raise InputError(
            f"job id {clash[0]!r} starts with {PHANTOM_PREFIX!r}, which names phantom jobs; "
            "rename it or plan without reserve_future_demand"
        )
    waited = waited_slots or {}
    horizon = instance.grid.horizon_slots
    windows = [job.deadline_slot - job.release_slot + waited.get(job.id, 0) for job in jobs]
    samples = [
        (job, window)
        for job, window in zip(jobs, windows, strict=True)
        if job.demand.get(resource, 0.0) > 0
    ]
    if shapes == "median" or not samples:
        runtime = max(1, round(float(np.median([job.runtime_slots for job in jobs]))))
        window = round(float(np.median(windows)))
        demands = [job.demand.get(resource, 0.0) for job in jobs]
        piece = float(np.median([d for d in demands if d > 0] or [1.0]))
        median = Job(
            id=JobId("median"),
            demand={resource: piece},
            runtime_slots=runtime,
            deadline_slot=runtime,
        )
        samples = [(median, window)]
    next_shape = _shape_turns(
        [
            1.0 / (1 + max(0, w - job.runtime_slots)) if shapes == "arrivals" else 1.0
            for job, w in samples
        ]
    )
    stable = (
        _StableShapes([str(job.id) for job, _ in samples], origin_slot)
        if shapes == "stable"
        else None
    )
    phantoms: list[Job] = []
    for slot in range(1, horizon):
        left = float(future[slot - 1]) * weight  # arrives in the slot before it is planned
        count = 0
        while left > 1e-9:
            pick = next_shape() if stable is None else stable.pick(slot, count)
            shape, window = samples[pick]
            run = min(shape.runtime_slots, horizon - slot)
            unit = shape.demand[resource]
            amount = min(left, unit)
            left -= amount
            phantoms.append(
                Job(
                    id=JobId(f"{PHANTOM_PREFIX}{slot}-{count}"),
                    demand={
                        r: amount if r == resource else v * amount / unit
                        for r, v in shape.demand.items()
                        if v > 0
                    },
                    runtime_slots=run,
                    deadline_slot=min(horizon, slot + max(window, run)),
                    release_slot=slot,
                    allowed_clusters=shape.allowed_clusters,
                )
            )
            count += 1
    return replace(instance, jobs=(*jobs, *phantoms))


class _StableShapes:
    """Rendezvous hashing (highest random weight) of phantom pieces onto pending jobs:
    piece ``c`` of slot ``k`` takes the job whose hash of (``origin_slot + k``, ``c``, id)
    is highest. Ids hash by CRC-32 (the same in every process, unlike ``hash``), mixed by
    SplitMix64's finaliser (Steele, Lea and Flood 2014)."""

    _GOLDEN = np.uint64(0x9E3779B97F4A7C15)

    def __init__(self, ids: list[str], origin_slot: int) -> None:
        self._ids = np.asarray([zlib.crc32(i.encode()) for i in ids], dtype=np.uint64)
        self._origin = origin_slot

    def pick(self, slot: int, piece: int) -> int:
        """The index (into the ids) of the shape of piece ``piece`` of slot ``slot``."""
        key = _mix64(np.asarray([((self._origin + slot) << 20) ^ piece], dtype=np.uint64))
        return int(np.argmax(_mix64(self._ids ^ key)))


def _mix64(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finaliser: every input bit moves about half the output bits."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _shape_turns(weights: list[float]) -> Callable[[], int]:
    """The index of the next shape, each taken in proportion to its weight, evenly spread
    (smooth weighted round robin); equal weights take 0, 1, ..., n - 1 in turn."""
    turn = itertools.count()
    if len(set(weights)) == 1:  # in turn, exactly (no float drift of the credits)
        return lambda: next(turn) % len(weights)
    share = np.asarray(weights, dtype=np.float64)
    share /= share.sum()
    credit = np.zeros_like(share)

    def next_shape() -> int:
        credit[:] += share
        pick = int(np.argmax(credit))
        credit[pick] -= 1.0
        return pick

    return next_shape


def real_part(result: PolicyResult, real: Set[JobId]) -> PolicyResult:
    """``result`` without its phantom jobs. Its bound was for the instance with phantoms,
    which is no bound for the real one, so it is left out."""
    plan = result.plan
    return replace(
        result,
        plan=replace(
            plan,
            assignments=tuple(a for a in plan.assignments if a.job in real),
            unscheduled=tuple(job for job in plan.unscheduled if job in real),
        ),
        notes={job: note for job, note in result.notes.items() if job in real},
        bound=None,
    )


def real_bound(
    instance: Instance, context: PlanContext | None, result: PolicyResult, *, iterations: int
) -> PlanBound:
    """A certified lower bound for ``result``'s plan of ``instance`` (its real jobs): the
    best value of ``iterations`` steps of the Lagrangian dual ascent
    (:func:`~carbonshift.planning.lagrangian.dual_ascent`) on the operational + embodied
    grams, and the plan's gap to it. As the ``carbonshift`` policy reports it: no bound
    (``None``) unless the plan puts every job on time."""
    arrays = arrays_of(instance, context)
    classes = classes_of(arrays)
    full = unit_grams(arrays, embodied=True)
    table = shape_costs(classes, full)
    index = {job.id: j for j, job in enumerate(instance.jobs)}
    cluster_index = {cluster.name: m for m, cluster in enumerate(instance.clusters)}
    plan_g, on_time = 0.0, len(result.plan.assignments) == arrays.n_jobs
    for assignment in result.plan.assignments:
        j, m = index[assignment.job], cluster_index[assignment.cluster]
        start = assignment.start_slot
        plan_g += float(classes.weight[j] * table[classes.shape[j], m, start])
        on_time = on_time and start + int(arrays.runtime_slots[j]) <= int(arrays.deadline_slot[j])
    if not (on_time and classes.every_job_can_be_on_time) or not np.isfinite(plan_g):
        return PlanBound.of(None, plan_g)
    dual = dual_ascent(
        classes, full, arrays.free_units, upper_g=plan_g, iterations=max(iterations, 1)
    )
    # taken down as the policy's own bound is, so that float rounding never lifts it
    return PlanBound.of(max(0.0, dual.bound_g * (1 - 1e-9)), plan_g)


def planned_with_reserve(
    instance: Instance,
    weight: float,
    plan: Callable[[Instance], PolicyResult],
    *,
    context: PlanContext | None = None,
    bound_iterations: int | None = None,
    shapes: str = "median",
) -> PolicyResult:
    """``plan`` run on ``instance`` with phantoms for ``weight`` x its forecast demand, and
    answered for the real jobs only; ``plan(instance)`` itself when that adds nothing. With
    ``bound_iterations`` the answer carries :func:`real_bound` (the bound of ``plan``'s own
    answer was for the instance with phantoms).

    The phantoms may move real work, never make it later: where the answer leaves a real job
    late or out, ``plan(instance)`` is made too and the one with less lateness (jobs left
    out, then slots late) is kept, the plan without phantoms on a tie. (The policy weighs a
    phantom's lateness as a real job's; in a congested round it made real jobs late to keep
    phantoms on time: examples/own-data, 81.7 % of deadlines met without the reserve, 73.3 %
    with it.)"""
    augmented = with_phantoms(
        instance,
        weight,
        None if context is None else context.waited_slots,
        shapes=shapes,
        origin_slot=0 if context is None else context.origin_slot,
    )
    if augmented is instance:
        return plan(instance)
    answer = plan(augmented)
    real = replace(
        real_part(answer, {job.id for job in instance.jobs}),
        reserved_units=_phantom_units(augmented, answer, len(instance.jobs)),
    )
    behind = _lateness(instance, real)
    if behind > (0, 0):
        plain = plan(instance)
        if _lateness(instance, plain) <= behind:
            return plain
    if bound_iterations is None:
        return real
    return replace(real, bound=real_bound(instance, context, real, iterations=bound_iterations))


def _phantom_units(
    augmented: Instance, result: PolicyResult, n_real: int
) -> npt.NDArray[np.float64]:
    """Units per (cluster, resource, slot) that ``result`` places phantoms on (the jobs of
    ``augmented`` after its first ``n_real``): the room the plan keeps for future work."""
    grid = augmented.grid
    cluster = {c.name: m for m, c in enumerate(augmented.clusters)}
    resource = {r: k for k, r in enumerate(augmented.resources)}
    phantoms = {job.id: job for job in augmented.jobs[n_real:]}
    units = np.zeros((len(augmented.clusters), len(augmented.resources), grid.horizon_slots))
    for a in result.plan.assignments:
        job = phantoms.get(a.job)
        if job is None or a.cluster not in cluster:
            continue
        stop = min(grid.horizon_slots, a.start_slot + job.runtime_slots)
        for r, amount in job.demand.items():
            units[cluster[a.cluster], resource[r], max(0, a.start_slot) : stop] += amount
    return units


def _lateness(instance: Instance, result: PolicyResult) -> tuple[int, int]:
    """(jobs of ``instance`` the plan leaves out, slots late summed over the rest)."""
    by_id = {job.id: job for job in instance.jobs}
    placed = {a.job for a in result.plan.assignments}
    late = sum(
        max(0, a.start_slot + by_id[a.job].runtime_slots - by_id[a.job].deadline_slot)
        for a in result.plan.assignments
        if a.job in by_id
    )
    return len(by_id.keys() - placed), late
