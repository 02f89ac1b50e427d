"""Readers and writers of the contract files (version 1, docs/formats.md): instance and plan."""

from carbonshift.formats._common import (
    amount_in,
    check_depth,
    dumps_strict,
    loads_json,
    null_if_undefined,
    strict_number,
    whole_number,
)
from carbonshift.formats.instance import (
    instance_from_dict,
    instance_to_dict,
    read_instance,
    write_instance,
)
from carbonshift.formats.plan import (
    PlanBound,
    plan_from_dict,
    plan_json,
    plan_to_dict,
    read_plan,
    write_plan,
)

__all__ = [
    "PlanBound",
    "amount_in",
    "check_depth",
    "dumps_strict",
    "instance_from_dict",
    "instance_to_dict",
    "loads_json",
    "null_if_undefined",
    "plan_from_dict",
    "plan_json",
    "plan_to_dict",
    "read_instance",
    "read_plan",
    "strict_number",
    "whole_number",
    "write_instance",
    "write_plan",
]
