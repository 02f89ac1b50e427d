"""One way for the benches to run ``python -m fakekube --virtual-time`` in a subprocess, so
CPU seconds and memory measured in the bench's own process are carbonshift's."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import yaml

__all__ = ["fake_server"]


@contextmanager
def fake_server(
    folder: Path,
    *,
    nodes: int,
    cpu: str,
    start: datetime,
    memory: str = "1000Gi",
    seed: int | None = None,
    crds: Sequence[Path] = (),
) -> Iterator[tuple[Path, str]]:
    """A fake API server writing its kubeconfig and ``fakekube.log`` into ``folder``
    (``crds``: CRD files to install; ``seed``: its names and fault draws); yields (kubeconfig
    path, base URL). The subprocess is stopped however the block ends (SIGTERM, Ctrl-C, an
    error)."""
    kubeconfig = folder / "kubeconfig"
    log_path = folder / "fakekube.log"
    args = [
        *(sys.executable, "-m", "fakekube", "--kubeconfig-out", str(kubeconfig)),
        *("--nodes", str(nodes), "--cpu", cpu, "--memory", memory, "--virtual-time"),
        *("--start", start.strftime("%Y-%m-%dT%H:%MZ")),
        *(() if seed is None else ("--seed", str(seed))),
        *(arg for crd in crds for arg in ("--crd", str(crd))),
    ]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        try:
            for _ in range(600):
                if kubeconfig.exists() and kubeconfig.stat().st_size > 0:
                    break
                if proc.poll() is not None:
                    raise SystemExit(f"fakekube exited: {log_path.read_text()}")
                time.sleep(0.1)
            config = yaml.safe_load(kubeconfig.read_text())
            yield kubeconfig, config["clusters"][0]["cluster"]["server"]
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)
