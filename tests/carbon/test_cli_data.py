"""``carbonshift data``: zones and show, checked against the source files read independently."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from carbonshift.cli.app import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_show_de_two_hour_slots_are_pairwise_means_of_the_source(
    shared_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = shared_data / "carbon/electricitymaps-2021-2023/DE-LU_2023_hourly.csv.gz"
    with gzip.open(source, "rt", encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        direct = next(h for h in reader.fieldnames or [] if "direct" in h)
        hourly = {
            row["Datetime (UTC)"]: float(row[direct])
            for row in reader
            if row["Datetime (UTC)"].startswith(("2023-11-14", "2023-11-15"))
        }
    values = [hourly[k] for k in sorted(hourly)]
    want = [(a + b) / 2 for a, b in zip(values[0::2], values[1::2], strict=True)]

    code, out, _ = run(
        capsys, "data", "show", "DE", "--start", "2023-11-14T00:00Z", "--end",
        "2023-11-16T00:00Z", "--slot-minutes", "120", "--format", "json",
    )  # fmt: skip

    assert code == 0
    rows = json.loads(out)
    assert len(rows) == 24 == len(want)
    assert [r["ci_g_per_kwh"] for r in rows] == pytest.approx(want, rel=1e-12)
    assert rows[0]["start"] == "2023-11-14T00:00:00Z"
    assert rows[-1]["start"] == "2023-11-15T22:00:00Z"
    assert set(rows[0]) == {"start", "ci_g_per_kwh", "suspect"}  # --outliers flag (default)


def test_show_csv_lca_with_partial_last_slot(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "data", "show", "de-lu", "--start", "2023-11-14T00:00Z", "--end",
        "2023-11-14T03:00Z", "--slot-minutes", "120", "--kind", "lca", "--format", "csv",
    )  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "start,ci_g_per_kwh,suspect"
    assert [line.split(",")[0] for line in lines[1:]] == [
        "2023-11-14T00:00:00Z",
        "2023-11-14T02:00:00Z",
    ]
    # DE LCA 2023-11-14 00:00..02:00 is 177.4, 180.94, 187.49 in the source file
    assert [float(line.split(",")[1]) for line in lines[1:]] == pytest.approx(
        [(177.4 + 180.94) / 2, 187.49], rel=1e-12
    )


def test_show_past_2023_replays_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "data", "show", "DE", "--start", "2023-12-31T23:00Z", "--end",
        "2024-01-01T01:00Z", "--format", "json",
    )  # fmt: skip
    assert code == 0
    rows = json.loads(out)
    assert [r["replayed_from"] for r in rows] == [None, "2023-01-02T00:00:00Z"]  # 364 days back
    assert "replayed from 2023-01-02T00:00:00Z" in err


def test_show_plot_writes_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    image = tmp_path / "de.png"
    code, out, _ = run(
        capsys, "data", "show", "GB", "--start", "2023-11-14T00:00Z", "--end",
        "2023-11-14T06:00Z", "--plot", str(image),
    )  # fmt: skip
    assert code == 0
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "6 slots" in out


def test_show_from_a_csv_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mine.csv"
    path.write_text("timestamp,value\n2023-01-01T00:00Z,10\n2023-01-01T01:00Z,30\n")
    code, out, _ = run(
        capsys, "data", "show", "MINE", "--csv", str(path), "--start", "2023-01-01T00:00Z",
        "--end", "2023-01-01T02:00Z", "--slot-minutes", "120", "--format", "json",
    )  # fmt: skip
    assert code == 0
    want = [{"start": "2023-01-01T00:00:00Z", "ci_g_per_kwh": 20.0, "suspect": False}]
    assert json.loads(out) == want


def test_zones_json_lists_ids_and_aliases(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "data", "zones", "--format", "json")
    assert code == 0
    zones = {z["id"]: z for z in json.loads(out)}
    assert len(zones) == 12
    assert zones["DE"]["aliases"] == ["DE-LU"]
    assert zones["JP-TK"]["estimated_share"] == 1.0


def test_zones_table_carries_the_attribution(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "data", "zones")
    assert code == 0
    assert "US-TEX-ERCO" in out
    assert "Electricity Maps (ODbL)" in out


@pytest.mark.parametrize(
    ("args", "want_error"),
    [
        pytest.param(["show", "FR"], "zone 'FR' is not in the embedded carbon data", id="unknown"),
        pytest.param(
            ["show", "DE", "--no-replay", "--end", "2024-01-02T00:00Z"],
            "is past its end",
            id="past-the-data-without-replay",
        ),
        pytest.param(
            ["show", "DE", "--start", "2020-12-31T00:00Z"], "is before it", id="before-the-data"
        ),
        pytest.param(["show", "DE", "--start", "14/11/2023"], "not an ISO 8601", id="bad-date"),
        pytest.param(["show", "DE", "--slot-minutes", "2"], "outside 5..1440", id="slot-too-short"),
    ],
)
def test_bad_requests_print_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], want_error: str
) -> None:
    defaults = {"--start": "2023-11-14T00:00Z", "--end": "2023-11-15T00:00Z"}
    extra = [x for k, v in defaults.items() if k not in args for x in (k, v)]
    code, _, err = run(capsys, "data", *args, *extra)
    assert code == 2
    assert want_error in err
    assert err.count("\n") == 1
    assert "Traceback" not in err
