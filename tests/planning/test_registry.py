"""Policy parameters: defaults, parsing, and clear errors."""

from __future__ import annotations

import pytest

from carbonshift.errors import InputError
from carbonshift.planning import POLICIES, parse_params, run_policy
from tests.builders import instance, job


@pytest.mark.parametrize(
    ("policy", "raw", "want"),
    [
        (
            "srr",
            {"samples": "50"},
            {
                "samples": 50,
                "future_weight": 1.0,
                "seed": 0,
                "lp_method": "auto",
                "lp_time_limit_s": 60.0,
                "late_fallback": True,
            },
        ),
        (
            "caspian",
            {"omega1": 0},
            {
                "omega1": 0.0,
                "omega2": 1.0,
                "omega3": 1.0,
                "lp_method": "auto",
                "lp_time_limit_s": 60.0,
            },
        ),
        ("fluidos", {"late_fallback": "false"}, {"late_fallback": False}),
        ("asap", {}, {}),
    ],
    ids=["cli-string-to-int", "toml-int-to-float", "string-to-bool", "no-params"],
)
def test_params_are_parsed_with_defaults_filled(
    policy: str, raw: dict[str, object], want: dict[str, object]
) -> None:
    assert parse_params(policy, raw).as_dict() == want


@pytest.mark.parametrize(
    ("policy", "raw", "want_message"),
    [
        (
            "srr",
            {"sample": "5"},
            "unknown parameter 'sample' for policy 'srr'; did you mean 'samples'",
        ),
        ("srr", {"samples": "many"}, "samples='many' of policy 'srr' is not a whole number"),
        ("srr", {"samples": "0"}, "below its minimum 1"),
        ("srr", {"future_weight": "2"}, "above its maximum 1"),
        (
            "caspian",
            {"lp_method": "barrier"},
            "is not one of auto, choose, simplex, ipm, ipm-vertex, pdlp",
        ),
        ("fluidos", {"late_fallback": "maybe"}, "is not a boolean"),
        (
            "carbonshift",
            {"core_lp_method": "barrier"},
            "core_lp_method='barrier' of policy 'carbonshift' is not one of simplex, ipm-vertex",
        ),
        (
            "carbonshift",
            {"core_small_jobs": "5000"},
            "core_small_jobs='5000' of policy 'carbonshift' is above its maximum 3000",
        ),
        ("carbonshift", {"core_small_jobs": "-1"}, "below its minimum 0"),
        (
            "carbonshift",
            {"core_fallback_last": "later"},
            "core_fallback_last='later' of policy 'carbonshift' is not a boolean; give true",
        ),
        (
            "carbonshift",
            {"core_repair_columns": "1"},
            "core_repair_columns='1' of policy 'carbonshift' is below its minimum 2",
        ),
        (
            "carbonshift",
            {"core_bound_gap": "2"},
            "core_bound_gap='2' of policy 'carbonshift' is above its maximum 1",
        ),
        ("carbonshift", {"core_bound_gap": "-0.1"}, "below its minimum 0"),
        (
            "carbonshift",
            {"core_fix_cheapest": "sometimes"},
            "core_fix_cheapest='sometimes' of policy 'carbonshift' is not a boolean; give true",
        ),
        ("exact", {"time_limit_s": "nan"}, "is not finite"),
        ("asap", {"x": "1"}, "its parameters: none"),
        ("sr", {}, "unknown policy 'sr'; did you mean 'srr'"),
    ],
    ids=[
        "typo-key",
        "not-an-int",
        "under-minimum",
        "over-maximum",
        "bad-choice",
        "not-a-bool",
        "core-lp-method-bad-choice",
        "core-small-jobs-over-3000",
        "core-small-jobs-negative",
        "core-fallback-last-not-a-bool",
        "core-repair-columns-under-2",
        "core-bound-gap-over-1",
        "core-bound-gap-negative",
        "core-fix-cheapest-not-a-bool",
        "nan",
        "policy-without-params",
        "typo-policy",
    ],
)
def test_bad_params_name_value_and_fix(
    policy: str, raw: dict[str, object], want_message: str
) -> None:
    with pytest.raises(InputError, match=want_message.replace("(", r"\(")):
        parse_params(policy, raw)


def test_every_policy_docstring_cites_its_source() -> None:
    for name, spec in POLICIES.items():
        assert spec.doc, name
        assert spec.summary, name
    sources = {
        "caspian": "Algorithm",
        "srr": "CJPS",
        "rr": "CJPS",
        "exact": "CJPS",
        "window": "Piontek",
        "fluidos": "FLUIDOS",
    }
    for name, want in sources.items():
        assert want in POLICIES[name].doc, name


def test_run_policy_validates_before_running() -> None:
    with pytest.raises(InputError, match="unknown parameter"):
        run_policy("srr", instance([job()]), {"nope": 1})
