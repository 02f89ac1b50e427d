"""From the cluster's state to one planning call, exactly as the simulator builds its rounds.

:func:`build_snapshot` maps the cluster's objects onto the planning seam that the simulator
and the hub use too (:func:`carbonshift.planning.snapshot.build_snapshot`, slot rules in
:mod:`carbonshift.domain.slots`): slot 0 is the current slot, pending workloads have release
0, ``runtime_slots = ceil(runtime / slot)``, ``deadline_slot = floor((deadline - slot 0) /
slot)``, the horizon is at least ``horizon_slots`` and fits the longest pending workload up to
``max_horizon_hours``, running work holds capacity for its remaining slots (``held_units``)
and ``waited_slots`` counts whole slots since creation.
:func:`plan_round` runs the configured policy once for every pending workload and answers,
per workload, start now or hold until when, why, and the estimated emissions of both.
:class:`CarbonSource` gives the forecast, falling back to the last good one on errors.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from carbonshift.carbon.embedded import load_series
from carbonshift.carbon.forecast import make_forecaster
from carbonshift.carbon.freshness import Freshness, FreshnessBoard
from carbonshift.carbon.providers import Clock as ProviderClock
from carbonshift.carbon.providers import FallbackChain, ProviderSettings, build_chains
from carbonshift.carbon.replay import extend_by_replay, replayed_span
from carbonshift.carbon.series import CarbonSeries, CiKind
from carbonshift.domain import Cluster, ClusterName, Instance, JobId, run_grams
from carbonshift.domain import slots as slot_rules
from carbonshift.errors import CarbonshiftError, TemporaryError
from carbonshift.k8s.config import ControllerConfig, PlanningSection
from carbonshift.k8s.intent import Intent
from carbonshift.planning import snapshot as seam
from carbonshift.planning.limits import PlanLimits, PlanSize
from carbonshift.planning.registry import round_params, run_policy
from carbonshift.planning.types import PlanContext, PolicyResult

__all__ = [
    "LEFT_OUT_WAITS",
    "CarbonSource",
    "Forecast",
    "Outcome",
    "Round",
    "RunningWork",
    "build_snapshot",
    "check_source",
    "data_note",
    "data_used",
    "estimate_g",
    "horizon_slots",
    "left_out_reason",
    "plan_round",
    "reason_shape",
    "slot_floor",
    "within_limit",
]

_LOG = logging.getLogger("carbonshift.k8s")
_EPS = 1e-9
FloatArray = npt.NDArray[np.float64]


def slot_floor(moment: datetime, slot_minutes: int) -> datetime:
    """The start of the slot holding ``moment`` (slots are aligned to midnight UTC)."""
    moment = moment.astimezone(UTC)
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    slot_s = slot_minutes * 60
    elapsed = (moment - midnight).total_seconds()
    return midnight + timedelta(seconds=math.floor(elapsed / slot_s + _EPS) * slot_s)


def horizon_slots(planning: PlanningSection, longest_slots: int) -> int:
    """The look-ahead of one planning call, slots: at least ``horizon_slots``, long enough for
    the longest pending runtime, but never past ``max_horizon_hours`` (intents refuse longer
    runtimes, so the cap only guards the cost of a pass)."""
    cap = math.ceil(planning.max_horizon_hours * 60 / planning.slot_minutes)
    return slot_rules.horizon_slots(planning.horizon_slots, longest_slots, cap)


@dataclass(frozen=True, slots=True)
class RunningWork:
    """Work that holds capacity: ``demand`` units until ``ends`` (None: the whole horizon)."""

    key: str
    demand: Mapping[str, float]
    ends: datetime | None


@dataclass(frozen=True, slots=True)
class Forecast:
    """Intensity per slot from ``slot0`` on, g/kWh, when it was issued and from what data."""

    slot0: datetime
    values_g_per_kwh: tuple[float, ...]
    issued_at: datetime
    fallback: bool = False
    freshness: Freshness | None = None


def data_note(forecast: Forecast) -> str:
    """What a held workload's reason adds when the plan used degraded data ("" when not)."""
    fresh = forecast.freshness
    if fresh is None or not fresh.degraded:
        return ""
    parts = ["the last good forecast"] if forecast.fallback else []
    if fresh.replayed_from is not None:
        first, last = fresh.replayed_from
        parts.append(f"{fresh.source} data replayed from {first:%Y-%m-%d} .. {last:%Y-%m-%d}")
    elif fresh.stale:
        parts.append(f"stale {fresh.source} data, {fresh.data_age_s / 3600:.1f} h old")
    elif not forecast.fallback:
        parts.append(f"{fresh.source} data after a fall-back")
    return f" [plan used {', '.join(parts)}]"


