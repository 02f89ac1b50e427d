"""Trace readers: the CSV of CONTRACTS.md section 3, SWF and GWF, on hand-written and real files."""

from __future__ import annotations

import gzip
import logging
import math
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from carbonshift.errors import InputError
from carbonshift.workloads import (
    Workload,
    read_gwf,
    read_swf,
    read_trace_csv,
    read_workload,
    trace_format,
)
from carbonshift.workloads.csv_trace import _read_clean

DATA = Path(__file__).parent / "data"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- CSV -------------------------------------------------------------------------------------


def test_tiny_csv_reads_every_optional_column() -> None:
    workload = read_trace_csv(DATA / "tiny.csv", resource="gpu", deadline_factor=3.0)

    assert workload.ids == ("j0", "j1", "j3")  # the blank line is not a row
    np.testing.assert_allclose(workload.submit_h, [0.0, 0.25, 3.5])
    np.testing.assert_allclose(workload.runtime_h, [1.5, 2.0, 0.5])
    np.testing.assert_allclose(workload.demand["gpu"], [2, 1, 8])
    # no deadline cell: arrival + 3 x length; the second row gives its own
    np.testing.assert_allclose(workload.deadline_h, [4.5, 10.0, 5.0])
    assert workload.critical.tolist() == [False, True, False]
    assert workload.report.skipped == {"zero-length": 1}
    assert workload.report.rows_read == 4
    assert workload.report.jobs_kept == 3


@pytest.mark.parametrize(
    ("unit", "text", "want_submit_h", "want_runtime_h", "want_deadline_h"),
    [
        pytest.param("hours", "0.5,2,1\n", 0.5, 2.0, 0.5 + 2 * 2.0, id="hours"),
        pytest.param("seconds", "1800,7200,1\n", 0.5, 2.0, 0.5 + 2 * 2.0, id="seconds"),
        pytest.param("seconds", "0,90,1\n", 0.0, 90 / 3600, 2 * 90 / 3600, id="seconds-short-job"),
    ],
)
def test_csv_time_unit_scales_arrival_and_length(
    tmp_path: Path,
    unit: str,
    text: str,
    want_submit_h: float,
    want_runtime_h: float,
    want_deadline_h: float,
) -> None:
    path = _write(tmp_path, "t.csv", "arrival_time,length,cpus\n" + text)

    workload = read_trace_csv(path, time_unit=unit, deadline_factor=2.0)

    assert workload.submit_h[0] == pytest.approx(want_submit_h)
    assert workload.runtime_h[0] == pytest.approx(want_runtime_h)
    assert workload.deadline_h[0] == pytest.approx(want_deadline_h)


def test_csv_rows_come_back_sorted_by_arrival_with_ids_from_file_order(tmp_path: Path) -> None:
    path = _write(tmp_path, "t.csv", "arrival_time,length,cpus\n5,1,1\n1,1,2\n3,1,3\n")

    workload = read_trace_csv(path)

    assert workload.ids == ("j1", "j2", "j0")
    np.testing.assert_allclose(workload.demand["gpu"], [2, 3, 1])


BAD_CSV_ROWS = [
    pytest.param("x,1,1", "arrival_time", "'x'", id="arrival-not-a-number"),
    pytest.param("-1,1,1", "arrival_time", "'-1'", id="negative-arrival"),
    pytest.param("0,nan,1", "length", "'nan'", id="nan-length"),
    pytest.param("0,-2,1", "length", "'-2'", id="negative-length"),
    pytest.param("0,1,0", "cpus", "'0'", id="zero-cpus"),
    pytest.param("0,1,", "cpus", "''", id="empty-cpus"),
    pytest.param("0,1,1,5", "(row)", "'0,1,1,5'", id="too-many-fields"),
    pytest.param("0,1", "(row)", "'0,1'", id="too-few-fields"),
]


