"""A fake Kubernetes API server with emulated controllers: a TEST DOUBLE (docs/fakekube.md).

Use :func:`run_fakekube` (a context manager) or the ``fakekube`` pytest fixture of
:mod:`fakekube.pytest_plugin`; from a shell,
``python -m fakekube --port 8080 --kubeconfig-out kubeconfig``.
"""

from fakekube.cluster import FakeKubeConfig
from fakekube.controllers import EXIT_CODE_ANNOTATION, RUNTIME_ANNOTATION
from fakekube.faults import Fault
from fakekube.runner import FakeKube, run_fakekube, write_kubeconfig

__all__ = [
    "EXIT_CODE_ANNOTATION",
    "RUNTIME_ANNOTATION",
    "FakeKube",
    "FakeKubeConfig",
    "Fault",
    "run_fakekube",
    "write_kubeconfig",
]
