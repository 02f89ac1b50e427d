"""Every reader of a user-given path refuses what is not a regular file of bounded size.

A FIFO used to hang ``carbonshift plan --instance``, and ``/dev/zero`` filled the memory with a
MemoryError traceback (issue 13). Each reader now goes through ``carbonshift.files``: the
table below names every reader; each gets a FIFO, a character device, a directory and a
sparse file above the 512 MiB limit, and must answer with an InputError naming the path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from carbonshift.errors import InputError

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")

#: carbonshift.files.MAX_INPUT_BYTES, written out (docs/formats.md says 512 MiB)
MAX_INPUT_BYTES = 512 * 1024 * 1024


def _readers() -> list[Any]:
    from carbonshift.api.regions import RegionTable
    from carbonshift.carbon.gb_sample import read_gb_file
    from carbonshift.carbon.providers.secrets import read_secret
    from carbonshift.carbon.providers.zones import ZoneTable
    from carbonshift.carbon.readers import read_carbon_csv
    from carbonshift.formats import read_instance, read_plan
    from carbonshift.k8s.config import load_config
    from carbonshift.k8s.multicluster.config import load_hub_config
    from carbonshift.sim.scenario import load_scenario
    from carbonshift.sim.sweep import load_sweep
    from carbonshift.workloads.readers import read_workload

    table: list[tuple[str, str, Callable[[Path], object]]] = [
        ("instance", "inst.json", read_instance),
        ("plan", "plan.json", read_plan),
        ("scenario", "run.toml", load_scenario),
        ("sweep", "sweep.toml", load_sweep),
        ("carbon-csv", "ci.csv", read_carbon_csv),
        ("trace-csv", "jobs.csv", read_workload),
        ("trace-csv-gz", "jobs.csv.gz", read_workload),
        ("trace-swf", "log.swf", read_workload),
        ("trace-gwf-zip", "log.gwf.zip", read_workload),
        ("controller-config", "controller.toml", load_config),
        ("hub-config", "hub.yaml", load_hub_config),
        ("region-map", "regions.json", lambda p: RegionTable().with_file(p)),
        ("zone-table", "zones.json", ZoneTable.from_file),
        ("gb-sample", "national_fw48h_2023-03-15T0101Z.csv", read_gb_file),
        (
            "secret-file",
            "key.txt",
            lambda p: read_secret("CARBONSHIFT_KEY", env={"CARBONSHIFT_KEY_FILE": str(p)}),
        ),
    ]
    return [pytest.param(name, file_name, read, id=name) for name, file_name, read in table]


READERS = _readers()


def _fifo(folder: Path, name: str) -> Path:
    path = folder / name
    os.mkfifo(path)
    threading.Thread(target=_unblock, args=(path,), daemon=True).start()
    return path


def _unblock(path: Path) -> None:
    """Open the FIFO's write end as soon as a reader has it open, then close it: a reader
    that (wrongly) opened it blocking gets an empty file instead of hanging the test run."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # ENXIO: no reader yet; ENOENT: the test is over
            time.sleep(0.005)


def _device(folder: Path, name: str) -> Path:
    path = folder / name
    path.symlink_to("/dev/zero")
    return path


def _directory(folder: Path, name: str) -> Path:
    path = folder / name
    path.mkdir()
    return path


def _too_large(folder: Path, name: str) -> Path:
    path = folder / name
    with path.open("wb") as handle:  # sparse: no disk used
        handle.truncate(MAX_INPUT_BYTES + 1)
    return path


HOSTILE = [
    pytest.param(_fifo, "FIFO", id="fifo"),
    pytest.param(_device, "character device", id="dev-zero"),
    pytest.param(_directory, "directory", id="directory"),
    pytest.param(_too_large, "above the limit of", id="above-512MiB"),
]


@pytest.mark.parametrize(("make", "want_in_message"), HOSTILE)
@pytest.mark.parametrize(("name", "file_name", "read"), READERS)
def test_every_reader_refuses_what_is_not_a_bounded_regular_file(
    tmp_path: Path,
    name: str,
    file_name: str,
    read: Callable[[Path], object],
    make: Callable[[Path, str], Path],
    want_in_message: str,
) -> None:
    if not Path("/dev/zero").exists() and make is _device:
        pytest.skip("no /dev/zero here")
    path = make(tmp_path, file_name)
    with pytest.raises(InputError) as caught:
        read(path)
    message = str(caught.value)
    assert want_in_message in message, message
    assert file_name in message, message
    assert "\n" not in message


def test_a_file_at_the_limit_is_read_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    from carbonshift import files

    assert files.MAX_INPUT_BYTES == MAX_INPUT_BYTES
    read_input_bytes = files.read_input_bytes
    path = tmp_path / "small.json"
    path.write_bytes(b"x" * 10)
    assert read_input_bytes(path, "test", max_bytes=10) == b"x" * 10
    with pytest.raises(InputError, match="is 10 bytes, above the limit of 9 bytes"):
        read_input_bytes(path, "test", max_bytes=9)


def test_text_that_is_not_utf8_names_the_byte(tmp_path: Path) -> None:
    from carbonshift.files import read_input_text

    path = tmp_path / "latin1.toml"
    path.write_bytes(b"name = '\xe9'")
    with pytest.raises(InputError, match=r"byte 8 is 0xe9"):
        read_input_text(path, "scenario")


@pytest.mark.parametrize("make", [_fifo, _device], ids=["fifo", "dev-zero"])
def test_plan_cli_exits_2_at_once_on_a_fifo_or_dev_zero(
    tmp_path: Path, make: Callable[[Path, str], Path]
) -> None:
    path = make(tmp_path, "inst.json")
    run = subprocess.run(
        [sys.executable, "-m", "carbonshift.cli", "plan", "--instance", str(path), "-o", "-"],
        capture_output=True,
        text=True,
        timeout=60,  # before the fix: a FIFO hung here, /dev/zero ran out of memory
        check=False,
    )
    assert run.returncode == 2, run.stderr
    assert "not a regular file" in run.stderr
    assert "Traceback" not in run.stderr
