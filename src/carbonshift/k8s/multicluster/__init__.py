"""Hub and spoke placement across clusters in different grid zones (docs/multicluster.md).

A hub controller reads its spokes from ``CarbonCluster`` objects, plans every held
workload of every kind on every healthy spoke in one call per period, and places each in
the chosen spoke at the chosen time: batch/v1 Jobs by copying them, Kueue Workloads through
an AdmissionCheck and MultiKueue's ``nominatedClusterNames``, MCAD AppWrappers by copying
them (label ``carbonshift.io/hub``) or through ``dispatchingGates`` and ``targetCluster``.
:class:`HubObserver` turns what the hub did into Events and Prometheus metrics;
:class:`HubRunner` runs it under leader election.
"""

from carbonshift.k8s.multicluster.config import HubConfig
from carbonshift.k8s.multicluster.hub import HubController, HubEvent
from carbonshift.k8s.multicluster.inventory import Spoke, SpokeSpec, parse_spoke
from carbonshift.k8s.multicluster.observe import HubMetrics, HubObserver, HubRunner
from carbonshift.k8s.multicluster.plan import Decision, HubRound, plan_hub

__all__ = [
    "Decision",
    "HubConfig",
    "HubController",
    "HubEvent",
    "HubMetrics",
    "HubObserver",
    "HubRound",
    "HubRunner",
    "Spoke",
    "SpokeSpec",
    "parse_spoke",
    "plan_hub",
]
