"""A CarbonSeries built from Python refuses what no reader would produce, naming the value,
its unit (g/kWh, UTC) and the fix; valid input keeps its arrays (no copy for float64)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from carbonshift.carbon.series import CarbonSeries, CiKind
from carbonshift.errors import InputError

START = datetime(2024, 1, 1, tzinfo=UTC)


def _series(**changes: Any) -> CarbonSeries:
    fields: dict[str, Any] = {
        "zone": "DE",
        "kind": CiKind.DIRECT,
        "start": START,
        "step_minutes": 60,
        "values_g_per_kwh": np.array([100.0, 200.0, 300.0]),
        "estimated": np.array([False, True, False]),
    }
    fields.update(changes)
    return CarbonSeries(**fields)


@pytest.mark.parametrize(
    ("changes", "want_in_message"),
    [
        pytest.param({"values_g_per_kwh": np.array([1.0, np.nan, 3.0])}, "nan g/kWh at index 1",
                     id="nan-value"),
        pytest.param({"values_g_per_kwh": np.array([1.0, 2.0, np.inf])}, "inf g/kWh at index 2",
                     id="infinite-value"),
        pytest.param({"values_g_per_kwh": np.array([-5.0, 2.0, 3.0])}, "-5.0 g/kWh at index 0",
                     id="negative-value"),
        pytest.param({"values_g_per_kwh": np.array([1.0, -1.0, 3.0])}, "2024-01-01 01:00 UTC",
                     id="negative-value-says-when"),
        pytest.param({"values_g_per_kwh": np.array(["1", "2", "3"])}, "real numbers in g/kWh",
                     id="strings"),
        pytest.param({"values_g_per_kwh": np.array([True, False, True])}, "array of bool",
                     id="booleans"),
        pytest.param({"values_g_per_kwh": np.ones((3, 1))}, "2-D array", id="two-dimensional"),
        pytest.param({"values_g_per_kwh": np.array([1 + 0j, 2, 3])}, "complex", id="complex"),
        pytest.param({"estimated": np.array([False, True])}, "estimated has 2 value(s)",
                     id="estimated-length-mismatch"),
        pytest.param({"estimated": np.array([0, 1, 0])}, "give one bool per value",
                     id="estimated-not-bool"),
        pytest.param({"start": datetime(2024, 1, 1)}, "not a timezone-aware datetime",
                     id="naive-start"),
        pytest.param({"start": "2024-01-01T00:00Z"}, "not a timezone-aware datetime",
                     id="start-as-string"),
        pytest.param({"step_minutes": 0}, "step_minutes 0", id="zero-step"),
        pytest.param({"step_minutes": 7.5}, "step_minutes 7.5", id="fractional-step"),
        pytest.param({"step_minutes": True}, "step_minutes True", id="boolean-step"),
        pytest.param({"kind": "carbon"}, "kind 'carbon' is unknown", id="unknown-kind"),
        pytest.param({"zone": ""}, "zone ''", id="empty-zone"),
    ],
)  # fmt: skip
def test_a_bad_series_is_an_input_error_naming_value_unit_and_fix(
    changes: dict[str, Any], want_in_message: str
) -> None:
    with pytest.raises(InputError) as caught:
        _series(**changes)
    assert want_in_message in str(caught.value)


def test_gaps_are_nan_only_where_a_provider_allows_them() -> None:
    series = _series(values_g_per_kwh=np.array([1.0, np.nan, 3.0]), allow_gaps=True)
    assert np.isnan(series.values_g_per_kwh[1])
    with pytest.raises(InputError, match="inf g/kWh"):
        _series(values_g_per_kwh=np.array([1.0, np.inf, 3.0]), allow_gaps=True)


def test_valid_input_is_kept_and_integers_become_float64() -> None:
    values = np.array([100.0, 200.0, 300.0])
    values.setflags(write=False)
    assert _series(values_g_per_kwh=values).values_g_per_kwh is values  # no copy
    got = _series(values_g_per_kwh=np.array([1, 2, 3]), kind="lca", step_minutes=np.int64(30))
    assert got.values_g_per_kwh.dtype == np.float64
    assert got.kind is CiKind.LCA
    assert type(got.step_minutes) is int
