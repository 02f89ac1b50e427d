"""The embedded Electricity Maps data: exact values, aliases, kinds and the build script."""

from __future__ import annotations

import csv
import gzip
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from carbonshift import files
from carbonshift.carbon import build_embedded
from carbonshift.carbon.embedded import load_series
from carbonshift.carbon.series import CiKind
from carbonshift.errors import InputError
from carbonshift.files import DecompressedTooLargeError

EM_DIR = "carbon/electricitymaps-2021-2023"


def _source_column(path: Path, column: int) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    return [row[column] for row in rows[1:]]


@pytest.mark.parametrize(
    ("zone", "kind", "prefix", "column"),
    [
        pytest.param("DE", CiKind.DIRECT, "DE-LU", 4, id="germany-direct-is-the-file-column"),
        pytest.param("DE", CiKind.LCA, "DE-LU", 5, id="germany-lca-is-the-file-column"),
        pytest.param("CA-ON", CiKind.DIRECT, "CA-ON", 4, id="ontario-with-zero-hours"),
    ],
)
def test_embedded_values_equal_the_source_exactly(
    shared_data: Path, zone: str, kind: CiKind, prefix: str, column: int
) -> None:
    want = np.array(
        _source_column(shared_data / EM_DIR / f"{prefix}_2022_hourly.csv.gz", column), dtype=float
    )
    series = load_series(zone, kind)
    first = int((datetime(2022, 1, 1, tzinfo=UTC) - series.start).total_seconds() // 3600)
    got = series.values_g_per_kwh[first : first + len(want)]
    assert np.array_equal(got, want)


def test_estimated_flag_is_kept(shared_data: Path) -> None:
    flags = _source_column(shared_data / EM_DIR / "DE-LU_2023_hourly.csv.gz", 9)
    want_estimated = np.array([f == "true" for f in flags])
    series = load_series("DE")
    assert series.estimated is not None
    assert np.array_equal(series.estimated[-len(want_estimated) :], want_estimated)
    assert want_estimated.any()  # the case would prove nothing otherwise


@pytest.mark.parametrize(
    ("name", "want_zone"),
    [
        pytest.param("DE", "DE", id="zone-id"),
        pytest.param("DE-LU", "DE", id="file-prefix-alias-germany"),
        pytest.param("BR-SP", "BR-CS", id="file-prefix-alias-brazil"),
        pytest.param("CL-SIC", "CL-SEN", id="file-prefix-alias-chile"),
        pytest.param("us-ny-nyis", "US-NY-NYIS", id="any-case"),
    ],
)
def test_zone_names_and_aliases(name: str, want_zone: str) -> None:
    assert load_series(name).zone == want_zone


def test_series_spans_three_years_hourly_and_is_read_only() -> None:
    series = load_series("GB", "lca")
    assert series.kind is CiKind.LCA
    assert series.start == datetime(2021, 1, 1, tzinfo=UTC)
    assert series.end == datetime(2024, 1, 1, tzinfo=UTC)
    assert series.step_minutes == 60
    with pytest.raises(ValueError, match="read-only"):
        series.values_g_per_kwh[0] = 1.0


@pytest.mark.parametrize(
    ("zone", "kind", "want_message"),
    [
        pytest.param("FR", CiKind.DIRECT, r"zone 'FR' .* DE \(alias DE-LU\)", id="unknown-zone"),
        pytest.param("DE", CiKind.MARGINAL, "use 'direct' or 'lca'", id="kind-not-embedded"),
        pytest.param("DE", "carbon", "use 'direct' or 'lca'", id="kind-misspelt"),
    ],
)
def test_bad_requests_name_the_fix(zone: str, kind: CiKind | str, want_message: str) -> None:
    with pytest.raises(InputError, match=want_message):
        load_series(zone, kind)


def _write_export(path: Path, rows: list[tuple[str, str, str]]) -> None:
    header = (
        "Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO₂eq/kWh (direct),"
        "Carbon Intensity gCO₂eq/kWh (LCA),Low Carbon Percentage,Renewable Percentage,"
        "Data Source,Data Estimated,Data Estimation Method\n"
    )
    lines = [f"{t},Land,Land,XX,{d},{lca},1,1,src,false,\n" for t, d, lca in rows]
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(header + "".join(lines))


def test_build_round_trips_a_small_export(tmp_path: Path) -> None:
    _write_export(
        tmp_path / "XX-A_2021_hourly.csv.gz",
        [("2021-01-01 00:00:00", "0.0", "1.5"), ("2021-01-01 01:00:00", "12.34", "99.99")],
    )
    out = tmp_path / "out"
    catalogue = build_embedded.build(tmp_path, out)
    assert [z["id"] for z in catalogue] == ["XX"]
    assert catalogue[0]["aliases"] == ["XX-A"]
    with np.load(out / build_embedded.DATA_FILE) as archive:
        assert np.cumsum(archive["XX.direct"]).tolist() == [0, 1234]
        assert np.cumsum(archive["XX.lca"]).tolist() == [150, 9999]


@pytest.mark.parametrize(
    ("rows", "want_message"),
    [
        pytest.param(
            [("2021-01-01 00:00:00", "1", "1"), ("2021-01-01 02:00:00", "1", "1")],
            "is followed by",
            id="missing-hour",
        ),
        pytest.param(
            [("2021-01-01 00:00:00", "1", "1"), ("2021-01-01 00:00:00", "1", "1")],
            "appears twice",
            id="duplicated-hour",
        ),
        pytest.param([("2021-01-01 00:00:00", "1.234", "1")], "two decimals", id="three-decimals"),
        pytest.param([("2021-01-01 00:00:00", "n/a", "1")], "not a number", id="not-a-number"),
    ],
)
def test_build_refuses_an_incomplete_source(
    tmp_path: Path, rows: list[tuple[str, str, str]], want_message: str
) -> None:
    _write_export(tmp_path / "XX_2021_hourly.csv.gz", rows)
    with pytest.raises(InputError, match=want_message):
        build_embedded.build(tmp_path, tmp_path / "out")


def _bomb(path: Path, tmp_path: Path) -> None:
    """An export whose rows expand to about 1 MiB (one row repeated)."""
    _write_export(path, [("2021-01-01 00:00:00", "1", "1")] * 20_000)


def _directory(path: Path, tmp_path: Path) -> None:
    path.mkdir()


def _latin1(path: Path, tmp_path: Path) -> None:
    _write_export(tmp_path / "plain.csv.gz", [("2021-01-01 00:00:00", "1", "1")])
    with gzip.open(tmp_path / "plain.csv.gz", "rt", encoding="utf-8") as handle:
        text = handle.read().replace("Land", "Åland")
    utf8 = text.encode("utf-8")
    path.write_bytes(utf8.replace("Åland".encode(), "Åland".encode("latin-1")))


@pytest.mark.parametrize(
    ("name", "make", "want_error", "want_message"),
    [
        pytest.param(
            "XX_2021_hourly.csv.gz",
            _bomb,
            DecompressedTooLargeError,
            "expands to more than 0.0625 MiB",
            id="a-gzip-expanding-past-the-limit",
        ),
        pytest.param(
            "XX_2021_hourly.csv",
            _directory,
            InputError,
            "is a directory, not a regular file",
            id="a-directory-named-like-an-export",
        ),
        pytest.param(
            "XX_2021_hourly.csv",
            _latin1,
            InputError,
            r"XX_2021_hourly\.csv is not UTF-8 text .* is 0xc5",
            id="an-export-in-latin-1",
        ),
    ],
)
def test_build_reads_through_the_bounded_reader(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    make: Callable[[Path, Path], None],
    want_error: type[Exception],
    want_message: str,
) -> None:
    # the one reader (carbonshift.files): a small bound here stands for its 512 MiB
    monkeypatch.setattr(files, "MAX_DECOMPRESSED_BYTES", 1 << 16)
    source = tmp_path / "src"
    source.mkdir()
    make(source / name, source)
    with pytest.raises(want_error, match=want_message):
        build_embedded.build(source, tmp_path / "out")


def test_build_names_a_missing_source_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cannot list SRC_DIR .*nowhere.*; point it at"):
        build_embedded.build(tmp_path / "nowhere", tmp_path / "out")


@pytest.mark.e2e
def test_committed_data_are_what_the_build_makes(shared_data: Path, tmp_path: Path) -> None:
    build_embedded.build(shared_data / EM_DIR, tmp_path)
    shipped = Path(build_embedded.__file__).parent / "data"
    for name in (build_embedded.DATA_FILE, build_embedded.ZONES_FILE):
        assert (tmp_path / name).read_bytes() == (shipped / name).read_bytes(), name
