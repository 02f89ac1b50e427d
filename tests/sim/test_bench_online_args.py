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
