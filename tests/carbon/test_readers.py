"""Readers of carbon CSV files: both formats, gaps, and every kind of bad input."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from carbonshift.carbon.readers import (
    GapFill,
    detect_format,
    read_carbon_csv,
    read_electricitymaps_csv,
    read_timestamp_value_csv,
)
from carbonshift.carbon.series import CiKind
from carbonshift.errors import InputError

EM_HEADER = (
    "Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO₂eq/kWh (direct),"
    "Carbon Intensity gCO₂eq/kWh (LCA),Data Estimated"
)


def em_csv(tmp_path: Path, rows: list[str], header: str = EM_HEADER) -> Path:
    """An Electricity Maps export with ``rows`` (time,direct,lca[,estimated])."""
    lines = [header]
    for row in rows:
        time, direct, lca, *flag = row.split(",")
        lines.append(f"{time},Germany,Germany,DE,{direct},{lca},{flag[0] if flag else 'false'}")
    path = tmp_path / "de.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def plain_csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plain.csv"
    path.write_text(text, encoding="utf-8")
    return path


HOURS = ["2023-11-14 00:00:00,100,150", "2023-11-14 01:00:00,0,40.5", "2023-11-14 02:00:00,50,60"]


@pytest.mark.parametrize(
    ("kind", "want_values"),
    [
        pytest.param(CiKind.DIRECT, [100.0, 0.0, 50.0], id="direct-with-a-zero-hour"),
        pytest.param(CiKind.LCA, [150.0, 40.5, 60.0], id="life-cycle"),
    ],
)
def test_electricitymaps_export(tmp_path: Path, kind: CiKind, want_values: list[float]) -> None:
    series = read_electricitymaps_csv(em_csv(tmp_path, HOURS), kind)
    assert series.zone == "DE"
    assert series.kind is kind
    assert series.start == datetime(2023, 11, 14, tzinfo=UTC)
    assert series.step_minutes == 60
    assert series.values_g_per_kwh.tolist() == want_values


@pytest.mark.parametrize(
    ("header", "kind"),
    [
        pytest.param("Datetime (UTC),carbon intensity co2 DIRECT", CiKind.DIRECT, id="ascii-co2"),
        pytest.param("Datetime (UTC),CO2 Life Cycle (g/kWh)", CiKind.LCA, id="life-cycle-words"),
        pytest.param("Datetime (UTC),CO₂ lca", CiKind.LCA, id="lower-case-lca"),
    ],
)
def test_intensity_headers_match_case_insensitively(
    tmp_path: Path, header: str, kind: CiKind
) -> None:
    path = plain_csv(tmp_path, f"{header}\n2023-01-01 00:00:00,7.5\n2023-01-01 01:00:00,8\n")
    assert read_carbon_csv(path, kind).values_g_per_kwh.tolist() == [7.5, 8.0]


def test_plain_timestamp_value_csv_with_offsets_and_quarter_hours(tmp_path: Path) -> None:
    path = plain_csv(
        tmp_path,
        "timestamp,value\n2023-01-01T01:00:00+01:00,10\n2023-01-01T00:15Z,20\n"
        "2023-01-01 00:30:00,30\n",
    )
    series = read_timestamp_value_csv(path, zone="XX")
    assert (series.zone, series.step_minutes) == ("XX", 15)
    assert series.start == datetime(2023, 1, 1, tzinfo=UTC)
    assert series.values_g_per_kwh.tolist() == [10.0, 20.0, 30.0]
    assert detect_format(path) == "timestamp-value"


def test_estimated_flag_is_read(tmp_path: Path) -> None:
    path = em_csv(tmp_path, ["2023-01-01 00:00:00,1,2,true", "2023-01-01 01:00:00,1,2,false"])
    series = read_carbon_csv(path)
    assert series.estimated is not None
    assert series.estimated.tolist() == [True, False]


GAP = ["2023-11-14 00:00:00,100,1", "2023-11-14 03:00:00,400,1"]


@pytest.mark.parametrize(
    ("fill", "want_values"),
    [
        pytest.param(GapFill.PREVIOUS, [100.0, 100.0, 100.0, 400.0], id="previous-repeats"),
        pytest.param("interpolate", [100.0, 200.0, 300.0, 400.0], id="interpolate-is-linear"),
    ],
)
def test_gap_fill_is_explicit_and_marked(
    tmp_path: Path, fill: GapFill | str, want_values: list[float]
) -> None:
    series = read_carbon_csv(em_csv(tmp_path, GAP), fill=fill)
    assert series.values_g_per_kwh.tolist() == want_values
    assert series.estimated is not None
    assert series.estimated.tolist() == [False, True, True, False]


BAD_EM = [
    pytest.param(
        ["2023-11-14 00:00:00,1,1", "2023-11-14 02:00:00,1,1"],
        EM_HEADER,
        r"de\.csv: line 3: 1 step\(s\) of 60 minutes missing from 2023-11-14 01:00:00 .*fill=",
        id="missing-hour-names-the-hour-and-the-fill-option",
    ),
    pytest.param(
        ["2023-11-14 00:00:00,1,1", "2023-11-14 01:00:00,1,1", "2023-11-14 01:00:00,2,2"],
        EM_HEADER,
        r"line 4: time 2023-11-14 01:00:00 UTC appears twice \(also line 3\)",
        id="duplicated-hour",
    ),
    pytest.param(
        ["2023-11-14 00:00:00,1,1", "14/11/2023 01:00,1,1"],
        EM_HEADER,
        r"line 3: Datetime \(UTC\) '14/11/2023 01:00' is not a date and time; write it like",
        id="unreadable-date",
    ),
    pytest.param(
        ["2023-11-14 00:00:00,abc,1"],
        EM_HEADER,
        r"line 2: .*direct\) 'abc' is not an intensity in g/kWh; write a finite number >= 0",
        id="not-a-number",
    ),
    pytest.param(
        ["2023-11-14 00:00:00,-5,1"],
        EM_HEADER,
        r"line 2: .*'-5' is not an intensity in g/kWh",
        id="negative-value",
    ),
    pytest.param(
        # 1e300 ran a whole simulation (1e297 kg); 1.7e308 overflowed in a planning round
        ["2023-11-14 00:00:00,1e300,1"],
        EM_HEADER,
        r"line 2: .*'1e300' g/kWh is above 100000 g/kWh, the most carbonshift reads",
        id="above-the-limit",
    ),
    pytest.param(
        ["2023-11-14 00:00:00,1,1", "2023-11-14 01:30:00,1,1"],
        EM_HEADER,
        r"line 3: time 2023-11-14 01:30:00 is not on the 60-minute grid",
        id="half-hour-in-an-hourly-export",
    ),
    pytest.param(
        ["2023-11-14 01:00:00,1,1", "2023-11-14 00:00:00,1,1"],
        EM_HEADER,
        "sort the rows by time",
        id="out-of-order",
    ),
    pytest.param(
        ["2023-11-14 00:00:00,1,1"],
        "Time,Country,Zone Name,Zone Id,CO2 direct,CO2 LCA,Data Estimated",
        "neither a 'Datetime \\(UTC\\)' column",
        id="missing-time-column",
    ),
    pytest.param(
        ["2023-11-14 00:00:00,1,1"],
        "Datetime (UTC),Country,Zone Name,Zone Id,direct,LCA,Data Estimated",
        r"no column whose header contains 'CO2' .* and 'direct'",
        id="missing-intensity-column",
    ),
]


@pytest.mark.parametrize(("rows", "header", "want_message"), BAD_EM)
def test_bad_electricitymaps_files(
    tmp_path: Path, rows: list[str], header: str, want_message: str
) -> None:
    with pytest.raises(InputError, match=want_message):
        read_carbon_csv(em_csv(tmp_path, rows, header))


@pytest.mark.parametrize(
    ("text", "want_message"),
    [
        pytest.param("timestamp,val\n2023-01-01T00:00Z,1\n", "neither", id="unknown-header"),
        pytest.param("", "the file is empty", id="empty-file"),
        pytest.param("timestamp,value\n", "no data rows", id="header-only"),
        pytest.param("timestamp,value\n2023-01-01T00:00Z,\n", "'' is not an", id="empty-value"),
        pytest.param("timestamp,value\nyesterday,1\n", "'yesterday' is not a date", id="bad-date"),
        pytest.param(
            "timestamp,value\n2023-01-01T00:00Z,1\n2023-01-01T01:00Z,1\n2023-01-01T02:30Z,1\n",
            "line 4: time 2023-01-01 02:30:00 is not on the 60-minute grid",
            id="misaligned-time",
        ),
        pytest.param(
            "timestamp,value\n2023-01-01T00:00:00Z,1\n2023-01-01T00:00:30Z,1\n",
            "0.5 minutes apart",
            id="sub-minute-step",
        ),
    ],
)
def test_bad_plain_files(tmp_path: Path, text: str, want_message: str) -> None:
    with pytest.raises(InputError, match=want_message):
        read_carbon_csv(plain_csv(tmp_path, text))


def test_plain_reader_names_missing_columns(tmp_path: Path) -> None:
    path = plain_csv(tmp_path, "timestamp,ci\n2023-01-01T00:00Z,1\n")
    with pytest.raises(InputError, match=r"column\(s\) \['value'\] missing"):
        read_timestamp_value_csv(path)


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"carbon CSV file .* does not exist"):
        read_carbon_csv(tmp_path / "nope.csv")


def test_unknown_fill_names_the_options(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="'previous' or 'interpolate'"):
        read_carbon_csv(em_csv(tmp_path, HOURS), fill="zero")


def test_reads_the_real_export_like_the_embedded_data(shared_data: Path, tmp_path: Path) -> None:
    import gzip
    import shutil

    from carbonshift.carbon.embedded import load_series

    source = shared_data / "carbon/electricitymaps-2021-2023/CL-SIC_2021_hourly.csv.gz"
    with gzip.open(source, "rb") as raw, (tmp_path / "cl.csv").open("wb") as out:
        shutil.copyfileobj(raw, out)
    series = read_carbon_csv(tmp_path / "cl.csv", "lca")
    assert series.zone == "CL-SEN"
    want = load_series("CL-SEN", "lca").values_g_per_kwh[: len(series)]
    assert np.array_equal(series.values_g_per_kwh, want)
