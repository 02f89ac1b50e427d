"""``--max-plan-cells`` and ``--max-horizon-cells``: the solve-size limits of ``plan``,
``simulate``, ``sweep`` and ``reproduce`` (:mod:`carbonshift.planning.limits`)."""

from __future__ import annotations

import typer

from carbonshift.errors import InputError
from carbonshift.planning.limits import (
    CLI_MAX_HORIZON_CELLS,
    CLI_MAX_PLAN_CELLS,
    PlanLimits,
)

__all__ = ["FIX", "horizon_cells_option", "plan_cells_option", "plan_limits"]

#: how to get under a limit, on the command line
FIX = (
    "shorten the horizon, plan fewer jobs or clusters, use a cheaper policy (asap, fluidos), "
    "or raise the limit (--max-plan-cells N / --max-horizon-cells N; 0: no limit)"
)


def plan_cells_option() -> int:
    """The ``--max-plan-cells`` option (a fresh one per command)."""
    value: int = typer.Option(
        CLI_MAX_PLAN_CELLS,
        "--max-plan-cells",
        envvar="CARBONSHIFT_MAX_PLAN_CELLS",
        help="Refuse to plan more than N jobs x clusters x slots (job classes for "
        "carbonshift) times the policy's cost weight (1 greedy, 2 carbonshift, 10 "
        "caspian/rr/srr, 50 exact); 0: no limit. Example: --max-plan-cells 50000000 "
        "(docs/reliability.md, limits of a solve).",
    )
    return value


def horizon_cells_option() -> int:
    """The ``--max-horizon-cells`` option (a fresh one per command)."""
    value: int = typer.Option(
        CLI_MAX_HORIZON_CELLS,
        "--max-horizon-cells",
        envvar="CARBONSHIFT_MAX_HORIZON_CELLS",
        help="Refuse to plan more than N clusters x slots x resources (the per-slot arrays); "
        "0: no limit. Example: --max-horizon-cells 2000000.",
    )
    return value


def plan_limits(max_plan_cells: int, max_horizon_cells: int) -> PlanLimits:
    """The options as :class:`PlanLimits` (0: no limit; below 0 refused)."""
    for flag, value in (
        ("--max-plan-cells", max_plan_cells),
        ("--max-horizon-cells", max_horizon_cells),
    ):
        if value < 0:
            raise InputError(
                f"{flag} {value} is below 0; give a number of cells, or 0 for no limit"
            )
    return PlanLimits(max_plan_cells or None, max_horizon_cells or None)
