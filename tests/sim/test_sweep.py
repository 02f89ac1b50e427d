"""Sweeps: the grid expands as written, processes give the same numbers, bad files are named."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from carbonshift.errors import InputError
from carbonshift.sim.sweep import load_sweep, run_sweep
from tests.sim.test_simulate import write_scenario

SWEEP = """
scenarios = ["scenario.toml"]
seeds = [1, 2]
workers = {workers}

[[policies]]
name = "caspian"
params = {{ omega1 = [0.0, 1.0], omega2 = 1.0 }}

[[policies]]
name = "asap"
"""


def write_sweep(tmp_path: Path, workers: int = 1, text: str = SWEEP) -> Path:
    write_scenario(tmp_path)
    path = tmp_path / "sweep.toml"
    path.write_text(text.format(workers=workers))
    return path


def test_grid_expands_to_every_run(tmp_path: Path) -> None:
    spec = load_sweep(write_sweep(tmp_path))
    labels = sorted({(r.label(), r.seed) for r in spec.runs})
    assert labels == [
        ("asap", 1),
        ("asap", 2),
        ("caspian omega1=0.0 omega2=1.0", 1),
        ("caspian omega1=0.0 omega2=1.0", 2),
        ("caspian omega1=1.0 omega2=1.0", 1),
        ("caspian omega1=1.0 omega2=1.0", 2),
    ]
    assert spec.swept == ("omega1",)


def test_processes_agree_with_one_process(tmp_path: Path) -> None:
    serial = run_sweep(load_sweep(write_sweep(tmp_path, 1)), tmp_path / "one")
    parallel = run_sweep(load_sweep(write_sweep(tmp_path, 2)), tmp_path / "two")
    timing = "planner_seconds_total"
    assert [{k: v for k, v in r.items() if k != timing} for r in serial] == [
        {k: v for k, v in r.items() if k != timing} for r in parallel
    ]
    with (tmp_path / "one/sweep.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 6
    assert (tmp_path / "one/sweep.png").stat().st_size > 1000
    # asap against its own baseline (asap) saves nothing.
    asap = next(r for r in serial if r["policy"] == "asap")
    assert asap["carbon_saving_pct"] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param(
            'scenarios = ["scenario.toml"]\nseed = [1]\n', "did you mean 'seeds'", id="typo"
        ),
        pytest.param(
            'scenarios = ["scenario.toml"]\n[[policies]]\nname = "caspian"\n'
            "params = {omega9 = 1}\n",
            "omega9",
            id="unknown-param",
        ),
        pytest.param(
            'scenarios = ["nope.toml"]\n[[policies]]\nname = "asap"\n', "nope.toml", id="missing"
        ),
        pytest.param('scenarios = ["scenario.toml"]\n', "[[policies]]", id="no-policies"),
    ],
)
def test_bad_sweep_files(tmp_path: Path, text: str, want: str) -> None:
    with pytest.raises(InputError, match=None) as info:
        load_sweep(write_sweep(tmp_path, text=text.replace("{", "{{").replace("}", "}}")))
    assert want in str(info.value)


def test_a_dask_cluster_gives_the_same_numbers(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")
    spec = load_sweep(write_sweep(tmp_path, 1))
    serial = run_sweep(spec, tmp_path / "one")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
    ):
        on_dask = run_sweep(spec, tmp_path / "dask", dask_address=cluster.scheduler_address)
    timing = "planner_seconds_total"
    assert [{k: v for k, v in r.items() if k != timing} for r in serial] == [
        {k: v for k, v in r.items() if k != timing} for r in on_dask
    ]


@pytest.mark.e2e  # waits out the 10 s connect timeout
def test_an_unreachable_dask_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="the dask extra is not installed")
    spec = load_sweep(write_sweep(tmp_path, 1))
    with pytest.raises(InputError, match="cannot reach the Dask scheduler"):
        run_sweep(spec, tmp_path / "out", dask_address="tcp://127.0.0.1:9")
