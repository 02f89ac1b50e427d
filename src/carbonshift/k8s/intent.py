"""What an opted-in workload asks for: deadline, expected runtime, demand, criticality.

Reads the plain JSON of a Kubernetes object (``dict``), never a client model, so the webhook,
the reconciler, the hub and the tests share one parser; each kind's adapter
(:mod:`carbonshift.k8s.kinds`) says where its intent is written. The vocabulary
(docs/controller.md):

=====================================  =========================================================
``carbonshift.io/managed: "true"``     label: opt in (``"false"`` opts out of an opted-in namespace)
``carbonshift.io/deadline``            RFC 3339 time, or a duration from creation (``12h``)
``carbonshift.io/expected-runtime``    duration (``90m``); default from the configuration
``carbonshift.io/critical: "true"``    never held
``carbonshift.io/power-watts``         power of the whole workload while it runs, W (estimates)
``fluidos-intent-deadline: "N"``       FLUIDOS: start within N h, i.e. deadline = creation + N h +
                                       expected runtime
priority class ``not-critical``        CO2 scheduler convention: shiftable (opts in)
=====================================  =========================================================

An unusable value never blocks a workload: :func:`read_intent` answers a :class:`NotHeld`
with ``unusable=True`` and a one-line reason, and the workload runs as if not opted in.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from carbonshift.errors import InputError
from carbonshift.k8s.config import ControllerConfig
from carbonshift.k8s.keys import (
    ANNOTATION_PREFIX,
    CRITICAL,
    DEADLINE,
    HOLD_GATE,
    HUB_LABEL,
    MANAGED_LABEL,
    POWER,
    RUNTIME,
)
from carbonshift.k8s.kinds import CONTROLLER_KINDS, IntentSource, OptIn, WorkloadKind, adapter_of
from carbonshift.units import DurationTooLongError, parse_duration, parse_utc

__all__ = [
    "ANNOTATION_PREFIX",
    "CRITICAL",
    "DEADLINE",
    "FLUIDOS_DEADLINE",
    "HOLD_GATE",
    "HUB_LABEL",
    "MANAGED_LABEL",
    "POWER",
    "RUNTIME",
    "Intent",
    "NotHeld",
    "Obj",
    "object_key",
    "only_written",
    "parse_quantity",
    "read_duration",
    "read_intent",
    "read_intent_from",
    "read_time",
    "requested",
]

Obj = dict[str, Any]
Kind = WorkloadKind

FLUIDOS_DEADLINE = "fluidos-intent-deadline"

# The Kubernetes quantity grammar (k8s.io/apimachinery resource.Quantity): a signed decimal
# number, then a binary suffix (Ki..Ei), a decimal exponent (e3, E-2) or a decimal SI suffix
# (n u m "" k M G T P E: "1E" is one exa, "1e3" a thousand).
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?))$"
)
_SUFFIX = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("0.001"),
    "": Decimal(1),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
# A real API server keeps quantities in int64 (milli-units); anything larger is a mistake.
_MAX_QUANTITY = Decimal(2**63 - 1)
_MAX_EXPONENT = 60
#: One planning unit of each resource, in the resource's base unit (memory: GiB in bytes).
_UNIT = {"cpu": Decimal(1), "memory": Decimal(2) ** 30, "nvidia.com/gpu": Decimal(1)}
#: The longest duration or deadline distance read from an annotation. ``timedelta`` and
#: ``datetime`` overflow a few millennia away; a workload is planned within days.
MAX_SPAN = timedelta(days=366 * 10)
_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
_LATEST = datetime(9000, 1, 1, tzinfo=UTC)
_DATE_LIKE = re.compile(r"^\s*\d{4}-\d{2}-\d{2}[Tt ]", re.ASCII)
_DURATION_LIKE = re.compile(r"^\s*\d+(?:\.\d+)?\s*[a-zA-Z]+\s*$", re.ASCII)
# A plain decimal number in ASCII digits: float() alone also reads "١٢" (Arabic-Indic
# digits), "1_000" and "nan".
_NUMBER = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$", re.ASCII)


def _number(text: str) -> float:
    """A decimal number written in ASCII digits, else -1.0 (refused by every caller)."""
    return float(text) if _NUMBER.match(text) else -1.0


def read_duration(text: str, *, what: str) -> timedelta:
    """A duration annotation, at most :data:`MAX_SPAN` (no overflow on ``1e400d``)."""
    try:
        span = parse_duration(text, what=what)
    except DurationTooLongError:  # more days than timedelta holds
        span = MAX_SPAN * 2
    if span > MAX_SPAN:
        raise InputError(
            f"{what}={text!r} is longer than {MAX_SPAN.days} days; give a shorter duration like 12h"
        )
    return span


def _is_iso(text: str) -> bool:
    try:
        datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return True


def read_time(text: str, *, what: str) -> datetime:
    """An RFC 3339 annotation as UTC, refusing times ``datetime`` cannot shift (year 1 or 9999)."""
    try:
        moment = parse_utc(text, what=what)
    except InputError:
        if not _is_iso(text):
            raise
        moment = None  # a well-formed time that shifting to UTC took out of datetime's range
    if moment is None or not _EARLIEST <= moment <= _LATEST:
        raise InputError(
            f"{what}={text!r} is not a time between {_EARLIEST.year} and {_LATEST.year}; "
            "write it like 2026-01-02T06:00:00Z"
        )
    return moment


def planning_units(resource: str, quantity: Decimal) -> float:
    """A quantity of ``resource`` in planning units (memory in GiB, the rest as counted)."""
    return float(quantity / _UNIT.get(resource, Decimal(1)))


def parse_quantity(text: object, *, what: str = "quantity") -> Decimal:
    """A Kubernetes resource quantity (``500m``, ``2``, ``1Gi``, ``1e3``, ``1E``) as a Decimal.

    Follows the API server's grammar; refuses negative values and values beyond int64.
    """
    raw = str(text).strip()
    known = _PARSED_QUANTITIES.get(raw)
    if known is not None:
        return known
    match = _QUANTITY.match(raw)
    if match is None:
        raise InputError(f"{what} {text!r} is not a Kubernetes quantity; write e.g. 500m, 2 or 1Gi")
    number, exponent, suffix = match.groups()
    digits = (exponent or "").lstrip("+-").lstrip("0")
    if len(digits) > 3 or (digits and int(digits) > _MAX_EXPONENT) or len(number) > 40:
        raise InputError(f"{what} {text!r} is out of range; write e.g. 500m, 2 or 1Gi")
    value = Decimal(number)
    value = value.scaleb(int(exponent)) if exponent is not None else value * _SUFFIX[suffix]
    if value < 0:
        raise InputError(f"{what} {text!r} is negative; requests and capacities are >= 0")
    if value > _MAX_QUANTITY:
        raise InputError(f"{what} {text!r} is out of range (over 2^63); write e.g. 500m, 2 or 1Gi")
    if len(_PARSED_QUANTITIES) < _MAX_PARSED_QUANTITIES:
        _PARSED_QUANTITIES[raw] = value
    return value


_PARSED_QUANTITIES: dict[str, Decimal] = {}
"""Valid quantities by their text: a fleet asks for a handful of sizes ("1", "500m", "4Gi"),
and each of 10,000 Jobs read at the hub's start parsed its own (a regular expression and
Decimal arithmetic, about 6 % of that start's CPU); a Decimal is immutable, so one is shared."""
_MAX_PARSED_QUANTITIES = 4096


