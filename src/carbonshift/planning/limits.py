"""How large a solve is, per policy, and the one size check every front end runs before it.

A solve's memory grows with two things (bench/safety.md, "Plan-size limits"):

- its **cells**: jobs x clusters x slots, one candidate start per cell, times the policy's
  cost weight (:data:`POLICY_CELL_COST`: 1 for greedy passes, 10 for the LP policies, 50
  for the MILP). ``carbonshift`` plans job *classes* (jobs with the same runtime, demand mix,
  window and allowed clusters solve as one: planning/lagrangian.py), so its cells count
  classes, not jobs: 100,000 ten-zone jobs are 8,317 classes;
- its **horizon cells**: clusters x slots x resources, the per-slot arrays (carbon,
  capacity, held units, the bound's tables) every policy builds even without a job.

:func:`check_plan_size` raises :class:`PlanTooLargeError` (an ``InputError``) naming both
figures, the limit and the fix. The HTTP API checks with its own, smaller limit
(``ApiSettings.max_plan_cells``); the CLI with :data:`CLI_MAX_PLAN_CELLS` and
:data:`CLI_MAX_HORIZON_CELLS` unless ``--max-plan-cells`` / ``--max-horizon-cells`` say
otherwise; the simulator checks every round. A library call of ``run_policy`` is not limited.

The Kubernetes controller and the hub do not refuse a pass: past the limit they plan the
most urgent jobs that fit (:meth:`PlanLimits.fitting_jobs`) and leave the rest to a later
pass (docs/reliability.md, "Limits of a solve").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from carbonshift.domain import Instance
from carbonshift.errors import InputError

__all__ = [
    "CLASS_POLICIES",
    "CLI_LIMITS",
    "CLI_MAX_HORIZON_CELLS",
    "CLI_MAX_PLAN_CELLS",
    "CONTROLLER_MAX_HORIZON_CELLS",
    "CONTROLLER_MAX_PLAN_CELLS",
    "POLICY_CELL_COST",
    "PlanLimits",
    "PlanSize",
    "PlanTooLargeError",
    "check_plan_size",
    "policy_cell_cost",
]

#: cost weight of a policy per cell: greedy passes 1; ``carbonshift`` (class LP, search,
#: polish) 2; the LP policies (an interior point solve over every start) 10; the MILP 50
POLICY_CELL_COST: dict[str, int] = {
    "carbonshift": 2,
    "caspian": 10,
    "rr": 10,
    "srr": 10,
    "exact": 50,
}
#: policies whose solve size follows job classes rather than jobs
CLASS_POLICIES = frozenset({"carbonshift"})
#: the CLI's default weighted-cell limit (``--max-plan-cells``). It admits carbonshift on
#: 100,000 ten-zone jobs (8,317 classes x 10 clusters x 48 slots x 2 = 8.0e6; 260 MB) and
#: refuses 3,000 distinct jobs over 2,000 slots (1.2e7; 8.5 GB measured) and 100 over
#: 100,000 slots (2e7; 3.4 GB). Memory per weighted cell varies with the policy's stages
#: (under 3,000 jobs carbonshift also searches and polishes): 30-700 bytes measured, so the
#: limit bounds the worst case near 7 GB, not the typical one (bench/safety.md)
CLI_MAX_PLAN_CELLS = 10_000_000
#: the CLI's default horizon-cell limit (``--max-horizon-cells``): about 1.5 kB each in a
#: carbonshift solve (bench/safety.md), so at most about 0.75 GB before any job; the
#: format's own limit, 1,000,000 slots on one cluster, took 2.59 GB
CLI_MAX_HORIZON_CELLS = 500_000

#: the Kubernetes controller's and the hub's default weighted-cell limit
#: (``planning.max_plan_cells``), lower than the CLI's: their pods run under the chart's
#: 1 GiB memory limit. carbonshift's worst shape (a few hundred classes, where it also
#: searches and polishes, on 10 clusters over 168 slots) took 728 MB at 1.02e6 weighted
#: cells and 2.55 GB at 3.7e6 (bench/safety.md); it admits the 10,000-workload benchmarks
#: (25 classes: 1,200 and 12,000 weighted cells) and 10,000 workloads of a class each on one
#: cluster over 24 slots (480,000)
CONTROLLER_MAX_PLAN_CELLS = 1_000_000
#: their default horizon-cell limit (``planning.max_horizon_cells``): about 0.3 GB of
#: per-slot arrays in a carbonshift solve; 168 hourly slots x 3 resources on 396 spokes
CONTROLLER_MAX_HORIZON_CELLS = 200_000


class PlanTooLargeError(InputError):
    """An instance is larger than the solve limit of the caller (CLI option, API setting)."""


def policy_cell_cost(policy: str) -> int:
    """The cost weight of ``policy`` per cell (1 for a policy not in the table)."""
    return POLICY_CELL_COST.get(policy, 1)


@dataclass(frozen=True, slots=True)
class PlanSize:
    """The dimensions of one planning instance that a solve's size follows."""

    jobs: int
    #: job classes (:func:`~carbonshift.planning.lagrangian.classes_of`); <= ``jobs``
    classes: int
    clusters: int
    slots: int
    resources: int

    @classmethod
    def of(cls, instance: Instance, *, classes: bool = True) -> PlanSize:
        """The sizes of ``instance``, its classes counted as the ``carbonshift`` policy
        groups them (linear in jobs x clusters; ``classes=False``: one class per job)."""
        from carbonshift.planning.lagrangian import classes_of
        from carbonshift.planning.problem import arrays_of

        jobs = len(instance.jobs)
        n_classes = jobs
        if classes and jobs:
            klass = classes_of(arrays_of(instance)).klass
            # a job with no usable start has no class (and no column): counted as one
            n_classes = int(klass.max(initial=-1)) + 1 + int((klass < 0).sum())
        return cls(
            jobs=jobs,
            classes=n_classes,
            clusters=len(instance.clusters),
            slots=instance.grid.horizon_slots,
            resources=len(instance.resources),
        )

    def cells(self, policy: str) -> int:
        """Jobs (classes for a class policy) x clusters x slots, unweighted."""
        rows = self.classes if policy in CLASS_POLICIES else self.jobs
        return rows * self.clusters * self.slots

    def weighted_cells(self, policy: str) -> int:
        """:meth:`cells` times the policy's :func:`policy_cell_cost`."""
        return self.cells(policy) * policy_cell_cost(policy)

    @property
    def horizon_cells(self) -> int:
        """Clusters x slots x resources: the per-slot arrays."""
        return self.clusters * self.slots * self.resources


