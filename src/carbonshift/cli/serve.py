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
) -> None:
    """Serve the advice API: Carbon Aware SDK endpoints, /v1/advise, /v1/plan, /metrics.

    Sources, keys and chains come from CARBONSHIFT_* variables (docs/providers.md).

    Example: carbonshift serve --host 127.0.0.1 --port 8080
    then: curl 'http://127.0.0.1:8080/emissions/forecasts/current?location=DE&windowSize=180'
    """
    import dataclasses

    from carbonshift._extras import require

    for package in ("fastapi", "uvicorn"):  # say which extra before the first import fails
        require(package, needed_for="carbonshift serve")
    import uvicorn

    from carbonshift.api import ApiSettings, create_app
    from carbonshift.carbon.providers import ProviderSettings, build_chains
    from carbonshift.carbon.series import CiKind
    from carbonshift.errors import InputError

    try:
        ci_kind = CiKind(kind.lower())
    except ValueError:
        raise InputError(
            f"--kind {kind!r} is not a signal kind; use direct, lca, marginal or index"
        ) from None
    settings = ProviderSettings.from_env()
    if offline:
        settings = dataclasses.replace(settings, offline=True)
    chains = build_chains(settings)
    app = create_app(chains, settings=ApiSettings(kind=ci_kind, max_jobs=max_jobs))
    typer.echo(
        f"carbonshift serve on http://{host}:{port} (docs at /docs); chains: "
        + "; ".join(f"{k.value}: {','.join(c.names)}" for k, c in chains.chains.items()),
        err=True,
    )
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level)
    finally:
        chains.close()