@dataclass(frozen=True, slots=True)
class Intent:
    """A workload the controller may hold: when it must end, how long it runs, what it needs.

    ``demand`` is in planning units per resource (cpu cores, memory GiB, gpu devices);
    ``deadline_source`` names the annotation (or ``default``) the deadline came from.
    """

    kind: Kind
    namespace: str
    name: str
    uid: str
    created: datetime
    deadline: datetime
    expected_runtime: timedelta
    demand: Mapping[str, float]
    deadline_source: str
    power_w: float | None = None

    @property
    def key(self) -> str:
        """``Kind/namespace/name``: the job id in plans."""
        return f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def latest_start(self) -> datetime:
        """The latest start that still meets the deadline: never hold past it."""
        return self.deadline - self.expected_runtime


@dataclass(frozen=True, slots=True)
class NotHeld:
    """The controller leaves this workload alone; ``unusable`` when an annotation was bad.

    ``annotation`` names the value that decided it: the bad one, ``carbonshift.io/critical``
    for a critical workload, the managed label for one that opts out (else empty).
    """

    reason: str
    unusable: bool = False
    annotation: str = ""


def object_key(obj: Obj) -> str:
    """``Kind/namespace/name`` of a raw object."""
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind', '?')}/{meta.get('namespace', '')}/{meta.get('name', '')}"


