"""A fake Kubernetes API server with emulated controllers: a TEST DOUBLE (docs/fakekube.md).

Use :func:`run_fakekube` (a context manager) or the ``fakekube`` pytest fixture of
:mod:`carbonshift.testing.fakekube.pytest_plugin`; from a shell,
``python -m carbonshift.testing.fakekube --port 8080 --kubeconfig-out kubeconfig``.
"""

from carbonshift.testing.fakekube.cluster import FakeKubeConfig
from carbonshift.testing.fakekube.controllers import EXIT_CODE_ANNOTATION, RUNTIME_ANNOTATION
from carbonshift.testing.fakekube.faults import Fault
from carbonshift.testing.fakekube.runner import FakeKube, run_fakekube, write_kubeconfig

__all__ = [
    "EXIT_CODE_ANNOTATION",
    "RUNTIME_ANNOTATION",
    "FakeKube",
    "FakeKubeConfig",
    "Fault",
    "run_fakekube",
    "write_kubeconfig",
]
