"""``carbonshift plan``: writes a contract plan, prints scores equal to a recomputation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from carbonshift.cli.app import main
from carbonshift.domain import check_feasibility, score_plan
from carbonshift.formats import read_instance, read_plan, write_instance
from tests.builders import cluster, instance, job


@pytest.fixture
def instance_file(tmp_path: Path) -> Path:
    inst = instance(
        [
            job("a", gpu=2, runtime=2, deadline=4),
            job("b", gpu=1, release=1, deadline=3),
            job("c", gpu=9),
        ],
        [cluster("c1", gpu=4.0), cluster("c2", gpu=2.0, embodied=3.0)],
        {"c1": [100.0, 50.0, 10.0, 200.0], "c2": [80.0] * 4},
    )
    path = tmp_path / "inst.json"
    write_instance(inst, path)
    return path


def _recompute(inst: dict[str, Any], plan: dict[str, Any]) -> dict[str, float]:
    """CONTRACTS.md section 2 scores straight from the JSON, independent of the library."""
    slot_h = inst["slot_minutes"] / 60
    jobs = {j["id"]: j for j in inst["jobs"]}
    clusters = {c["name"]: c for c in inst["clusters"]}
    first = inst["resources"][0]
    operational = embodied = gru = 0.0
    for a in plan["assignments"]:
        j, c = jobs[a["job"]], clusters[a["cluster"]]
        for t in range(a["start_slot"], a["start_slot"] + j["runtime_slots"]):
            ci = inst["carbon_g_per_kwh"][c["name"]][t]
            for k, amount in j["demand"].items():
                operational += (
                    amount * c["watts_per_unit"].get(k, 0) / 1000 * c.get("pue", 1) * slot_h * ci
                )
                embodied += amount * c.get("embodied_g_per_unit_hour", {}).get(k, 0) * slot_h
            gru += j["demand"].get(first, 0) / max(1.0, ci)
    return {"operational_g": operational, "embodied_g": embodied, "gru": gru}


@pytest.mark.parametrize("policy", ["asap", "fluidos", "srr", "exact", "caspian", "window"])
def test_plan_writes_the_plan_and_prints_its_scores(
    instance_file: Path, tmp_path: Path, policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.json"
    code = main(
        [
            "plan",
            "--instance",
            str(instance_file),
            "--policy",
            policy,
            "--out",
            str(out),
            "--format",
            "json",
            "--explain",
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    inst = read_instance(instance_file)
    plan = read_plan(out)
    want = score_plan(inst, plan)
    by_hand = _recompute(json.loads(instance_file.read_text()), json.loads(out.read_text()))
    assert printed["operational_g"] == pytest.approx(by_hand["operational_g"], rel=1e-6)
    assert printed["embodied_g"] == pytest.approx(by_hand["embodied_g"], rel=1e-6)
    assert printed["gru"] == pytest.approx(by_hand["gru"], rel=1e-6)
    assert printed["operational_g"] == pytest.approx(want.operational_g, rel=1e-6)
    assert printed["embodied_g"] == pytest.approx(want.embodied_g, rel=1e-6)
    assert printed["gru"] == pytest.approx(want.gru, rel=1e-6)
    assert (printed["on_time"], printed["late"], printed["unscheduled"]) == (
        want.on_time,
        want.late,
        want.unscheduled,
    )
    assert printed["feasible"] is True
    assert check_feasibility(inst, plan) == []
    assert json.loads(out.read_text())["solve_seconds"] >= 0
    assert set(printed["explain"]) == {"a", "b", "c"}
    assert "unscheduled" in printed["explain"]["c"]
    assert "exceeds the free capacity" in printed["explain"]["c"]


def test_table_output_and_list_policies(
    instance_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--list-policies"]) == 0
    listed = capsys.readouterr().out
    for name in ("asap", "threshold", "window", "fluidos", "caspian", "rr", "srr", "exact"):
        assert name in listed
    assert (
        main(
            [
                "plan",
                "-i",
                str(instance_file),
                "-p",
                "srr",
                "-o",
                str(tmp_path / "p.json"),
                "--param",
                "samples=5",
            ]
        )
        == 0
    )
    assert "operational carbon, g CO2e" in capsys.readouterr().out  # human titles


@pytest.mark.parametrize(
    ("args", "want_message"),
    [
        (["--param", "samples=x"], "samples='x' of policy 'srr' is not a whole number"),
        (["--param", "samples"], "is not KEY=VALUE"),
        (["--param", "bogus=1"], "unknown parameter 'bogus'"),
        (["--policy", "nope"], "unknown policy 'nope'"),
    ],
    ids=["bad-value", "no-equals", "unknown-key", "unknown-policy"],
)
def test_bad_input_is_one_line_and_exit_2(
    instance_file: Path,
    tmp_path: Path,
    args: list[str],
    want_message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["plan", "-i", str(instance_file), "-o", str(tmp_path / "p.json"), "-p", "srr"]
    assert main([*base, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert want_message in err


def test_missing_instance_is_an_input_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan"]) == 2
    assert "--instance is missing" in capsys.readouterr().err


def test_without_policy_carbonshift_plans_says_so_and_writes_its_bound(
    instance_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "p.json"
    assert main(["plan", "-i", str(instance_file), "-o", str(out), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "notice: no --policy given; planning with 'carbonshift'" in captured.err
    assert captured.err.count("\n") == 1
    printed = json.loads(captured.out)
    written = json.loads(out.read_text(encoding="utf-8"))
    assert printed["policy"] == written["policy"] == "carbonshift"
    # job c (9 gpu) fits nowhere, so no plan puts every job on time: no bound, no gap
    assert written["bound"] == {"lower_bound_g": None, "gap": None}
    assert printed["lower_bound_g"] is None
    assert read_plan(out).policy == "carbonshift"


def test_list_policies_shows_carbonshift_with_its_parameters(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", "--list-policies", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    want_params = {"objective", "bound", "dual_iterations", "improve_passes", "lp_max_columns"}
    assert want_params <= set(listed["carbonshift"]["params"])
    assert listed["carbonshift"]["params"]["objective"]["default"] == "carbon"


def _mutated(instance_file: Path, old: str, new: str) -> bytes:
    text = json.dumps(json.loads(instance_file.read_text()))
    assert old in text
    return text.replace(old, new, 1).encode()


@pytest.mark.parametrize(
    ("make_bytes", "want_message"),
    [
        pytest.param(
            lambda f: _mutated(f, '"release_slot": 0', '"release_slot": 9223372036854775808'),
            "jobs.0.release_slot",
            id="slot-outside-int64",
        ),
        pytest.param(
            lambda f: _mutated(f, '"release_slot": 0', '"release_slot": ' + "7" * 4301),
            "jobs.0.release_slot",
            id="integer-of-4301-digits",
        ),
        pytest.param(lambda f: b"\xc3\x28" + f.read_bytes(), "not UTF-8 text", id="non-utf8"),
        pytest.param(
            lambda f: b'{"version": 1, "jobs": ' + b"[" * 1000 + b"]" * 1000 + b"}",
            "nested more than 32 deep",
            id="nesting-1000-deep",
        ),
        pytest.param(
            lambda f: _mutated(
                f, '"watts_per_unit": {"gpu": 1000.0}', '"watts_per_unit": {"gpu": 1e308}'
            ),
            "watts_per_unit.gpu",
            id="watts-1e308",
        ),
        pytest.param(
            lambda f: _mutated(f, '"capacity": {"gpu": 4.0}', '"capacity": {"gpu": 5e-324}'),
            "capacity.gpu",
            id="capacity-5e-324",
        ),
        pytest.param(
            lambda f: _mutated(f, '"runtime_slots": 2', '"runtime_slots": true'),
            "runtime_slots",
            id="boolean-runtime",
        ),
        pytest.param(
            lambda f: _mutated(f, '"runtime_slots": 2', '"runtime_slots": "2"'),
            "runtime_slots",
            id="string-runtime",
        ),
        pytest.param(
            lambda f: _mutated(f, "100.0", "Infinity"),
            "carbon_g_per_kwh.c1.0",
            id="infinite-carbon-slot",
        ),
    ],
)
def test_hostile_instance_files_are_one_line_and_exit_2(
    instance_file: Path,
    tmp_path: Path,
    make_bytes: Any,
    want_message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 12 items 8 and 9: no traceback, no plan written, the field named."""
    bad = tmp_path / "bad.json"
    bad.write_bytes(make_bytes(instance_file))
    out = tmp_path / "p.json"
    assert main(["plan", "-i", str(bad), "-o", str(out), "-p", "fluidos"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert "Traceback" not in err
    assert want_message in err
    assert not out.exists()


def test_integral_float_runtime_plans_and_output_is_strict_json(
    instance_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.json"
    good.write_bytes(_mutated(instance_file, '"runtime_slots": 2', '"runtime_slots": 2.0'))
    out = tmp_path / "p.json"
    assert main(["plan", "-i", str(good), "-o", str(out), "-p", "srr", "--format", "json"]) == 0

    def refuse(constant: str) -> None:
        raise AssertionError(f"non-JSON constant {constant} in the output")

    json.loads(out.read_text(), parse_constant=refuse)
    json.loads(capsys.readouterr().out, parse_constant=refuse)


@pytest.mark.parametrize(
    ("extra", "want_policy"),
    [
        pytest.param(["--format", "json"], "carbonshift", id="report-as-json"),
        pytest.param(["--policy", "exact", "--out", "-"], "exact", id="exact-plan-to-stdout"),
    ],
)
def test_json_output_is_pure_json_on_stdout_in_a_fresh_process(
    tmp_path: Path, extra: list[str], want_policy: str
) -> None:
    """HiGHS prints a banner on C stdout when its first model is made; it must not land in
    the middle of --format json or of the plan written by --out - (checked in a fresh
    process, where the banner appears: it goes to stderr)."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    out = [] if "--out" in extra else ["--out", str(tmp_path / "p.json")]
    done = subprocess.run(
        [
            sys.executable, "-m", "carbonshift.cli", "plan",
            "--instance", str(repo / "examples" / "instance.json"), *out, *extra,
        ],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    assert json.loads(done.stdout)["policy"] == want_policy
    assert "HiGHS" not in done.stdout


def test_out_dash_writes_the_plan_to_stdout_and_the_report_to_stderr(
    instance_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # before: --out - wrote a file named '-' in the working folder
    monkeypatch.chdir(tmp_path)
    code = main(["plan", "-i", str(instance_file), "-p", "asap", "--out", "-", "--format", "json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert not (tmp_path / "-").exists()
    plan = json.loads(captured.out)
    assert plan["version"] == 1
    assert plan["policy"] == "asap"
    assert json.loads(captured.err)["plan"] == "stdout"


@pytest.mark.parametrize(
    ("args", "want_in_error"),
    [
        pytest.param(
            ["simulate", "examples/caspian.toml", "--out", "-"], "give a folder", id="sim"
        ),
        pytest.param(["sweep", "examples/sweep-caspian.toml", "--out", "-"], "folder", id="sweep"),
        pytest.param(["reproduce", "caspian", "--quick", "--out", "-"], "folder", id="reproduce"),
        pytest.param(
            [
                "data",
                "show",
                "DE",
                "--start",
                "2023-11-14T00:00Z",
                "--end",
                "2023-11-14T02:00Z",
                "--plot",
                "-",
            ],
            "not written to stdout",
            id="data-show-plot",
        ),
    ],
)
def test_out_dash_is_refused_where_the_output_is_not_one_stream(
    args: list[str],
    want_in_error: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(repo)
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert want_in_error in err
    assert not (repo / "-").exists()
