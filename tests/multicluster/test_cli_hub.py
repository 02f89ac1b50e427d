"""``carbonshift hub`` against a fake hub with one spoke: ``--once``, and run mode (a
subprocess serving /metrics under leader election)."""

from __future__ import annotations

import base64
import contextlib
import gc
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from carbonshift.cli.hub import command
from fakekube import FakeKube, FakeKubeConfig, run_fakekube
from fakekube.plugins import all_crds
from tests.multicluster.harness import HUB_NS, carbon_cluster, carboncluster_crd, hub_job


@contextlib.contextmanager
def hub_and_spoke() -> Iterator[tuple[FakeKube, FakeKube]]:
    """A fake hub with the spoke ``de`` (16 cores) in its inventory and an urgent hub Job."""
    with (
        run_fakekube(
            FakeKubeConfig(nodes=0, custom_resources=(*all_crds(), carboncluster_crd()))
        ) as hub,
        run_fakekube(FakeKubeConfig(nodes=1, cpu="16")) as spoke,
    ):
        for ns in (HUB_NS, "batch"):
            hub.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        secret = base64.b64encode(spoke.kubeconfig.read_bytes()).decode()
        hub.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "spoke-de", "namespace": HUB_NS},
                "data": {"kubeconfig": secret},
            }
        )
        hub.create(carbon_cluster("de", "DE", 10.0))
        hub.create(hub_job("urgent", cpu=2, runtime_h=1, deadline_h=1))
        yield hub, spoke


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    # ``--once`` in this process tuned its collector and froze its heap (carbonshift.k8s.heap)
    gc.set_threshold(*thresholds)
    gc.unfreeze()


def hub_events(hub: FakeKube, name: str) -> list[str]:
    return sorted(
        e["reason"]
        for e in hub.list("Event", "batch")
        if e["involvedObject"]["name"] == name and e["source"]["component"] == "carbonshift-hub"
    )


def test_once_prints_the_spokes_and_the_plan_as_json() -> None:
    with hub_and_spoke() as (hub, spoke):
        app = typer.Typer()
        app.command()(command)
        answer = CliRunner().invoke(
            app, ["--kubeconfig", str(hub.kubeconfig), "--once", "--format", "json"]
        )
        assert answer.exit_code == 0, answer.output
        printed = json.loads(answer.stdout)
        assert printed["spokes"]["de"]["health"] == "Healthy"
        assert printed["spokes"]["de"]["capacity"] == {"cpu": 16.0}
        decision = printed["decisions"]["Job/batch/urgent"]
        assert (decision["cluster"], decision["start_now"]) == ("de", True)
        assert [j["metadata"]["name"] for j in spoke.list("Job", "batch", "batch/v1")] == ["urgent"]
        assert hub_events(hub, "urgent") == ["CarbonReleased", "CreatedInSpoke"]


def test_the_hub_entry_tunes_the_collector_and_settles_the_heap_after_its_first_lists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from carbonshift.k8s import heap

    settled: list[int] = []
    prepared: list[int] = []
    monkeypatch.setattr(heap, "settle", lambda: settled.append(1))
    monkeypatch.setattr(heap, "prepare", lambda: prepared.append(len(settled)))
    with hub_and_spoke() as (hub, _spoke):
        app = typer.Typer()
        app.command()(command)
        answer = CliRunner().invoke(app, ["--kubeconfig", str(hub.kubeconfig), "--once"])
        assert answer.exit_code == 0, answer.output
    assert prepared == [0]  # the collector tuned before the first list
    # settled once per kind of hub object the hub lists (Jobs, Kueue Workloads, AppWrappers)
    assert len(settled) == 3


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _scrape(url: str, want: list[str], *, real_s: float = 60.0) -> str:
    """/metrics once every line of ``want`` is in it (or the last text seen)."""
    text = ""
    deadline = time.monotonic() + real_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            text = urllib.request.urlopen(url, timeout=2).read().decode()
            if all(line in text.splitlines() for line in want):
                return text
        time.sleep(0.2)
    return text