def _source(obj: Obj) -> IntentSource:
    """Where ``obj``'s own intent is written (an unknown kind reads as a Pod would)."""
    adapter = adapter_of(obj)
    source = adapter.intent_source(obj, {}) if adapter is not None else None
    if source is None:
        return IntentSource(
            "Pod", obj.get("metadata") or {}, obj.get("spec") or {}, None, OptIn.LABEL
        )
    return source


#: The longest reason written on an object: the note quotes the bad value, and an annotation
#: of 200 kB copied into ``carbonshift.io/reason`` would pass the API server's 256 kB limit
#: on all annotations (every note then refused) and make a warning header kubectl cuts.
MAX_REASON_CHARS = 400


def _clip(reason: str) -> str:
    """``reason`` cut in the middle (the field first, the fix last) to MAX_REASON_CHARS."""
    if len(reason) <= MAX_REASON_CHARS:
        return reason
    keep = (MAX_REASON_CHARS - 40) // 2  # the marker takes at most 40
    return (
        f"{reason[:keep]} ... ({len(reason) - 2 * keep} characters left out) ... {reason[-keep:]}"
    )


def _opted_in(source: IntentSource, config: ControllerConfig) -> tuple[bool, str]:
    """(opted in, why) -- or raises InputError for an unusable managed label."""
    meta = source.metadata
    labels = meta.get("labels") or {}
    hub = labels.get(HUB_LABEL) == "true"
    if hub and source.opt_in is OptIn.LABEL:
        return False, f"label {HUB_LABEL}=true: a hub Job, the carbonshift hub's to place"
    label = labels.get(MANAGED_LABEL)
    if label is None and source.opt_in is OptIn.KIND:
        return True, f"a {source.kind} under carbonshift's hold"
    if label is None and hub and source.opt_in is OptIn.HUB_LABEL:
        return True, f"label {HUB_LABEL}=true"
    if label is not None:
        value = str(label).strip().lower()
        if value == "false":
            return False, f"label {MANAGED_LABEL}=false"
        if value != "true":
            raise InputError(
                f"label {MANAGED_LABEL}={label!r} is neither 'true' nor 'false'; set it to 'true' "
                "to let carbonshift shift this workload"
            )
        return True, f"label {MANAGED_LABEL}=true"
    if meta.get("namespace") in config.opt_in.namespaces:
        return True, f"namespace {meta.get('namespace')!r} is opted in"
    priority = source.pod_spec.get("priorityClassName")
    if priority and priority == config.opt_in.not_critical_priority_class:
        return True, f"priority class {priority!r}"
    return False, "not opted in (no label, namespace or priority class)"


def requested(obj: Obj, resources: tuple[str, ...]) -> dict[str, float]:
    """Planning units of ``resources`` a Pod (or a Job, times its parallelism) requests.

    Containers add up; an init container counts when it asks for more than they do.
    Raises :class:`~carbonshift.errors.InputError` for a malformed quantity.
    """
    source = _source(obj)
    return _requested(source.pod_spec, source.parallelism, resources)


def _requested(
    spec: Mapping[str, Any], parallelism: object, resources: tuple[str, ...]
) -> dict[str, float]:
    total = {r: Decimal(0) for r in resources}
    for container in spec.get("containers") or []:
        reqs = container.get("resources") or {}
        asked = {**(reqs.get("limits") or {}), **(reqs.get("requests") or {})}
        for r in resources:
            if r in asked:
                total[r] += parse_quantity(asked[r], what=f"{r} request")
    for container in spec.get("initContainers") or []:
        reqs = container.get("resources") or {}
        asked = {**(reqs.get("limits") or {}), **(reqs.get("requests") or {})}
        for r in resources:
            if r in asked:
                total[r] = max(total[r], parse_quantity(asked[r], what=f"{r} request"))
    if parallelism is not None and (
        not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 0
    ):
        raise InputError(
            f"spec.parallelism {parallelism!r} is not a count of pods >= 0; write e.g. 4"
        )
    copies = 1 if parallelism is None else parallelism
    return {r: planning_units(r, total[r]) * copies for r in resources}


