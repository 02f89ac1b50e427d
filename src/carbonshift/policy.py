"""Writing your own policy: the decorator and the helpers the built-in policies use.

A policy is a function ``policy(instance, context, **params)`` that returns a
:class:`PolicyResult` (or a bare :class:`~carbonshift.domain.Plan`). ``instance`` is the
planning question (jobs, clusters, the carbon forecast per cluster and slot); ``context``
says what running work already holds (plan against :attr:`InstanceArrays.free_units`, which
:func:`arrays_of` computes for you). Every job must appear once, assigned or unscheduled;
:func:`build_result` takes care of that.

Example, a policy that starts every job in the cleanest slot it fits before its deadline::

    import numpy as np
    from carbonshift.policy import (
        CapacityLedger, arrays_of, build_result, register_policy, release_order)

    @register_policy("greenest", params={"max_wait_slots": 24})
    def greenest(instance, context=None, max_wait_slots=24):
        \"\"\"Each job, in release order, takes its cleanest fitting start.\"\"\"
        arrays = arrays_of(instance, context)
        ledger = CapacityLedger(arrays)
        chosen = {}
        for job in release_order(arrays):
            ...
        return build_result(instance, "greenest", chosen)

Name it in a scenario (``policy = "greenest"`` once its module is imported, or
``policy = "mypkg.policies:greenest"`` always), on the command line
(``carbonshift simulate s.toml --policy mypkg.policies:greenest``), or declare it in your
package's ``pyproject.toml`` so that the name alone finds it::

    [project.entry-points."carbonshift.policies"]
    greenest = "mypkg.policies:greenest"

See docs/python-api.md and examples/my_policy/.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from carbonshift.domain import Assignment, Cluster, Instance, Job, JobId, Plan
from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.policies._common import release_order, result_of
from carbonshift.planning.problem import InstanceArrays, arrays_of
from carbonshift.planning.registry import (
    ENTRY_POINT_GROUP,
    ParamSpec,
    available_policies,
    register_policy,
)
from carbonshift.planning.types import PlanContext, PlanStatus, PolicyResult

__all__ = [
    "ENTRY_POINT_GROUP",
    "Assignment",
    "CapacityLedger",
    "Cluster",
    "Instance",
    "InstanceArrays",
    "Job",
    "JobId",
    "ParamSpec",
    "Plan",
    "PlanContext",
    "PlanStatus",
    "PolicyResult",
    "arrays_of",
    "available_policies",
    "build_result",
    "register_policy",
    "release_order",
]


def build_result(
    instance: Instance,
    policy: str,
    chosen: Mapping[int, tuple[int, int]],
    *,
    seconds: float | None = None,
    began: float | None = None,
    status: PlanStatus = PlanStatus.FEASIBLE,
    notes: Mapping[int, str] | None = None,
    stats: Mapping[str, float] | None = None,
) -> PolicyResult:
    """The :class:`PolicyResult` listing every job of ``instance`` once.

    ``chosen`` maps a job's index in ``instance.jobs`` to ``(cluster index, start slot)``;
    every other job is unscheduled. The solve time is ``seconds``, or the time since
    ``began`` (a ``time.perf_counter()`` reading), or 0. ``notes`` (job index -> text) are
    what ``carbonshift plan --explain`` shows; ``stats`` are figures with units in their
    names.

    Examples:
        >>> from carbonshift.formats import instance_from_dict
        >>> inst = instance_from_dict({"version": 1, "slot_minutes": 60, "horizon_slots": 2,
        ...     "resources": ["gpu"], "carbon_g_per_kwh": {"c": [100, 50]},
        ...     "clusters": [{"name": "c", "capacity": {"gpu": 1}, "watts_per_unit": {"gpu": 100}}],
        ...     "jobs": [{"id": "j1", "demand": {"gpu": 1}, "runtime_slots": 1},
        ...              {"id": "j2", "demand": {"gpu": 1}, "runtime_slots": 1}]})
        >>> result = build_result(inst, "mine", {0: (0, 1)})
        >>> [(a.job, a.cluster, a.start_slot) for a in result.plan.assignments]
        [('j1', 'c', 1)]
        >>> list(result.plan.unscheduled)
        ['j2']
    """
    if seconds is None:
        seconds = time.perf_counter() - began if began is not None else 0.0
    return result_of(
        instance, policy, chosen, seconds=seconds, status=status, notes=notes, stats=stats
    )
