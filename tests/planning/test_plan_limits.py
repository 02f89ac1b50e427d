"""Plan-size limits below the API and the CLI (planning/limits.py): one size estimate per
policy, one check naming the size, the limit, the unit and the fix; ``plan``, ``simulate``,
``sweep`` and ``reproduce`` refuse an instance past ``--max-plan-cells`` or
``--max-horizon-cells`` with exit 2 and one line, and 0 lifts a limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from carbonshift.cli.app import main
from carbonshift.formats import instance_from_dict
from carbonshift.planning import POLICIES
from carbonshift.planning.limits import (
    CLI_LIMITS,
    PlanLimits,
    PlanSize,
    PlanTooLargeError,
    check_plan_size,
)
from tests.planning.stress_shapes import SHAPES
from tests.sim.test_simulate import write_scenario
from tests.sim.test_sweep import write_sweep


def doc(
    jobs: int = 4, horizon: int = 8, clusters: int = 2, *, same: bool = False
) -> dict[str, Any]:
    """``jobs`` jobs on ``clusters`` clusters; ``same``: every job alike (one class)."""
    names = [f"c{i}" for i in range(clusters)]
    return {
        "version": 1,
        "slot_minutes": 60,
        "horizon_slots": horizon,
        "resources": ["gpu", "mem"],
        "clusters": [
            {"name": n, "capacity": {"gpu": 8, "mem": 8}, "watts_per_unit": {"gpu": 300}}
            for n in names
        ],
        "carbon_g_per_kwh": {
            n: [100.0 + (i * 7 + k) % 30 for i in range(horizon)] for k, n in enumerate(names)
        },
        "jobs": [
            {
                "id": f"j{i}",
                "demand": {"gpu": 1.0},
                "runtime_slots": 1 if same else 1 + i % 3,
                "release_slot": 0 if same else i % 2,
            }
            for i in range(jobs)
        ],
    }


def test_sizes_count_jobs_classes_and_horizon_cells() -> None:
    size = PlanSize.of(instance_from_dict(doc(jobs=12, horizon=10, clusters=3)))
    # runtimes 1-3 x releases 0-1: 6 classes (i % 6)
    assert (size.jobs, size.classes, size.clusters, size.slots, size.resources) == (12, 6, 3, 10, 2)
    assert size.cells("caspian") == 12 * 3 * 10
    assert size.weighted_cells("caspian") == 12 * 3 * 10 * 10
    assert size.cells("carbonshift") == 6 * 3 * 10  # classes: one column set per class
    assert size.weighted_cells("asap") == 12 * 3 * 10
    assert size.horizon_cells == 3 * 10 * 2


@pytest.mark.parametrize(
    ("limits", "policy", "want_parts"),
    [
        pytest.param(
            PlanLimits(max_cells=1_000),
            "exact",
            [
                "360 job x cluster x slot cells",
                "policy 'exact' may plan at most 20",
                "cost weight 50",
                "limit 1,000 weighted cells",
                "FIX",
            ],
            id="cells-exact",
        ),
        pytest.param(
            PlanLimits(max_cells=100),
            "carbonshift",
            ["180 job class x cluster x slot cells", "at most 50", "FIX"],
            id="classes-carbonshift",
        ),
        pytest.param(
            PlanLimits(max_horizon_cells=59),
            "asap",
            [
                "60 cluster x slot x resource cells",
                "(3 clusters x 10 slots x 2 resources)",
                "at most 59 are planned",
                "FIX",
            ],
            id="horizon",
        ),
    ],
)
def test_a_check_names_the_size_the_limit_the_unit_and_the_fix(
    limits: PlanLimits, policy: str, want_parts: list[str]
) -> None:
    inst = instance_from_dict(doc(jobs=12, horizon=10, clusters=3))
    with pytest.raises(PlanTooLargeError) as caught:
        limits.check(inst, policy, what="the instance", fix="FIX")
    for part in want_parts:
        assert part in str(caught.value)


def test_within_the_limits_nothing_is_raised() -> None:
    inst = instance_from_dict(doc(jobs=12, horizon=10, clusters=3))
    PlanLimits(max_cells=12 * 3 * 10 * 10, max_horizon_cells=60).check(
        inst, "caspian", what="x", fix="y"
    )
    PlanLimits(max_cells=6 * 3 * 10 * 2).check(inst, "carbonshift", what="x", fix="y")
    PlanLimits().check(inst, "exact", what="x", fix="y")


@pytest.mark.parametrize(
    ("size", "policy", "want_admitted"),
    [
        # the target: 100,000 ten-zone jobs (8,317 classes, bench/safety.md), 10 x 48
        pytest.param(PlanSize(100_000, 8_317, 10, 48, 1), "carbonshift", True, id="ten-zone-1e5"),
        # 100,000 jobs of their own class each: 96e6 weighted cells, many GB
        pytest.param(PlanSize(100_000, 100_000, 10, 48, 1), "carbonshift", False, id="distinct"),
        # 3,000 jobs of their own class over 2,000 slots: 8.5 GB measured
        pytest.param(PlanSize(3_000, 3_000, 1, 2_000, 1), "carbonshift", False, id="t3000"),
        pytest.param(PlanSize(1_000, 1_000, 3, 50, 1), "exact", True, id="exact-cjps-1000"),
        pytest.param(PlanSize(2_000, 2_000, 10, 48, 1), "caspian", True, id="caspian-2000"),
        # the format's largest horizon, 2.59 GB under carbonshift (bench/planner.md)
        pytest.param(PlanSize(3, 3, 1, 1_000_000, 1), "asap", False, id="million-slots"),
    ],
)
def test_the_cli_defaults(size: PlanSize, policy: str, want_admitted: bool) -> None:
    def check() -> None:
        check_plan_size(
            size,
            policy,
            max_cells=CLI_LIMITS.max_cells,
            max_horizon_cells=CLI_LIMITS.max_horizon_cells,
            fix="x",
        )

    if want_admitted:
        check()
    else:
        with pytest.raises(PlanTooLargeError):
            check()


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_cli_defaults_admit_every_stress_shape(shape: str) -> None:
    for seed in (0, 1):
        inst = instance_from_dict(SHAPES[shape](np.random.default_rng(seed)))
        for policy in POLICIES:
            CLI_LIMITS.check(inst, policy, what=shape, fix="x")


def _one_line_error(capsys: pytest.CaptureFixture[str], *parts: str) -> None:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    for part in parts:
        assert part in lines[0], lines[0]


def test_plan_refuses_past_the_limit_and_zero_lifts_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(doc(jobs=12, horizon=10, clusters=3)))
    out = tmp_path / "plan.json"
    argv = ["plan", "-i", str(path), "-p", "caspian", "-o", str(out)]
    assert main([*argv, "--max-plan-cells", "3599"]) == 2
    _one_line_error(capsys, "360 job x cluster x slot cells", "at most 359", "--max-plan-cells")
    assert not out.exists()
    assert main([*argv, "--max-horizon-cells", "59"]) == 2
    _one_line_error(capsys, "60 cluster x slot x resource cells", "--max-horizon-cells N")
    assert main([*argv, "--max-plan-cells", "3600", "--max-horizon-cells", "60"]) == 0
    assert main([*argv, "--max-plan-cells", "0", "--max-horizon-cells", "0"]) == 0
    assert main([*argv, "--max-plan-cells", "-1"]) == 2
    _one_line_error(capsys, "--max-plan-cells -1 is below 0")


def test_plan_reads_the_limit_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(doc(jobs=12, horizon=10, clusters=3)))
    monkeypatch.setenv("CARBONSHIFT_MAX_PLAN_CELLS", "100")
    assert main(["plan", "-i", str(path), "-p", "asap", "-o", str(tmp_path / "p.json")]) == 2
    _one_line_error(capsys, "policy 'asap' may plan at most 100")


def test_plan_admits_the_shipped_instance_by_default(tmp_path: Path) -> None:
    for policy in ("carbonshift", "exact", "caspian", "srr"):
        argv = ["plan", "-i", "examples/instance.json", "-p", policy]
        assert main([*argv, "-o", str(tmp_path / f"{policy}.json")]) == 0


def test_simulate_checks_every_round(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = write_scenario(tmp_path, policy="caspian")
    out = tmp_path / "out"
    argv = ["simulate", str(scenario), "--out", str(out), "--no-report"]
    assert main([*argv, "--max-plan-cells", "10"]) == 2
    _one_line_error(
        capsys, "a planning round of", "policy caspian", "at most 1 ", "--max-plan-cells"
    )
    assert not (out / "summary.json").exists()
    assert main([*argv, "--max-horizon-cells", "1"]) == 2
    _one_line_error(capsys, "cluster x slot x resource cells", "--max-horizon-cells N")
    assert main(argv) == 0  # the defaults admit it


def test_sweep_checks_every_round(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = write_sweep(tmp_path, workers=1)
    argv = ["sweep", str(sweep), "--out", str(tmp_path / "sw"), "--max-plan-cells", "10"]
    assert main(argv) == 2
    _one_line_error(capsys, "a planning round of", "at most", "--max-plan-cells")


def test_reproduce_checks_every_round(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["reproduce", "caspian", "--quick", "--out", str(tmp_path), "--max-plan-cells", "10"]
    assert main(argv) == 2
    _one_line_error(capsys, "a planning round of", "policy caspian", "--max-plan-cells")


# -- the controller's and the hub's seam: the most urgent jobs that fit ------------------------


@pytest.mark.parametrize(
    ("limits", "policy", "order", "want_fit"),
    [
        # 12 jobs x 3 clusters x 10 slots = 360 cells
        pytest.param(PlanLimits(), "asap", None, 12, id="no-limit"),
        pytest.param(PlanLimits(max_cells=360), "asap", None, 12, id="just-fits"),
        pytest.param(PlanLimits(max_cells=359), "asap", None, 11, id="one-too-many"),
        pytest.param(PlanLimits(max_cells=29), "asap", None, 0, id="not-one-row"),
        # weight 50: 1,500 weighted cells a job
        pytest.param(PlanLimits(max_cells=1_500 * 10 + 1_499), "exact", None, 10, id="weighted"),
        # classes i % 6: the first 6 jobs open 6 rows of 3 x 10 x 2 = 60 cells, the rest none
        pytest.param(PlanLimits(max_cells=6 * 60), "carbonshift", None, 12, id="classes-fit"),
        pytest.param(PlanLimits(max_cells=3 * 60), "carbonshift", None, 3, id="classes-cut"),
        # in this order jobs 0, 6, 1, 7, ...: classes 0, 0, 1, 1, 2, 2 -> 3 classes, 6 jobs
        pytest.param(
            PlanLimits(max_cells=3 * 60),
            "carbonshift",
            [0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11],
            6,
            id="classes-in-order",
        ),
        # the horizon-cell limit is not this function's (horizon_fits)
        pytest.param(PlanLimits(max_horizon_cells=1), "asap", None, 12, id="horizon-ignored"),
    ],
)
def test_fitting_jobs_is_the_longest_prefix_within_the_limit(
    limits: PlanLimits, policy: str, order: list[int] | None, want_fit: int
) -> None:
    inst = instance_from_dict(doc(jobs=12, horizon=10, clusters=3))
    got = limits.fitting_jobs(inst, policy, order)
    assert got == want_fit
    if order is None and got:  # the prefix alone passes the one check
        prefix = doc(jobs=got, horizon=10, clusters=3)
        cells = PlanLimits(max_cells=limits.max_cells)
        cells.check(instance_from_dict(prefix), policy, what="x", fix="y")


def test_horizon_fits_counts_clusters_slots_and_resources() -> None:
    size = PlanSize(0, 0, 10, 168, 3)
    assert PlanLimits(max_horizon_cells=5040).horizon_fits(size)
    assert not PlanLimits(max_horizon_cells=5039).horizon_fits(size)
    assert PlanLimits().horizon_fits(size)
