"""The embedded Electricity Maps data: 12 zones, hourly, 2021-01-01 to 2023-12-31 UTC.

The data ship inside the package (``carbon/data/``, ODbL 1.0, see ``carbon/data/LICENSE``;
attribution "Carbon intensity data: Electricity Maps (ODbL)") and are built by
``python -m carbonshift.carbon.build_embedded SRC_DIR``. Values are the published ones,
exactly: the file keeps integer centi-g/kWh.

>>> series = load_series("DE")
>>> series.zone, series.step_minutes, len(series)
('DE', 60, 26280)
"""

from __future__ import annotations

import io
from functools import cache
from importlib import resources

import numpy as np
import numpy.typing as npt

from carbonshift.carbon.series import CarbonSeries, CiKind
from carbonshift.carbon.zones import ZoneInfo, embedded_meta, resolve_zone, zone_catalogue
from carbonshift.errors import InputError

__all__ = ["ATTRIBUTION", "ZoneInfo", "load_series", "zone_catalogue"]

ATTRIBUTION = "Carbon intensity data: Electricity Maps (ODbL)"
_PACKAGE = "carbonshift.carbon"
_KINDS = {CiKind.DIRECT: "direct", CiKind.LCA: "lca"}


@cache
def _npz_blob() -> bytes:
    """The embedded archive, read once; each member is decompressed when asked for."""
    return resources.files(_PACKAGE).joinpath("data", embedded_meta().data_file).read_bytes()


def _member(key: str) -> npt.NDArray[np.generic]:
    with np.load(io.BytesIO(_npz_blob()), allow_pickle=False) as archive:
        array: npt.NDArray[np.generic] = archive[key]
        return array


@cache
def _load(zone_id: str, kind: CiKind) -> CarbonSeries:
    meta = embedded_meta()
    deltas = _member(f"{zone_id}.{_KINDS[kind]}")
    values = np.cumsum(deltas, dtype=np.int64) / 100.0
    packed = _member(f"{zone_id}.estimated").astype(np.uint8)
    estimated = np.unpackbits(packed, count=len(values)).astype(bool)
    values.setflags(write=False)
    estimated.setflags(write=False)
    return CarbonSeries(
        zone=zone_id,
        kind=kind,
        start=meta.start,
        step_minutes=meta.step_minutes,
        values_g_per_kwh=values,
        estimated=estimated,
        source="embedded:electricitymaps",
    )


def load_series(zone: str, kind: CiKind | str = CiKind.DIRECT) -> CarbonSeries:
    """The hourly series of an embedded zone (id or alias such as ``DE-LU``, any case).

    ``kind`` is ``direct`` (default) or ``lca``. The arrays are shared and read-only; the
    result is cached. Unknown zone or kind -> :class:`~carbonshift.errors.InputError`.
    """
    info = resolve_zone(zone)
    try:
        ci_kind = CiKind(kind)
    except ValueError:
        ci_kind = None
    if ci_kind not in _KINDS:
        raise InputError(f"ci_kind {kind!r} is not in the embedded data; use 'direct' or 'lca'")
    assert ci_kind is not None
    return _load(info.id, ci_kind)