def _demand(source: IntentSource, config: ControllerConfig) -> dict[str, float]:
    resources = config.cluster.resources
    demand = _requested(source.pod_spec, source.parallelism, resources)
    if not any(v > 0 for v in demand.values()):
        raise InputError(
            f"it requests none of {', '.join(resources)}; set resources.requests "
            f"(e.g. {resources[0]}: 1) so that it can be planned"
        )
    return demand


def _created(meta: Mapping[str, Any], now: datetime) -> datetime:
    stamp = meta.get("creationTimestamp")
    return read_time(str(stamp), what="metadata.creationTimestamp") if stamp else now


def _deadline(
    annotations: Mapping[str, str], created: datetime, runtime: timedelta, config: ControllerConfig
) -> tuple[datetime, str]:
    raw = annotations.get(DEADLINE)
    if raw is not None:
        text = str(raw)
        if _DURATION_LIKE.match(text):
            return created + read_duration(text, what=f"annotation {DEADLINE}"), DEADLINE
        if not _DATE_LIKE.match(text):
            raise InputError(
                f"annotation {DEADLINE}={text!r} is neither an RFC 3339 time nor a duration; "
                "write 2026-01-02T06:00:00Z or 12h"
            )
        return read_time(text, what=f"annotation {DEADLINE}"), DEADLINE
    fluidos = annotations.get(FLUIDOS_DEADLINE)
    if fluidos is not None:
        hours = _number(str(fluidos))
        if not 0 <= hours < 24 * 366:
            raise InputError(
                f"annotation {FLUIDOS_DEADLINE}={fluidos!r} is not a number of hours >= 0; "
                'write e.g. "6" (start within 6 h)'
            )
        return created + timedelta(hours=hours) + runtime, FLUIDOS_DEADLINE
    return created + timedelta(hours=config.defaults.deadline_hours), "default"


def read_intent(obj: Obj, config: ControllerConfig, now: datetime) -> Intent | NotHeld:
    """The workload's intent, or why the controller leaves it alone; never raises.

    ``now`` stands in for the creation time of an object not yet created (admission). A
    malformed object (a field of the wrong type) is unusable like a bad annotation, so one
    object can never stop the webhook, the controller or the hub.
    """
    try:
        kind = obj.get("kind")
        adapter = next((a for a in CONTROLLER_KINDS if a.kind == kind), None)
        if adapter is None:
            return NotHeld(f"kind {kind!r} is not held (Pods and batch/v1 Jobs are)")
        if not getattr(config.opt_in, adapter.opt_in_switch):
            return NotHeld(
                f"{adapter.plural.capitalize()} are not managed "
                f"(opt_in.{adapter.opt_in_switch} = false)"
            )
        elsewhere = adapter.held_elsewhere(obj)
        if elsewhere is not None:
            return NotHeld(elsewhere)
        return _read_intent(_source(obj), config, now)
    except (ArithmeticError, ValueError, TypeError, AttributeError, KeyError) as exc:
        return _malformed(exc)


def read_intent_from(
    source: IntentSource, config: ControllerConfig, now: datetime
) -> Intent | NotHeld:
    """The intent written where ``source`` says (the hub's kinds: see :mod:`carbonshift.k8s.kinds`);
    never raises, like :func:`read_intent`."""
    try:
        return _read_intent(source, config, now)
    except (ArithmeticError, ValueError, TypeError, AttributeError, KeyError) as exc:
        return _malformed(exc)


def _malformed(exc: Exception) -> NotHeld:
    what = f"{type(exc).__name__}: {exc}"[:200]
    return NotHeld(f"unusable object: {what}", unusable=True, annotation="object")


