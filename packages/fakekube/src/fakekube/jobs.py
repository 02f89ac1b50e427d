"""Job rules that came with ``spec.managedBy`` (JobManagedBy, beta and on by default in 1.32).

Followed: kubernetes ``pkg/apis/batch/validation/validation.go`` (``validateJobSpec`` for
``managedBy``; ``ValidateJobSpecUpdate`` for its immutability; ``validateJobStatus`` and
``ValidateJobStatusUpdate`` for ``/status`` writes) and ``pkg/registry/batch/job/strategy.go``
``getStatusValidationOptions``, which with JobManagedBy on switches the status rules on for
every Job (not only for Jobs with ``managedBy``), most of them only when the fields they
look at change. Messages are the real ones.

Left out (the fake has no Indexed Jobs or backoffLimitPerIndex): the format of
``completedIndexes``/``failedIndexes`` and their overlap.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from fakekube._errors import (
    FieldError,
    duplicate,
    invalid,
    required,
)
from fakekube.kinds import SUBDOMAIN_MSG

__all__ = ["JOB_CONTROLLER", "managed_elsewhere", "validate_managed_by", "validate_status_update"]

Obj = dict[str, Any]

JOB_CONTROLLER = "kubernetes.io/job-controller"
"""The reserved ``managedBy`` value of the built-in Job controller."""

_MAX_MANAGED_BY = 63  # maxManagedByLength
_HTTP_PATH = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")
_HTTP_PATH_FMT = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NO_VALUE = ""  # FieldError.shown for field.OmitValueType{}


def managed_elsewhere(job: Obj) -> bool:
    """True when ``spec.managedBy`` hands the Job to a controller other than the built-in."""
    managed_by = (job.get("spec") or {}).get("managedBy")
    return managed_by is not None and managed_by != JOB_CONTROLLER


def validate_managed_by(spec: Obj) -> list[FieldError]:
    """``validateJobSpec``: a domain-prefixed path (``IsDomainPrefixedPath``), <= 63 bytes."""
    if "managedBy" not in spec or spec["managedBy"] is None:
        return []
    path, value = "spec.managedBy", spec["managedBy"]
    errs: list[FieldError] = []
    if not isinstance(value, str) or not value:
        return [required(path)]
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        errs.append(invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")'))
    else:
        if len(host) > 253:
            errs.append(invalid(path, host, "must be no more than 253 characters"))
        if not _SUBDOMAIN.match(host):
            errs.append(invalid(path, host, SUBDOMAIN_MSG))
        if not _HTTP_PATH.match(rest):
            errs.append(
                invalid(
                    path,
                    rest,
                    f"must be a valid path (regex used for validation is '{_HTTP_PATH_FMT}')",
                )
            )
    if len(value.encode()) > _MAX_MANAGED_BY:
        errs.append(FieldError(path, "Too long", f"may not be more than {_MAX_MANAGED_BY} bytes"))
    return errs


# -- status ---------------------------------------------------------------------------------


def _true(status: Obj, kind: str) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None


def _go_time(value: Any) -> str:
    """A ``*metav1.Time`` as Go's ``%s`` prints it: ``2023-06-01 00:00:00 +0000 UTC``."""
    moment = _time(value)
    if moment is None:
        return "null" if value is None else str(value)
    offset = moment.strftime("%z") or "+0000"
    zone = "UTC" if offset == "+0000" else offset
    return f"{moment.strftime('%Y-%m-%d %H:%M:%S')} {offset} {zone}"


