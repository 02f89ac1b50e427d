"""``carbonshift serve``: the advice API over HTTP (uvicorn)."""

from __future__ import annotations

import ipaddress
import socket

import typer

__all__ = ["command"]


def _is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


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
    max_solve_s: float = typer.Option(
        30.0, "--max-solve-seconds", min=0.1, max=3600, help="Wall-time budget of one /v1/plan."
    ),
    max_solves: int = typer.Option(
        2, "--max-solves", min=1, max=64, help="Most /v1/plan solves at once (then 429)."
    ),
    max_solve_memory_mb: int = typer.Option(
        4096,
        "--max-solve-memory-mb",
        min=0,
        help="Address-space cap of one /v1/plan solve worker, MiB (0: none); past it: 400.",
    ),
    rate_limit: int = typer.Option(
        300,
        "--rate-limit",
        min=0,
        help="Requests per minute per client address (0: none); /healthz, /metrics exempt.",
    ),
    allow_unauthenticated: bool = typer.Option(
        False,
        "--allow-unauthenticated",
        help="Bind a non-loopback address without CARBONSHIFT_API_TOKEN (not advised).",
    ),
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

    Sources, keys and chains come from CARBONSHIFT_* variables (docs/providers.md). With
    CARBONSHIFT_API_TOKEN (or CARBONSHIFT_API_TOKEN_FILE) set, every request but /healthz and
    /metrics needs 'Authorization: Bearer <token>'; a non-loopback --host needs a token
    unless --allow-unauthenticated is given. SIGTERM stops running solves and exits.

    Example: carbonshift serve --host 127.0.0.1 --port 8080
    then: curl 'http://127.0.0.1:8080/emissions/forecasts/current?location=DE&windowSize=180'

    Your own policies: carbonshift serve --policy-module my_policy.greenest

    Your own region names: carbonshift serve --region-map regions.yaml (lines like
    'my-dc-frankfurt: DE'); then: curl 'http://127.0.0.1:8080/emissions/bylocation?location=eastus'
    """
    import dataclasses
    import os
    from pathlib import Path

    from carbonshift._extras import require

    for package in ("fastapi", "uvicorn"):  # say which extra before the first import fails
        require(package, needed_for="carbonshift serve")
    import uvicorn

    from carbonshift.api import ApiSettings, create_app
    from carbonshift.api.regions import RegionTable
    from carbonshift.api.solves import SolveRunner
    from carbonshift.carbon.providers import ProviderSettings, build_chains, read_secret
    from carbonshift.carbon.series import CiKind
    from carbonshift.errors import InputError
    from carbonshift.planning.registry import available_policies, load_policy_module

    try:
        ci_kind = CiKind(kind.lower())
    except ValueError:
        raise InputError(
            f"--kind {kind!r} is not a signal kind; use direct, lca, marginal or index"
        ) from None
    token = read_secret("CARBONSHIFT_API_TOKEN")
    if token is None and not allow_unauthenticated and not _is_loopback(host):
        raise InputError(
            f"--host {host!r} is not a loopback address and no CARBONSHIFT_API_TOKEN (or "
            "CARBONSHIFT_API_TOKEN_FILE) is set; set a token, bind 127.0.0.1, or pass "
            "--allow-unauthenticated"
        )
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
    memory_mb = max_solve_memory_mb or None
    runner = SolveRunner(max_solves=max_solves, memory_mb=memory_mb)
    api_settings = ApiSettings(
        kind=ci_kind,
        max_jobs=max_jobs,
        max_solve_s=max_solve_s,
        max_solves=max_solves,
        max_solve_memory_mb=memory_mb,
        token=token,
        rate_per_minute=rate_limit,
    )
    app = create_app(chains, settings=api_settings, solves=runner, regions=regions)
    typer.echo(
        f"carbonshift serve on http://{host}:{port} (docs at /docs; token "
        f"{'required' if token else 'off'}); chains: "
        + "; ".join(f"{k.value}: {','.join(c.names)}" for k, c in chains.chains.items())
        + "; policies: "
        + ", ".join(offered),
        err=True,
    )

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: object) -> None:
            # SIGTERM / SIGINT: stop every solve now, so in-flight requests end at once
            runner.stop_all()
            super().handle_exit(sig, frame)  # type: ignore[arg-type]

    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=10
    )
    try:
        _Server(config).run()
    finally:
        runner.stop_all()
        chains.close()
