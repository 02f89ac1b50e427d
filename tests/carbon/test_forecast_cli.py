"""`carbonshift forecast`: eval, gb-sample and methods, in table and JSON, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from carbonshift.cli.app import main


def test_eval_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["forecast", "eval", "--zone", "DE-LU", "--year", "2023", "--horizon-hours", "12",
         "--methods", "oracle,persistence,wma", "--window-hours", "3", "--format", "json"]
    )  # fmt: skip
    assert code == 0
    got = json.loads(capsys.readouterr().out)
    assert [s["method"] for s in got] == ["oracle", "persistence", "wma"]
    oracle, persistence, wma = got
    assert oracle["mae_g_per_kwh"] == 0.0
    assert oracle["window_hit_rate"] == 1.0
    assert persistence["mae_g_per_kwh"] > 10.0
    assert wma["mape_pct"] > 0.0
    assert {s["zone"] for s in got} == {"DE"}
    assert {s["horizon_slots"] for s in got} == {12}
    assert {s["window_slots"] for s in got} == {3}
    assert got[0]["first_issue"] == "2023-01-01T00:00:00Z"
    assert got[0]["last_issue"] == "2023-12-31T12:00:00Z"


def test_eval_table_with_param(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["forecast", "eval", "--zone", "GB", "--year", "2022", "--methods", "noisy-oracle",
         "--param", "noisy-oracle.mae_g_per_kwh=10"]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "noisy-oracle" in out
    assert "MAPE" in out
    assert " 10.0 " in out


@pytest.mark.parametrize(
    ("args", "want_message"),
    [
        pytest.param(["--zone", "DE", "--methods", "wmaa"], "did you mean 'wma'",
                     id="unknown-method"),
        pytest.param(["--zone", "XX"], "XX", id="unknown-zone"),
        pytest.param(["--zone", "DE", "--year", "2021", "--methods", "wma"],
                     "wma needs the previous year", id="wma-without-history"),
        pytest.param(["--zone", "DE", "--year", "2030"], "no issue time", id="year-outside"),
        pytest.param(["--zone", "DE", "--window-hours", "30"], "does not fit",
                     id="window-longer-than-horizon"),
        pytest.param(["--zone", "DE", "--slot-minutes", "120", "--horizon-hours", "3"],
                     "--horizon-hours 3 h", id="horizon-not-whole-slots"),
        pytest.param(["--zone", "DE", "--param", "alpha=3"], "METHOD.NAME=VALUE",
                     id="param-without-method"),
        pytest.param(["--zone", "DE", "--methods", "wma", "--param", "ewma-profile.alpha=0.5"],
                     "not in --methods", id="param-for-absent-method"),
        pytest.param(["--zone", "DE", "--methods", "ewma-profile", "--param",
                      "ewma-profile.alpah=0.5"], "did you mean 'alpha'", id="param-typo"),
    ],
)  # fmt: skip
def test_eval_bad_input(
    args: list[str], want_message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["forecast", "eval", *args]) == 2
    # a run past 1 s draws a (transient) progress bar first, which leaves a blank line on a
    # captured stderr; the error itself is one line
    err = capsys.readouterr().err.lstrip("\n")
    assert err.startswith("error: ")
    assert want_message in err
    assert err.count("\n") == 1


def test_help_has_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("eval", "gb-sample", "methods"):
        assert main(["forecast", command, "--help"]) == 0
        assert "Example: carbonshift forecast" in capsys.readouterr().out


def test_methods_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["forecast", "methods", "--format", "json"]) == 0
    got = {m["name"]: m["params"] for m in json.loads(capsys.readouterr().out)}
    assert got["ewma-profile"] == {"alpha": 0.3, "days": 14}
    assert got["noisy-oracle"] == {"mae_g_per_kwh": 24.0, "seed": 1}


def test_gb_sample_json(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sample = shared_data / "carbon" / "gb-forecast-sample"
    code = main(["forecast", "gb-sample", "--sample-dir", str(sample), "--format", "json"])
    assert code == 0
    got = json.loads(capsys.readouterr().out)
    neso = [r for r in got if r["method"] == "neso"]
    assert [round(r["mae_g_per_kwh"], 1) for r in neso] == [23.6, 21.8]
    assert {r["method"] for r in got} >= {"neso", "noisy-oracle", "wma"}


def test_gb_sample_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["forecast", "gb-sample", "--sample-dir", str(tmp_path / "none")]) == 2
    assert "does not exist" in capsys.readouterr().err
