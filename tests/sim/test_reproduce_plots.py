"""Every reproduction's figure draws the papers' reported points beside ours (issue 17)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from carbonshift.sim.reproduce import (
    _CASPIAN_PAPER,
    _CO2_PAPER_PCT,
    _caspian_figure,
    _cjps_figure,
    _co2_figure,
    _fluidos_figure,
    _with_spread,
)

CASPIAN_ROWS = [
    {
        "omega1": omega,
        **_with_spread("saving_pct", [10.0 + omega, 12.0 + omega]),
        **_with_spread("deadline_met_pct", [95.0, 97.0]),
        "paper_saving_pct": _CASPIAN_PAPER[omega]["saving_pct"],
        "paper_deadline_met_pct": _CASPIAN_PAPER[omega].get("deadline_met_pct"),
    }
    for omega in (0.25, 0.5, 1.0, 2.0)
]
CJPS_ROWS = [
    {
        "load_pct": load,
        "cfp_ratio": 0.97,
        "round_s_mean": 0.2,
        "round_s_max": 0.6,
        "paper_round_s": 1.0,
    }
    for load in (25.0, 40.0)
]
CO2_ROWS = [
    {
        "scenario": name,
        **_with_spread("saving_jobs_pct", [3.0, 4.0]),
        **_with_spread("saving_with_idle_pct", [0.5, 0.7]),
        **_with_spread("carbonshift_saving_with_idle_pct", [0.9, 1.1]),
        "paper_saving_pct": paper,
    }
    for name, paper in _CO2_PAPER_PCT.items()
]
FLUIDOS_ROWS = [{"seed": seed, "saving_pct": 20.0 + seed} for seed in (1, 2, 3)]


def _paper_points(fig: Figure) -> dict[str, list[float]]:
    """The y values of every artist whose legend label names the paper or the thesis."""
    found: dict[str, list[float]] = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            if "paper" in line.get_label() or "thesis" in line.get_label():
                found[line.get_label()] = [float(y) for y in np.asarray(line.get_ydata(), float)]
        for container in ax.containers:
            label = str(container.get_label())
            if "paper" in label or "thesis" in label:
                found[label] = [float(p.get_height()) for p in container.patches]
    return found


@pytest.mark.parametrize(
    ("build", "rows", "want_points"),
    [
        pytest.param(
            _caspian_figure,
            CASPIAN_ROWS,
            {"carbon saving (paper)": [19.4, 33.21, 38.2, 42.4]},
            id="caspian-savings-of-figs-5-6",
        ),
        pytest.param(
            _cjps_figure,
            CJPS_ROWS,
            {"under 1 s (paper, Fig. 3a)": [1.0, 1.0]},
            id="cjps-round-time-bound",
        ),
        pytest.param(
            _co2_figure,
            CO2_ROWS,
            {"thesis (section 10.4)": [0.37, 0.4, 1.81, 2.41]},
            id="co2-scenario-savings",
        ),
    ],
)
def test_the_figure_draws_the_papers_points_beside_ours(
    build: Callable[[Sequence[Mapping[str, Any]]], Figure],
    rows: list[dict[str, Any]],
    want_points: dict[str, list[float]],
) -> None:
    fig = build(rows)
    try:
        got = _paper_points(fig)
        for label, want in want_points.items():
            assert got.get(label) == pytest.approx(want), sorted(got)
        labels = [
            t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()
        ]
        assert any("ours" in label for label in labels)
        assert set(want_points) <= set(labels)
    finally:
        plt.close(fig)


def test_the_fluidos_figure_says_the_thesis_reports_no_figures() -> None:
    fig = _fluidos_figure(FLUIDOS_ROWS)
    try:
        notes = [t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid() == "paper-note"]
        assert notes == ["thesis (section 4.2): no saving reported to compare"]
        (ax,) = fig.axes
        assert [p.get_height() for p in ax.containers[0].patches] == [21.0, 22.0, 23.0]
    finally:
        plt.close(fig)
