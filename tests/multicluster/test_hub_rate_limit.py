"""The hub's client-side rate limit: the controller's token bucket and config section
(``client_connection.qps`` / ``.burst``), one bucket per client (the hub's own and each
spoke's). Tokens are counted, not seconds: no test here sleeps or times anything."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from carbonshift.errors import InputError
from carbonshift.k8s.config import ClientConnectionSection
from carbonshift.k8s.multicluster import HubConfig
from carbonshift.k8s.multicluster.api import connect_kubeconfig_text
from carbonshift.k8s.multicluster.config import load_hub_config
from tests.multicluster.harness import HOLD_OFF, fleet, hub_job

START = datetime(2023, 6, 1, tzinfo=UTC)
SPOKE_KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "s", "cluster": {"server": "http://127.0.0.1:1"}}],
    "users": [{"name": "u", "user": {"token": "t"}}],
    "contexts": [{"name": "s", "context": {"cluster": "s", "user": "u"}}],
    "current-context": "s",
}


def test_the_hub_has_the_controllers_section_and_defaults() -> None:
    assert HubConfig().client_connection == ClientConnectionSection()
    assert (HubConfig().client_connection.qps, HubConfig().client_connection.burst) == (50, 100)


@pytest.mark.parametrize(
    ("section", "want_words"),
    [
        ({"qps": -1}, r"client_connection\.qps: .*requests/s .*use e\.g\. 50"),
        ({"burst": 0}, r"client_connection\.burst: .*at least 1"),
        ({"qbs": 5}, r"unknown key 'client_connection\.qbs' \(did you mean 'qps'\?\)"),
    ],
    ids=["negative qps", "zero burst", "misspelt key"],
)
def test_a_bad_hub_limit_says_the_fix(
    tmp_path: Path, section: dict[str, int], want_words: str
) -> None:
    path = tmp_path / "hub.yaml"
    path.write_text(yaml.safe_dump({"client_connection": section}))
    with pytest.raises(InputError, match=want_words):
        load_hub_config(path)


@pytest.mark.parametrize(
    ("section", "want_words"),
    [
        ({"qps": -1}, r"events\.qps: .*-1 Events/s .*use e\.g\. 50"),
        ({"burst": 0}, r"events\.burst: .*0 Events .*at least 1"),
    ],
    ids=["negative qps", "zero burst"],
)
def test_a_bad_hub_event_budget_says_the_fix(
    tmp_path: Path, section: dict[str, int], want_words: str
) -> None:
    path = tmp_path / "hub.yaml"
    path.write_text(yaml.safe_dump({"events": section}))
    with pytest.raises(InputError, match=want_words):
        load_hub_config(path)
    assert (HubConfig().events.qps, HubConfig().events.burst) == (50, 100)


@pytest.mark.parametrize(
    ("qps", "burst", "want"),
    [(7.0, 3, (7.0, 3)), (0.0, 1, None)],
    ids=["a limit", "qps 0: no limiter"],
)
async def test_a_spoke_client_gets_a_bucket_of_the_given_size(
    qps: float, burst: int, want: tuple[float, int] | None
) -> None:
    api = await connect_kubeconfig_text(
        yaml.safe_dump(SPOKE_KUBECONFIG),
        clock=None,
        qps=qps,
        burst=burst,  # type: ignore[arg-type]
    )
    try:
        limiter = api.kube.limiter
        assert (None if limiter is None else (limiter.qps, limiter.burst)) == want
    finally:
        await api.close()


async def test_every_spoke_request_takes_a_token_of_that_spokes_own_bucket() -> None:
    config = HubConfig.model_validate(
        {
            "planning": {"policy": "fluidos", "forecast": "oracle", **HOLD_OFF},
            "client_connection": {"qps": 1000, "burst": 7},
        }
    )
    async with fleet(START, config=config) as f:
        await f.create(f.hub, hub_job("now", cpu=2, runtime_h=1, deadline_h=1))
        controller = await f.start_controller()
        await f.step(0)
        assert controller.last_round is not None
        assert controller.last_round.decisions["Job/batch/now"].start_now
        buckets = {}
        for name, spoke in controller.spokes.items():
            assert spoke.api is not None
            limiter = spoke.api.kube.limiter
            assert limiter is not None, name
            assert (limiter.qps, limiter.burst) == (1000.0, 7)
            assert limiter.taken > 0, name  # at least its nodes list
            buckets[name] = id(limiter)
        assert len(set(buckets.values())) == len(buckets) == 2  # one bucket per spoke
