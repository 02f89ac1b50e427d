"""Provider settings from the environment, and the chains built from them.

One root object, :class:`ProviderSettings`, of grouped sections. Environment variables
(prefix ``CARBONSHIFT_``):

- ``ELECTRICITYMAPS_TOKEN`` (or ``..._FILE``), ``ELECTRICITYMAPS_URL``: Electricity Maps key
  (sent in the ``auth-token`` header) and base URL.
- ``WATTTIME_USERNAME``, ``WATTTIME_PASSWORD`` (or ``..._FILE``), ``WATTTIME_URL``.
- ``GB_URL``: the GB Carbon Intensity API (no key).
- ``CARBON_AWARE_SDK_URL``, ``CARBON_AWARE_SDK_KIND``: an SDK WebAPI server and the kind it
  serves (``marginal`` when backed by WattTime, ``direct``/``lca`` by Electricity Maps).
- ``CHAIN_DIRECT``, ``CHAIN_LCA``, ``CHAIN_MARGINAL``, ``CHAIN_INDEX``: comma-separated source
  order, e.g. ``electricitymaps,gb,embedded``.
- ``CACHE_DIR``, ``CACHE_TTL_S`` (900 s), ``MAX_STALE_S`` (604800 s).
- ``COOLDOWN_S`` (60 s): how long a chain skips a source after a temporary failure.
- ``HTTP_TIMEOUT_S`` (10 s), ``HTTP_ATTEMPTS`` (3), ``HTTP_BACKOFF_S`` (0.5 s).
- ``CSV_DIR``: a folder of ``<ZONE>.csv`` / ``<ZONE>.<kind>.csv`` files (source ``csv``),
  tried after the live sources and before the embedded data.
- ``OFFLINE``: ``1`` uses no live source (CSV files and embedded data only).
- ``ZONE_TABLE``: a JSON file extending the zone table.
- ``OUTLIERS``: ``keep``, ``flag`` (default) or ``interpolate`` implausible points in answers
  (carbon/quality.py; docs/providers.md, "Implausible points").

Sources without credentials are left out of the default chains; a chain named explicitly
with an unconfigured source is refused with the variable to set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from carbonshift.carbon.providers._http import RetryPolicy
from carbonshift.carbon.providers.cache import DiskCache, default_cache_dir
from carbonshift.carbon.providers.carbon_aware_sdk import CarbonAwareSdkProvider
from carbonshift.carbon.providers.chain import (
    AVERAGE_KINDS,
    ChainSource,
    EmbeddedReplay,
    FallbackChain,
)
from carbonshift.carbon.providers.clock import Clock, SystemClock
from carbonshift.carbon.providers.csvdir import CsvDirectory
from carbonshift.carbon.providers.electricitymaps import ElectricityMapsProvider
from carbonshift.carbon.providers.gb import GbCarbonIntensityProvider
from carbonshift.carbon.providers.secrets import Secret, read_secret
from carbonshift.carbon.providers.watttime import WattTimeProvider
from carbonshift.carbon.providers.zones import ZoneTable
from carbonshift.carbon.quality import OutlierAction
from carbonshift.carbon.series import CiKind
from carbonshift.errors import InputError

__all__ = ["SOURCE_NAMES", "ChainSet", "ProviderSettings", "build_chains"]

SOURCE_NAMES = ("electricitymaps", "watttime", "gb", "carbon-aware-sdk", "csv", "embedded")
_ENV = "CARBONSHIFT_"


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """Everything the live providers need; see the module docstring for the variables."""

    electricitymaps_token: Secret | None = None
    electricitymaps_url: str = ElectricityMapsProvider.default_url
    watttime_username: str | None = None
    watttime_password: Secret | None = None
    watttime_url: str = WattTimeProvider.default_url
    gb_url: str = GbCarbonIntensityProvider.default_url
    sdk_url: str | None = None
    sdk_kind: CiKind = CiKind.MARGINAL
    #: kind -> source names in the order tried; missing kinds get the defaults
    chains: Mapping[CiKind, tuple[str, ...]] = field(default_factory=dict)
    cache_dir: Path | None = None
    cache_ttl_s: float = 900.0
    max_stale_s: float = 7 * 86400.0
    cooldown_s: float = 60.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    csv_dir: Path | None = None
    offline: bool = False
    zones: ZoneTable = field(default_factory=ZoneTable)
    #: what chains do with implausible points in answers (carbon/quality.py)
    outliers: OutlierAction = OutlierAction.FLAG

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ProviderSettings:
        """Read the ``CARBONSHIFT_*`` variables (of ``env``, default ``os.environ``)."""
        e = dict(os.environ if env is None else env)

        def get(name: str) -> str | None:
            return e.get(_ENV + name) or None

        chains: dict[CiKind, tuple[str, ...]] = {}
        for kind in CiKind:
            text = get(f"CHAIN_{kind.value.upper()}")
            if text:
                chains[kind] = tuple(p.strip() for p in text.split(",") if p.strip())
        zone_table = get("ZONE_TABLE")
        sdk_kind_text = get("CARBON_AWARE_SDK_KIND") or "marginal"
        try:
            sdk_kind = CiKind(sdk_kind_text.lower())
        except ValueError as exc:
            raise InputError(
                f"CARBONSHIFT_CARBON_AWARE_SDK_KIND is {sdk_kind_text!r}; use direct, lca, "
                "marginal or index"
            ) from exc
        outliers_text = (get("OUTLIERS") or "flag").lower()
        try:
            outliers = OutlierAction(outliers_text)
        except ValueError as exc:
            raise InputError(
                f"CARBONSHIFT_OUTLIERS is {outliers_text!r}; use keep, flag or interpolate"
            ) from exc
        return cls(
            outliers=outliers,
            electricitymaps_token=read_secret(_ENV + "ELECTRICITYMAPS_TOKEN", e),
            electricitymaps_url=get("ELECTRICITYMAPS_URL") or ElectricityMapsProvider.default_url,
            watttime_username=get("WATTTIME_USERNAME"),
            watttime_password=read_secret(_ENV + "WATTTIME_PASSWORD", e),
            watttime_url=get("WATTTIME_URL") or WattTimeProvider.default_url,
            gb_url=get("GB_URL") or GbCarbonIntensityProvider.default_url,
            sdk_url=get("CARBON_AWARE_SDK_URL"),
            sdk_kind=sdk_kind,
            chains=chains,
            cache_dir=Path(p) if (p := get("CACHE_DIR")) else None,
            cache_ttl_s=_number(get("CACHE_TTL_S"), 900.0, "CACHE_TTL_S"),
            max_stale_s=_number(get("MAX_STALE_S"), 7 * 86400.0, "MAX_STALE_S"),
            cooldown_s=_number(get("COOLDOWN_S"), 60.0, "COOLDOWN_S"),
            retry=RetryPolicy(
                attempts=int(_number(get("HTTP_ATTEMPTS"), 3, "HTTP_ATTEMPTS")),
                timeout_s=_number(get("HTTP_TIMEOUT_S"), 10.0, "HTTP_TIMEOUT_S"),
                backoff_s=_number(get("HTTP_BACKOFF_S"), 0.5, "HTTP_BACKOFF_S"),
            ),
            csv_dir=Path(p) if (p := get("CSV_DIR")) else None,
            offline=(get("OFFLINE") or "0").lower() in ("1", "true", "yes"),
            zones=ZoneTable.from_file(Path(zone_table)) if zone_table else ZoneTable(),
        )

    def default_chain(self, kind: CiKind) -> tuple[str, ...]:
        """The configured sources serving ``kind``, most specific first."""
        if kind in self.chains:
            return self.chains[kind]
        names: list[str] = []
        local = ("csv",) if self.csv_dir is not None else ()
        if self.offline:
            return local + (("embedded",) if kind in AVERAGE_KINDS else ())
        if kind in AVERAGE_KINDS and self.electricitymaps_token:
            names.append("electricitymaps")
        if kind is CiKind.DIRECT:
            names.append("gb")
        if kind in (CiKind.MARGINAL, CiKind.INDEX) and self.watttime_username:
            names.append("watttime")
        if self.sdk_url and kind is self.sdk_kind:
            names.append("carbon-aware-sdk")
        names += local
        if kind in AVERAGE_KINDS:
            names.append("embedded")
        return tuple(names)


def _number(text: str | None, default: float, name: str) -> float:
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError as exc:
        raise InputError(f"{_ENV}{name} is {text!r}; give a number") from exc
    if value < 0:
        raise InputError(f"{_ENV}{name} is {text!r}; give a number >= 0")
    return value


@dataclass
class ChainSet:
    """One chain per signal kind, sharing providers, cache and clock."""

    chains: dict[CiKind, FallbackChain]
    providers: dict[str, ChainSource]

    def chain(self, kind: CiKind) -> FallbackChain:
        """The chain serving ``kind``."""
        try:
            return self.chains[kind]
        except KeyError:
            raise InputError(
                f"no source is configured for {kind.value!r} values; set "
                f"{_ENV}CHAIN_{kind.value.upper()} or the credentials of a source serving it"
            ) from None

    def close(self) -> None:
        """Close every provider's connections."""
        for provider in self.providers.values():
            provider.close()