@pytest.mark.parametrize(("row", "want_column", "want_value"), BAD_CSV_ROWS)
def test_strict_csv_names_file_line_column_value_and_fix(
    tmp_path: Path, row: str, want_column: str, want_value: str
) -> None:
    path = _write(tmp_path, "bad.csv", f"arrival_time,length,cpus\n0,1,1\n{row}\n2,1,1\n")

    with pytest.raises(InputError) as caught:
        read_trace_csv(path)

    message = str(caught.value)
    assert f"{path}:3:" in message
    assert f"column {want_column!r}" in message
    assert f"value {want_value}" in message
    assert "strict=False" in message


@pytest.mark.parametrize(("row", "want_column", "want_value"), BAD_CSV_ROWS)
def test_lenient_csv_skips_bad_rows_and_counts_them(
    tmp_path: Path, row: str, want_column: str, want_value: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = _write(tmp_path, "bad.csv", f"arrival_time,length,cpus\n0,1,1\n{row}\n2,1,1\n")

    with caplog.at_level(logging.WARNING, logger="carbonshift.workloads"):
        workload = read_trace_csv(path, strict=False)

    assert workload.ids == ("j0", "j2")
    assert workload.report.skipped == {"malformed": 1}
    (problem,) = workload.report.problems
    assert (problem.line, problem.column) == (3, want_column)
    assert "left out {'malformed': 1}" in caplog.text


@pytest.mark.parametrize(
    ("text", "want_in_message"),
    [
        pytest.param("arrival,length,cpus\n0,1,1\n", "did you mean 'arrival_time'", id="typo"),
        pytest.param("", "is empty", id="empty-file"),
        pytest.param("arrival_time,length,cpus,critical\n0,1,1,maybe\n", "'maybe'", id="bad-bool"),
        pytest.param("arrival_time,length,cpus,deadline\n0,1,1,soon\n", "'soon'", id="bad-dl"),
    ],
)
def test_csv_header_and_optional_column_errors(
    tmp_path: Path, text: str, want_in_message: str
) -> None:
    path = _write(tmp_path, "t.csv", text)

    with pytest.raises(InputError, match=want_in_message):
        read_trace_csv(path)


@pytest.mark.parametrize(
    ("kwargs", "want_in_message"),
    [
        pytest.param({"time_unit": "hour"}, "did you mean 'hours'", id="unit-typo"),
        pytest.param({"deadline_factor": -1.0}, "deadline_factor is -1.0", id="negative-factor"),
    ],
)
def test_csv_bad_options(kwargs: dict[str, object], want_in_message: str) -> None:
    with pytest.raises(InputError, match=want_in_message):
        read_trace_csv(DATA / "tiny.csv", **kwargs)  # type: ignore[arg-type]


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        read_trace_csv(tmp_path / "nope.csv")


def test_duplicate_ids_from_an_id_column_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "t.csv", "id,arrival_time,length,cpus\na,0,1,1\na,1,1,1\n")

    with pytest.raises(InputError, match="'a' appears twice"):
        read_trace_csv(path)


# --- SWF and GWF -----------------------------------------------------------------------------


def test_tiny_swf_header_jobs_and_skips() -> None:
    workload = read_swf(DATA / "tiny.swf")

    assert workload.ids == ("1", "2", "6")
    assert workload.start == datetime.fromtimestamp(1_700_000_000, UTC)
    np.testing.assert_allclose(workload.submit_h, [0.0, 0.5, 2.5])
    np.testing.assert_allclose(workload.runtime_h, [1.0, 0.5, 1.5])
    # job 2's allocated count is unknown (-1): the requested count stands in
    np.testing.assert_allclose(workload.demand["cpu"], [4, 2, 8])
    np.testing.assert_allclose(workload.deadline_h, [3.0, 2.0, 7.0])
    assert workload.users == ("3", "4", "6")
    assert workload.queues == ("1", "2", "1")
    assert workload.report.skipped == {
        "zero-length": 1,
        "cancelled": 1,
        "unknown-processors": 1,
        "partial-execution": 1,
    }
    assert workload.report.header["MaxProcs"] == "64"
    assert workload.report.header["TimeZoneString"] == "Europe/Berlin"


