"""carbonshift.carbon: carbon-intensity data, readers and signals (see DESIGN.md).

- :func:`load_series` / :func:`zone_catalogue`: the embedded Electricity Maps data (12 zones,
  2021-2023 hourly, ODbL; ``carbon/data/LICENSE``).
- :func:`read_carbon_csv`: Electricity Maps exports and ``timestamp,value`` files.
- :class:`EmbeddedSignal`, :class:`SeriesSignal`: the :class:`Signal` protocol (time-weighted
  slot means, opt-in seasonal replay from :mod:`carbonshift.carbon.replay`);
  :func:`integrals_g_h_per_kwh` for emissions.
"""

from carbonshift.carbon.embedded import ATTRIBUTION, load_series, zone_catalogue
from carbonshift.carbon.readers import GapFill, read_carbon_csv
from carbonshift.carbon.series import CarbonSeries, CiKind, Signal, SignalWindow
from carbonshift.carbon.signal import (
    EmbeddedSignal,
    SeriesSignal,
    integral_g_h_per_kwh,
    integrals_g_h_per_kwh,
    resample,
)
from carbonshift.carbon.zones import ZoneInfo

__all__ = [
    "ATTRIBUTION",
    "CarbonSeries",
    "CiKind",
    "EmbeddedSignal",
    "GapFill",
    "SeriesSignal",
    "Signal",
    "SignalWindow",
    "ZoneInfo",
    "integral_g_h_per_kwh",
    "integrals_g_h_per_kwh",
    "load_series",
    "read_carbon_csv",
    "resample",
    "zone_catalogue",
]