def build_source(
    name: str,
    settings: ProviderSettings,
    *,
    clock: Clock | None = None,
    cache: DiskCache | None = None,
) -> ChainSource:
    """The live or file source called ``name`` (not ``embedded``: that is a chain's floor)."""
    clock = clock or SystemClock()
    cache = cache or DiskCache(settings.cache_dir or default_cache_dir())
    retry = settings.retry
    if name == "csv":
        if settings.csv_dir is None:
            raise InputError(
                f"source 'csv' needs {_ENV}CSV_DIR (a folder of <ZONE>.csv files); set it "
                "or leave the source out of the chain"
            )
        return CsvDirectory(settings.csv_dir, clock=clock)
    if name == "electricitymaps":
        return ElectricityMapsProvider(
            settings.electricitymaps_token,
            base_url=settings.electricitymaps_url,
            ttl_s=settings.cache_ttl_s,
            retry=retry,
            clock=clock,
            cache=cache,
        )
    if name == "watttime":
        return WattTimeProvider(
            settings.watttime_username,
            settings.watttime_password,
            zones=settings.zones,
            base_url=settings.watttime_url,
            ttl_s=min(settings.cache_ttl_s, 300.0),
            retry=retry,
            clock=clock,
            cache=cache,
        )
    if name == "gb":
        return GbCarbonIntensityProvider(
            zones=settings.zones,
            base_url=settings.gb_url,
            ttl_s=settings.cache_ttl_s,
            retry=retry,
            clock=clock,
            cache=cache,
        )
    if name == "carbon-aware-sdk":
        if not settings.sdk_url:
            raise InputError(
                f"source 'carbon-aware-sdk' needs {_ENV}CARBON_AWARE_SDK_URL (the server's "
                "base URL); set it or leave the source out of the chain"
            )
        return CarbonAwareSdkProvider(
            settings.sdk_url,
            kind=settings.sdk_kind,
            zones=settings.zones,
            ttl_s=settings.cache_ttl_s,
            retry=retry,
            clock=clock,
            cache=cache,
        )
    raise InputError(f"unknown source {name!r}; use one of {', '.join(SOURCE_NAMES)}")