def check_plan_size(
    size: PlanSize,
    policy: str,
    *,
    max_cells: int | None,
    max_horizon_cells: int | None = None,
    what: str = "the instance",
    per: str = "",
    fix: str,
) -> None:
    """Raise :class:`PlanTooLargeError` when ``size`` passes a limit (None: no limit).

    ``what`` names the instance ("the instance", "the round at hour 12"), ``per`` where the
    limit holds ("per request on this server"), ``fix`` how to get under it.
    """
    where = f" {per}" if per else ""
    if max_horizon_cells is not None and size.horizon_cells > max_horizon_cells:
        raise PlanTooLargeError(
            f"{what} has {size.horizon_cells:,} cluster x slot x resource cells "
            f"({size.clusters} clusters x {size.slots} slots x {size.resources} resources); at "
            f"most {max_horizon_cells:,} are planned{where}: {fix}"
        )
    if max_cells is None:
        return
    weight = policy_cell_cost(policy)
    if size.weighted_cells(policy) > max_cells:
        unit = "job class" if policy in CLASS_POLICIES else "job"
        raise PlanTooLargeError(
            f"{what} has {size.cells(policy):,} {unit} x cluster x slot cells; policy "
            f"{policy!r} may plan at most {max_cells // weight:,}{where} (cost weight {weight}, "
            f"limit {max_cells:,} weighted cells): {fix}"
        )


@dataclass(frozen=True, slots=True)
class PlanLimits:
    """The two limits of :func:`check_plan_size` (None: no limit), carried by a simulation
    to every round; :data:`CLI_LIMITS` are the CLI's defaults."""

    #: most weighted cells (:meth:`PlanSize.weighted_cells`)
    max_cells: int | None = None
    #: most cluster x slot x resource cells (:attr:`PlanSize.horizon_cells`)
    max_horizon_cells: int | None = None

    @property
    def lifted(self) -> bool:
        """No limit at all."""
        return self.max_cells is None and self.max_horizon_cells is None

    def horizon_fits(self, size: PlanSize) -> bool:
        """Whether ``size``'s cluster x slot x resource cells are within the limit."""
        return self.max_horizon_cells is None or size.horizon_cells <= self.max_horizon_cells

    def fitting_jobs(
        self, instance: Instance, policy: str, order: Sequence[int] | None = None
    ) -> int:
        """How many jobs of ``instance``, taken in ``order`` (job indexes, most urgent first;
        None: as listed), fit the weighted-cell limit under ``policy``: all of them when the
        instance is within it, else the longest prefix of ``order`` whose rows (jobs, or the
        distinct job classes under a class policy, :meth:`PlanSize.cells`) fit. The classes
        are those of the whole instance; an instance of the prefix alone has no more (its
        horizon is no longer, and a job's class depends only on itself and the horizon).
        The horizon-cell limit is not looked at (:meth:`horizon_fits`)."""
        size = PlanSize.of(instance, classes=False)
        if self.max_cells is None or size.weighted_cells(policy) <= self.max_cells:
            return size.jobs
        per_row = size.clusters * size.slots * policy_cell_cost(policy)
        rows = self.max_cells // per_row if per_row else size.jobs
        if policy not in CLASS_POLICIES:
            return min(rows, size.jobs)
        from carbonshift.planning.lagrangian import classes_of
        from carbonshift.planning.problem import arrays_of

        klass = classes_of(arrays_of(instance)).klass
        if order is not None:
            klass = klass[np.asarray(order, dtype=np.int64)]
        # a job opens a row when it is the first of its class (or has no class: a row alone,
        # as PlanSize.of counts it)
        first = np.zeros(len(klass), dtype=bool)
        _, at = np.unique(klass, return_index=True)
        first[at] = True
        first |= klass < 0
        opened = np.cumsum(first)
        return int(np.searchsorted(opened, rows, side="right"))

    def check(self, instance: Instance, policy: str, *, what: str, fix: str, per: str = "") -> None:
        """:func:`check_plan_size` on ``instance`` (``per``: where the limits hold). Its
        classes are counted only when its jobs alone pass the weighted-cell limit under a
        class policy (classes <= jobs), so an instance within the limit costs no more than
        ``len()``."""
        if self.lifted:
            return
        size = PlanSize.of(instance, classes=False)
        if (
            self.max_cells is not None
            and policy in CLASS_POLICIES
            and size.weighted_cells(policy) > self.max_cells
        ):
            size = PlanSize.of(instance)
        check_plan_size(
            size,
            policy,
            max_cells=self.max_cells,
            max_horizon_cells=self.max_horizon_cells,
            what=what,
            per=per,
            fix=fix,
        )


#: the CLI's defaults (``--max-plan-cells``, ``--max-horizon-cells``)
CLI_LIMITS = PlanLimits(CLI_MAX_PLAN_CELLS, CLI_MAX_HORIZON_CELLS)
