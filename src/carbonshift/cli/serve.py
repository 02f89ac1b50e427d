"""``carbonshift serve``: the advice API over HTTP (uvicorn)."""

from __future__ import annotations

import typer

__all__ = ["command"]


def command(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (0.0.0.0: all)."),
    port: int = typer.Option(8080, "--port", min=0, max=65535, help="TCP port."),
    kind: str = typer.Option(
        "direct", "--kind", help="Default signal kind: direct, lca, marginal or index."
    ),
    offline: bool = typer.Option(
        False, "--offline", help="Use no live source: embedded data only (CARBONSHIFT_OFFLINE=1)."
    ),
    max_jobs: int = typer.Option(2000, "--max-jobs", min=1, help="Most jobs per /v1/plan."),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn log level."),
    region_map: str | None = typer.Option(
        None,
        "--region-map",
        help="A JSON or YAML file mapping cloud region names to zone ids (name: zone), added "
        "to the built-in Azure/AWS table of the Carbon Aware SDK routes "
        "(default $CARBONSHIFT_REGION_MAP).",
    ),
    policy_module: list[str] = typer.Option(
        [],
        "--policy-module",
        help="Import this module (or module:function) at start-up and offer its registered "
        "policies on /v1/plan; repeatable. A request can never name a module itself.",
    ),
) -> None:
    """Serve the advice API: Carbon Aware SDK endpoints, /v1/advise, /v1/plan, /metrics.

    Sources, keys and chains come from CARBONSHIFT_* variables (docs/providers.md).

    Example: carbonshift serve --host 127.0.0.1 --port 8080
    then: curl 'http://127.0.0.1:8080/emissions/forecasts/current?location=DE&windowSize=180'

    Your own policies: carbonshift serve --policy-module my_policy.greenest

    Your own region names: carbonshift serve --region-map regions.yaml (lines like
    'my-dc-frankfurt: DE'); then: curl 'http://127.0.0.1:8080/emissions/bylocation?location=eastus'
    """
    import dataclasses
    import os
    from pathlib import Path

    import uvicorn

    from carbonshift.api import ApiSettings, create_app
    from carbonshift.api.regions import RegionTable
    from carbonshift.carbon.providers import ProviderSettings, build_chains
    from carbonshift.carbon.series import CiKind
    from carbonshift.errors import InputError
    from carbonshift.planning.registry import available_policies, load_policy_module

    try:
        ci_kind = CiKind(kind.lower())
    except ValueError:
        raise InputError(
            f"--kind {kind!r} is not a signal kind; use direct, lca, marginal or index"
        ) from None
    for ref in policy_module:
        load_policy_module(ref)
    offered = available_policies()  # built-ins, entry points and the modules above
    settings = ProviderSettings.from_env()
    if offline:
        settings = dataclasses.replace(settings, offline=True)
    regions = RegionTable()
    region_file = region_map or os.environ.get("CARBONSHIFT_REGION_MAP") or None
    if region_file:
        regions = regions.with_file(Path(region_file))
    chains = build_chains(settings)
    app = create_app(chains, settings=ApiSettings(kind=ci_kind, max_jobs=max_jobs), regions=regions)
    typer.echo(
        f"carbonshift serve on http://{host}:{port} (docs at /docs); chains: "
        + "; ".join(f"{k.value}: {','.join(c.names)}" for k, c in chains.chains.items())
        + "; policies: "
        + ", ".join(offered),
        err=True,
    )
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level)
    finally:
        chains.close()
