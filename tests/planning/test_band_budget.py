"""The bands' simplex-iteration budgets grow below 1,000 jobs (``_band_budget``, docs/design/
0002-carbonshift-planner.md steps 7c and 7d): ``band_lp_iterations`` and
``cluster_band_lp_iterations`` are those of 1,000 jobs and more, and grow as 1,000 / jobs
below, at most threefold; a count of jobs, so the plan stays the same on any machine."""

from __future__ import annotations

from typing import Any

import pytest

from carbonshift.planning import run_policy
from carbonshift.planning.policies import carbonshift as cs
from tests.planning.test_core_lp import _LARGE_PATH, _spread


@pytest.mark.parametrize(
    ("n_jobs", "want_iterations"),
    [
        pytest.param(60, 90_000, id="small-instance-threefold-at-most"),
        pytest.param(333, 90_000, id="just-under-a-third-threefold"),
        pytest.param(500, 60_000, id="half-of-1000-twofold"),
        pytest.param(800, 37_500, id="between-grows-as-1000-over-jobs"),
        pytest.param(1000, 30_000, id="1000-jobs-as-given"),
        pytest.param(10_000, 30_000, id="above-1000-never-less"),
    ],
)
def test_the_budget_grows_as_1000_over_jobs_at_most_threefold(
    n_jobs: int, want_iterations: int
) -> None:
    assert cs._band_budget(30_000, n_jobs) == want_iterations


@pytest.mark.parametrize("per_cluster", [False, True], ids=["time-bands", "cluster-bands"])
def test_the_policy_hands_the_bands_their_grown_budget(
    per_cluster: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """60 jobs on the cores' path: each kind of band gets three times its parameter (fails
    on the code before, which handed over the parameter itself), and the plan's stats say
    so."""
    seen: dict[bool, int] = {}
    real = cs.polish_bands

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen[bool(kwargs.get("per_cluster", False))] = int(kwargs["lp_iterations"])
        return real(*args, **kwargs)

    monkeypatch.setattr(cs, "polish_bands", spy)
    inst = _spread(60, 2)
    limits = {k: v for k, v in _LARGE_PATH.items() if k != "core_small_jobs"}
    params = {
        **limits,
        "core_small_jobs": 0,
        "search_factor": 0,
        "polish_steps": 0,
        "band_lp_iterations": 1_000,
        "cluster_band_lp_iterations": 2_000,
        # one kind at a time: the time bands alone can leave the plan within 0.1 % of the
        # bound, where the cluster bands do not run
        **({"band_columns": 0} if per_cluster else {"cluster_band_columns": 0}),
    }
    result = run_policy("carbonshift", inst, params)
    name, want = ("cluster_band", 6_000) if per_cluster else ("band", 3_000)
    assert seen == {per_cluster: want}
    assert result.stats[f"{name}_lp_budget"] == want
    steps = result.stats[f"{name}_steps"]
    assert steps > 0  # the bands ran, each counting 100 iterations at least
    assert result.stats[f"{name}_lp_iterations"] >= 100 * steps
