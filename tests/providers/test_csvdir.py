"""CSV files as a chain source: read by zone, replayed past their end, placed in chains."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from carbonshift.carbon.providers import (
    CsvDirectory,
    DiskCache,
    ElectricityMapsProvider,
    EmbeddedReplay,
    FallbackChain,
    ManualClock,
    ProviderSettings,
    RetryPolicy,
    Secret,
    build_chains,
)
from carbonshift.carbon.series import CiKind
from carbonshift.errors import InputError
from tests.providers.fakes import EM_TOKEN, T0, Fakes

START = datetime(2025, 1, 6, tzinfo=UTC)  # a Monday
HOURS = 7 * 24


def direct_value(hour: int) -> float:
    return 50.0 + hour % 24


@pytest.fixture
def csv_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "csv"
    folder.mkdir()
    lines = [
        "Datetime (UTC),Zone Id,Carbon Intensity gCO₂eq/kWh (direct),"
        "Carbon Intensity gCO₂eq/kWh (LCA)"
    ]
    for hour in range(HOURS):
        moment = START + timedelta(hours=hour)
        lines.append(
            f"{moment:%Y-%m-%d %H:%M:%S},XX-LAB,{direct_value(hour)},{direct_value(hour) + 30}"
        )
    (folder / "XX-LAB.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    marginal = ["timestamp,value"] + [
        f"{(START + timedelta(hours=h)).isoformat()},{400 + h}" for h in range(24)
    ]
    (folder / "XX-LAB.marginal.csv").write_text("\n".join(marginal) + "\n", encoding="utf-8")
    return folder


def test_reads_the_zone_file_by_kind(csv_dir: Path) -> None:
    source = CsvDirectory(csv_dir)
    assert source.covers("XX-LAB")
    assert not source.covers("YY")
    start = START + timedelta(hours=5)
    direct = source.window("XX-LAB", start, start + timedelta(hours=3))
    np.testing.assert_allclose(direct.values_g_per_kwh, [direct_value(h) for h in (5, 6, 7)])
    lca = source.window("XX-LAB", start, start + timedelta(hours=1), kind=CiKind.LCA)
    assert lca.values_g_per_kwh.tolist() == [direct_value(5) + 30]
    marginal = source.window("XX-LAB", start, start + timedelta(hours=1), kind=CiKind.MARGINAL)
    assert marginal.values_g_per_kwh.tolist() == [405.0]
    assert direct.source == "csv"
    assert direct.stale_since is None


def test_dates_past_the_file_replay_its_last_week(csv_dir: Path) -> None:
    later = START + timedelta(weeks=10, hours=2)
    window = CsvDirectory(csv_dir).window("XX-LAB", later, later + timedelta(hours=2))
    np.testing.assert_allclose(window.values_g_per_kwh, [direct_value(2), direct_value(3)])
    assert window.replayed_from is not None
    assert window.stale_since == START + timedelta(hours=HOURS)


def test_a_changed_file_is_read_again(csv_dir: Path) -> None:
    source = CsvDirectory(csv_dir)
    source.window("XX-LAB", START, START + timedelta(hours=1))
    path = csv_dir / "XX-LAB.csv"
    text = path.read_text(encoding="utf-8").replace(f",{direct_value(0)},", ",999.0,", 1)
    path.write_text(text, encoding="utf-8")
    import os

    os.utime(path, (1, 1))
    assert source.window("XX-LAB", START, START + timedelta(hours=1)).values_g_per_kwh[0] == 999.0


def test_missing_zone_file_names_the_files_to_add(csv_dir: Path) -> None:
    with pytest.raises(InputError, match=r"add YY\.csv or YY\.direct\.csv"):
        CsvDirectory(csv_dir).window("YY", START, START + timedelta(hours=1))


def test_chain_uses_csv_when_the_live_source_does_not_know_the_zone(
    fakes: Fakes,
    base_url: str,
    clock: ManualClock,
    cache: DiskCache,
    retry: RetryPolicy,
    csv_dir: Path,
) -> None:
    em = ElectricityMapsProvider(
        Secret(EM_TOKEN), base_url=base_url + "/em", clock=clock, cache=cache, retry=retry
    )
    chain = FallbackChain(
        CiKind.DIRECT, [em, CsvDirectory(csv_dir, clock=clock)], floor=EmbeddedReplay()
    )
    answer = chain.answer("XX-LAB", T0, T0 + timedelta(hours=1))
    assert [(a.source, a.outcome) for a in answer.attempts] == [
        ("electricitymaps", "error"),
        ("csv", "replayed"),
    ]
    assert answer.window.source == "csv"


def test_settings_put_csv_before_embedded(tmp_path: Path, csv_dir: Path) -> None:
    chains = build_chains(
        ProviderSettings.from_env(
            {
                "CARBONSHIFT_CSV_DIR": str(csv_dir),
                "CARBONSHIFT_OFFLINE": "1",
                "CARBONSHIFT_CACHE_DIR": str(tmp_path / "c"),
            }
        )
    )
    assert chains.chain(CiKind.DIRECT).names == ["csv", "embedded"]
    assert chains.chain(CiKind.MARGINAL).names == ["csv"]


def test_a_plain_file_without_a_kind_in_its_name_answers_no_kind(tmp_path: Path) -> None:
    (tmp_path / "ZZ.csv").write_text("timestamp,value\n2025-01-06T00:00Z,10\n", encoding="utf-8")
    source = CsvDirectory(tmp_path)
    for kind in CiKind:
        with pytest.raises(InputError, match="no file for zone 'ZZ'"):
            source.window("ZZ", START, START + timedelta(hours=1), kind=kind)


def test_an_export_never_answers_a_marginal_chain(csv_dir: Path) -> None:
    (csv_dir / "XX-LAB.marginal.csv").unlink()
    with pytest.raises(InputError, match=r"add XX-LAB\.csv or XX-LAB\.marginal\.csv"):
        CsvDirectory(csv_dir).window(
            "XX-LAB", START, START + timedelta(hours=1), kind=CiKind.MARGINAL
        )
