"""The GB forecast sample: reading its format, and the published forecasts' error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from carbonshift.carbon.embedded import load_series
from carbonshift.carbon.forecast import NoisyOracle, Oracle
from carbonshift.carbon.gb_sample import compare_gb_sample, read_gb_file
from carbonshift.errors import InputError


def test_published_forecast_errors_match_the_source_notes(shared_data: Path) -> None:
    sample = shared_data / "carbon" / "gb-forecast-sample"
    rows = compare_gb_sample(
        sample, load_series("GB"), {"oracle": Oracle(), "noisy-oracle": NoisyOracle()}
    )
    neso = [r for r in rows if r.method == "neso"]
    # SOURCE.txt: issue 03-15 (24-48 h ahead) MAE 23.6, bias -13.6; 03-16 MAE 21.8, bias -15.1
    want = [((24.0, 48.0), 23.6, -13.6), ((0.0, 24.0), 21.8, -15.1)]
    got = [(r.lead_h, r.mae_g_per_kwh, r.bias_g_per_kwh) for r in neso]
    for (lead, mae, bias), (want_lead, want_mae, want_bias) in zip(got, want, strict=True):
        assert lead == want_lead
        assert mae == pytest.approx(want_mae, abs=0.05)
        assert bias == pytest.approx(want_bias, abs=0.05)
    assert {r.points for r in neso} == {48}
    oracle = [r for r in rows if r.method == "oracle"]
    assert [r.mae_g_per_kwh for r in oracle] == [0.0, 0.0]
    assert {r.points for r in rows if r.truth != "neso-actual"} == {24}


def test_reads_the_half_hourly_format(tmp_path: Path) -> None:
    path = tmp_path / "national_pt24h_2023-03-17T0101Z.csv"
    path.write_text(
        "from,intensity.forecast,intensity.actual\n2023-03-16T01:00Z,63,60\n2023-03-16T01:30Z,62,\n"
    )
    got = read_gb_file(path)
    assert got.kind == "pt24h"
    assert got.end.isoformat() == "2023-03-16T02:00:00+00:00"
    np.testing.assert_array_equal(got.forecast_g_per_kwh, [63.0, 62.0])
    assert got.actual_g_per_kwh[0] == 60.0
    assert np.isnan(got.actual_g_per_kwh[1])


@pytest.mark.parametrize(
    ("name", "text", "want_message"),
    [
        pytest.param("gb.csv", "from,intensity.forecast,intensity.actual\n", "file name",
                     id="bad-file-name"),
        pytest.param("national_fw48h_2023-03-15T0101Z.csv", "time,value\n", "header",
                     id="bad-header"),
        pytest.param("national_fw48h_2023-03-15T0101Z.csv",
                     "from,intensity.forecast,intensity.actual\n2023-03-15T01:00Z,lots,\n",
                     "'lots' is not a number", id="bad-number"),
        pytest.param("national_fw48h_2023-03-15T0101Z.csv",
                     "from,intensity.forecast,intensity.actual\n"
                     "2023-03-15T01:00Z,1,\n2023-03-15T02:00Z,2,\n",
                     "does not follow", id="missing-half-hour"),
        pytest.param("national_fw48h_2023-03-15T0101Z.csv",
                     "from,intensity.forecast,intensity.actual\nyesterday,1,\n",
                     "not an ISO 8601 time", id="bad-time"),
    ],
)  # fmt: skip
def test_bad_files(tmp_path: Path, name: str, text: str, want_message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError, match=want_message):
        read_gb_file(path)


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--sample-dir"):
        compare_gb_sample(tmp_path / "nowhere", load_series("GB"))