_NUMBERS = re.compile(r"-?\d+(?:\.\d+)?")
_KEPT_NOTE = "; kept its planned start"


def data_used(reason: str) -> str:
    """The reason's note on degraded data (:func:`data_note`: "[plan used ...]"), without its
    numbers; "" when the plan used fresh data. A change is worth a new Event."""
    start = reason.find("[plan used ")
    if start < 0:
        return ""
    end = reason.find("]", start)
    return _NUMBERS.sub("#", reason[start : end + 1 if end >= 0 else len(reason)])


def reason_shape(reason: str) -> str:
    """A reason without its numbers and without the hysteresis note (planning/hold.py), which
    comes and goes as re-plans tie with the kept start: what a change of wording means. The
    numbers follow the forecast and "now" every pass; rewriting them would cost a write per
    held workload per period (bench/controller.md)."""
    return _NUMBERS.sub("#", reason.split(_KEPT_NOTE, 1)[0])


class CarbonSource:
    """Forecasts of the cluster's zone from the embedded data, with a last-good fallback.

    A forecaster error (e.g. data missing) counts in ``errors`` and answers the last good
    forecast re-aligned to the new slot 0 (its last value repeated past its end); with none,
    it raises :class:`~carbonshift.errors.TemporaryError`.

    Thread-safe: the controller and the hub call :meth:`forecast` from their planning
    thread while the event loop may call it too (the scheduler extender) and reads
    ``errors`` and ``board`` (the webhook's health reasons). One lock guards the state
    (the last good forecast, ``errors``, the replayed series); the forecaster or the
    provider chain runs outside it, so a reader never waits for a provider's answer.
    """

    def __init__(
        self, config: ControllerConfig, series: CarbonSeries | None = None, *, load: bool = True
    ) -> None:
        self._config = config
        self._name = "embedded" if series is None else (series.source or "series")
        if series is None and load:  # an unknown zone fails here, at start, not at planning
            series = load_series(config.cluster.zone)
        self._loaded = series
        self._data = series  # before any replay: what the data really cover
        #: the latest freshness of the zone; logs once per change
        self.board = FreshnessBoard(_LOG)
        self._forecaster = make_forecaster(
            config.planning.forecast, dict(config.planning.forecast_params)
        )
        self._last: Forecast | None = None
        self._errors = 0
        #: guards ``_last``, ``_errors`` and ``_loaded`` (see the class doc)
        self._lock = threading.Lock()

    @property
    def errors(self) -> int:
        """Forecast failures so far (each answered by the last good forecast, or raised)."""
        with self._lock:
            return self._errors

    def _failed(self) -> None:
        with self._lock:
            self._errors += 1

    def _keep(self, result: Forecast) -> None:
        """Remember ``result`` as the last good forecast and record its freshness."""
        with self._lock:
            self._last = result
        if result.freshness is not None:
            self.board.record(result.freshness)

    @property
    def chain(self) -> tuple[str, ...]:
        """The sources this source tries, in order."""
        return (self._name,)

    @property
    def series(self) -> CarbonSeries:
        """The zone's embedded series (the actual signal the tests charge emissions against);
        loaded on first use when the source was built with ``load=False``."""
        return self._native()

    def _native(self) -> CarbonSeries:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:  # loaded once, even when two threads ask first
            if self._loaded is None:
                self._loaded = self._data = load_series(self._config.cluster.zone)
            return self._loaded

    def _original(self) -> CarbonSeries:
        return self._data if self._data is not None else self._native()

    def _ensure(self, until: datetime) -> CarbonSeries:
        """The series, extended by replay past ``until`` when allowed (once for both threads)."""
        native = self._native()
        if until <= native.end or not self._config.cluster.allow_replay:
            return native
        with self._lock:
            native = self._loaded if self._loaded is not None else native
            if until > native.end:
                native = self._loaded = extend_by_replay(native, until + timedelta(days=30))
            return native

    def forecast(self, slot0: datetime, horizon_slots: int) -> Forecast:
        """The forecast for ``horizon_slots`` slots from ``slot0``."""
        slot_minutes = self._config.planning.slot_minutes
        step = self._native().step_minutes
        issue = slot_floor(slot0, step) if step <= 1440 else slot0
        offset = round((slot0 - issue).total_seconds() / (slot_minutes * 60))
        try:
            native = self._ensure(
                slot0 + timedelta(minutes=slot_minutes * (horizon_slots + offset + 1))
            )
            values = np.asarray(
                self._forecaster.forecast(native, issue, horizon_slots + offset, slot_minutes),
                dtype=np.float64,
            )[offset:]
            if not np.all(np.isfinite(values)):
                raise TemporaryError(f"forecast for zone {self._config.cluster.zone} has gaps")
        except CarbonshiftError as exc:
            self._failed()
            _LOG.warning("forecast failed (%s); using the last good forecast", exc)
            return self._fallback(slot0, horizon_slots, exc)
        end = slot0 + timedelta(minutes=slot_minutes * horizon_slots)
        data = self._original()
        span = replayed_span(data, slot0, end)
        fresh = Freshness(
            zone=self._config.cluster.zone,
            source=self._name,
            data_age_s=0.0 if span is None else max(0.0, (slot0 - data.end).total_seconds()),
            replayed_from=span,
        )
        result = Forecast(
            slot0,
            tuple(float(max(v, 0.0)) for v in values),
            issued_at=issue,
            freshness=fresh,
        )
        self._keep(result)
        return result

    def _fallback(self, slot0: datetime, horizon_slots: int, exc: Exception) -> Forecast:
        with self._lock:
            last = self._last
        if last is None:
            raise TemporaryError(
                f"no forecast for zone {self._config.cluster.zone} and none cached: {exc}"
            ) from exc
        slot_s = self._config.planning.slot_minutes * 60
        shift = round((slot0 - last.slot0).total_seconds() / slot_s)
        old = list(last.values_g_per_kwh[max(shift, 0) :]) or [last.values_g_per_kwh[-1]]
        values = (old + [old[-1]] * horizon_slots)[:horizon_slots]
        before = last.freshness or Freshness(self._config.cluster.zone, self._name)
        fresh = replace(
            before,
            data_age_s=max(0.0, (slot0 - last.issued_at).total_seconds()),
            failed=(f"forecast: {exc}",),
        )
        self.board.record(fresh)
        return Forecast(
            slot0, tuple(values), issued_at=last.issued_at, fallback=True, freshness=fresh
        )


