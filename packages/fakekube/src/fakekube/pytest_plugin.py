"""A ``fakekube`` pytest fixture: import it into a conftest.py to use it.

    from fakekube.pytest_plugin import fakekube  # noqa: F401

    def test_something(fakekube):
        fakekube.kubeconfig        # path of a kubeconfig for kubectl / kubernetes-asyncio
        fakekube.base_url          # http://127.0.0.1:PORT
        fakekube.advance(hours=1)  # virtual time; controllers run to a fixed point

Mark a test ``@pytest.mark.fakekube_config(nodes=1, gpu=4)`` to change the cluster;
``tls=True`` there serves HTTPS with client-certificate identities (``run_fakekube(tls=True)``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from fakekube.cluster import FakeKubeConfig
from fakekube.runner import FakeKube, run_fakekube

__all__ = ["DEFAULT_START", "fakekube"]

DEFAULT_START = datetime(2023, 6, 1, tzinfo=UTC)
"""Where the fixture's virtual clock starts unless the marker says otherwise."""


@pytest.fixture
def fakekube(request: pytest.FixtureRequest) -> Iterator[FakeKube]:
    """A fresh fake cluster on a free loopback port, in virtual time, stopped after the test."""
    marker = request.node.get_closest_marker("fakekube_config")
    options = dict(marker.kwargs) if marker else {}
    options.setdefault("start", DEFAULT_START)
    tls = bool(options.pop("tls", False))
    with run_fakekube(FakeKubeConfig(**options), tls=tls) as kube:
        yield kube
        errors = kube.cluster.controller_errors
        assert not errors, f"the fake cluster's emulated controllers failed: {errors}"