def _go_uids(values: Any) -> str:
    if not values:
        return "[]types.UID(nil)"
    return "[]types.UID{" + ", ".join(f'"{v}"' for v in values) + "}"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _job_status(new: Obj, flags: dict[str, bool]) -> list[FieldError]:
    """``validateJobStatus`` with the options of ``getStatusValidationOptions``."""
    spec, status = new.get("spec") or {}, new.get("status") or {}
    errs: list[FieldError] = []
    for key in ("active", "succeeded", "failed", "ready", "terminating"):
        value = status.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            errs.append(invalid(f"status.{key}", value, "must be greater than or equal to 0"))
    uncounted = status.get("uncountedTerminatedPods") or {}
    seen: set[str] = set()
    for part in ("succeeded", "failed"):
        for i, uid in enumerate(uncounted.get(part) or []):
            where = f"status.uncountedTerminatedPods.{part}[{i}]"
            if uid == "":
                errs.append(invalid(where, uid, "must not be empty"))
            elif uid in seen:
                errs.append(duplicate(where, uid))
            else:
                seen.add(uid)
    complete, failed = _true(status, "Complete"), _true(status, "Failed")
    failure_target = _true(status, "FailureTarget")
    criteria_met = _true(status, "SuccessCriteriaMet")
    start, completion = status.get("startTime"), status.get("completionTime")

    def conditions(message: str) -> FieldError:
        return FieldError("status.conditions", "Invalid value", message, shown=_NO_VALUE)

    if (flags["complete"] or flags["failed"]) and complete and failed:
        errs.append(conditions("cannot set Complete=True and Failed=true conditions"))
    if (flags["complete"] or flags["failure_target"]) and complete and failure_target:
        errs.append(conditions("cannot set Complete=True and FailureTarget=true conditions"))
    if (flags["complete"] or flags["completion"]) and completion and not complete:
        errs.append(
            FieldError(
                "status.completionTime",
                "Invalid value",
                "cannot set completionTime when there is no Complete=True condition",
                shown=_go_time(completion),
            )
        )
    if (flags["complete"] or flags["completion"]) and not completion and complete:
        errs.append(
            required("status.completionTime", "completionTime is required for Complete jobs")
        )
    start_at, completion_at = _time(start), _time(completion)
    if (
        (flags["start"] or flags["completion"])
        and start_at
        and completion_at
        and completion_at < start_at
    ):
        errs.append(
            FieldError(
                "status.completionTime",
                "Invalid value",
                "completionTime cannot be set before startTime",
                shown=_go_time(completion),
            )
        )
    finished = complete or failed
    if (flags["finished"] or flags["active"]) and _int(status.get("active")) > 0 and finished:
        errs.append(
            invalid("status.active", status.get("active"), "active>0 is invalid for finished job")
        )
    if (flags["finished"] or flags["start"]) and not start and finished:
        errs.append(required("status.startTime", "startTime is required for finished job"))
    if (
        (flags["finished"] or flags["uncounted"])
        and finished
        and (uncounted.get("succeeded") or uncounted.get("failed"))
    ):
        shown = (
            f"batch.UncountedTerminatedPods{{Succeeded:{_go_uids(uncounted.get('succeeded'))}, "
            f"Failed:{_go_uids(uncounted.get('failed'))}}}"
        )
        errs.append(
            FieldError(
                "status.uncountedTerminatedPods",
                "Invalid value",
                "uncountedTerminatedPods needs to be empty for finished job",
                shown=shown,
            )
        )
    indexed = spec.get("completionMode") == "Indexed"
    if flags["completed_indexes"] and status.get("completedIndexes") and not indexed:
        errs.append(
            invalid(
                "status.completedIndexes",
                status["completedIndexes"],
                "cannot set non-empty completedIndexes when non-indexed completion mode",
            )
        )
    if (
        flags["failed_indexes"]
        and spec.get("backoffLimitPerIndex") is None
        and status.get("failedIndexes") is not None
    ):
        errs.append(
            invalid(
                "status.failedIndexes",
                status["failedIndexes"],
                "cannot set non-null failedIndexes when backoffLimitPerIndex is null",
            )
        )
    if criteria_met and failed:
        errs.append(conditions("cannot set SuccessCriteriaMet=True and Failed=true conditions"))
    if criteria_met and failure_target:
        errs.append(
            conditions("cannot set SuccessCriteriaMet=True and FailureTarget=true conditions")
        )
    if spec.get("successPolicy") is not None and not criteria_met and complete:
        errs.append(
            conditions(
                "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"
            )
        )
    return errs


def validate_status_update(old: Obj, new: Obj) -> list[FieldError]:
    """``ValidateJobStatusUpdate`` for a ``/status`` write of a Job (JobManagedBy on)."""
    old_s, new_s = old.get("status") or {}, new.get("status") or {}
    spec = new.get("spec") or {}

    def changed_true(kind: str) -> bool:
        return _true(old_s, kind) != _true(new_s, kind)

    def changed_time(key: str) -> bool:
        return _time(old_s.get(key)) != _time(new_s.get(key))

    old_finished = _true(old_s, "Complete") or _true(old_s, "Failed")
    new_finished = _true(new_s, "Complete") or _true(new_s, "Failed")
    flags = {
        "finished": old_finished != new_finished,
        "complete": changed_true("Complete"),
        "failed": changed_true("Failed"),
        "failure_target": changed_true("FailureTarget"),
        "completed_indexes": (old_s.get("completedIndexes") or "")
        != (new_s.get("completedIndexes") or ""),
        "failed_indexes": old_s.get("failedIndexes") != new_s.get("failedIndexes"),
        "active": _int(old_s.get("active")) != _int(new_s.get("active")),
        "start": changed_time("startTime"),
        "completion": changed_time("completionTime"),
        "uncounted": (old_s.get("uncountedTerminatedPods") or {})
        != (new_s.get("uncountedTerminatedPods") or {}),
    }
    errs = _job_status(new, flags)
    for kind in ("Failed", "Complete", "FailureTarget"):
        if _true(old_s, kind) and not _true(new_s, kind):
            errs.append(
                FieldError(
                    "status.conditions",
                    "Invalid value",
                    f"cannot disable the terminal {kind}=True condition",
                    shown=_NO_VALUE,
                )
            )
    if _int(new_s.get("failed")) < _int(old_s.get("failed")):
        errs.append(
            invalid(
                "status.failed", _int(new_s.get("failed")), "cannot decrease the failed counter"
            )
        )
    indexed = spec.get("completionMode") == "Indexed"
    if (not indexed or spec.get("completions") != spec.get("parallelism")) and _int(
        new_s.get("succeeded")
    ) < _int(old_s.get("succeeded")):
        errs.append(
            invalid(
                "status.succeeded",
                _int(new_s.get("succeeded")),
                "cannot decrease the succeeded counter",
            )
        )
    if (
        new_s.get("completionTime")
        and old_s.get("completionTime")
        and changed_time("completionTime")
    ):
        errs.append(
            FieldError(
                "status.completionTime",
                "Invalid value",
                "completionTime cannot be mutated",
                shown=_go_time(new_s.get("completionTime")),
            )
        )
    if old_s.get("startTime") and changed_time("startTime") and not spec.get("suspend"):
        errs.append(required("status.startTime", "startTime cannot be removed for unsuspended job"))
    old_met, new_met = _true(old_s, "SuccessCriteriaMet"), _true(new_s, "SuccessCriteriaMet")
    if old_met and not new_met:
        errs.append(
            FieldError(
                "status.conditions",
                "Invalid value",
                "cannot disable the SuccessCriteriaMet=True condition",
                shown=_NO_VALUE,
            )
        )
    if _true(old_s, "Complete") and not old_met and new_met:
        errs.append(
            FieldError(
                "status.conditions",
                "Invalid value",
                "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions",
                shown=_NO_VALUE,
            )
        )
    return errs
