"""Policies: functions of an instance (and an online context) that answer a plan."""