def test_swf_requested_processors() -> None:
    workload = read_swf(DATA / "tiny.swf", processors="requested", resource="core")

    np.testing.assert_allclose(workload.demand["core"], [8, 2, 4])


def test_swf_strict_names_the_first_bad_line() -> None:
    with pytest.raises(InputError) as caught:
        read_swf(DATA / "tiny_bad.swf")

    message = str(caught.value)
    assert "tiny_bad.swf:3:" in message
    assert "has 17 fields" in message
    assert "exactly 18" in message


def test_swf_lenient_counts_every_bad_line() -> None:
    workload = read_swf(DATA / "tiny_bad.swf", strict=False)

    assert workload.ids == ("3",)
    assert workload.report.skipped == {"malformed": 3}
    assert [(p.line, p.column) for p in workload.report.problems] == [
        (3, "(row)"),
        (4, "run"),
        (6, "alloc_procs"),
    ]
    assert [p.value for p in workload.report.problems[1:]] == ["1h", "-7"]


def test_swf_bad_processor_choice_suggests_the_right_name() -> None:
    with pytest.raises(InputError, match="did you mean 'requested'"):
        read_swf(DATA / "tiny.swf", processors="request")  # type: ignore[arg-type]


def test_tiny_gwf() -> None:
    workload = read_gwf(DATA / "tiny.gwf")

    assert workload.ids == ("1", "2", "4")
    assert workload.start == datetime(2006, 1, 1, tzinfo=UTC)
    np.testing.assert_allclose(workload.submit_h, [0.0, 1.0, 3.0])
    np.testing.assert_allclose(workload.runtime_h, [2.0, 0.5, 1.0])
    np.testing.assert_allclose(workload.demand["cpu"], [1, 2, 8])
    assert workload.users == ("U1", "U2", "U3")
    assert workload.queues == ("Q1", "Q2", None)
    assert workload.report.skipped == {"cancelled": 1}


def test_gwf_line_with_swf_field_count_is_malformed(tmp_path: Path) -> None:
    line = (DATA / "tiny.swf").read_text().splitlines()[-1]
    path = _write(tmp_path, "x.gwf", line + "\n")

    with pytest.raises(InputError, match="exactly 29"):
        read_gwf(path)


@pytest.mark.parametrize("packing", ["gz", "zip"])
def test_compressed_logs_read_like_plain_ones(tmp_path: Path, packing: str) -> None:
    plain = (DATA / "tiny.swf").read_bytes()
    if packing == "gz":
        path = tmp_path / "tiny.swf.gz"
        path.write_bytes(gzip.compress(plain))
    else:
        path = tmp_path / "tiny.swf.zip"
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("tiny.swf", plain)

    workload = read_workload(path)

    assert workload.ids == ("1", "2", "6")
    assert workload.report.skipped_total == 4


def test_zip_with_several_files_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "two.swf.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.swf", "")
        archive.writestr("b.swf", "")

    with pytest.raises(InputError, match="exactly one file"):
        read_swf(path)


@pytest.mark.parametrize(
    ("name", "want"),
    [
        pytest.param("jobs.csv", "csv", id="csv"),
        pytest.param("jobs.CSV.GZ", "csv", id="csv-gz-upper"),
        pytest.param("log.swf.zip", "swf", id="swf-zip"),
        pytest.param("grid.gwf", "gwf", id="gwf"),
    ],
)
def test_trace_format_from_name(name: str, want: str) -> None:
    assert trace_format(name) == want


def test_trace_format_unknown_suffix() -> None:
    with pytest.raises(InputError, match=r"name it \.csv, \.swf or \.gwf"):
        trace_format("jobs.txt")


