"""``carbonshift hub`` stops on SIGTERM as on Ctrl-C: it gives its Lease up and exits (issue
12, item 12: it ignored SIGTERM and kept the Lease, so the next replica waited it out)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.multicluster.harness import HUB_NS
from tests.multicluster.test_cli_hub import hub_and_spoke


def test_sigterm_gives_the_lease_up_and_exits(tmp_path: Path) -> None:
    config = tmp_path / "hub.yaml"
    config.write_text(
        "metrics: {enabled: false}\n"
        "leader_election: {identity: hub-term, lease_duration_s: 15, renew_every_s: 5}\n"
    )
    with hub_and_spoke() as (hub, _spoke):
        cmd = [sys.executable, "-m", "carbonshift.cli", "hub", "--config", str(config)]
        cmd += ["--kubeconfig", str(hub.kubeconfig), "--resync-s", "1"]
        process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            holder = None
            for _ in range(300):
                leases = hub.list("Lease", HUB_NS, "coordination.k8s.io/v1")
                holder = next((ls["spec"].get("holderIdentity") for ls in leases), None)
                if holder == "hub-term" or process.poll() is not None:
                    break
                time.sleep(0.1)
            assert holder == "hub-term"
        finally:
            process.send_signal(signal.SIGTERM)
            output, _ = process.communicate(timeout=30)
        assert process.returncode == 0, output.decode()
        assert "giving the Lease up" in output.decode()
        lease = hub.get("Lease", "carbonshift-hub", HUB_NS, "coordination.k8s.io/v1")
        assert not lease["spec"].get("holderIdentity"), "the lease was not given up"