def test_run_mode_serves_metrics_leads_and_gives_the_lease_up_on_ctrl_c(tmp_path: Path) -> None:
    port = _free_port()
    config = tmp_path / "hub.yaml"
    config.write_text(
        f"metrics: {{host: 127.0.0.1, port: {port}}}\n"
        "leader_election: {identity: hub-0, lease_duration_s: 15, renew_every_s: 5}\n"
    )
    with hub_and_spoke() as (hub, _spoke):
        cmd = [sys.executable, "-m", "carbonshift.cli", "hub", "--config", str(config)]
        cmd += ["--kubeconfig", str(hub.kubeconfig), "--resync-s", "1"]
        process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            want = [
                "carbonshift_hub_leader 1.0",
                'carbonshift_hub_releases_total{cluster="de",kind="Job"} 1.0',
                'carbonshift_hub_spoke_healthy{spoke="de"} 1.0',
            ]
            text = _scrape(f"http://127.0.0.1:{port}/metrics", want)
            assert all(line in text.splitlines() for line in want), text
            lease = hub.get("Lease", "carbonshift-hub", HUB_NS, "coordination.k8s.io/v1")
            assert lease["spec"]["holderIdentity"] == "hub-0"
            assert hub_events(hub, "urgent") == ["CarbonReleased", "CreatedInSpoke"]
            # the hub's own client has the default limiter (50 / 100), its waits observed
            waits = [
                float(line.split()[-1])
                for line in text.splitlines()
                if line.startswith("carbonshift_client_rate_limiter_wait_seconds_count")
            ]
            assert waits, text
            assert waits[0] > 0, text
        finally:
            process.send_signal(signal.SIGINT)
            output, _ = process.communicate(timeout=30)
        assert "hub-0 campaigns for Lease carbonshift-system/carbonshift-hub" in output.decode()
        lease = hub.get("Lease", "carbonshift-hub", HUB_NS, "coordination.k8s.io/v1")
        assert not lease["spec"].get("holderIdentity"), "the lease was not given up"


def dirty_now_csv(folder: Path) -> None:
    """Hourly DE values: 500 g/kWh for the next three hours, 50 g/kWh after, so that holding
    saves whatever the time of day (the embedded data replay a past day at today's hour)."""
    folder.mkdir()
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    lines = ["Datetime (UTC),Zone Id,Carbon Intensity gCO₂eq/kWh (direct)"]
    for hour in range(-48, 48):
        value = 500 if hour < 3 else 50
        lines.append(f"{now + timedelta(hours=hour):%Y-%m-%d %H:%M:%S},DE,{value}")
    (folder / "DE.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_once_writes_every_plan_whatever_the_hold_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dirty_now_csv(tmp_path / "csv")
    monkeypatch.setenv("CARBONSHIFT_OFFLINE", "1")
    monkeypatch.setenv("CARBONSHIFT_CSV_DIR", str(tmp_path / "csv"))
    monkeypatch.setenv("CARBONSHIFT_CACHE_DIR", str(tmp_path / "cache"))
    with hub_and_spoke() as (hub, _spoke):
        for name, deadline_h in (("a", 20), ("b", 16), ("c", 12)):
            hub.create(hub_job(name, cpu=2, runtime_h=1, deadline_h=deadline_h))
        config = tmp_path / "hub.yaml"
        config.write_text(  # the hold rule off, so that the three are held, not started
            "hold_writes_per_pass: 1\n"
            "planning:\n  carbon_source: providers\n  min_saving_g: 0\n  min_saving_pct: 0\n"
        )
        app = typer.Typer()
        app.command()(command)
        answer = CliRunner().invoke(
            app, ["--kubeconfig", str(hub.kubeconfig), "--config", str(config), "--once"]
        )
        assert answer.exit_code == 0, answer.output
        held = [
            j["metadata"]["name"]
            for j in hub.list("Job", "batch", "batch/v1")
            if (j["metadata"].get("labels") or {}).get("carbonshift.io/state") == "held"
        ]
        assert sorted(held) == ["a", "b", "c"]  # more than the budget of 1, all written
