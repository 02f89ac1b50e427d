"""The real GB national forecasts sample, and how our forecasters compare with it.

``../shared/data/carbon/gb-forecast-sample/`` holds three half-hourly CSV files of the GB
Carbon Intensity API (CC BY 4.0, "Carbon Intensity API, NESO / National Grid ESO"), scraped by
nmpowell/carbon-intensity-forecast-tracking, in their own format
``from,intensity.forecast,intensity.actual`` (``from`` is the UTC half-hour start, values in
gCO2/kWh, national GB)::

    national_fw48h_2023-03-15T0101Z.csv   48 h forecast issued 2023-03-15 01:01Z (no actuals)
    national_fw48h_2023-03-16T0101Z.csv   48 h forecast issued 2023-03-16 01:01Z (no actuals)
    national_pt24h_2023-03-17T0101Z.csv   past 24 h: final forecast and ACTUAL,
                                          2023-03-16 01:00 .. 2023-03-17 00:30

:func:`compare_gb_sample` scores each published forecast against the published actuals of
2023-03-16 01:00 .. 2023-03-17 01:00 (the 2023-03-15 issue 24-48 h ahead, the 2023-03-16 issue
0-24 h ahead) and, beside them, our forecasters (default: ``noisy-oracle`` with the archive's
MAE of 24 g/kWh) issued at the same hours on the embedded Electricity Maps GB series, scored
against that series for the same 24 hours. The two truths differ (NESO's national intensity
leaves out embedded generation; Electricity Maps models the whole zone), so compare errors,
not levels.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt

from carbonshift.carbon.forecast import Forecaster, NoisyOracle, Oracle
from carbonshift.carbon.series import CarbonSeries, CiKind
from carbonshift.errors import InputError
from carbonshift.files import read_input_text
from carbonshift.units import format_utc, parse_utc

__all__ = [
    "ATTRIBUTION",
    "GbForecastFile",
    "GbSampleRow",
    "compare_gb_sample",
    "default_sample_dir",
    "read_gb_file",
]

ATTRIBUTION = "GB forecasts: Carbon Intensity API, NESO (CC BY 4.0)"
_HEADER = ["from", "intensity.forecast", "intensity.actual"]
_NAME = re.compile(r"^national_(fw48h|pt24h)_(\d{4}-\d{2}-\d{2}T\d{4}Z)\.csv$")
_HALF_HOUR = timedelta(minutes=30)

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True, eq=False)
class GbForecastFile:
    """One file of the sample: half-hourly forecast (and actual, where published) values.

    ``kind`` is ``fw48h`` (forward 48 h) or ``pt24h`` (past 24 h); ``fetched_at`` is the
    scrape time in the file name; ``actual_g_per_kwh`` is NaN where the file has none.
    """

    kind: str
    fetched_at: datetime
    start: datetime
    forecast_g_per_kwh: FloatArray
    actual_g_per_kwh: FloatArray

    @property
    def end(self) -> datetime:
        """End (exclusive) of the last half-hour."""
        return self.start + _HALF_HOUR * len(self.forecast_g_per_kwh)


@dataclass(frozen=True, slots=True)
class GbSampleRow:
    """The error of one forecast over the sample's 24 scored hours."""

    method: str
    truth: str
    issued_at: datetime
    lead_h: tuple[float, float]
    points: int
    slot_minutes: int
    mae_g_per_kwh: float
    bias_g_per_kwh: float

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "method": self.method,
            "truth": self.truth,
            "issued_at": format_utc(self.issued_at),
            "lead_h": list(self.lead_h),
            "points": self.points,
            "slot_minutes": self.slot_minutes,
            "mae_g_per_kwh": self.mae_g_per_kwh,
            "bias_g_per_kwh": self.bias_g_per_kwh,
        }


def default_sample_dir() -> Path:
    """``$CARBONSHIFT_SHARED/data/carbon/gb-forecast-sample``, else ``../shared/...`` from the
    working directory."""
    shared = Path(os.environ.get("CARBONSHIFT_SHARED", Path.cwd().parent / "shared"))
    return shared / "data" / "carbon" / "gb-forecast-sample"


def _number(text: str, path: Path, line: int) -> float:
    if text.strip() == "":
        return float("nan")
    try:
        return float(text)
    except ValueError as exc:
        raise InputError(
            f"{path.name} line {line}: intensity {text!r} is not a number of gCO2/kWh; "
            "fix or remove that line"
        ) from exc


