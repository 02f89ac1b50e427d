"""The scheduler extender: kube-scheduler's exact JSON, ranking by watts x zone carbon."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from carbonshift.carbon.embedded import load_series
from carbonshift.k8s.config import parse_config
from carbonshift.k8s.extender import ZoneCarbon, extender_app
from carbonshift.k8s.planner import CarbonSource, Forecast, ProviderCarbonSource
from tests.builders import FrozenClock
from tests.k8s.objects import node, pod

NOW = datetime(2023, 6, 1, 12, tzinfo=UTC)


def intensity(zone: str) -> float:
    series = load_series(zone)
    index = int((NOW - series.start).total_seconds() // 3600)
    return float(series.values_g_per_kwh[index])


NODES = [
    node(
        "de-hungry",
        labels={"carbonshift.io/watts-per-core": "20", "carbonshift.io/grid-zone": "DE"},
    ),
    node(
        "de-lean", labels={"carbonshift.io/watts-per-core": "5", "carbonshift.io/grid-zone": "DE"}
    ),
    node(
        "ca-lean",
        labels={"carbonshift.io/watts-per-core": "5", "carbonshift.io/grid-zone": "CA-ON"},
    ),
]


def client(**extender: Any) -> httpx.AsyncClient:
    config = parse_config(
        {"cluster": {"zone": "DE"}, "planning": {"forecast": "oracle"}, "extender": extender}
    )
    by_name = {n["metadata"]["name"]: n for n in NODES}
    app = extender_app(config, FrozenClock(NOW), by_name.get)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://extender")


async def test_prioritize_ranks_by_watts_times_zone_intensity() -> None:
    assert intensity("CA-ON") < intensity("DE")  # the premise of the expected order
    args = {"Pod": pod(), "Nodes": {"items": NODES}, "NodeNames": None}
    got = (await client().post("/prioritize", json=args)).json()
    scores = {entry["Host"]: entry["Score"] for entry in got}
    assert set(got[0]) == {"Host", "Score"}
    assert scores["ca-lean"] == 10
    assert scores["de-hungry"] == 0
    assert 0 < scores["de-lean"] < 10
    want = round(
        10
        * (20 * intensity("DE") - 5 * intensity("DE"))
        / (20 * intensity("DE") - 5 * intensity("CA-ON"))
    )
    assert scores["de-lean"] == want


async def test_node_cache_capable_requests_send_names_only() -> None:
    args = {"Pod": pod(), "Nodes": None, "NodeNames": ["de-hungry", "ca-lean"]}
    got = (await client().post("/prioritize", json=args)).json()
    assert {e["Host"]: e["Score"] for e in got} == {"de-hungry": 0, "ca-lean": 10}
    filtered = (await client().post("/filter", json=args)).json()
    assert filtered == {
        "Nodes": None,
        "NodeNames": ["de-hungry", "ca-lean"],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": "",
    }


@pytest.mark.parametrize(
    ("workload", "want_failed"),
    [
        (pod(), {"de-hungry", "de-lean"}),
        (pod(annotations={"carbonshift.io/critical": "true"}), set()),
        (pod(managed=None), set()),
    ],
    ids=["shiftable-avoids-dirty-zone", "critical-never-filtered", "unmanaged-never-filtered"],
)
async def test_filter_keeps_shiftable_pods_off_dirty_zones(
    workload: dict[str, Any], want_failed: set[str]
) -> None:
    limit = (intensity("CA-ON") + intensity("DE")) / 2
    args = {"Pod": workload, "Nodes": {"items": NODES}}
    got = (await client(max_g_per_kwh=limit).post("/filter", json=args)).json()
    assert set(got["FailedNodes"]) == want_failed
    assert [n["metadata"]["name"] for n in got["Nodes"]["items"]] == [
        n["metadata"]["name"] for n in NODES if n["metadata"]["name"] not in want_failed
    ]
    assert got["NodeNames"] is None
    assert got["Error"] == ""


async def test_garbage_gets_an_error_not_a_crash() -> None:
    got = (await client().post("/filter", content=b"nope")).json()
    assert got["Error"].startswith("carbonshift")


class CleanGridSource(CarbonSource):
    """A planning source answering 1 g/kWh in every slot (DE is dirty in the embedded data)."""

    def __init__(self, config: Any) -> None:
        super().__init__(config, load=False)
        self.asked = 0

    def forecast(self, slot0: datetime, horizon_slots: int) -> Forecast:
        self.asked += 1
        return Forecast(slot0, (1.0,) * horizon_slots, issued_at=slot0)


async def test_scores_read_the_planning_source_not_the_embedded_data() -> None:
    config = parse_config({"cluster": {"zone": "DE"}, "planning": {"forecast": "oracle"}})
    planning = CleanGridSource(config)
    by_name = {n["metadata"]["name"]: n for n in NODES}
    app = extender_app(config, FrozenClock(NOW), by_name.get, planning)
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://extender")
    args = {"Pod": pod(), "Nodes": {"items": NODES}, "NodeNames": None}
    got = (await http.post("/prioritize", json=args)).json()
    scores = {entry["Host"]: entry["Score"] for entry in got}
    # with the embedded data ca-lean scores 10 (see above); the planning source makes DE clean
    assert scores["de-lean"] == 10
    assert scores["ca-lean"] < 10
    assert planning.asked == 1


def test_other_zones_use_the_provider_chain_when_planning_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CARBONSHIFT_OFFLINE", "1")
    config = parse_config({"cluster": {"zone": "DE"}, "planning": {"carbon_source": "providers"}})
    carbon = ZoneCarbon(config, FrozenClock(NOW))
    source = carbon._source("CA-ON")
    assert isinstance(source, ProviderCarbonSource)
    assert source.chain[-1] == "embedded"
    assert carbon._source("DE") is not source
    assert isinstance(carbon._source("DE"), ProviderCarbonSource)
    assert carbon.now_g_per_kwh("CA-ON") == pytest.approx(intensity("CA-ON"))
