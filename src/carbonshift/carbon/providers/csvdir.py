"""Carbon files on disk as a chain source: a folder of CSV files, one per zone.

``DIR/<ZONE>.<kind>.csv`` (any kind, ``timestamp,value`` or Electricity Maps export format)
is read first; for direct and life-cycle values, then ``DIR/<ZONE>.csv`` if it is an
Electricity Maps hourly export (whose headers name direct and life-cycle columns). A plain
``timestamp,value`` file says nothing about its kind, so it must carry the kind in its
name. Files are read by :mod:`carbonshift.carbon.readers` and re-read when they change.
Dates past a file's end are replayed like the embedded data (:mod:`carbonshift.carbon.replay`:
t - y x 364 days, whole weeks for files shorter than that), and such an answer is stale
since the file's end.

Zone names are checked (:func:`~carbonshift.carbon.providers.zones.check_zone_name`) and every
resolved path must lie inside the folder, so ``../x`` or an absolute path never reaches a
file elsewhere. An unusable file is logged in full for the operator; the caller's message
names only the zone and the file name, never another file's headers.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from carbonshift.carbon.providers.clock import Clock, SystemClock
from carbonshift.carbon.providers.zones import ZONE_PATTERN, check_zone_name
from carbonshift.carbon.readers import detect_format, read_carbon_csv
from carbonshift.carbon.series import CarbonSeries, CiKind, SignalWindow
from carbonshift.carbon.signal import resample
from carbonshift.errors import InputError

__all__ = ["CsvDirectory"]

_LOG = logging.getLogger("carbonshift.providers.csv")


class CsvDirectory:
    """Zones' carbon series from CSV files in ``directory``."""

    name = "csv"

    def __init__(self, directory: Path, *, clock: Clock | None = None) -> None:
        self.directory = Path(directory)
        self.kinds = frozenset(CiKind)
        self.clock: Clock = clock or SystemClock()
        self._read: dict[tuple[Path, CiKind], tuple[float, CarbonSeries]] = {}

    def _find(self, name: str) -> Path | None:
        root = self.directory.resolve()
        for candidate in (name, name.upper(), name.lower()):
            path = (root / candidate).resolve()
            # a symbolic link may point anywhere: only what resolves inside the folder counts
            if path.is_relative_to(root) and path.is_file():
                return path
        return None

    def _file(self, zone: str, kind: CiKind | None) -> Path | None:
        """``<ZONE>.<kind>.csv``; else, for average kinds, an Electricity Maps export
        ``<ZONE>.csv`` (its headers say direct or LCA, so no kind is ever guessed)."""
        if kind is not None:
            named = self._find(f"{zone}.{kind.value}.csv")
            if named is not None:
                return named
        if kind not in (None, CiKind.DIRECT, CiKind.LCA):
            return None
        plain = self._find(f"{zone}.csv")
        if plain is None:
            return None
        try:
            if detect_format(plain) != "electricitymaps":
                return None
        except InputError as exc:
            _LOG.warning("carbon file %s is not usable: %s", plain, exc)
            return None
        return plain

    def covers(self, zone: str) -> bool:
        """Whether a file for ``zone`` exists (never for a name that is not a zone name)."""
        if not ZONE_PATTERN.fullmatch(zone):
            return False
        return self._file(zone, None) is not None or any(
            self._file(zone, k) is not None for k in CiKind
        )

    def supports(self, kind: CiKind) -> bool:
        """Files may hold any kind; a file without the asked kind is refused when read."""
        return True

    def close(self) -> None:
        """Nothing to release."""

    def _series(self, zone: str, kind: CiKind) -> CarbonSeries:
        check_zone_name(zone)
        path = self._file(zone, kind)
        if path is None:
            raise InputError(
                f"no file for zone {zone!r} ({kind.value} values) in the CSV folder; add "
                f"{zone}.csv or {zone}.{kind.value}.csv"
            )
        mtime = path.stat().st_mtime
        known = self._read.get((path, kind))
        if known is None or known[0] != mtime:
            try:
                series = read_carbon_csv(path, kind, zone=zone)
            except InputError as exc:
                _LOG.warning("carbon file %s is not usable: %s", path, exc)
                raise InputError(
                    f"the {kind.value} carbon file {path.name!r} for zone {zone!r} in the CSV "
                    "folder is not usable; the server log says why"
                ) from None
            known = (mtime, series)
            self._read[(path, kind)] = known
        return known[1]

    def window(
        self,
        zone: str,
        start: datetime,
        end: datetime,
        *,
        slot_minutes: int = 60,
        kind: CiKind = CiKind.DIRECT,
    ) -> SignalWindow:
        """The file's values over ``[start, end)``, replayed past its end."""
        series = self._series(zone, kind)
        window = resample(series, start, end, slot_minutes=slot_minutes, allow_replay=True)
        stale_since = series.end if window.replayed_from is not None else None
        return replace(window, zone=zone, source=self.name, stale_since=stale_since)

    def cached_window(
        self,
        zone: str,
        start: datetime,
        end: datetime,
        *,
        slot_minutes: int,
        kind: CiKind,
        max_age_s: float,
    ) -> SignalWindow | None:
        """Files are not cached: there is no older copy to fall back on."""
        return None