def single_source_chain(
    name: str, kind: CiKind, settings: ProviderSettings, *, clock: Clock | None = None
) -> FallbackChain:
    """A chain of just ``name`` (e.g. for ``forecast show --source``): no live fall-back,
    only that source's own stale cache; ``embedded`` gives the embedded data alone."""
    clock = clock or SystemClock()
    if name == "embedded":
        return FallbackChain(kind, [], floor=EmbeddedReplay(), clock=clock)
    return FallbackChain(
        kind,
        [build_source(name, settings, clock=clock)],
        clock=clock,
        max_stale_s=settings.max_stale_s,
        cooldown_s=0.0,
        outliers=settings.outliers,
    )


def build_chains(settings: ProviderSettings, *, clock: Clock | None = None) -> ChainSet:
    """Providers and one chain per kind that has at least one source."""
    clock = clock or SystemClock()
    cache = DiskCache(settings.cache_dir or default_cache_dir())
    providers: dict[str, ChainSource] = {}

    def provider(name: str) -> ChainSource:
        if name not in providers:
            providers[name] = build_source(name, settings, clock=clock, cache=cache)
        return providers[name]

    chains: dict[CiKind, FallbackChain] = {}
    for kind in CiKind:
        names = settings.default_chain(kind)
        if not names:
            continue
        if "embedded" in names and names[-1] != "embedded":
            raise InputError(
                f"chain for {kind.value!r} lists 'embedded' before {names[-1]!r}; the embedded "
                "data are the last resort, put it last"
            )
        live = [provider(n) for n in names if n != "embedded"]
        floor = EmbeddedReplay() if "embedded" in names else None
        chains[kind] = FallbackChain(
            kind,
            live,
            floor=floor,
            clock=clock,
            max_stale_s=settings.max_stale_s,
            cooldown_s=settings.cooldown_s,
            outliers=settings.outliers,
        )
    return ChainSet(chains=chains, providers=providers)
