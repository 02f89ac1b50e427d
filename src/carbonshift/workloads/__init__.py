"""Workloads: trace readers, synthetic families of the seed papers, conversion to slots.

- Vocabulary: :class:`WorkloadJob` (one job in real time) and :class:`Workload` (many, as
  numpy columns), with the :class:`ReadReport` of what a reader left out.
- Readers: :func:`read_trace_csv` (docs/formats.md (scenario)), :func:`read_swf` (Parallel
  Workloads Archive), :func:`read_gwf` (Grid Workloads Archive), :func:`read_workload` (by
  file name).
- Synthetic families: :func:`caspian`, :func:`cjps`, :func:`co2_scheduler` (with
  :func:`analyse_pattern`), by name through :data:`GENERATORS` and :func:`generate`.
- :func:`to_planning_jobs` and :func:`slot_times`: real time to slots (docs/formats.md
  section 3, "Time").
- :func:`forecast_demand` and :func:`demand_forecast_error`: per-slot future demand (CJPS's
  ``future_demand``) from the workload's own past.
"""

from carbonshift.workloads.convert import (
    SlotTimes,
    deadline_slot,
    release_slot,
    runtime_slots,
    slot_times,
    to_planning_jobs,
)
from carbonshift.workloads.csv_trace import TIME_UNITS, read_trace_csv
from carbonshift.workloads.demand import (
    DEMAND_FORECASTS,
    DemandForecastError,
    arrived_demand,
    demand_forecast_error,
    forecast_demand,
)
from carbonshift.workloads.generators import (
    GENERATORS,
    GeneratorSpec,
    HourlyPattern,
    analyse_pattern,
    caspian,
    cjps,
    co2_scheduler,
    generate,
)
from carbonshift.workloads.gwf import GWF_FIELDS, read_gwf
from carbonshift.workloads.model import ReadReport, RowProblem, Workload, WorkloadJob
from carbonshift.workloads.readers import TraceFormat, read_workload, trace_format
from carbonshift.workloads.swf import SWF_FIELDS, read_swf

__all__ = [
    "DEMAND_FORECASTS",
    "GENERATORS",
    "GWF_FIELDS",
    "SWF_FIELDS",
    "TIME_UNITS",
    "DemandForecastError",
    "GeneratorSpec",
    "HourlyPattern",
    "ReadReport",
    "RowProblem",
    "SlotTimes",
    "TraceFormat",
    "Workload",
    "WorkloadJob",
    "analyse_pattern",
    "arrived_demand",
    "caspian",
    "cjps",
    "co2_scheduler",
    "deadline_slot",
    "demand_forecast_error",
    "forecast_demand",
    "generate",
    "read_gwf",
    "read_swf",
    "read_trace_csv",
    "read_workload",
    "release_slot",
    "runtime_slots",
    "slot_times",
    "to_planning_jobs",
    "trace_format",
]