# --- real traces (../shared/data) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "unit", "want_jobs", "want_max_arrival_h", "want_max_length_h"),
    [
        pytest.param("azure-100k.csv.gz", "hours", 99_988, 8760.0, 72.0, id="azure-100k"),
        pytest.param("pai-100k.csv.gz", "hours", 99_998, 8760.0, 72.0, id="pai-100k"),
        pytest.param("pai_1k.csv", "seconds", 1_000, 24 * 7.0, 72.0, id="pai-1k-seconds"),
    ],
)
def test_real_gaia_traces(
    shared_data: Path,
    name: str,
    unit: str,
    want_jobs: int,
    want_max_arrival_h: float,
    want_max_length_h: float,
) -> None:
    workload = read_trace_csv(shared_data / "traces" / "gaia" / name, time_unit=unit)

    assert len(workload) == want_jobs
    assert workload.report.skipped_total == 0
    assert 0 <= workload.submit_h[0] <= workload.submit_h[-1] < want_max_arrival_h
    assert 0 < workload.runtime_h.max() < want_max_length_h
    assert bool(np.all(np.diff(workload.submit_h) >= 0))
    np.testing.assert_allclose(workload.deadline_h, workload.submit_h + 3 * workload.runtime_h)


def test_real_nasa_swf_zip(shared_data: Path) -> None:
    workload = read_swf(shared_data / "traces" / "pwa" / "NASA-iPSC-1993-3.1-cln.swf.zip")

    # 18,239 lines; 173 have run time 0 (SWF rounds to seconds); nothing else is left out
    assert workload.report.rows_read == 18_239
    assert workload.report.skipped == {"zero-length": 173}
    assert len(workload) == 18_239 - 173
    assert workload.report.header["MaxProcs"] == "128"
    assert workload.report.header["Acknowledge"] == "Bill Nitzberg"
    assert workload.start == datetime(1993, 10, 1, 7, 0, 3, tzinfo=UTC)  # 00:00:03 PDT
    assert workload.demand["cpu"].max() <= 128
    assert math.isclose(workload.span_h, 92 * 24, rel_tol=0.02)  # Oct-Dec 1993


def _with_note_column(source: Path, target: Path) -> None:
    """The same rows plus a text column, which sends the reader down its row-by-row path."""
    lines = source.read_text().splitlines()
    target.write_text("\n".join([lines[0] + ",note", *(f"{ln},x" for ln in lines[1:])]) + "\n")


def _assert_same(a: Workload, b: Workload) -> None:
    assert a.ids == b.ids
    for name in ("submit_h", "runtime_h", "deadline_h", "critical"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(a.demand["gpu"], b.demand["gpu"])


def test_vectorised_and_row_by_row_paths_agree(tmp_path: Path) -> None:
    clean = _write(
        tmp_path,
        "clean.csv",
        "arrival_time,length,cpus,deadline\n0.1,0.30000000000000004,2,\n7,1e-3,1,9.5\n3.25,12,4,\n",
    )
    _with_note_column(clean, tmp_path / "noted.csv")

    fast = read_trace_csv(clean, time_unit="seconds")
    slow = read_trace_csv(tmp_path / "noted.csv", time_unit="seconds")

    options = {"unit_h": 1 / 3600, "resource": "gpu", "deadline_factor": 3.0, "start": None}
    assert _read_clean(clean, **options) is not None  # type: ignore[arg-type]
    assert _read_clean(tmp_path / "noted.csv", **options) is None  # type: ignore[arg-type]

    _assert_same(fast, slow)
    assert fast.ids == ("j0", "j2", "j1")


def test_vectorised_and_row_by_row_paths_agree_on_a_real_trace(
    shared_data: Path, tmp_path: Path
) -> None:
    source = shared_data / "traces" / "gaia" / "pai_1k.csv"
    _with_note_column(source, tmp_path / "noted.csv")

    _assert_same(
        read_trace_csv(source, time_unit="seconds"),
        read_trace_csv(tmp_path / "noted.csv", time_unit="seconds"),
    )
