"""Issue 12 item 10: hostile scenarios are refused up front with one line naming the key
(they used to end in tracebacks, some after the whole run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from carbonshift.cli.app import main
from carbonshift.errors import InputError
from carbonshift.sim.scenario import load_scenario
from tests.sim.test_scenario import MINIMAL

BIG_PATH = "d/" * 5_000 + "x.csv"


def _edit(old: str, new: str) -> str:
    assert old in MINIMAL
    return MINIMAL.replace(old, new, 1)


HOSTILE = [
    pytest.param(_edit("hours = 24", "hours = 1e18"), "hours = 1e+18", id="hours-1e18"),
    pytest.param(_edit("hours = 24", "hours = inf"), "hours = inf", id="hours-infinite"),
    pytest.param(_edit("hours = 24", "hours = nan"), "hours = nan", id="hours-nan"),
    pytest.param(
        _edit("hours = 24", "hours = 24\nmax_drain_hours = 1e9\nallow_replay = true"),
        "max_drain_hours = 1000000000.0",
        id="drain-1e9-with-replay",
    ),
    pytest.param(
        _edit("hours = 24", "hours = 24\nslot_minutes = " + "9" * 40),
        "slot_minutes",
        id="slot-minutes-40-digits",
    ),
    pytest.param(_edit("hours = 24", "hours = 24\nseed = -1"), "seed = -1", id="negative-seed"),
    pytest.param(
        _edit("hours = 24", "hours = 24\nhorizon_slots = 100000000"),
        "horizon_slots",
        id="horizon-1e8",
    ),
    pytest.param(
        _edit("watts_per_unit = { gpu = 200 }", "watts_per_unit = { gpu = 200 }\npue = 1e308"),
        "pue = 1e+308",
        id="pue-1e308",
    ),
    pytest.param(
        _edit("watts_per_unit = { gpu = 200 }", "watts_per_unit = { gpu = 1e308 }"),
        "watts_per_unit.gpu",
        id="watts-1e308",
    ),
    pytest.param(
        _edit("gpu = 32", "gpu = 5e-324"), "too small; use a smaller unit", id="capacity-5e-324"
    ),
    pytest.param(
        _edit("watts_per_unit = { gpu = 200 }", "watts_per_unit = { gpu = 200 }\nidle_watts = inf"),
        "idle_watts",
        id="idle-infinite",
    ),
    pytest.param(
        _edit('generator = "caspian"', 'generator = "caspian"\nn_jobs = 1000000000000'),
        "n_jobs",
        id="generator-n-jobs-1e12",
    ),
    pytest.param(
        _edit('generator = "caspian"', 'generator = "caspian"\nhours = 1e18'),
        "[workload] hours",
        id="generator-hours-1e18",
    ),
    pytest.param(
        _edit('generator = "caspian"', 'generator = "caspian"\ndeadline_factor = 1e308'),
        "deadline_factor",
        id="deadline-factor-1e308",
    ),
    pytest.param(
        _edit('policy = "caspian"', 'policy = "srr"\n[policy_params]\nsamples = 1000000000000'),
        "above its maximum",
        id="policy-samples-1e12",
    ),
    pytest.param(
        _edit('policy = "caspian"', 'policy = "caspian"\n[policy_params]\nomega1 = 1e308'),
        "above its maximum",
        id="policy-omega-1e308",
    ),
    pytest.param(
        _edit('zone = "CA-ON"', f'carbon_csv = "{BIG_PATH}"'),
        "is too long",
        id="carbon-csv-10kb-path",
    ),
    pytest.param(
        _edit('generator = "caspian"', f'trace_csv = "{BIG_PATH}"'),
        "is too long",
        id="trace-10kb-path",
    ),
    pytest.param(
        MINIMAL + "\n[policy_params]\nomega1 = " + "[" * 5000 + "]" * 5000 + "\n",
        "nested too deep",
        id="arrays-5000-deep",
    ),
    pytest.param(
        MINIMAL + "\n[policy_params]\nomega1 = " + "[" * 40 + "]" * 40 + "\n",
        "nested more than 16 deep",
        id="arrays-40-deep",
    ),
]


@pytest.mark.parametrize(("text", "want_in_message"), HOSTILE)
def test_hostile_scenarios_are_refused_up_front(
    tmp_path: Path, text: str, want_in_message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    message = str(caught.value)
    assert want_in_message in message
    assert "\n" not in message
    assert len(message) < 1_000
    out = tmp_path / "out"
    assert main(["simulate", str(path), "--out", str(out), "--no-report"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert not (out / "summary.json").exists()


def test_a_non_utf8_scenario(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_bytes(MINIMAL.encode() + b"\n# \xff\xfe\n")
    with pytest.raises(InputError, match="is not UTF-8 text"):
        load_scenario(path)


def test_a_10kb_scenario_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(tmp_path / BIG_PATH), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "scenario file" in err
    assert len(err) < 1_000


def test_a_generator_refusal_names_the_file_and_the_table(tmp_path: Path) -> None:
    """Found by the fuzz tier: the generator's own check named neither."""
    path = tmp_path / "s.toml"
    path.write_text(_edit('generator = "caspian"', 'generator = "caspian"\ndemand_max = -1'))
    with pytest.raises(InputError) as caught:
        load_scenario(path).load_workload()
    assert str(caught.value).startswith(f"{path}: [workload] generator 'caspian': demand range")
