"""Carbon data: load a zone, read a zone-year CSV, resample a year to 5/30/120-minute slots.

Figures are medians of ``REPEATS`` runs (``time.perf_counter``); limits are the figures
recorded in ``bench/data.md`` times a slack of 3, and at least the figure + 10 ms (the
machine is shared and sub-millisecond figures jitter). Run with
``.venv/bin/python -m bench data``.
"""

from __future__ import annotations

import functools
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from carbonshift.carbon import embedded, zones
from carbonshift.carbon.readers import read_carbon_csv
from carbonshift.carbon.signal import integrals_g_h_per_kwh, resample

REPEATS = 7
SLACK = 3.0
YEAR_START = datetime(2023, 1, 1, tzinfo=UTC)
YEAR_END = datetime(2024, 1, 1, tzinfo=UTC)

#: figures recorded in bench/data.md (ms unless named otherwise)
RECORDED_MS = {
    "embedded_load_zone_cold": 2.0,
    "csv_read_zone_year": 60.0,
    "resample_year_5min": 8.0,
    "resample_year_30min": 0.35,
    "resample_year_120min": 0.22,
    "integrals_10k_intervals": 0.3,
}
#: sub-millisecond figures jitter on a shared machine: a limit is never below figure + this
FLOOR_MS = 10.0


def _median_ms(work: Callable[[], object], before: Callable[[], None] | None = None) -> float:
    times = []
    for _ in range(REPEATS):
        if before is not None:
            before()
        start = time.perf_counter()
        work()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def _clear_caches() -> None:
    embedded._load.cache_clear()
    embedded._npz_blob.cache_clear()


def _row(name: str, value_ms: float) -> dict[str, Any]:
    return {
        "name": name,
        "value": round(value_ms, 3),
        "unit": "ms",
        "limit": round(max(RECORDED_MS[name] * SLACK, RECORDED_MS[name] + FLOOR_MS), 3),
    }


def _write_year_csv(folder: Path) -> Path:
    series = embedded.load_series("DE")
    first = (YEAR_START - series.start) // timedelta(hours=1)
    values = series.values_g_per_kwh[first : first + 8760]
    lines = ["Datetime (UTC),Zone Id,Carbon Intensity gCO₂eq/kWh (direct)"]
    for hour, value in enumerate(values):
        moment = YEAR_START + timedelta(hours=hour)
        lines.append(f"{moment:%Y-%m-%d %H:%M:%S},DE,{value:.2f}")
    path = folder / "DE_2023_hourly.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run() -> list[dict[str, Any]]:
    """Benchmark rows: name, value, unit, limit."""
    rows = [
        _row(
            "embedded_load_zone_cold",
            _median_ms(lambda: embedded.load_series("DE"), before=_clear_caches),
        )
    ]
    with tempfile.TemporaryDirectory() as folder:
        path = _write_year_csv(Path(folder))
        rows.append(_row("csv_read_zone_year", _median_ms(lambda: read_carbon_csv(path))))
    series = embedded.load_series("DE")
    for minutes in (5, 30, 120):
        rows.append(
            _row(
                f"resample_year_{minutes}min",
                _median_ms(
                    functools.partial(resample, series, YEAR_START, YEAR_END, slot_minutes=minutes)
                ),
            )
        )
    rng = np.random.default_rng(1)
    t0_h = rng.uniform(0, 8000, size=10_000)
    t1_h = t0_h + rng.uniform(0, 48, size=10_000)
    rows.append(
        _row(
            "integrals_10k_intervals",
            _median_ms(lambda: integrals_g_h_per_kwh(series, YEAR_START, t0_h, t1_h)),
        )
    )
    data = Path(zones.__file__).parent / "data"
    size_bytes = sum(p.stat().st_size for p in data.iterdir() if p.is_file())
    rows.append(
        {"name": "embedded_data_size", "value": round(size_bytes / 1e6, 3), "unit": "MB",
         "limit": 10.0}
    )  # fmt: skip
    return rows
