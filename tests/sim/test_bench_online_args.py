"""bench/bench_online.py's command line: ``--param`` takes numbers and words."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param("0", 0, id="a whole number stays an int"),
        pytest.param("0.75", 0.75, id="a decimal is a float"),
        pytest.param("1e-3", 1e-3, id="an exponent is a float"),
        pytest.param("sample", "sample", id="a word is passed as it is"),
    ],
)
def test_param_values(raw: str, want: object) -> None:
    from bench.bench_online import _param_value

    got = _param_value(raw)
    assert got == want
    assert type(got) is type(want)


def test_a_seed_s_row_carries_the_rounds_and_their_cpu_per_round() -> None:
    """The rounds' CPU is what the controller and the hub pay every period: a row says how
    many rounds the online run planned and their CPU seconds per round."""
    from bench.bench_online import one_seed

    row = one_seed(1, 4, "asap", noise_mae_g_per_kwh=())
    want_rounds = row["online_rounds"]
    assert want_rounds >= 1
    assert row["online_cpu_s_per_round"] == pytest.approx(row["online_cpu_s"] / want_rounds)


@pytest.mark.parametrize(
    "raw", ["replan_min_improvement_g", "=5", "replan_min_improvement_g=", "min_saving_kg=5"]
)
def test_a_hold_field_without_key_or_value_or_unknown_is_refused(raw: str) -> None:
    from bench.bench_online import main

    with pytest.raises(SystemExit):
        main(["--seeds", "1", "--noise", "", "--hold", raw])


def test_the_hold_fields_change_the_online_runs_rule_alone() -> None:
    """``--hold`` sets the online runs' hold rule over the policy's online one; the asap
    baseline keeps none (its row is the same as without it)."""
    from bench.bench_online import one_seed

    plain = one_seed(1, 4, "asap", noise_mae_g_per_kwh=())
    held = one_seed(1, 4, "asap", noise_mae_g_per_kwh=(), hold={"max_releases_per_slot": 1})
    assert held["online_kg"] > 0
    assert held["asap_kg"] == plain["asap_kg"]
