"""The hub's planning call on its own: node sizes limit where work may go (fast tier)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from carbonshift.carbon.series import CarbonSeries, CiKind
from carbonshift.k8s.multicluster.config import HubConfig
from carbonshift.k8s.multicluster.plan import Pending, SpokeView, plan_hub
from carbonshift.k8s.planner import CarbonSource

NOW = datetime(2023, 6, 1, 0, 20, tzinfo=UTC)
CONFIG = HubConfig.model_validate({"planning": {"policy": "fluidos", "forecast": "oracle"}})


def spokes() -> tuple[list[SpokeView], dict[str, CarbonSource]]:
    views = [
        SpokeView(name, zone, {"cpu": 64.0}, {"cpu": 10.0}, 1.2, {})
        for name, zone in (("clean", "CA-ON"), ("dirty", "JP-TK"))
    ]
    return views, {v.name: CarbonSource(CONFIG.controller_config(v.zone)) for v in views}


def job(allowed: frozenset[str] | None) -> Pending:
    return Pending(
        "Job/batch/big",
        {"cpu": 12.0},
        timedelta(hours=1),
        NOW + timedelta(hours=1),  # no slack: it starts now
        NOW,
        allowed=allowed,
    )


def test_work_goes_to_the_cleaner_spoke_when_both_have_room() -> None:
    views, sources = spokes()
    decision = plan_hub(CONFIG, NOW, [job(None)], views, [], sources).decisions["Job/batch/big"]
    assert (decision.cluster, decision.start_now) == ("clean", True)


def test_work_goes_only_where_a_node_can_hold_one_pod() -> None:
    views, sources = spokes()
    only_dirty = frozenset({"dirty"})
    decision = plan_hub(CONFIG, NOW, [job(only_dirty)], views, [], sources).decisions[
        "Job/batch/big"
    ]
    assert (decision.cluster, decision.start_now) == ("dirty", True)


def test_work_no_node_can_hold_is_held_with_the_reason() -> None:
    views, sources = spokes()
    decision = plan_hub(CONFIG, NOW, [job(frozenset())], views, [], sources).decisions[
        "Job/batch/big"
    ]
    assert decision.cluster is None
    assert not decision.start_now
    assert "no healthy spoke has a node with room for one of its pods" in decision.reason


def flat_sources(
    config: HubConfig, views: list[SpokeView], dip_g_per_kwh: float
) -> dict[str, CarbonSource]:
    start = datetime(2023, 6, 1, tzinfo=UTC)
    values = np.asarray([300.0, 300.0, 300.0 - dip_g_per_kwh] + [300.0] * 200)
    return {
        v.name: CarbonSource(
            config.controller_config(v.zone),
            CarbonSeries(
                zone=v.zone,
                kind=CiKind.DIRECT,
                start=start,
                step_minutes=60,
                values_g_per_kwh=values,
            ),
        )
        for v in views
    }


def test_the_hub_holds_only_when_it_pays() -> None:
    """Issue 13.3 on the hub: a dip of 0.001 g/kWh no longer holds work for 2 h."""
    views, _ = spokes()
    work = Pending(
        "Job/batch/small", {"cpu": 1.0}, timedelta(hours=1), NOW + timedelta(hours=12), NOW
    )
    off = HubConfig.model_validate(
        {
            "planning": {
                "policy": "fluidos",
                "forecast": "oracle",
                "min_saving_g": 0,
                "min_saving_pct": 0,
            }
        }
    )
    held = plan_hub(off, NOW, [work], views, [], flat_sources(off, views, 0.001))
    assert not held.decisions[work.key].start_now
    on = HubConfig.model_validate({"planning": {"policy": "fluidos", "forecast": "oracle"}})
    got = plan_hub(on, NOW, [work], views, [], flat_sources(on, views, 0.001)).decisions[work.key]
    assert got.start_now
    assert "saving 0.0 g below min_saving_g 1 g: started now" in got.reason
