"""Free capacity per (cluster, resource, slot) while a heuristic places jobs one by one.

A working object of the greedy and rounding policies (asap, threshold, window, fluidos,
Caspian's Algorithm 3, SRR-APX's drop rule): numpy arrays, mutated in place, never shared.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from carbonshift.planning.problem import CAPACITY_TOLERANCE, InstanceArrays

__all__ = ["CapacityLedger"]

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


class CapacityLedger:
    """Free units per (cluster, resource, slot), starting from ``arrays.free_units``."""

    __slots__ = ("_arrays", "_needed", "free_units")

    def __init__(self, arrays: InstanceArrays) -> None:
        self._arrays = arrays
        self.free_units = arrays.free_units.copy()
        #: each job's (resources it needs, amounts), made on first use: the hold rule asks
        #: for a job's several times a round (its fit now, its move, its placement)
        self._needed: dict[int, tuple[IntArray, npt.NDArray[np.float64]]] = {}

    def _needs(self, job: int) -> tuple[IntArray, npt.NDArray[np.float64]]:
        found = self._needed.get(job)
        if found is None:
            demand = self._arrays.demand_units[job]
            resources = np.flatnonzero(demand > 0)
            found = self._needed[job] = (resources, demand[resources])
        return found

    def fits(self, job: int, cluster: int, start_slot: int) -> bool:
        """Whether ``job`` started at ``start_slot`` on ``cluster`` fits over its whole run."""
        end = start_slot + int(self._arrays.runtime_slots[job])
        if start_slot < 0 or end > self.free_units.shape[2]:
            return False
        resources, amount = self._needs(job)
        window = self.free_units[cluster, resources, start_slot:end]
        return bool(np.all(window + CAPACITY_TOLERANCE >= amount[:, None]))

    def fitting_starts(self, job: int, cluster: int) -> BoolArray:
        """Boolean over start slots ``0 .. horizon - 1``: where the job would fit (ignores
        release and deadline; a start whose run passes the horizon never fits)."""
        row: BoolArray = self._fitting(job, self.free_units[cluster : cluster + 1])[0]
        return row

    def fitting_starts_everywhere(self, job: int) -> BoolArray:
        """:meth:`fitting_starts` of every cluster at once, shape (clusters, horizon)."""
        return self._fitting(job, self.free_units)

    def fits_now_everywhere(self, job: int) -> BoolArray:
        """``fitting_starts_everywhere(job)[:, 0]`` without the other starts: whether the job
        started in slot 0 fits each cluster over its whole run, shape (clusters,). The hold
        rule asks it of every held job each round (10,000 a controller pass at fleet
        scale), and needs slot 0 only."""
        n_clusters, _, horizon = self.free_units.shape
        runtime = int(self._arrays.runtime_slots[job])
        if runtime > horizon:
            return np.zeros(n_clusters, dtype=bool)
        resources, amount = self._needs(job)
        window = self.free_units[:, resources, :runtime]
        fits: BoolArray = np.all(
            ~(window + CAPACITY_TOLERANCE < amount[None, :, None]), axis=(1, 2)
        )
        return fits

    def _fitting(self, job: int, free_units: npt.NDArray[np.float64]) -> BoolArray:
        n_clusters, _, horizon = free_units.shape
        runtime = int(self._arrays.runtime_slots[job])
        resources, amount = self._needs(job)
        short = np.any(
            free_units[:, resources, :] + CAPACITY_TOLERANCE < amount[None, :, None], axis=1
        )
        prefix = np.zeros((n_clusters, horizon + 1), dtype=np.int64)
        np.cumsum(short, axis=1, out=prefix[:, 1:])
        ok = np.zeros((n_clusters, horizon), dtype=bool)
        last = horizon - runtime
        if last >= 0:
            ok[:, : last + 1] = (prefix[:, runtime : horizon + 1] - prefix[:, : last + 1]) == 0
        return ok

    def place(self, job: int, cluster: int, start_slot: int) -> None:
        """Take the job's demand over its run (no check: call :meth:`fits` first)."""
        end = start_slot + int(self._arrays.runtime_slots[job])
        resources, amount = self._needs(job)
        self.free_units[cluster, resources, start_slot:end] -= amount[:, None]

    def reserve(self, cluster: int, resource: int, slot: int, units: float) -> None:
        """Take ``units`` of one resource in one slot (future-demand reservations)."""
        self.free_units[cluster, resource, slot] -= units

    def used_fraction(self, cluster: int, resource: int, slot: int) -> float:
        """Share of the cluster's capacity in use (0 when it has none)."""
        cap = float(self._arrays.capacity_units[cluster, resource, slot])
        if cap <= 0:
            return 1.0
        return 1.0 - float(self.free_units[cluster, resource, slot]) / cap
