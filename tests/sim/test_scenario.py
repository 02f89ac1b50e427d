"""The scenario TOML of CONTRACTS.md section 3: defaults, paths, and errors that say the fix."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from carbonshift.errors import InputError
from carbonshift.sim.scenario import Scenario, load_scenario, parse_scenario

WORKLOAD_DATA = Path(__file__).parents[1] / "workloads" / "data"

MINIMAL = """
[simulation]
start = "2023-11-14T00:00:00Z"
hours = 24
policy = "caspian"

[[clusters]]
name = "spoke1"
zone = "CA-ON"
capacity = { gpu = 32 }
watts_per_unit = { gpu = 200 }

[workload]
generator = "caspian"
"""

FULL = """
[simulation]
start = "2023-11-14T00:00:00Z"
hours = 12
max_drain_hours = 48
allow_replay = true
slot_minutes = 30
horizon_slots = 48
replan_every_slots = 2
policy = "caspian"
baseline = "asap"
forecast = "persistence"
seed = 9

[policy_params]
omega1 = 0.5

[baseline_params]

[forecast_params]

[[clusters]]
name = "spoke1"
carbon_csv = "ci/ca-on.csv"
ci_kind = "lca"
capacity = { gpu = 32 }
watts_per_unit = { gpu = 200 }
pue = 1.2
embodied_g_per_unit_hour = { gpu = 1.5 }
idle_watts = 100.0

[[clusters]]
name = "spoke2"
zone = "DE"
capacity = { gpu = 16, cpu = 64 }
watts_per_unit = { gpu = 100 }

