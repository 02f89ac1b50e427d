"""An on-disk cache of native carbon series, one JSON file per (source, zone, kind).

A file holds up to ``max_segments`` fetched segments, each with the time it was fetched. A
lookup returns the newest segment that covers the asked range, with its age: *fresh* while
younger than the provider's TTL, *stale* after that (still usable as a last resort, up to
``max_stale_s``). Writes go to a temporary file and are renamed into place, so concurrent
readers never see half a file.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from carbonshift.carbon.series import CarbonSeries, CiKind
from carbonshift.units import format_utc, parse_utc

__all__ = ["CacheHit", "DiskCache", "default_cache_dir"]

_LOG = logging.getLogger("carbonshift.carbon.providers.cache")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def default_cache_dir() -> Path:
    """``$CARBONSHIFT_CACHE_DIR``, else ``$XDG_CACHE_HOME/carbonshift``, else ``~/.cache/...``."""
    explicit = os.environ.get("CARBONSHIFT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "carbonshift"


@dataclass(frozen=True, slots=True)
class CacheHit:
    """A cached series and when it was fetched from its service."""

    series: CarbonSeries
    fetched_at: datetime


class DiskCache:
    """Native series on disk under ``directory``."""

    def __init__(self, directory: Path, *, max_segments: int = 32) -> None:
        self.directory = Path(directory)
        self.max_segments = max_segments

    def _path(self, source: str, zone: str, kind: CiKind) -> Path:
        name = "_".join(_SAFE.sub("-", part) for part in (source, zone, kind.value))
        return self.directory / f"{name}.json"

    def _load(self, path: Path) -> list[dict[str, object]]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            _LOG.warning("ignoring unreadable cache file %s (%s)", path, exc)
            return []
        segments = data.get("segments") if isinstance(data, dict) else None
        return segments if isinstance(segments, list) else []

    def get(
        self, source: str, zone: str, kind: CiKind, start: datetime, end: datetime
    ) -> CacheHit | None:
        """The newest cached segment covering ``[start, end)``, or None."""
        best: CacheHit | None = None
        for raw in self._load(self._path(source, zone, kind)):
            try:
                hit = _segment_from_json(raw, source, zone, kind)
            except (KeyError, TypeError, ValueError):
                continue
            if (
                hit.series.start <= start
                and hit.series.end >= end
                and (best is None or hit.fetched_at > best.fetched_at)
            ):
                best = hit
        return best

    def put(self, series: CarbonSeries, fetched_at: datetime) -> None:
        """Store ``series`` (fetched at ``fetched_at``), dropping the oldest segments."""
        path = self._path(series.source, series.zone, series.kind)
        segments = self._load(path)
        segments.append(_segment_to_json(series, fetched_at))
        segments.sort(key=lambda s: str(s.get("fetched_at", "")))
        segments = segments[-self.max_segments :]
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"version": 1, "segments": segments}, handle)
            os.replace(tmp, path)
        except OSError as exc:  # a cache that cannot be written is not fatal
            _LOG.warning("cannot write cache file %s (%s); answering uncached", path, exc)


def _segment_to_json(series: CarbonSeries, fetched_at: datetime) -> dict[str, object]:
    estimated = None if series.estimated is None else [bool(x) for x in series.estimated]
    return {
        "fetched_at": format_utc(fetched_at),
        "start": format_utc(series.start),
        "step_minutes": series.step_minutes,
        "values_g_per_kwh": [None if np.isnan(v) else float(v) for v in series.values_g_per_kwh],
        "estimated": estimated,
    }


def _segment_from_json(raw: dict[str, object], source: str, zone: str, kind: CiKind) -> CacheHit:
    values = raw["values_g_per_kwh"]
    step = raw["step_minutes"]
    if not isinstance(values, list) or not isinstance(step, int):
        raise TypeError("bad segment")
    estimated_raw = raw.get("estimated")
    series = CarbonSeries(
        zone=zone,
        kind=kind,
        start=parse_utc(str(raw["start"])),
        step_minutes=step,
        values_g_per_kwh=np.array([np.nan if v is None else v for v in values], dtype=np.float64),
        estimated=(
            np.array(estimated_raw, dtype=np.bool_) if isinstance(estimated_raw, list) else None
        ),
        source=source,
        allow_gaps=True,
    )
    return CacheHit(series=series, fetched_at=parse_utc(str(raw["fetched_at"])))
