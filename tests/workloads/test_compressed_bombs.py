"""Compressed traces are bounded by what they expand to, not only by their own size.

Each bomb is built in the test, small and fast: the limit is lowered to 1 MiB for the test
(``max_bytes`` / :data:`carbonshift.files.MAX_DECOMPRESSED_BYTES`), so a 64 MiB expansion
is a bomb here just as a 600 GiB one is at the real limit.
"""

from __future__ import annotations

import gzip
import struct
import zipfile
from pathlib import Path

import pytest

from carbonshift import files
from carbonshift.errors import InputError
from carbonshift.files import DecompressedTooLargeError, open_decompressed
from carbonshift.workloads import read_workload

HEADER = b"arrival_time,length,cpus\n"
ROW = b"0,1,1\n"
LIMIT = 1024 * 1024


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "MAX_DECOMPRESSED_BYTES", LIMIT)


def _gzip_bomb(path: Path, n_bytes: int) -> Path:
    with gzip.open(path, "wb", compresslevel=9) as out:
        out.write(HEADER)
        chunk = ROW * (1 << 16)
        for _ in range(n_bytes // len(chunk) + 1):
            out.write(chunk)
    return path


def _zip_bomb(path: Path, n_bytes: int, member: str = "jobs.csv") -> Path:
    with (
        zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open(member, "w", force_zip64=True) as out,
    ):
        out.write(HEADER)
        chunk = ROW * (1 << 16)
        for _ in range(n_bytes // len(chunk) + 1):
            out.write(chunk)
    return path


@pytest.mark.usefixtures("small_limit")
@pytest.mark.parametrize(
    ("name", "build"),
    [
        ("gzip-4x-limit", lambda p: _gzip_bomb(p / "jobs.csv.gz", 4 * LIMIT)),
        ("gzip-concatenated-members", None),
        ("zip-4x-limit", lambda p: _zip_bomb(p / "jobs.csv.zip", 4 * LIMIT)),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_trace_that_expands_past_the_limit_is_refused_naming_file_limit_and_fix(
    tmp_path: Path, name: str, build: object
) -> None:
    if build is None:  # many small gzip members glued together: each is small, the sum is not
        path = tmp_path / "jobs.csv.gz"
        one = gzip.compress(HEADER + ROW * (LIMIT // len(ROW) // 2))
        path.write_bytes(one * 4)
    else:
        path = build(tmp_path)  # type: ignore[operator]
    assert path.stat().st_size < LIMIT // 50  # a real bomb: tiny on disk
    with pytest.raises(DecompressedTooLargeError) as caught:
        read_workload(path)
    message = str(caught.value)
    assert str(path) in message
    assert "1 MiB" in message
    assert "decompress" in message or "unzip" in message


@pytest.mark.usefixtures("small_limit")
def test_a_trace_just_under_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv.gz"
    want_rows = (LIMIT - len(HEADER)) // len(ROW)
    path.write_bytes(gzip.compress(HEADER + ROW * want_rows))
    assert len(read_workload(path)) == want_rows


def test_the_limit_counts_bytes_out_not_bytes_in(tmp_path: Path) -> None:
    path = tmp_path / "x.gz"
    path.write_bytes(gzip.compress(b"a" * 1001))
    with open_decompressed(path, "trace", max_bytes=1001) as stream:
        assert len(stream.read()) == 1001
    with (
        pytest.raises(DecompressedTooLargeError, match="more than"),
        open_decompressed(path, "trace", max_bytes=1000) as stream,
    ):
        stream.read()


def _patch_declared_size(path: Path, size: int) -> None:
    """Write ``size`` as the uncompressed size in the zip's local and central headers."""
    data = bytearray(path.read_bytes())
    local = data.find(b"PK\x03\x04")
    central = data.find(b"PK\x01\x02")
    struct.pack_into("<I", data, local + 22, size)
    struct.pack_into("<I", data, central + 24, size)
    path.write_bytes(bytes(data))


def test_a_zip_member_that_declares_too_much_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("jobs.csv", HEADER + ROW)
    _patch_declared_size(path, 0xFFFF_FFF0)
    with pytest.raises(DecompressedTooLargeError, match=r"declares .* MiB uncompressed"):
        read_workload(path)


def test_a_zip_member_that_declares_less_than_it_holds_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("jobs.csv", HEADER + ROW * 1000)
    _patch_declared_size(path, len(HEADER) + len(ROW))  # lies: says 2 rows, holds 1000
    with pytest.raises(InputError, match=r"jobs\.csv\.zip"):
        read_workload(path)


@pytest.mark.parametrize(
    ("name", "members", "want"),
    [
        ("too-many-entries", [f"f{i}.csv" for i in range(1001)], "above the limit of 1000"),
        ("nested-zip", ["inner.csv.zip"], "nested archives are not read"),
        ("nested-gzip", ["inner.csv.gz"], "nested archives are not read"),
        ("two-files-none-named", ["a.csv", "b.csv"], "exactly one file"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_zip_layouts_that_are_not_one_data_file_are_refused(
    tmp_path: Path, name: str, members: list[str], want: str
) -> None:
    path = tmp_path / "jobs.csv.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for member in members:
            archive.writestr(member, HEADER + ROW)
    with pytest.raises(InputError, match=want):
        read_workload(path)


def test_an_encrypted_zip_member_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("jobs.csv", HEADER + ROW)
    data = bytearray(path.read_bytes())
    for magic, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # general-purpose flag bit 0
        at = data.find(magic)
        data[at + offset] |= 0x1
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="encrypted"):
        read_workload(path)


def test_corrupt_deflate_data_in_a_gzip_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv.gz"
    good = bytearray(gzip.compress(HEADER + ROW * 5000))
    good[20:40] = b"\xff" * 20  # inside the deflate stream: zlib.error, not an OSError
    path.write_bytes(bytes(good))
    with pytest.raises(InputError, match=r"jobs\.csv\.gz"):
        read_workload(path)
