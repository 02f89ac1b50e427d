"""carbonshift.k8s: the Kubernetes controller for one cluster (DESIGN.md section 6).

Opted-in Pods are gated (``carbonshift.io/hold``) and Jobs suspended at creation by the
admission webhook; the level-triggered :class:`Controller` plans them with the planning core
once per period, writes why and until when on each, and releases each exactly once, never
past its latest start. The scheduler extender ranks nodes by watts x zone carbon.
docs/controller.md is the walkthrough and configuration reference.
"""

from carbonshift.k8s.app import ControllerApp
from carbonshift.k8s.clock import Clock, ExternalClock, SystemClock
from carbonshift.k8s.config import ControllerConfig, load_config, parse_config
from carbonshift.k8s.extender import extender_app
from carbonshift.k8s.intent import Intent, NotHeld, read_intent
from carbonshift.k8s.reconciler import Controller
from carbonshift.k8s.webhook import webhook_app

__all__ = [
    "Clock",
    "Controller",
    "ControllerApp",
    "ControllerConfig",
    "ExternalClock",
    "Intent",
    "NotHeld",
    "SystemClock",
    "extender_app",
    "load_config",
    "parse_config",
    "read_intent",
    "webhook_app",
]
