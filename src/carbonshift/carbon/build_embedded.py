"""Build the embedded carbon data set from Electricity Maps hourly exports.

Usage::

    python -m carbonshift.carbon.build_embedded ../shared/data/carbon/electricitymaps-2021-2023

reads every ``<PREFIX>_<YEAR>_hourly.csv.gz`` (or ``.csv``) in SRC_DIR and writes into
``src/carbonshift/carbon/data/`` (or ``--out DIR``):

- ``electricitymaps_hourly.npz``: per zone id ``Z``, three arrays
  ``Z.direct`` and ``Z.lca`` (int32, intensity in centi-g/kWh, delta-encoded: element 0 is the
  first value, element i the change from value i-1; the source has exactly two decimals, so
  ``cumsum / 100`` gives back every value exactly) and ``Z.estimated`` (the "Data Estimated"
  flag per hour, ``numpy.packbits``). Deterministic: the zip members carry a fixed date.
- ``zones.json``: the catalogue (``id``, ``name``, ``country``, ``aliases``,
  ``estimated_share``, ``data_sources``, ``start``, ``hours``, ``step_minutes``, ``files``).

The source must be complete: every zone covers the same hours, without a gap or a duplicate,
each value has at most two decimals. Anything else stops the build with an
:class:`~carbonshift.errors.InputError` naming the file and line. The output is a database
derived from Electricity Maps data: it stays under ODbL 1.0 (see ``data/LICENSE``).
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import json
import re
import sys
import zipfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TextIO

import numpy as np
import numpy.typing as npt

from carbonshift.errors import InputError
from carbonshift.files import open_decompressed, shown_path

__all__ = ["DATA_FILE", "ZONES_FILE", "build", "main"]

DATA_FILE = "electricitymaps_hourly.npz"
ZONES_FILE = "zones.json"

_NAME = re.compile(r"^(?P<prefix>[A-Za-z0-9-]+)_(?P<year>\d{4})_hourly\.csv(\.gz)?$")
_TIME = "Datetime (UTC)"
_DIRECT = "Carbon Intensity gCO₂eq/kWh (direct)"
_LCA = "Carbon Intensity gCO₂eq/kWh (LCA)"
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


@dataclass(slots=True)
class _Zone:
    """What the build collects for one zone across its yearly files."""

    zone_id: str
    name: str
    country: str
    prefixes: set[str] = field(default_factory=set)
    files: list[str] = field(default_factory=list)
    sources: Counter[str] = field(default_factory=Counter)
    times: list[datetime] = field(default_factory=list)
    direct: list[int] = field(default_factory=list)
    lca: list[int] = field(default_factory=list)
    estimated: list[bool] = field(default_factory=list)


@contextmanager
def _open_text(path: Path) -> Iterator[TextIO]:
    """``path`` as UTF-8 text through the project's one reader (carbonshift.files): a regular
    file of at most 512 MiB, a ``.gz`` counted as it expands (at most 512 MiB)."""
    with open_decompressed(path, "Electricity Maps export") as raw:
        yield io.TextIOWrapper(raw, encoding="utf-8", newline="")


def _centi(text: str, path: Path, line: int, column: str) -> int:
    """``"140.51"`` -> ``14051``, refusing anything that is not a number with <= 2 decimals."""
    try:
        value = float(text)
    except ValueError as exc:
        raise InputError(
            f"{path.name} line {line}: {column} {text!r} is not a number in g/kWh; "
            "fix the source file"
        ) from exc
    centi = round(value * 100)
    if abs(value * 100 - centi) > 1e-6 or not np.isfinite(value):
        raise InputError(
            f"{path.name} line {line}: {column} {text!r} has more than two decimals; "
            "the embedded format keeps centi-g/kWh exactly"
        )
    return int(centi)


def _rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    with _open_text(path) as handle:
        reader = csv.DictReader(handle)
        try:
            fieldnames = reader.fieldnames or ()
            missing = {_TIME, _DIRECT, _LCA, "Zone Id", "Data Estimated"} - set(fieldnames)
            if missing:
                raise InputError(
                    f"{path.name}: columns {sorted(missing)} missing; "
                    "expected an Electricity Maps hourly export"
                )
            for index, row in enumerate(reader):
                yield index + 2, row  # line 1 is the header
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{path.name} is not UTF-8 text (byte {exc.start} of a block near line "
                f"{reader.line_num + 1} is {exc.object[exc.start]:#04x}); give the export as "
                "Electricity Maps publishes it"
            ) from None
        except csv.Error as exc:  # a field past csv's 128 KiB limit, a NUL byte
            raise InputError(
                f"{path.name} line {reader.line_num}: {exc}; expected an Electricity Maps "
                "hourly export"
            ) from None


def _read_file(path: Path, zones: dict[str, _Zone], prefix: str) -> None:
    for line, row in _rows(path):
        zone_id = row["Zone Id"].strip()
        zone = zones.get(zone_id)
        if zone is None:
            zone = zones[zone_id] = _Zone(zone_id, row["Zone Name"].strip(), row["Country"].strip())
        if not zone.files or zone.files[-1] != path.name:
            zone.files.append(path.name)
        zone.prefixes.add(prefix)
        try:
            moment = datetime.strptime(row[_TIME], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
        except ValueError as exc:
            raise InputError(
                f"{path.name} line {line}: {_TIME} {row[_TIME]!r} is not YYYY-MM-DD HH:MM:SS"
            ) from exc
        zone.times.append(moment)
        zone.direct.append(_centi(row[_DIRECT], path, line, "direct intensity"))
        zone.lca.append(_centi(row[_LCA], path, line, "LCA intensity"))
        zone.estimated.append(row["Data Estimated"].strip().lower() == "true")
        for source in row.get("Data Source", "").split(";"):
            if source.strip():
                zone.sources[source.strip()] += 1


def _check_hours(zone: _Zone) -> None:
    order = sorted(range(len(zone.times)), key=zone.times.__getitem__)
    times = [zone.times[i] for i in order]
    for earlier, later in itertools.pairwise(times):
        if later - earlier != timedelta(hours=1):
            problem = "appears twice" if later == earlier else f"is followed by {later}"
            raise InputError(
                f"zone {zone.zone_id}: hour {earlier:%Y-%m-%d %H:%M} UTC {problem}; "
                "the embedded data must be hourly without gaps or duplicates"
            )
    zone.times = times
    zone.direct = [zone.direct[i] for i in order]
    zone.lca = [zone.lca[i] for i in order]
    zone.estimated = [zone.estimated[i] for i in order]


def _delta(values: list[int]) -> npt.NDArray[np.int32]:
    array = np.asarray(values, dtype=np.int64)
    out = np.diff(array, prepend=0)
    if np.abs(out).max(initial=0) >= 2**31:
        raise InputError("a step between hours exceeds int32 centi-g/kWh; values are implausible")
    return out.astype(np.int32)


def _write_npz(target: Path, arrays: dict[str, npt.NDArray[np.generic]]) -> None:
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for key in sorted(arrays):
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, arrays[key], allow_pickle=False)
            zf.writestr(info, buffer.getvalue(), compresslevel=9)


def build(src_dir: Path, out_dir: Path) -> list[dict[str, object]]:
    """Convert every hourly export in ``src_dir`` into the embedded files in ``out_dir``."""
    try:
        paths = sorted(p for p in src_dir.iterdir() if _NAME.match(p.name))
    except OSError as exc:
        raise InputError(
            f"cannot list SRC_DIR {shown_path(src_dir)!r}: {exc.strerror or exc}; point it at "
            "the electricitymaps-2021-2023 folder"
        ) from None
    if not paths:
        raise InputError(
            f"no <ZONE>_<YEAR>_hourly.csv(.gz) files in {src_dir}; "
            "point SRC_DIR at the electricitymaps-2021-2023 folder"
        )
    zones: dict[str, _Zone] = {}
    for path in paths:
        match = _NAME.match(path.name)
        assert match is not None
        _read_file(path, zones, match.group("prefix"))
    catalogue: list[dict[str, object]] = []
    arrays: dict[str, npt.NDArray[np.generic]] = {}
    span: tuple[datetime, int] | None = None
    for zone_id in sorted(zones):
        zone = zones[zone_id]
        _check_hours(zone)
        this_span = (zone.times[0], len(zone.times))
        if span is None:
            span = this_span
        elif this_span != span:
            raise InputError(
                f"zone {zone_id} covers {len(zone.times)} hours from {zone.times[0]:%Y-%m-%d}, "
                f"others {span[1]} from {span[0]:%Y-%m-%d}; give every zone the same years"
            )
        arrays[f"{zone_id}.direct"] = _delta(zone.direct)
        arrays[f"{zone_id}.lca"] = _delta(zone.lca)
        arrays[f"{zone_id}.estimated"] = np.packbits(np.asarray(zone.estimated, dtype=bool))
        catalogue.append(
            {
                "id": zone_id,
                "name": zone.name,
                "country": zone.country,
                "aliases": sorted(p for p in zone.prefixes if p != zone_id),
                "estimated_share": round(sum(zone.estimated) / len(zone.estimated), 6),
                "data_sources": [s for s, _ in zone.sources.most_common()],
                "files": zone.files,
            }
        )
    assert span is not None
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_npz(out_dir / DATA_FILE, arrays)
    document = {
        "format": 1,
        "data_file": DATA_FILE,
        "start": span[0].strftime("%Y-%m-%dT%H:%M:%SZ"),
        "step_minutes": 60,
        "hours": span[1],
        "unit": "centi-g/kWh, delta-encoded int32",
        "attribution": "Carbon intensity data: Electricity Maps (ODbL)",
        "license": "ODbL-1.0 (http://opendatacommons.org/licenses/odbl/1.0/), see LICENSE",
        "zones": catalogue,
    }
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    (out_dir / ZONES_FILE).write_text(text, encoding="utf-8")
    return catalogue


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m carbonshift.carbon.build_embedded",
        description="Convert Electricity Maps hourly exports into the embedded data files.",
    )
    parser.add_argument("src_dir", type=Path, help="folder with <ZONE>_<YEAR>_hourly.csv.gz")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "data",
        help="output folder (default: the package's carbon/data)",
    )
    args = parser.parse_args(argv)
    try:
        catalogue = build(args.src_dir, args.out)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    size = sum(p.stat().st_size for p in args.out.iterdir() if p.is_file())
    print(f"wrote {len(catalogue)} zones to {args.out} ({size / 1e6:.2f} MB in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
