"""Spokes served over TLS, reached as a client-certificate user: what many real clusters
hand a multi-cluster controller (a kubeconfig with the CA and a client certificate inlined)."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

from tests.multicluster.harness import HUB_NS, fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)


async def test_the_hub_runs_work_on_tls_spokes_as_a_client_certificate_user() -> None:
    async with fleet(START, spoke_tls=True, spoke_certificates=True) as f:
        secret = await f.get(f.hub, "Secret", "spoke-de", HUB_NS, "v1")
        remote = json.loads(base64.b64decode(secret["data"]["kubeconfig"]))
        assert remote["clusters"][0]["cluster"]["server"].startswith("https://")
        assert set(remote["users"][0]["user"]) == {"client-certificate-data", "client-key-data"}

        await f.create(f.hub, hub_job("train", cpu=4, runtime_h=1, deadline_h=3))
        await f.start_controller()
        ran = []
        for _ in range(4 * 4):
            await f.step(15)
            ran += [
                (name, job["metadata"]["name"])
                for name, spoke in f.spokes.items()
                for job in await f.list(spoke, "Job", "batch", "batch/v1")
            ]
            hub = await f.get(f.hub, "Job", "train", "batch", "batch/v1")
            if hub.get("status", {}).get("succeeded") == 1:
                break
        assert ran, "the job never reached a spoke over TLS"
        assert hub["status"]["succeeded"] == 1
        clusters = await f.list(f.hub, "CarbonCluster", None, "carbonshift.io/v1alpha1")
        assert [c["status"]["health"] for c in clusters] == ["Healthy", "Healthy"], clusters