def _read_intent(source: IntentSource, config: ControllerConfig, now: datetime) -> Intent | NotHeld:
    meta = source.metadata
    annotations: Mapping[str, str] = meta.get("annotations") or {}
    field_name = MANAGED_LABEL
    try:
        opted, why = _opted_in(source, config)
        if not opted:
            return NotHeld(why, annotation=MANAGED_LABEL if why.startswith("label") else "")
        critical = annotations.get(CRITICAL)
        if critical is not None:
            field_name = CRITICAL
            value = str(critical).strip().lower()
            if value not in ("true", "false"):
                raise InputError(
                    f"annotation {CRITICAL}={critical!r} is neither 'true' nor 'false'; "
                    "'true' means never held"
                )
            if value == "true":
                return NotHeld(f"annotation {CRITICAL}=true: never held", annotation=CRITICAL)
        field_name = RUNTIME
        raw_runtime = annotations.get(RUNTIME)
        if raw_runtime is None:
            runtime = timedelta(minutes=config.defaults.expected_runtime_minutes)
        else:
            runtime = read_duration(str(raw_runtime), what=f"annotation {RUNTIME}")
            if runtime <= timedelta(0):
                raise InputError(f"annotation {RUNTIME}={raw_runtime!r} must be longer than 0s")
        if runtime > timedelta(hours=config.planning.max_horizon_hours):
            raise InputError(
                f"expected runtime {runtime} is longer than the planning horizon "
                f"(planning.max_horizon_hours = {config.planning.max_horizon_hours:g} h); "
                "such work is not held: it runs at once"
            )
        field_name = "metadata.creationTimestamp"
        created = _created(meta, now)
        field_name = DEADLINE if DEADLINE in annotations else FLUIDOS_DEADLINE
        deadline, deadline_source = _deadline(annotations, created, runtime, config)
        field_name = POWER
        power: float | None = None
        if POWER in annotations:
            power = _number(str(annotations[POWER]))
            if not 0 <= power < math.inf:
                raise InputError(
                    f"annotation {POWER}={annotations[POWER]!r} is not a finite power >= 0 in W; "
                    'write e.g. "350"'
                )
        field_name = "resources.requests"
        demand = _demand(source, config)
    except InputError as exc:
        reason = _clip(f"unusable {field_name}: {exc}")
        return NotHeld(reason, unusable=True, annotation=field_name)
    return Intent(
        kind=source.kind,
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        created=created,
        deadline=deadline,
        expected_runtime=runtime,
        demand=demand,
        deadline_source=deadline_source,
        power_w=power,
    )


_WRITE_METADATA = frozenset({"resourceVersion", "managedFields", "annotations", "labels"})
"""What an annotation write's answer may change in metadata besides what it wrote."""
_ABSENT = object()


def only_written(
    old: Obj,
    new: Obj,
    annotations: Mapping[str, str | None],
    labels: Mapping[str, str],
) -> bool:
    """Whether ``new``, the answer of a merge patch of ``annotations`` (None: deleted) and
    ``labels`` into ``old``'s metadata, is ``old`` with that write and nothing else (a new
    resourceVersion and managedFields aside). A write that only did that changes no input
    of the intent but what it wrote, so whoever wrote it may carry what it read from
    ``old`` across (nothing else is assumed: a patch without a resourceVersion, or a
    mutating webhook, may have brought more)."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    if not new_meta.get("resourceVersion") or len(new) != len(old):
        return False
    # the same number of keys, each of new's in old with an equal value: the same keys
    # (``is`` first: a cache shares the parts a new version has in common with the old)
    for field, value in new.items():
        was = old.get(field, _ABSENT)
        if field != "metadata" and was is not value and was != value:
            return False
    kept = 0
    for field, value in new_meta.items():
        if field in _WRITE_METADATA:
            continue
        kept += 1
        was = old_meta.get(field, _ABSENT)
        if was is not value and was != value:
            return False
    if kept != sum(field not in _WRITE_METADATA for field in old_meta):
        return False
    return _merged(old_meta.get("annotations"), annotations) == (
        new_meta.get("annotations") or {}
    ) and _merged(old_meta.get("labels"), labels) == (new_meta.get("labels") or {})


def _merged(before: Mapping[str, str] | None, patch: Mapping[str, str | None]) -> dict[str, str]:
    """``before`` after a JSON merge patch of ``patch`` (RFC 7386: null deletes a key)."""
    out = {**(before or {}), **patch}
    return {k: v for k, v in out.items() if v is not None}
