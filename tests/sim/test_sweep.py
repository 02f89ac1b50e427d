"""Sweeps: the grid expands as written, processes give the same numbers, bad files are named."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from carbonshift.cli._params import parse_grid_items
from carbonshift.errors import InputError
from carbonshift.sim.sweep import load_sweep, run_sweep, seed_stats
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
    timing = "planner_seconds_total"  # and its _mean, _std, _ci95_* columns
    assert [{k: v for k, v in r.items() if not k.startswith(timing)} for r in serial] == [
        {k: v for k, v in r.items() if not k.startswith(timing)} for r in parallel
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
        pytest.param(
            'scenarios = ["scenario.toml"]\n[[policies]]\nname = "asap"\n'
            'params = {"hold.min_saving_pct" = 150}\n',
            "hold.min_saving_pct",
            id="hold-percent-above-100",
        ),
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
    assert [{k: v for k, v in r.items() if not k.startswith(timing)} for r in serial] == [
        {k: v for k, v in r.items() if not k.startswith(timing)} for r in on_dask
    ]


@pytest.mark.e2e  # waits out the 10 s connect timeout
def test_an_unreachable_dask_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="the dask extra is not installed")
    spec = load_sweep(write_sweep(tmp_path, 1))
    with pytest.raises(InputError, match="cannot reach the Dask scheduler"):
        run_sweep(spec, tmp_path / "out", dask_address="tcp://127.0.0.1:9")


# Student t quantiles t(0.975, df) from the printed tables: df 1 -> 12.706, 2 -> 4.303,
# 3 -> 3.182.
@pytest.mark.parametrize(
    ("values", "want_mean", "want_std", "want_half"),
    [
        pytest.param([10.0, 12.0], 11.0, 2**0.5, 12.706 * 2**0.5 / 2**0.5, id="two-seeds"),
        pytest.param([1.0, 2.0, 6.0], 3.0, 7**0.5, 4.303 * 7**0.5 / 3**0.5, id="three-seeds"),
        pytest.param(
            [1.0, 2.0, 3.0, 4.0], 2.5, (5 / 3) ** 0.5, 3.182 * (5 / 3) ** 0.5 / 2, id="four"
        ),
        pytest.param([5.0, 5.0, 5.0], 5.0, 0.0, 0.0, id="no-spread-no-width"),
    ],
)
def test_seed_stats_is_the_student_t_interval_of_the_mean(
    values: list[float], want_mean: float, want_std: float, want_half: float
) -> None:
    got = seed_stats(values)
    assert got.n == len(values)
    assert got.mean == pytest.approx(want_mean)
    assert got.std == pytest.approx(want_std)
    assert got.ci95_lo == pytest.approx(want_mean - want_half, rel=1e-3, abs=1e-9)
    assert got.ci95_hi == pytest.approx(want_mean + want_half, rel=1e-3, abs=1e-9)


@pytest.mark.parametrize(
    ("values", "want_mean"), [([], None), ([7.0], 7.0)], ids=["no-value", "one-seed"]
)
def test_seed_stats_leaves_spread_undefined_below_two_seeds(
    values: list[float], want_mean: float | None
) -> None:
    got = seed_stats(values)
    assert (got.mean, got.std, got.ci95_lo, got.ci95_hi) == (want_mean, None, None, None)


def test_the_sweep_summary_has_spread_and_interval_columns_per_metric(tmp_path: Path) -> None:
    text = SWEEP.replace("seeds = [1, 2]", "seeds = [1, 2, 3]")
    run_sweep(load_sweep(write_sweep(tmp_path, 1, text=text)), tmp_path / "out")
    with (tmp_path / "out/sweep.csv").open() as handle:
        runs = list(csv.DictReader(handle))
    with (tmp_path / "out/sweep_summary.csv").open() as handle:
        summary = list(csv.DictReader(handle))
    assert len(summary) == 3
    row = next(r for r in summary if r["params"] == "caspian omega1=1.0 omega2=1.0")
    assert row["seeds"] == "3"
    values = [float(r["carbon_kg"]) for r in runs if r["params"] == row["params"]]
    want = seed_stats(values)
    for suffix in ("", "_mean", "_std", "_ci95_lo", "_ci95_hi"):
        assert f"deadline_met_pct{suffix}" in row
    assert float(row["carbon_kg_mean"]) == pytest.approx(want.mean)
    assert float(row["carbon_kg"]) == pytest.approx(want.mean)
    assert float(row["carbon_kg_std"]) == pytest.approx(want.std)
    assert float(row["carbon_kg_ci95_lo"]) <= float(row["carbon_kg_mean"])
    assert float(row["carbon_kg_mean"]) <= float(row["carbon_kg_ci95_hi"])
    assert float(row["carbon_kg_ci95_hi"]) == pytest.approx(want.ci95_hi)
    assert (tmp_path / "out/sweep.png").stat().st_size > 1000


HOLD_SWEEP = """
scenarios = ["scenario.toml"]
seeds = [1]
workers = 1

[[policies]]
name = "fluidos"
params = {{ "hold.min_saving_pct" = [0.0, 100.0] }}
"""


def test_hold_parameters_sweep_the_scenarios_hold_rule(tmp_path: Path) -> None:
    """hold.* keys set [hold]; at 100 % no hold pays, so every job that fits starts on
    arrival, as in the asap baseline: the saving is gone."""
    spec = load_sweep(write_sweep(tmp_path, text=HOLD_SWEEP))
    assert [dict(r.params) for r in spec.runs] == [
        {"hold.min_saving_pct": 0.0},
        {"hold.min_saving_pct": 100.0},
    ]
    rows = run_sweep(spec, tmp_path / "out")
    by_pct = {r["param_hold.min_saving_pct"]: r for r in rows}
    assert by_pct[100.0]["baseline_carbon_kg"] == by_pct[0.0]["baseline_carbon_kg"]
    assert by_pct[100.0]["carbon_saving_pct"] == pytest.approx(0.0, abs=1e-9)
    assert by_pct[0.0]["carbon_saving_pct"] > 0.0


def test_param_items_set_a_grid_on_every_policy_over_the_file(tmp_path: Path) -> None:
    """``sweep --param``: values typed as TOML (5 a whole number, 0.5 a number, text kept),
    on every policy, replacing what the file gives for that key."""
    grid = parse_grid_items(["omega1=0.5,2", "hold.min_saving_pct=0,50"])
    assert grid == {"omega1": [0.5, 2], "hold.min_saving_pct": [0, 50]}
    spec = load_sweep(write_sweep(tmp_path), policies=["caspian"], grid=grid)
    assert sorted({r.label() for r in spec.runs}) == [
        "caspian hold.min_saving_pct=0 omega1=0.5",
        "caspian hold.min_saving_pct=0 omega1=2",
        "caspian hold.min_saving_pct=50 omega1=0.5",
        "caspian hold.min_saving_pct=50 omega1=2",
    ]
    assert set(spec.swept) == {"omega1", "hold.min_saving_pct"}


@pytest.mark.parametrize("item", ["omega1", "=1,2", "omega1="])
def test_a_param_item_without_key_or_values_is_named(item: str) -> None:
    with pytest.raises(InputError, match=r"--param .* is not KEY=V1,V2"):
        parse_grid_items([item])


def test_a_swept_value_the_policy_refuses_is_named_before_any_run(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"hold\.min_saving_pct"):
        load_sweep(write_sweep(tmp_path), grid=parse_grid_items(["hold.min_saving_pct=-5,200"]))