def read_gb_file(path: Path) -> GbForecastFile:
    """Read one ``national_<fw48h|pt24h>_<YYYY-MM-DDTHHMMZ>.csv`` file of the sample."""
    match = _NAME.match(path.name)
    if match is None:
        raise InputError(
            f"file name {path.name!r} is not national_fw48h_<time>.csv or "
            "national_pt24h_<time>.csv (time like 2023-03-15T0101Z); rename it"
        )
    stamp = match.group(2)
    fetched_at = parse_utc(f"{stamp[:13]}:{stamp[13:15]}Z", what="file time")
    rows = list(csv.reader(io.StringIO(read_input_text(path, "GB sample"), newline="")))
    if not rows or [c.strip() for c in rows[0]] != _HEADER:
        raise InputError(
            f"{path.name}: header is {rows[0] if rows else 'missing'}; expected {','.join(_HEADER)}"
        )
    starts: list[datetime] = []
    forecast: list[float] = []
    actual: list[float] = []
    for line, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != 3:
            raise InputError(
                f"{path.name} line {line}: {len(row)} columns; expected 3 ({','.join(_HEADER)})"
            )
        moment = parse_utc(row[0], what=f"{path.name} line {line} 'from'")
        if starts and moment != starts[-1] + _HALF_HOUR:
            raise InputError(
                f"{path.name} line {line}: half-hour {format_utc(moment)} does not follow "
                f"{format_utc(starts[-1])}; the file must have consecutive half-hours"
            )
        starts.append(moment)
        forecast.append(_number(row[1], path, line))
        actual.append(_number(row[2], path, line))
    if not starts:
        raise InputError(f"{path.name} has no data rows; expected half-hourly values")
    return GbForecastFile(
        kind=match.group(1),
        fetched_at=fetched_at,
        start=starts[0],
        forecast_g_per_kwh=np.array(forecast),
        actual_g_per_kwh=np.array(actual),
    )


def _slice(file: GbForecastFile, start: datetime, end: datetime) -> slice:
    first = int((start - file.start) / _HALF_HOUR)
    last = int((end - file.start) / _HALF_HOUR)
    if first < 0 or last > len(file.forecast_g_per_kwh):
        raise InputError(
            f"GB sample file ({file.kind}, {format_utc(file.fetched_at)}) covers "
            f"{format_utc(file.start)} to {format_utc(file.end)}, not {format_utc(start)} to "
            f"{format_utc(end)}; use the sample files as published"
        )
    return slice(first, last)


def compare_gb_sample(
    sample_dir: Path,
    series: CarbonSeries,
    methods: Mapping[str, Forecaster] | None = None,
) -> list[GbSampleRow]:
    """Published forecasts' MAE and bias beside our forecasters' on ``series`` (GB, hourly).

    ``methods`` maps a label to a forecaster; default ``{"noisy-oracle": NoisyOracle()}``.
    """
    if not sample_dir.is_dir():
        raise InputError(
            f"GB forecast sample folder {sample_dir} does not exist; pass --sample-dir or set "
            "CARBONSHIFT_SHARED to the folder holding data/carbon/gb-forecast-sample"
        )
    files = [read_gb_file(p) for p in sorted(sample_dir.glob("national_*.csv"))]
    truth_files = [f for f in files if f.kind == "pt24h"]
    forecasts = sorted((f for f in files if f.kind == "fw48h"), key=lambda f: f.fetched_at)
    if len(truth_files) != 1 or not forecasts:
        raise InputError(
            f"{sample_dir} must hold one national_pt24h_*.csv and at least one "
            "national_fw48h_*.csv file; restore the sample as published"
        )
    truth = truth_files[0]
    scored = ~np.isnan(truth.actual_g_per_kwh)
    start, end = truth.start, truth.end
    actual = truth.actual_g_per_kwh[scored]
    rows: list[GbSampleRow] = []
    for file in forecasts:
        issued = file.start  # the forecast covers half-hours from its issue half-hour
        predicted = file.forecast_g_per_kwh[_slice(file, start, end)][scored]
        error = predicted - actual
        rows.append(
            GbSampleRow(
                method="neso",
                truth="neso-actual",
                issued_at=issued,
                lead_h=_lead_h(issued, start, end),
                points=int(error.size),
                slot_minutes=30,
                mae_g_per_kwh=float(np.mean(np.abs(error))),
                bias_g_per_kwh=float(np.mean(error)),
            )
        )
    chosen = dict(methods) if methods is not None else {"noisy-oracle": NoisyOracle()}
    if series.kind is not CiKind.DIRECT or series.step_minutes != 60:
        raise InputError(
            f"series {series.zone} is {series.kind} at {series.step_minutes} min; "
            "compare with the hourly direct GB series (load_series('GB'))"
        )
    hours = int((end - start) / timedelta(hours=1))
    for file in forecasts:
        issued = file.start
        skip = int((start - issued) / timedelta(hours=1))
        horizon = skip + hours
        em_actual = Oracle().forecast(series, issued, horizon)[skip:]
        for label, forecaster in chosen.items():
            error = forecaster.forecast(series, issued, horizon)[skip:] - em_actual
            rows.append(
                GbSampleRow(
                    method=label,
                    truth="electricitymaps-gb",
                    issued_at=issued,
                    lead_h=_lead_h(issued, start, end),
                    points=int(error.size),
                    slot_minutes=60,
                    mae_g_per_kwh=float(np.mean(np.abs(error))),
                    bias_g_per_kwh=float(np.mean(error)),
                )
            )
    return rows


def _lead_h(issued: datetime, start: datetime, end: datetime) -> tuple[float, float]:
    hour = timedelta(hours=1)
    return ((start - issued) / hour, (end - issued) / hour)