class ProviderCarbonSource(CarbonSource):
    """Forecasts from the live provider chain (``planning.carbon_source = "providers"``).

    The chain of the cluster's signal kind (direct) tries the configured live sources, then
    their stale cache, then the embedded data (replayed past 2023), as ``carbonshift serve``
    does; its answer is the forecast. A chain failure counts in ``errors`` and answers the last
    good forecast, like :class:`CarbonSource`. Estimates use the same forecast. The zone
    needs no embedded data: any zone a configured provider serves can be planned.
    """

    def __init__(
        self, config: ControllerConfig, chain: FallbackChain, series: CarbonSeries | None = None
    ) -> None:
        super().__init__(config, series, load=False)
        self._chain = chain

    @property
    def chain(self) -> tuple[str, ...]:
        """The chain's sources in the order tried, the embedded data last."""
        return tuple(self._chain.names)

    def forecast(self, slot0: datetime, horizon_slots: int) -> Forecast:
        """The chain's answer for ``horizon_slots`` slots from ``slot0``."""
        slot_minutes = self._config.planning.slot_minutes
        end = slot0 + timedelta(minutes=slot_minutes * horizon_slots)
        try:
            answer = self._chain.answer(
                self._config.cluster.zone, slot0, end, slot_minutes=slot_minutes
            )
            values = np.asarray(answer.window.values_g_per_kwh, dtype=np.float64)
            if len(values) < horizon_slots or not np.all(np.isfinite(values)):
                raise TemporaryError(
                    f"provider answer for zone {self._config.cluster.zone} has "
                    f"{len(values)} of {horizon_slots} slots"
                )
        except CarbonshiftError as exc:
            self._failed()
            _LOG.warning("provider forecast failed (%s); using the last good forecast", exc)
            return self._fallback(slot0, horizon_slots, exc)
        issued = answer.window.stale_since or answer.now
        fresh = answer.freshness
        result = Forecast(
            slot0,
            tuple(float(max(v, 0.0)) for v in values[:horizon_slots]),
            issued_at=issued,
            freshness=fresh,
        )
        self._keep(result)
        return result


