"""``carbonshift plan``: run one policy on a docs/formats.md instance and write the plan."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import typer
from rich.console import Console

from carbonshift.cli._limits import FIX, horizon_cells_option, plan_cells_option, plan_limits
from carbonshift.cli._output import Column, OutputFormat, emit_record, emit_rows, is_stdout
from carbonshift.cli._params import parse_param_items
from carbonshift.domain import Instance, check_feasibility, score_plan
from carbonshift.errors import InputError
from carbonshift.formats import (
    dumps_strict,
    null_if_undefined,
    plan_json,
    read_instance,
    write_plan,
)
from carbonshift.planning import PolicyResult, explain, run_policy
from carbonshift.planning.registry import available_policies

__all__ = ["DEFAULT_NOTICE", "DEFAULT_POLICY", "command"]

#: The policy of ``carbonshift plan`` without ``--policy`` (CHANGELOG.md, 0.2.0).
DEFAULT_POLICY = "carbonshift"
DEFAULT_NOTICE = (
    "notice: no --policy given; planning with 'carbonshift', the new default (least grams "
    "with every deadline kept, certified lower bound; see CHANGELOG.md)"
)


#: ``--format``: table, json or csv (machine names).
Format = OutputFormat


def _list_policies(fmt: Format) -> None:
    offered = available_policies()  # built-ins, registered and installed entry points
    params = {
        name: {
            p.name: {"default": p.default, "type": p.kind.__name__, "help": p.help}
            for p in spec.params
        }
        for name, spec in offered.items()
    }
    if fmt is Format.JSON:
        out = {
            name: {"summary": spec.summary, "params": params[name]}
            for name, spec in offered.items()
        }
        typer.echo(json.dumps(out, indent=1))
        return
    rows = [
        {
            "policy": name,
            "summary": spec.summary,
            "params": params[name],
            "shown": "\n".join(f"{p.name}={p.default} ({p.help})" for p in spec.params) or "-",
        }
        for name, spec in offered.items()
    ]
    columns = [
        Column("policy"),
        Column("summary"),
        Column("params", "parameters (default)", show=lambda row: str(row["shown"])),
    ]
    emit_rows(rows, columns, fmt=fmt, title="policies")


def _report(
    instance: Instance, result: PolicyResult, out: Path, fmt: Format, with_explain: bool
) -> None:
    scores = score_plan(instance, result.plan)
    violations = check_feasibility(instance, result.plan)
    summary: dict[str, object] = {
        "policy": result.plan.policy,
        "status": result.status.value,
        "operational_g": scores.operational_g,
        "embodied_g": scores.embodied_g,
        "carbon_g": scores.carbon_g,
        "gru": scores.gru,
        "on_time": scores.on_time,
        "late": scores.late,
        "unscheduled": scores.unscheduled,
        "feasible": not violations,
        "solve_seconds": result.plan.solve_seconds,
        "plan": "stdout" if is_stdout(out) else str(out),
        **{f"stats.{k}": v for k, v in result.stats.items()},
    }
    if result.bound is not None:
        summary["lower_bound_g"] = result.bound.lower_bound_g
        summary["gap"] = result.bound.gap
    reasons = explain(instance, result) if with_explain else {}
    if fmt is Format.JSON:
        payload: dict[str, object] = {**summary, "violations": [v.message for v in violations]}
        if with_explain:
            payload["explain"] = reasons
        typer.echo(dumps_strict(null_if_undefined(payload), indent=1))
        return
    if fmt is Format.CSV:  # one row of scores under their machine names
        emit_record(null_if_undefined(summary), list(summary), fmt=fmt, title="plan")
        for violation in violations[:10]:
            typer.echo(f"violation: {violation.message}", err=True)
        return

    def shown(key: str, value: object) -> str:
        if key == "gap" and isinstance(value, float):
            return f"{100 * value:.3f} %"
        if value is None and key in ("lower_bound_g", "gap"):
            return "none (no plan may put every job on time)"
        return f"{value:.6g}" if isinstance(value, float) else str(value)

    emit_record(summary, list(summary), fmt=fmt, title=f"plan: {result.plan.policy}", cell=shown)
    console = Console()
    for violation in violations[:10]:
        console.print(f"violation: {violation.message}", markup=False)
    if with_explain:
        emit_rows(
            [{"job": job_id, "reason": text} for job_id, text in reasons.items()],
            [Column("job"), Column("reason")],
            fmt=fmt,
            title="why",
        )


def command(
    instance: Path | None = typer.Option(
        None,
        "--instance",
        "-i",
        help="Planning instance JSON (docs/formats.md (planning instance)).",
    ),
    policy: str | None = typer.Option(
        None,
        "--policy",
        "-p",
        help=f"Policy name (see --list-policies; default {DEFAULT_POLICY}) or your own as "
        "package.module:function.",
    ),
    param: list[str] = typer.Option(
        [], "--param", help="A policy parameter KEY=VALUE, repeatable (e.g. samples=50)."
    ),
    out: Path = typer.Option(
        Path("plan.json"),
        "--out",
        "-o",
        help="Where to write the plan; - writes it to stdout (the report then goes to stderr).",
    ),
    fmt: Format = typer.Option(
        Format.TABLE, "--format", help="table, json or csv (machine column names)."
    ),
    with_explain: bool = typer.Option(
        False, "--explain", help="Say per job why it got its cluster and slot or none."
    ),
    list_policies: bool = typer.Option(
        False, "--list-policies", help="List policies with their parameters and defaults."
    ),
    max_plan_cells: int = plan_cells_option(),
    max_horizon_cells: int = horizon_cells_option(),
) -> None:
    """Plan an instance with one policy; print the scores and write the plan JSON.

    Without --policy the `carbonshift` policy plans (least grams with every deadline kept)
    and the plan carries its certified lower bound.

    Example: carbonshift plan --instance inst.json --policy srr --param samples=50 --out plan.json

    Your own policy: --policy my_policy.greenest:greenest (docs/python-api.md)

    For a script: carbonshift plan -i inst.json --policy srr --format csv (one row of scores)

    A larger instance than the default limits: carbonshift plan -i big.json
    --max-plan-cells 100000000 (0: no limit; docs/reliability.md, limits of a solve)
    """
    if list_policies:
        _list_policies(fmt)
        return
    if with_explain and fmt is Format.CSV:
        raise InputError("--explain with --format csv: the reasons are a second table; use json")
    if instance is None:
        raise InputError("--instance is missing; give a planning instance JSON file")
    if policy is None:
        typer.echo(DEFAULT_NOTICE, err=True)
        policy = DEFAULT_POLICY
    limits = plan_limits(max_plan_cells, max_horizon_cells)
    problem = read_instance(instance)
    limits.check(problem, policy, what=f"instance {instance}", fix=FIX)
    result = run_policy(policy, problem, parse_param_items(param, example="samples=50"))
    scores = score_plan(problem, result.plan)
    if not is_stdout(out):
        write_plan(result.plan, out, scores, result.bound)
        _report(problem, result, out, fmt, with_explain)
        return
    # --out -: the plan JSON alone on stdout (for a pipe), the report on stderr
    with contextlib.redirect_stdout(sys.stderr):
        _report(problem, result, out, fmt, with_explain)
    typer.echo(plan_json(result.plan, scores, result.bound), nl=False)