[workload]
trace_csv = "jobs/tiny.csv"
time_unit = "hours"
resource = "gpu"
deadline_factor = 2.0
"""


def _write(tmp_path: Path, text: str, name: str = "scenario.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def full_dir(tmp_path: Path) -> Path:
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "ca-on.csv").write_text(
        "Datetime (UTC),Carbon intensity gCO₂eq/kWh (direct)\n"
    )
    (tmp_path / "jobs").mkdir()
    shutil.copy(WORKLOAD_DATA / "tiny.csv", tmp_path / "jobs" / "tiny.csv")
    return tmp_path


def test_minimal_scenario_takes_the_contract_defaults(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, MINIMAL))

    sim = scenario.simulation
    assert sim.start == datetime(2023, 11, 14, tzinfo=UTC)
    assert sim.hours == 24.0
    assert sim.max_drain_hours == 168.0
    assert sim.allow_replay is False
    assert (sim.slot_minutes, sim.horizon_slots, sim.replan_every_slots) == (60, 24, 1)
    assert (sim.policy, sim.baseline, sim.forecast, sim.seed) == ("caspian", "asap", "oracle", 1)
    assert scenario.policy_params == {}
    assert scenario.baseline_params == {}
    assert scenario.forecast_params == {}
    (cluster,) = scenario.clusters
    assert cluster.ci_kind == "direct"
    assert cluster.pue == 1.0
    assert cluster.embodied_g_per_unit_hour == {}
    assert cluster.idle_watts == 0.0
    assert cluster.carbon_csv is None
    workload = scenario.workload
    assert (workload.time_unit, workload.resource, workload.deadline_factor) == (
        "hours",
        "gpu",
        3.0,
    )


def test_full_scenario_resolves_paths_against_the_scenario_file(full_dir: Path) -> None:
    scenario = load_scenario(_write(full_dir, FULL))

    first, second = scenario.clusters
    assert first.carbon_csv == full_dir / "ci" / "ca-on.csv"
    assert first.ci_kind == "lca"
    assert (first.pue, first.idle_watts) == (1.2, 100.0)
    assert second.capacity == {"gpu": 16.0, "cpu": 64.0}
    assert scenario.resources == ["gpu", "cpu"]
    assert scenario.workload.trace_csv == full_dir / "jobs" / "tiny.csv"
    assert scenario.simulation.forecast == "persistence"

    workload = scenario.load_workload()
    assert workload.ids == ("j0", "j1", "j3")
    assert workload.deadline_h[0] == pytest.approx(0 + 2.0 * 1.5)
    assert workload.start == datetime(2023, 11, 14, tzinfo=UTC)


def test_scenario_read_from_another_working_directory(
    full_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = _write(full_dir, FULL)
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))

    scenario = load_scenario(path)

    assert scenario.workload.trace_csv is not None
    assert scenario.workload.trace_csv.is_file()


@pytest.mark.parametrize(
    ("extra", "want_params"),
    [
        pytest.param("n_jobs = 7\n", {"n_jobs": 7}, id="params-inline"),
        pytest.param("params = { n_jobs = 7 }\n", {"n_jobs": 7}, id="params-table"),
    ],
)
def test_generator_parameters_inline_or_in_a_table(
    tmp_path: Path, extra: str, want_params: dict[str, object]
) -> None:
    scenario = load_scenario(_write(tmp_path, MINIMAL + extra))

    assert scenario.workload.generator_params() == want_params
    assert len(scenario.load_workload()) == 7


def test_generator_takes_the_scenario_seed_unless_its_own_is_given(tmp_path: Path) -> None:
    seeded = MINIMAL.replace('policy = "caspian"', 'policy = "caspian"\nseed = 5')
    from_scenario = load_scenario(_write(tmp_path, seeded, "a.toml")).load_workload()
    own = load_scenario(_write(tmp_path, seeded + "seed = 6\n", "b.toml")).load_workload()
    same = load_scenario(_write(tmp_path, MINIMAL + "seed = 5\n", "c.toml")).load_workload()

    assert "seed=5" in from_scenario.source
    assert "seed=6" in own.source
    assert same.ids == from_scenario.ids
    assert bool((same.submit_h == from_scenario.submit_h).all())


def test_generator_trace_parameter_is_relative_to_the_scenario(tmp_path: Path) -> None:
    shutil.copy(WORKLOAD_DATA / "tiny.gwf", tmp_path / "grid.gwf")
    text = MINIMAL.replace('generator = "caspian"', 'generator = "co2"\ntrace = "grid.gwf"')
    text = text.replace("gpu = 32", "cpu = 4").replace("gpu = 200", "cpu = 50")

    scenario = load_scenario(_write(tmp_path, text))

    assert scenario.workload.params["trace"] == str(tmp_path / "grid.gwf")
    assert len(scenario.load_workload()) > 0


def test_a_native_toml_datetime_is_accepted(tmp_path: Path) -> None:
    text = MINIMAL.replace('"2023-11-14T00:00:00Z"', "2023-11-14T01:00:00+01:00")

    scenario = load_scenario(_write(tmp_path, text))

    assert scenario.simulation.start == datetime(2023, 11, 14, tzinfo=UTC)


def test_other_trace_formats_through_trace(tmp_path: Path) -> None:
    shutil.copy(WORKLOAD_DATA / "tiny.swf", tmp_path / "log.swf")
    text = MINIMAL.replace('generator = "caspian"', 'trace = "log.swf"\nresource = "gpu"')

    workload = load_scenario(_write(tmp_path, text)).load_workload()

    assert workload.ids == ("1", "2", "6")
    assert workload.resources == ("gpu",)


BAD = [
    pytest.param(
        ("hours = 24", "hourz = 24"),
        "[simulation] unknown key 'hourz'; did you mean 'hours'?",
        id="unknown-simulation-key",
    ),
    pytest.param(("hours = 24", "hours = -1"), "[simulation] hours = -1", id="negative-hours"),
    pytest.param(
        ("hours = 24", "hours = 24\nslot_minutes = 7.5"), "slot_minutes = 7.5", id="fractional-slot"
    ),
    pytest.param(("hours = 24\n", ""), "needs key 'hours'", id="missing-hours"),
    pytest.param(
        ('start = "2023-11-14T00:00:00Z"', 'start = "soon"'), "start = 'soon'", id="bad-start"
    ),
    pytest.param(
        ("[[clusters]]", "[[cluster]]"), "did you mean 'clusters'?", id="unknown-top-level-table"
    ),
    pytest.param(
        ('zone = "CA-ON"', 'zone = "CA-ON"\nwatt_per_unit = { gpu = 1 }'),
        "[[clusters]] #1 unknown key 'watt_per_unit'; did you mean 'watts_per_unit'?",
        id="unknown-cluster-key",
    ),
    pytest.param(
        ("gpu = 32", "gpu = -32"), "[[clusters]] #1 capacity.gpu = -32", id="negative-cap"
    ),
    pytest.param(
        ('zone = "CA-ON"', 'zone = "CA-ON"\nci_kind = "lcaa"'), "did you mean 'lca'?", id="ci-kind"
    ),
    pytest.param(('zone = "CA-ON"', 'zone = "XX"'), "zone 'XX' is not in the embedded", id="zone"),
    pytest.param(('zone = "CA-ON"', ""), "needs zone (embedded", id="no-carbon-source"),
    pytest.param(
        ('zone = "CA-ON"', 'carbon_csv = "missing.csv"'), "missing.csv' does not exist", id="csv"
    ),
    pytest.param(
        ("watts_per_unit = { gpu = 200 }", "watts_per_unit = { gpu = 200, tpu = 1 }"),
        "watts_per_unit names ['tpu'], which capacity lacks",
        id="watts-for-unknown-resource",
    ),
    pytest.param(
        ('generator = "caspian"', 'generator = "caspain"'),
        "generator 'caspain' is not known; did you mean 'caspian'?",
        id="generator-typo",
    ),
    pytest.param(
        ('generator = "caspian"', 'generator = "caspian"\nn_job = 3'),
        "key 'n_job' is neither a workload key nor a parameter of generator 'caspian'; "
        "did you mean 'n_jobs'?",
        id="generator-param-typo",
    ),
    pytest.param(
        ('generator = "caspian"', 'trace_csv = "none.csv"'), "none.csv' does not exist", id="trace"
    ),
    pytest.param(
        ('generator = "caspian"', 'generator = "caspian"\ntrace_csv = "x.csv"'),
        "exactly one of trace_csv, trace or generator",
        id="trace-and-generator",
    ),
    pytest.param(
        ('generator = "caspian"', 'generator = "caspian"\ntime_unit = "hour"'),
        "did you mean 'hours'?",
        id="time-unit-typo",
    ),
    pytest.param(
        ('generator = "caspian"', 'generator = "cjps"'),
        "asks for resource 'cpu' but no cluster has capacity of it",
        id="resource-nowhere",
    ),
    pytest.param(
        ('policy = "caspian"', 'policy = "caspain"'), "did you mean 'caspian'?", id="policy-typo"
    ),
    pytest.param(
        ('policy = "caspian"', 'policy = "caspian"\n[policy_params]\nomega = 1'),
        "unknown parameter 'omega' for policy 'caspian'",
        id="policy-param",
    ),
    pytest.param(
        ('policy = "caspian"', 'policy = "caspian"\nforecast = "wmaa"'),
        "forecaster 'wmaa' is unknown; did you mean 'wma'?",
        id="forecaster-typo",
    ),
    pytest.param(
        ('policy = "caspian"', 'policy = "caspian"\ndemand_forecast = "seasonal"'),
        "did you mean 'seasonal-day'?",
        id="demand-forecast-typo",
    ),
    pytest.param(("hours = 24", "hours = [24"), "not valid TOML", id="toml-syntax"),
]


@pytest.mark.parametrize(("edit", "want_in_message"), BAD)
def test_bad_scenarios_name_the_key_value_and_fix(
    tmp_path: Path, edit: tuple[str, str], want_in_message: str
) -> None:
    old, new = edit
    assert old in MINIMAL
    path = _write(tmp_path, MINIMAL.replace(old, new, 1))

    with pytest.raises(InputError) as caught:
        load_scenario(path)

    message = str(caught.value)
    assert message.startswith(str(path))
    assert want_in_message in message


def test_duplicate_cluster_names(tmp_path: Path) -> None:
    cluster = MINIMAL[MINIMAL.index("[[clusters]]") : MINIMAL.index("[workload]")]
    text = MINIMAL.replace("[workload]", cluster + "[workload]")

    with pytest.raises(InputError, match="name is used by 2 clusters"):
        load_scenario(_write(tmp_path, text))


def test_missing_scenario_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        load_scenario(tmp_path / "nope.toml")


def test_parse_scenario_from_a_mapping_is_frozen() -> None:
    data = {
        "simulation": {"start": "2023-11-14T00:00Z", "hours": 1, "policy": "asap"},
        "clusters": [
            {"name": "c", "zone": "GB", "capacity": {"gpu": 1}, "watts_per_unit": {"gpu": 1}}
        ],
        "workload": {"generator": "caspian", "n_jobs": 1},
    }

    scenario = parse_scenario(data)

    assert isinstance(scenario, Scenario)
    with pytest.raises(ValueError, match="frozen"):
        scenario.simulation.hours = 2  # type: ignore[misc]


@pytest.mark.parametrize(
    ("line", "want_demand_forecast"),
    [
        pytest.param("", None, id="not-said-the-policy-default"),
        pytest.param('demand_forecast = "none"', "none", id="none-turns-it-off"),
        pytest.param('demand_forecast = "oracle"', "oracle", id="a-method"),
    ],
)
def test_demand_forecast_may_be_none_to_turn_the_online_default_off(
    tmp_path: Path, line: str, want_demand_forecast: str | None
) -> None:
    text = MINIMAL.replace('policy = "caspian"', f'policy = "carbonshift"\n{line}')

    scenario = load_scenario(_write(tmp_path, text))

    assert scenario.simulation.demand_forecast == want_demand_forecast