def carbon_source_for(
    config: ControllerConfig, *, clock: ProviderClock | None = None
) -> CarbonSource:
    """The carbon source ``planning.carbon_source`` names; its providers read ``clock``
    (default: the wall clock)."""
    if config.planning.carbon_source == "providers":
        chains = build_chains(ProviderSettings.from_env(), clock=clock)
        return ProviderCarbonSource(config, chains.chain(CiKind.DIRECT))
    return CarbonSource(config)


def check_source(config: ControllerConfig, source: CarbonSource, now: datetime) -> dict[str, Any]:
    """What ``source`` would answer for the current slot: its chain, which source answered,
    ``ok``, ``degraded`` (with the reasons) or ``failing``, and the forecast (``--check``)."""
    slot0 = slot_floor(now, config.planning.slot_minutes)
    out: dict[str, Any] = {
        "zone": config.cluster.zone,
        "carbon_source": config.planning.carbon_source,
        "chain": list(source.chain),
        "slot0": f"{slot0:%Y-%m-%dT%H:%MZ}",
    }
    try:
        forecast = source.forecast(slot0, config.planning.horizon_slots)
    except CarbonshiftError as exc:
        return {**out, "status": "failing", "reasons": [str(exc)]}
    fresh = forecast.freshness or Freshness(config.cluster.zone, source.chain[0])
    span = fresh.replayed_from
    return {
        **out,
        "status": "degraded" if fresh.degraded or forecast.fallback else "ok",
        "answered_by": fresh.source,
        "reasons": list(fresh.reasons()),
        "data_age_s": fresh.data_age_s,
        "replayed_from": None if span is None else [f"{t:%Y-%m-%dT%H:%MZ}" for t in span],
        "forecast_g_per_kwh": [round(v, 3) for v in forecast.values_g_per_kwh],
    }


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the plan says for one held workload."""

    key: str
    start_now: bool
    planned_start: datetime
    reason: str
    est_g_now: float
    est_g_planned: float
    scheduled: bool = True
    """False when the policy left it out (its planned start is then its latest start)."""


@dataclass(frozen=True, slots=True)
class Round:
    """One planning call: the instance, the policy's result and an outcome per workload."""

    instance: Instance
    result: PolicyResult
    outcomes: Mapping[str, Outcome]
    forecast: Forecast
    #: pending workloads left out of the call by ``planning.max_plan_cells`` (the least
    #: urgent; their outcomes say so): 0 when every one was planned
    left_out: int = 0


def _hours(moment: datetime, slot0: datetime) -> float:
    """``moment`` in hours from ``slot0``: the seam's time axis for one controller round."""
    return (moment - slot0).total_seconds() / 3600.0


def _runtime_slots(intent: Intent, slot_minutes: int) -> int:
    return slot_rules.runtime_slots(intent.expected_runtime.total_seconds() / 3600.0, slot_minutes)


def build_snapshot(
    config: ControllerConfig,
    slot0: datetime,
    pending: Sequence[Intent],
    capacity: Mapping[str, float],
    running: Sequence[RunningWork],
    forecast: Forecast,
) -> tuple[Instance, PlanContext]:
    """The planning instance and context for ``pending`` at ``slot0``: this cluster's objects
    mapped onto the planning seam (:func:`carbonshift.planning.snapshot.build_snapshot`)."""
    snapshot = _snapshot(config, slot0, pending, capacity, running, forecast, {})
    return snapshot.instance, snapshot.context()


