"""The fake API server on hostile inputs: it answers like a real server and never crashes.

Reproducers of issue 12, item 11: a Pod with a huge runtime made every clock advance answer
500; ``cpu: "1e999999999"`` gave a plain-text 500 instead of a 422 Status; the valid
quantities ``1E`` (one exa) and ``1Ei`` were refused.
"""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakekube import EXIT_CODE_ANNOTATION, FakeKube
from fakekube.selection import parse_quantity
from tests.testing.builders import PODS, pod


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("1E", Decimal(10) ** 18),
        ("1Ei", Decimal(2) ** 60),
        ("1e3", Decimal(1000)),
        ("1E-3", Decimal("0.001")),
        ("500m", Decimal("0.5")),
        ("250u", Decimal("0.00025")),
        ("5n", Decimal("5e-9")),
        (".5", Decimal("0.5")),
        ("1.", Decimal(1)),
        ("+2k", Decimal(2000)),
    ],
    ids=["exa", "exbi", "exponent", "upper-exponent", "milli", "micro", "nano", "dot-first",
         "dot-last", "plus-kilo"],
)  # fmt: skip
def test_quantities_of_the_kubernetes_grammar_parse(text: str, want: Decimal) -> None:
    assert parse_quantity(text) == want


@pytest.mark.parametrize(
    "text",
    ["1e999999999", "1e1000000003", "9" * 400, "1.2.3", "1Ki2", "e3", "1K", "1 m", "", "1ee3"],
    ids=["huge-exponent", "wrapped-exponent", "400-digits", "two-dots", "suffix-then-digits",
         "no-number", "capital-k", "inner-space", "empty", "double-e"],
)  # fmt: skip
def test_malformed_or_out_of_range_quantities_are_none(text: str) -> None:
    assert parse_quantity(text) is None


@given(st.text(max_size=40) | st.from_regex(r"[+-]?[0-9.]{0,30}[eE]?[+-]?[0-9]{0,12}[a-zA-Z]{0,2}"))
@settings(max_examples=300, deadline=None)
def test_parse_quantity_never_raises(text: str) -> None:
    got = parse_quantity(text)
    assert got is None or abs(got) <= 2**63


@pytest.mark.parametrize(
    ("cpu", "want_code"),
    [("1e999999999", 422), ("1.2.3", 422), ("1E", 201), ("1Ei", 201)],
    ids=["huge-exponent-is-invalid", "malformed-is-invalid", "exa-is-valid", "exbi-is-valid"],
)
def test_pod_quantities_answer_like_a_real_server(
    http: httpx.Client, cpu: str, want_code: int
) -> None:
    answer = http.post(PODS, json=pod("p", cpu=cpu))

    assert answer.status_code == want_code
    body = answer.json()  # a JSON body (a Status on errors), never plain text
    if want_code == 422:
        assert body["kind"] == "Status"
        assert body["reason"] == "Invalid"
        assert "resources.requests[cpu]" in body["message"]


@pytest.mark.parametrize(
    ("runtime", "exit_code"),
    [
        ("1000000000000d", None),
        ("9" * 400 + "d", None),
        ("36500d", None),
        ("10m", "not-a-number"),
        ("10m", "9" * 50),
    ],
    ids=["trillion-days", "400-nines", "century", "exit-code-word", "exit-code-huge"],
)
def test_clock_advances_survive_hostile_pods(
    http: httpx.Client, fakekube: FakeKube, runtime: str, exit_code: str | None
) -> None:
    body = pod("hostile", runtime=runtime)
    if exit_code is not None:
        body["metadata"]["annotations"][EXIT_CODE_ANNOTATION] = exit_code
    assert http.post(PODS, json=body).status_code == 201
    http.post(PODS, json=pod("normal", runtime="30m"))

    for _ in range(3):
        answer = http.post("/fakekube/clock/advance", params={"seconds": 3600})
        assert answer.status_code == 200
    assert fakekube.get("Pod", "normal", "default")["status"]["phase"] == "Succeeded"
    hostile = fakekube.get("Pod", "hostile", "default")["status"]["phase"]
    assert hostile == ("Running" if exit_code is None else "Failed")
