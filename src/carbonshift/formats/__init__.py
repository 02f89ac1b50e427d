"""Readers and writers of the contract files (CONTRACTS.md v1): instance and plan JSON."""

from carbonshift.formats.instance import (
    instance_from_dict,
    instance_to_dict,
    read_instance,
    write_instance,
)
from carbonshift.formats.plan import PlanBound, plan_from_dict, plan_to_dict, read_plan, write_plan

__all__ = [
    "PlanBound",
    "instance_from_dict",
    "instance_to_dict",
    "plan_from_dict",
    "plan_to_dict",
    "read_instance",
    "read_plan",
    "write_instance",
    "write_plan",
]