def _snapshot(
    config: ControllerConfig,
    slot0: datetime,
    pending: Sequence[Intent],
    capacity: Mapping[str, float],
    running: Sequence[RunningWork],
    forecast: Forecast,
    previous: Mapping[str, datetime],
) -> seam.Snapshot:
    resources = config.cluster.resources
    cluster = Cluster(
        name=ClusterName(config.cluster.name),
        capacity={r: float(capacity.get(r, 0.0)) for r in resources},
        watts_per_unit={r: config.cluster.watts_per_unit.get(r, 0.0) for r in resources},
        pue=config.cluster.pue,
        embodied_g_per_unit_hour=dict(config.cluster.embodied_g_per_unit_hour),
        zone=config.cluster.zone,
    )
    return seam.build_snapshot(
        now_h=0.0,
        slot_minutes=config.planning.slot_minutes,
        resources=resources,
        clusters=(cluster,),
        forecast_g_per_kwh={cluster.name: forecast.values_g_per_kwh},
        pending=[
            seam.PendingWork(
                id=intent.key,
                demand=dict(intent.demand),
                runtime_h=intent.expected_runtime.total_seconds() / 3600.0,
                deadline_h=_hours(intent.deadline, slot0),
                submit_h=_hours(intent.created, slot0),
                planned_cluster=cluster.name if intent.key in previous else None,
                planned_start_h=(
                    _hours(previous[intent.key], slot0) if intent.key in previous else None
                ),
            )
            for intent in pending
        ],
        running=[
            seam.HeldWork(
                id=f"running/{work.key}",
                cluster=cluster.name,
                demand=work.demand,
                end_h=None if work.ends is None else _hours(work.ends, slot0),
            )
            for work in running
        ],
    )


def estimate_g(
    config: ControllerConfig, intent: Intent, values: Sequence[float], start_slot: int
) -> float:
    """Estimated grams of a run starting at ``start_slot`` under the forecast ``values``.

    Operational: power (the ``power-watts`` hint, else demand x watts per unit) x PUE x the
    forecast over the run; plus embodied per unit-hour. A run past the forecast repeats its
    last value.
    """
    slot_h = config.planning.slot_minutes / 60.0
    runtime_h = intent.expected_runtime.total_seconds() / 3600.0
    full, part = divmod(runtime_h, slot_h)
    ci_h = 0.0
    for i in range(int(full) + (1 if part > _EPS else 0)):
        s = min(start_slot + i, len(values) - 1)
        ci_h += values[s] * (slot_h if i < full else part)
    return run_grams(intent.demand, config.cluster, ci_h, runtime_h, power_w=intent.power_w)


#: what a workload the plan-size limits left out of a planning call is told (the controller's
#: and the hub's wording)
LEFT_OUT_WAITS = "this one waits for a later pass and is released at its latest start at the latest"


def left_out_reason(pending: int, planned: int, limit: int | None) -> str:
    """Why a workload was left out of a planning call by the plan-size limit (the controller's
    and the hub's wording; its numbers change every pass, its shape does not)."""
    which = f"the {planned} most urgent" if planned else "none of them"
    return (
        f"{pending - planned} of {pending} pending workloads exceed the plan-size limit of "
        f"{limit or 0:,} weighted cells (planning.max_plan_cells); planned {which}; "
        f"{LEFT_OUT_WAITS}"
    )


def within_limit(
    limits: PlanLimits,
    policy: str,
    instance: Instance,
    urgency: Sequence[tuple[Any, ...]],
) -> list[int] | None:
    """The indexes (in their order) of the jobs of ``instance`` to plan when it passes the
    weighted-cell limit: the most urgent that fit, ``urgency`` giving each job's sort key
    (smallest first); None when every job fits (:meth:`PlanLimits.fitting_jobs`)."""
    if limits.max_cells is None:
        return None
    if PlanSize.of(instance, classes=False).weighted_cells(policy) <= limits.max_cells:
        return None  # the jobs alone fit (no classes counted: the usual pass costs len())
    n = len(instance.jobs)
    order = sorted(range(n), key=urgency.__getitem__)
    fit = limits.fitting_jobs(instance, policy, order)
    return None if fit == n else sorted(order[:fit])


