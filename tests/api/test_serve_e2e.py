"""``carbonshift serve`` as a process, its live sources on loopback fakes, one of them down."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.providers.fakes import EM_TOKEN, Fakes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.e2e
def test_serve_answers_from_the_fallback_with_a_stale_age_during_an_outage(
    fakes: Fakes, base_url: str, tmp_path: Path
) -> None:
    fakes.em.always_fail = (503, {}, {"message": "maintenance"})
    port = free_port()
    env = {
        **os.environ,
        "CARBONSHIFT_ELECTRICITYMAPS_TOKEN": EM_TOKEN,
        "CARBONSHIFT_ELECTRICITYMAPS_URL": base_url + "/em",
        "CARBONSHIFT_GB_URL": base_url + "/gb",
        "CARBONSHIFT_CACHE_DIR": str(tmp_path / "cache"),
        "CARBONSHIFT_HTTP_BACKOFF_S": "0.05",
    }
    log = (tmp_path / "serve.log").open("w", encoding="utf-8")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "carbonshift.cli",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(url + "/healthz", timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.2)
        assert health.json()["chains"]["direct"] == ["electricitymaps", "gb", "embedded"]
        de = httpx.get(
            url + "/emissions/forecasts/current",
            params={"location": "DE", "windowSize": 120},
            timeout=30,
        ).json()[0]
        gb = httpx.get(
            url + "/emissions/forecasts/current",
            params={"location": "GB", "windowSize": 60},
            timeout=30,
        ).json()[0]
        metrics = httpx.get(url + "/metrics", timeout=10).text
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()
    assert de["source"] == "embedded"
    assert de["replayed"] is True
    assert de["staleAgeSeconds"] > 0
    assert "HTTP 503" in de["fallback"][0]
    assert gb["source"] == "gb", "GB falls back from the resting Electricity Maps to the GB API"
    assert gb["fallback"][0].startswith("electricitymaps: resting until")
    assert (
        'carbonshift_carbon_fallbacks_total{kind="direct",source="electricitymaps"} 2.0' in metrics
    )
