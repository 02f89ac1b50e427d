"""The workload vocabulary: jobs in real time (hours since the workload's start), before slots.

A :class:`WorkloadJob` is one job as a trace or a generator gives it: when it was submitted,
its exact length, what it asks for, its deadline (absolute hours since the workload's start,
or ``None``) and whether it is critical. A :class:`Workload` holds many of them as columns
(numpy arrays), so that 100k-job traces stay cheap; iterating it yields :class:`WorkloadJob`.

Slots appear only when a workload is turned into planning jobs (:mod:`.convert`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from carbonshift.errors import InputError

__all__ = ["ReadReport", "RowProblem", "Workload", "WorkloadJob"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadJob:
    """One job in real time.

    ``submit_h`` is hours since the workload's start; ``runtime_h`` is the exact length in
    hours (> 0); ``demand`` is units per resource (at least one > 0), held for the whole run;
    ``deadline_h`` is the absolute time (hours since start) by which it should have finished,
    or ``None`` when the source sets none. A critical job should start as soon as it can.
    """

    id: str
    submit_h: float
    runtime_h: float
    demand: Mapping[str, float]
    deadline_h: float | None = None
    critical: bool = False
    user: str | None = None
    queue: str | None = None

    def __post_init__(self) -> None:
        where = f"workload job {self.id!r}"
        if not (math.isfinite(self.submit_h) and self.submit_h >= 0):
            raise InputError(
                f"submit_h is {self.submit_h!r} h for {where}; it must be a finite number of "
                "hours >= 0 since the workload's start"
            )
        if not (math.isfinite(self.runtime_h) and self.runtime_h > 0):
            raise InputError(
                f"runtime_h is {self.runtime_h!r} h for {where}; it must be a finite number "
                "of hours > 0"
            )
        if self.deadline_h is not None and not math.isfinite(self.deadline_h):
            raise InputError(
                f"deadline_h is {self.deadline_h!r} h for {where}; give a finite number of "
                "hours since the workload's start, or None for no deadline"
            )
        for resource, amount in self.demand.items():
            if not (math.isfinite(amount) and amount >= 0):
                raise InputError(
                    f"demand[{resource!r}] is {amount!r} units for {where}; it must be a "
                    "finite number >= 0"
                )
        if not any(amount > 0 for amount in self.demand.values()):
            raise InputError(f"{where} has no demand > 0; give it at least one resource amount")


@dataclass(frozen=True, slots=True)
class RowProblem:
    """Why one input row was skipped: where it is, which column, the raw value and the reason."""

    line: int
    column: str
    value: str
    reason: str

    def describe(self, path: str) -> str:
        """One line naming file, line, column, value and reason."""
        return f"{path}:{self.line}: column {self.column!r} value {self.value!r}: {self.reason}"


@dataclass(frozen=True, slots=True)
class ReadReport:
    """What a reader kept and what it left out, and why.

    ``skipped`` counts rows left out per reason (``"malformed"`` for bad rows in lenient
    mode; ``"cancelled"``, ``"zero-length"``, ``"unknown-runtime"``... for rows that are
    well-formed but describe no runnable job). ``problems`` lists the malformed rows (at most
    the first 1,000; ``skipped["malformed"]`` has the full count).
    """

    path: str = ""
    rows_read: int = 0
    jobs_kept: int = 0
    skipped: Mapping[str, int] = field(default_factory=dict)
    problems: tuple[RowProblem, ...] = ()
    header: Mapping[str, str] = field(default_factory=dict)

    @property
    def skipped_total(self) -> int:
        """Rows left out for any reason."""
        return sum(self.skipped.values())


def _floats(array: npt.ArrayLike) -> FloatArray:
    out: FloatArray = np.array(array, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


def _bools(array: npt.ArrayLike) -> BoolArray:
    out: BoolArray = np.array(array, dtype=np.bool_, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, slots=True, eq=False)
class Workload:
    """Jobs as columns, sorted by submission time (ties keep their input order).

    ``deadline_h`` holds NaN where a job has no deadline. ``demand[k]`` has one value per job
    for every resource ``k`` in ``resources``. ``start`` is the UTC moment of ``submit_h = 0``
    when the source says it (an SWF header's UnixStartTime, a GWF's first submit time).
    ``source`` says where the jobs came from (a path, or a generator and its parameters).
    Arrays are read-only; build a new workload to change one.
    """

    ids: tuple[str, ...]
    submit_h: FloatArray
    runtime_h: FloatArray
    demand: Mapping[str, FloatArray]
    deadline_h: FloatArray
    critical: BoolArray
    resources: tuple[str, ...]
    source: str = ""
    start: datetime | None = None
    users: tuple[str | None, ...] | None = None
    queues: tuple[str | None, ...] | None = None
    report: ReadReport = field(default_factory=ReadReport)

    def __post_init__(self) -> None:
        n = len(self.ids)
        if not self.resources:
            raise InputError("a workload needs at least one resource name, like ('gpu',)")
        if set(self.demand) != set(self.resources):
            raise InputError(
                f"workload demand columns {sorted(self.demand)} differ from resources "
                f"{list(self.resources)}; give one demand column per resource"
            )
        columns: dict[str, Sized] = {
            "submit_h": self.submit_h,
            "runtime_h": self.runtime_h,
            "deadline_h": self.deadline_h,
            "critical": self.critical,
            **{f"demand[{k!r}]": v for k, v in self.demand.items()},
        }
        if self.users is not None:
            columns["users"] = self.users
        if self.queues is not None:
            columns["queues"] = self.queues
        for name, column in columns.items():
            if len(column) != n:
                raise InputError(
                    f"workload column {name} has {len(column)} values for {n} job ids; give "
                    "one value per job"
                )

    @classmethod
    def from_columns(
        cls,
        *,
        ids: Sequence[str],
        submit_h: npt.ArrayLike,
        runtime_h: npt.ArrayLike,
        demand: Mapping[str, npt.ArrayLike],
        deadline_h: npt.ArrayLike | None = None,
        critical: npt.ArrayLike | None = None,
        source: str = "",
        start: datetime | None = None,
        users: Sequence[str | None] | None = None,
        queues: Sequence[str | None] | None = None,
        report: ReadReport | None = None,
        validate: bool = True,
    ) -> Workload:
        """Build a workload from columns, sort it by submission time and check every value."""
        submit = np.asarray(submit_h, dtype=np.float64)
        n = len(submit)
        runtime = np.asarray(runtime_h, dtype=np.float64)
        deadline = (
            np.full(n, np.nan) if deadline_h is None else np.asarray(deadline_h, dtype=np.float64)
        )
        crit = np.zeros(n, dtype=bool) if critical is None else np.asarray(critical, dtype=bool)
        dem = {k: np.asarray(v, dtype=np.float64) for k, v in demand.items()}
        if len(ids) != n or any(len(v) != n for v in (runtime, deadline, crit, *dem.values())):
            raise InputError(
                f"workload columns have different lengths ({len(ids)} ids, {n} submit times); "
                "give one value per job in every column"
            )
        if validate:
            _check_columns(ids, submit, runtime, deadline, dem)
        order = np.argsort(submit, kind="stable")
        sorted_already = bool(np.all(order == np.arange(n)))

        def pick(values: Sequence[str | None] | None) -> tuple[str | None, ...] | None:
            if values is None:
                return None
            return tuple(values) if sorted_already else tuple(values[i] for i in order)

        id_tuple = tuple(ids) if sorted_already else tuple(ids[i] for i in order)
        return cls(
            ids=id_tuple,
            submit_h=_floats(submit[order]),
            runtime_h=_floats(runtime[order]),
            demand={k: _floats(v[order]) for k, v in dem.items()},
            deadline_h=_floats(deadline[order]),
            critical=_bools(crit[order]),
            resources=tuple(dem),
            source=source,
            start=start,
            users=pick(users),
            queues=pick(queues),
            report=report if report is not None else ReadReport(jobs_kept=n),
        )

    @classmethod
    def from_jobs(
        cls,
        jobs: Iterable[WorkloadJob],
        *,
        resources: Sequence[str] | None = None,
        source: str = "",
        start: datetime | None = None,
    ) -> Workload:
        """Build a workload from job objects; ``resources`` defaults to every resource named."""
        job_list = list(jobs)
        names = (
            list(resources)
            if resources is not None
            else sorted({k for job in job_list for k in job.demand})
        )
        for job in job_list:
            unknown = set(job.demand) - set(names)
            if unknown:
                raise InputError(
                    f"workload job {job.id!r} asks for resources {sorted(unknown)} that are not "
                    f"in resources {names}; add them to resources"
                )
        has_users = any(job.user is not None for job in job_list)
        has_queues = any(job.queue is not None for job in job_list)
        return cls.from_columns(
            ids=[job.id for job in job_list],
            submit_h=[job.submit_h for job in job_list],
            runtime_h=[job.runtime_h for job in job_list],
            demand={k: [job.demand.get(k, 0.0) for job in job_list] for k in names},
            deadline_h=[np.nan if job.deadline_h is None else job.deadline_h for job in job_list],
            critical=[job.critical for job in job_list],
            source=source,
            start=start,
            users=[job.user for job in job_list] if has_users else None,
            queues=[job.queue for job in job_list] if has_queues else None,
            validate=False,  # each WorkloadJob checked itself
        )

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[WorkloadJob]:
        for i in range(len(self.ids)):
            yield self.job(i)

    def job(self, index: int) -> WorkloadJob:
        """The ``index``-th job (in submission order) as a :class:`WorkloadJob`."""
        deadline = float(self.deadline_h[index])
        return WorkloadJob(
            id=self.ids[index],
            submit_h=float(self.submit_h[index]),
            runtime_h=float(self.runtime_h[index]),
            demand={k: float(v[index]) for k, v in self.demand.items()},
            deadline_h=None if math.isnan(deadline) else deadline,
            critical=bool(self.critical[index]),
            user=None if self.users is None else self.users[index],
            queue=None if self.queues is None else self.queues[index],
        )

    def take(self, mask_or_index: npt.ArrayLike, *, source: str | None = None) -> Workload:
        """The jobs selected by a boolean mask or an index array, in submission order."""
        selector = np.asarray(mask_or_index)
        index = np.flatnonzero(selector) if selector.dtype == np.bool_ else np.sort(selector)
        return Workload(
            ids=tuple(self.ids[i] for i in index),
            submit_h=_floats(self.submit_h[index]),
            runtime_h=_floats(self.runtime_h[index]),
            demand={k: _floats(v[index]) for k, v in self.demand.items()},
            deadline_h=_floats(self.deadline_h[index]),
            critical=_bools(self.critical[index]),
            resources=self.resources,
            source=self.source if source is None else source,
            start=self.start,
            users=None if self.users is None else tuple(self.users[i] for i in index),
            queues=None if self.queues is None else tuple(self.queues[i] for i in index),
            report=self.report,
        )

    def arriving(self, start_h: float, end_h: float) -> Workload:
        """The jobs submitted in ``[start_h, end_h)`` (hours since the workload's start)."""
        lo, hi = np.searchsorted(self.submit_h, [start_h, end_h], side="left")
        return self.take(np.arange(lo, hi))

    @property
    def span_h(self) -> float:
        """Hours from the first to the last submission (0 for fewer than two jobs)."""
        if len(self) < 2:
            return 0.0
        return float(self.submit_h[-1] - self.submit_h[0])

    def has_deadline(self) -> BoolArray:
        """Which jobs carry a deadline."""
        return ~np.isnan(self.deadline_h)


def _check_columns(
    ids: Sequence[str],
    submit: FloatArray,
    runtime: FloatArray,
    deadline: FloatArray,
    demand: Mapping[str, FloatArray],
) -> None:
    def first_bad(mask: BoolArray) -> int | None:
        hits = np.flatnonzero(mask)
        return int(hits[0]) if len(hits) else None

    checks: list[tuple[BoolArray, str, FloatArray, str]] = [
        (~(np.isfinite(submit) & (submit >= 0)), "submit_h", submit, "a finite number >= 0"),
        (~(np.isfinite(runtime) & (runtime > 0)), "runtime_h", runtime, "a finite number > 0"),
        (np.isinf(deadline), "deadline_h", deadline, "finite, or NaN for no deadline"),
    ]
    for resource, values in demand.items():
        checks.append(
            (
                ~(np.isfinite(values) & (values >= 0)),
                f"demand[{resource!r}]",
                values,
                "a finite number >= 0",
            )
        )
    for mask, name, values, rule in checks:
        bad = first_bad(mask)
        if bad is not None:
            raise InputError(
                f"{name} is {float(values[bad])!r} for workload job {ids[bad]!r} "
                f"({int(mask.sum())} such jobs); it must be {rule}"
            )
    if demand:
        total_positive = np.zeros(len(submit), dtype=bool)
        for values in demand.values():
            total_positive |= values > 0
        bad = first_bad(~total_positive)
        if bad is not None:
            raise InputError(
                f"workload job {ids[bad]!r} has no demand > 0 ({int((~total_positive).sum())} "
                "such jobs); give each job at least one resource amount > 0"
            )
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        for job_id in ids:
            if job_id in seen:
                raise InputError(
                    f"workload job id {job_id!r} appears twice; give each job a unique id"
                )
            seen.add(job_id)
