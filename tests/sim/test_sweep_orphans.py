"""A sweep's workers end when the sweep's process is killed outright, not wait for good."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

CHILD = textwrap.dedent(
    """
    import os, sys, time
    from concurrent.futures import ProcessPoolExecutor
    from carbonshift.sim.sweep import exit_with_parent

    pool = ProcessPoolExecutor(1, initializer=exit_with_parent, initargs=(os.getpid(),))
    worker = pool.submit(os.getpid).result()
    pool.submit(time.sleep, 120)  # a long run in progress
    print(worker, flush=True)
    time.sleep(120)
    """
)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in state  # exited, not yet reaped by whoever adopted it


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_worker_ends_when_the_sweep_is_killed(tmp_path: Path) -> None:
    sweep = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        assert sweep.stdout is not None
        worker = int(sweep.stdout.readline())
        assert not _gone(worker)
        os.kill(sweep.pid, signal.SIGKILL)
        sweep.wait(timeout=10)
        for _ in range(100):  # PARENT_CHECK_S is 1 s: 10 s is ample
            if _gone(worker):
                break
            time.sleep(0.1)
        assert _gone(worker), f"worker {worker} outlived the killed sweep"
    finally:
        sweep.kill()
        sweep.wait(timeout=10)