def plan_round(
    config: ControllerConfig,
    now: datetime,
    pending: Sequence[Intent],
    capacity: Mapping[str, float],
    running: Sequence[RunningWork],
    source: CarbonSource,
    *,
    previous: Mapping[str, datetime] | None = None,
    released_this_slot: int = 0,
) -> Round:
    """One planning call for every pending workload (see the module doc).

    The policy's plan then passes the hold rule of ``planning`` (hold only when it pays;
    docs/controller.md): ``previous`` maps a workload key to its earlier planned start
    (hysteresis), ``released_this_slot`` counts planned releases already made in this slot
    (the rate limit).

    Past ``planning.max_plan_cells`` only the most urgent workloads that fit are planned
    (earliest latest start, then deadline, then key); the others are left unscheduled with a
    reason that says so, released at their latest start at the latest
    (:attr:`Round.left_out`)."""
    slot_minutes = config.planning.slot_minutes
    slot_s = config.slot_seconds()
    slot0 = slot_floor(now, slot_minutes)
    longest = max((_runtime_slots(i, slot_minutes) for i in pending), default=1)
    horizon = horizon_slots(config.planning, longest)
    forecast = source.forecast(slot0, horizon)
    snapshot = _snapshot(config, slot0, pending, capacity, running, forecast, previous or {})
    limits = config.planning.plan_limits()
    keep = within_limit(
        limits,
        config.planning.policy,
        snapshot.instance,
        [(i.latest_start, i.deadline, i.key) for i in pending],
    )
    left_note = ""
    if keep is not None:
        left_note = left_out_reason(len(pending), len(keep), limits.max_cells)
        planned_now = [pending[i] for i in keep]
        snapshot = _snapshot(
            config, slot0, planned_now, capacity, running, forecast, previous or {}
        )
    instance = snapshot.instance
    policy_params = round_params(config.planning.policy, config.planning.params)
    result = run_policy(config.planning.policy, instance, policy_params, snapshot.context())
    held = snapshot.hold(result.plan, config.planning.hold_rule(), released_this_slot)
    starts = {a.job: a.start_slot for a in held.plan.assignments}
    policy_starts = {a.job: a.start_slot for a in result.plan.assignments}
    values = forecast.values_g_per_kwh
    note = data_note(forecast)
    planned_keys = {str(job.id) for job in instance.jobs} if left_note else set()
    outcomes: dict[str, Outcome] = {}
    for intent in pending:
        slot = starts.get(JobId(intent.key))
        g_now = estimate_g(config, intent, values, 0)
        latest = intent.latest_start
        if slot is None:
            if left_note and intent.key not in planned_keys:
                reason = left_note
            else:
                why = result.notes.get(JobId(intent.key), "no room in the plan")
                reason = (
                    f"policy {config.planning.policy} left it unscheduled ({why}); released at "
                    "its latest start at the latest"
                )
            outcomes[intent.key] = Outcome(
                intent.key,
                start_now=now >= latest,
                planned_start=max(latest, now),
                reason=reason + note,
                est_g_now=g_now,
                est_g_planned=estimate_g(
                    config,
                    intent,
                    values,
                    max(0, math.floor((latest - slot0).total_seconds() / slot_s)),
                ),
                scheduled=False,
            )
            continue
        planned = slot0 + timedelta(seconds=slot * slot_s)
        g_planned = estimate_g(config, intent, values, slot)
        rule_note = held.reasons.get(JobId(intent.key))
        if slot == 0 and rule_note is not None:
            reason = (
                f"{rule_note} (policy {config.planning.policy} planned slot "
                f"{policy_starts.get(JobId(intent.key))})"
            )
        elif slot == 0:
            reason = f"policy {config.planning.policy} starts it now"
        elif planned > latest:
            reason = (
                f"policy {config.planning.policy} planned {planned:%Y-%m-%dT%H:%MZ}, after its "
                f"latest start; released at {latest:%Y-%m-%dT%H:%MZ} at the latest"
            )
            planned = max(latest, now)
        else:
            saved = g_now - g_planned
            reason = (
                f"waiting for cleaner power: forecast {values[slot]:.0f} g/kWh at "
                f"{planned:%Y-%m-%dT%H:%MZ} vs {values[0]:.0f} now, est. {saved:.1f} g saved "
                f"(policy {config.planning.policy})"
            )
            if rule_note is not None:
                reason += f"; {rule_note}"
        outcomes[intent.key] = Outcome(
            intent.key,
            start_now=slot == 0 or now >= latest,
            planned_start=planned,
            reason=reason + note,
            est_g_now=g_now,
            est_g_planned=g_planned,
        )
    return Round(
        instance=instance,
        result=result,
        outcomes=outcomes,
        forecast=forecast,
        left_out=len(pending) - len(instance.jobs),
    )
