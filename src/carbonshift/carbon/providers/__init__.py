"""Live carbon-intensity providers behind the Signal interface, with cache and fall-back.

The only part of :mod:`carbonshift.carbon` that speaks HTTP. Sources: Electricity Maps v3
(average, direct or life-cycle), WattTime v3 (marginal and its index), the GB Carbon
Intensity API (direct, no key) and a Carbon Aware SDK WebAPI server; each with timeouts,
retries with back-off, 429 / Retry-After, an on-disk cache with a TTL and a ``stale_since``
on every answer. :class:`FallbackChain` tries sources of ONE kind in order and, for average
kinds, ends in the embedded data. See ``docs/providers.md``.
"""

from carbonshift.carbon.providers._http import (
    AuthError,
    RetryPolicy,
    UnknownZoneError,
    UpstreamFormatError,
)
from carbonshift.carbon.providers.base import LiveProvider, Reading, unit_of
from carbonshift.carbon.providers.cache import DiskCache
from carbonshift.carbon.providers.carbon_aware_sdk import CarbonAwareSdkProvider
from carbonshift.carbon.providers.chain import (
    Answer,
    Attempt,
    ChainSource,
    EmbeddedReplay,
    FallbackChain,
    NoSourceError,
    ProviderUnavailableError,
    SourcesRefusedError,
)
from carbonshift.carbon.providers.clock import Clock, ManualClock, SystemClock
from carbonshift.carbon.providers.config import (
    SOURCE_NAMES,
    ChainSet,
    ProviderSettings,
    build_chains,
    build_source,
    single_source_chain,
)
from carbonshift.carbon.providers.csvdir import CsvDirectory
from carbonshift.carbon.providers.electricitymaps import ElectricityMapsProvider
from carbonshift.carbon.providers.gb import GbCarbonIntensityProvider
from carbonshift.carbon.providers.secrets import Secret, read_secret
from carbonshift.carbon.providers.watttime import WattTimeProvider
from carbonshift.carbon.providers.zones import ZONE_PATTERN, ZoneTable, check_zone_name

__all__ = [
    "SOURCE_NAMES",
    "ZONE_PATTERN",
    "Answer",
    "Attempt",
    "AuthError",
    "CarbonAwareSdkProvider",
    "ChainSet",
    "ChainSource",
    "Clock",
    "CsvDirectory",
    "DiskCache",
    "ElectricityMapsProvider",
    "EmbeddedReplay",
    "FallbackChain",
    "GbCarbonIntensityProvider",
    "LiveProvider",
    "ManualClock",
    "NoSourceError",
    "ProviderSettings",
    "ProviderUnavailableError",
    "Reading",
    "RetryPolicy",
    "Secret",
    "SourcesRefusedError",
    "SystemClock",
    "UnknownZoneError",
    "UpstreamFormatError",
    "WattTimeProvider",
    "ZoneTable",
    "build_chains",
    "build_source",
    "check_zone_name",
    "read_secret",
    "single_source_chain",
    "unit_of",
]
