"""The Python API (``carbonshift.simulate``, ``plan``, ``load_carbon``) and user policies.

User policies come in three ways: ``@register_policy``, ``package.module:function`` names,
and entry points of the ``carbonshift.policies`` group. The example package in
examples/my_policy/ runs through simulate, sweep and plan by its module:function name; the
HTTP server refuses a module named in a request.
"""

from __future__ import annotations

import csv
import doctest
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import carbonshift as cs
from carbonshift.errors import InputError
from carbonshift.planning import registry
from carbonshift.sim.outputs import SUMMARY_KEYS
from tests.sim.test_simulate import write_scenario

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "my_policy"
GREENEST = "my_policy.greenest:greenest"


@pytest.fixture
def isolated_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Policies registered by a test (decorators, entry points) vanish after it."""
    before = dict(registry.POLICIES)
    operator_modules = list(registry._OPERATOR_MODULES)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield
    registry.POLICIES.clear()
    registry.POLICIES.update(before)
    # serve --policy-module's list: a later app's solve workers would import what it names
    registry._OPERATOR_MODULES[:] = operator_modules
    registry._BY_PATH.clear()
    for name in [m for m in sys.modules if m == "my_policy" or m.startswith("my_policy.")]:
        del sys.modules[name]


def test_import_carbonshift_loads_neither_pandas_nor_matplotlib_nor_the_simulator() -> None:
    probe = (
        "import sys, json, carbonshift; "
        "print(json.dumps(sorted(m for m in ('pandas', 'matplotlib', 'carbonshift.sim', "
        "'carbonshift.planning', 'highspy') if m in sys.modules)))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env
    )
    assert json.loads(out.stdout) == []


def test_the_public_surface_is_listed_and_resolves() -> None:
    for name in cs.__all__:
        assert getattr(cs, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'simulat'"):
        _ = cs.simulat  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_scenario(tmp_path_factory.mktemp("small"), policy="fluidos")


def test_simulate_a_path_gives_the_summary_and_the_tables_the_cli_writes(
    small: Path, tmp_path: Path
) -> None:
    result = cs.simulate(small)
    summary = result.summary
    assert set(SUMMARY_KEYS) <= set(summary)
    jobs = result.jobs_df()
    assert summary["carbon_kg"] == pytest.approx(jobs["carbon_g"].sum() / 1000)
    assert summary["jobs_total"] == jobs["job"].nunique()
    slots = result.slots_df()
    assert slots["carbon_g"].sum() > 0

    report = result.report(tmp_path / "out")
    assert report == tmp_path / "out" / "report.html"
    assert report.is_file()
    with (tmp_path / "out" / "jobs.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == list(jobs.columns)
    assert len(rows) == len(jobs)
    assert json.loads((tmp_path / "out" / "summary.json").read_text()) == summary
    assert len(result.baseline_jobs_df()) == summary["baseline_metrics"]["jobs_total"]


@pytest.mark.parametrize(
    "form", ["path-string", "toml-text", "dict"], ids=["path-string", "toml-text", "dict"]
)
def test_a_scenario_as_path_text_or_dict_gives_the_same_run(small: Path, form: str) -> None:
    import tomllib

    text = small.read_text().replace('"jobs.csv"', json.dumps(str(small.parent / "jobs.csv")))
    source: object = {
        "path-string": str(small),
        "toml-text": text,
        "dict": tomllib.loads(text),
    }[form]
    want = cs.simulate(small).summary
    got = cs.simulate(source).summary  # type: ignore[arg-type]
    for key in ("carbon_kg", "baseline_carbon_kg", "jobs_total", "deadline_met_pct"):
        assert got[key] == want[key], key


@pytest.mark.parametrize(
    ("source", "want_message"),
    [
        ("missing.toml", "does not exist"),
        ("[simulation\nstart = 1", "not valid TOML"),
    ],
    ids=["toml-suffix-is-a-path", "text-that-is-not-toml"],
)
def test_bad_scenarios_say_what_to_give(source: str, want_message: str) -> None:
    with pytest.raises(InputError, match=want_message):
        cs.simulate(source)


def test_simulate_can_replace_policy_params_and_seed(small: Path) -> None:
    result = cs.simulate(small, policy="asap", seed=7)
    assert result.summary["policy"] == "asap"
    assert result.summary["seed"] == 7
    assert result.experiment.title.startswith("asap against asap: ")
    # asap against the asap baseline saves nothing
    assert result.summary["carbon_saving_pct"] == pytest.approx(0.0)
    with pytest.raises(InputError, match="unknown parameter 'omega9'"):
        cs.simulate(small, policy="caspian", params={"omega9": 1})


def test_plan_gives_the_contract_plan_with_scores(tmp_path: Path) -> None:
    result = cs.plan(REPO / "examples" / "instance.json", policy="srr", samples=5)
    body = result.to_dict()
    assert body["version"] == 1
    assert body["policy"] == "srr"
    placed = {a["job"] for a in body["assignments"]}
    assert placed | set(body["unscheduled"]) == {j.id for j in result.instance.jobs}
    assert body["scores"]["operational_g"] == pytest.approx(result.scores.operational_g)
    assert result.feasible
    assert result.assignments[body["assignments"][0]["job"]] == (
        body["assignments"][0]["cluster"],
        body["assignments"][0]["start_slot"],
    )
    result.to_json(tmp_path / "plan.json")
    assert json.loads((tmp_path / "plan.json").read_text()) == body
    # the same instance as a dict and as a domain Instance plans the same
    as_dict = json.loads((REPO / "examples" / "instance.json").read_text())
    assert (
        cs.plan(as_dict, policy="asap").to_dict()["assignments"]
        == (cs.plan(result.instance, policy="asap").to_dict()["assignments"])
    )


def test_load_carbon_is_a_utc_series_in_g_per_kwh() -> None:
    series = cs.load_carbon("DE", "2023-11-14T00:00Z", "2023-11-15T00:00Z")
    assert len(series) == 24
    assert str(series.index.tz) == "UTC"
    assert series.index[0].isoformat() == "2023-11-14T00:00:00+00:00"
    assert series.name == "DE direct g/kWh"
    assert (series > 0).all()
    two_hourly = cs.load_carbon("DE", "2023-11-14T00:00Z", "2023-11-15T00:00Z", slot_minutes=120)
    assert len(two_hourly) == 12
    assert two_hourly.iloc[0] == pytest.approx(series.iloc[:2].mean())


def test_load_carbon_reads_a_csv(tmp_path: Path) -> None:
    path = tmp_path / "ci.csv"
    path.write_text(
        "timestamp,value\n2024-01-01T00:00Z,100\n2024-01-01T01:00Z,300\n2024-01-01T02:00Z,50\n"
    )
    series = cs.load_carbon("mine", "2024-01-01T00:00Z", "2024-01-01T03:00Z", csv=path)
    assert list(series) == [100.0, 300.0, 50.0]


# --- user policies ----------------------------------------------------------------------


def test_the_decorator_registers_a_policy_with_its_parameters(isolated_registry: None) -> None:
    @cs.register_policy("latest-first", params={"spare_slots": 0})
    def latest_first(instance, context=None, spare_slots=0):  # type: ignore[no-untyped-def]
        """Every job at its latest on-time start, less spare_slots, on the first cluster."""
        chosen = {
            i: (0, max(j.release_slot, j.deadline_slot - j.runtime_slots - spare_slots))
            for i, j in enumerate(instance.jobs)
        }
        return cs.build_result(instance, "latest-first", chosen)

    spec = registry.policy_spec("latest-first")
    assert spec.summary.startswith("Every job at its latest")
    assert [(p.name, p.default) for p in spec.params] == [("spare_slots", 0)]
    got = cs.plan(REPO / "examples" / "instance.json", policy="latest-first", spare_slots=2)
    job = got.instance.jobs[0]
    assert got.assignments[job.id][1] == max(
        job.release_slot, job.deadline_slot - job.runtime_slots - 2
    )
    with pytest.raises(InputError, match="spare_slots='x' of policy 'latest-first'"):
        cs.plan(got.instance, policy="latest-first", spare_slots="x")


@pytest.mark.parametrize(
    ("name", "want_message"),
    [
        ("caspian", "already taken by carbonshift.planning.policies.caspian.caspian"),
        ("a:b", "names with ':' are module paths"),
    ],
    ids=["a-built-in-name", "a-module-path"],
)
def test_the_decorator_refuses_names_it_cannot_own(
    isolated_registry: None, name: str, want_message: str
) -> None:
    with pytest.raises(InputError, match=want_message):

        @cs.register_policy(name)
        def mine(instance, context=None):  # type: ignore[no-untyped-def]
            return cs.build_result(instance, name, {})


@pytest.mark.parametrize(
    ("name", "want_message"),
    [
        ("no_such_module_xyz:fn", "cannot import module 'no_such_module_xyz'"),
        ("my_policy.greenest:nothing", "has no 'nothing'"),
        ("my_policy.greenest:time", "names a module, not a function"),
        ("greenst", "unknown policy 'greenst'"),
    ],
    ids=["module-not-found", "function-not-found", "not-callable", "plain-unknown-name"],
)
def test_module_paths_that_cannot_be_had_are_clear_errors(
    isolated_registry: None, name: str, want_message: str
) -> None:
    with pytest.raises(InputError, match=want_message):
        registry.policy_spec(name)


def test_an_undecorated_function_reads_its_parameters_from_its_signature(
    isolated_registry: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plain_policy_mod.py").write_text(
        textwrap.dedent(
            '''
            from carbonshift.policy import build_result

            def everything_at(instance, context=None, slot=0, cluster=0):
                """Every job at one slot on one cluster."""
                chosen = {
                    i: (cluster, max(slot, job.release_slot)) for i, job in enumerate(instance.jobs)
                }
                return build_result(instance, "at", chosen)
            '''
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = registry.policy_spec("plain_policy_mod:everything_at")
    assert [(p.name, p.kind, p.default) for p in spec.params] == [
        ("slot", int, 0),
        ("cluster", int, 0),
    ]
    got = cs.plan(REPO / "examples" / "instance.json", "plain_policy_mod:everything_at", slot=3)
    # each job at slot 3 or, when released later, at its release (run_policy refuses a start
    # before the release: planning/output_check.py)
    assert min(start for _, start in got.assignments.values()) == 3
    monkeypatch.delitem(sys.modules, "plain_policy_mod")


def _dist_info(root: Path, value: str) -> None:
    """A minimal installed distribution declaring one carbonshift.policies entry point."""
    info = root / "mine_dist-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mine-dist\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[carbonshift.policies]\ngreen-ep = {value}\n")


def test_an_entry_point_makes_the_bare_name_known(
    isolated_registry: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _dist_info(tmp_path, GREENEST)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "green-ep" in registry.available_policies()
    got = cs.plan(REPO / "examples" / "instance.json", policy="green-ep", max_wait_slots=4)
    assert got.feasible
    assert got.plan.policy == "greenest"


def test_a_broken_entry_point_names_its_package_and_is_left_out_of_the_list(
    isolated_registry: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _dist_info(tmp_path, "no_such_module_xyz:fn")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InputError, match=r"entry point 'no_such_module_xyz:fn'.*does not load"):
        registry.policy_spec("green-ep")
    listed = registry.available_policies()
    assert "green-ep" not in listed
    assert "asap" in listed
    assert "does not load" in caplog.text


def test_a_policy_without_a_context_argument_is_refused_at_registration(
    isolated_registry: None,
) -> None:
    with pytest.raises(InputError, match=r"takes 1 positional argument\(s\); write it as"):

        @cs.register_policy("no-context")
        def no_context(instance, *, spare=1):  # type: ignore[no-untyped-def]
            return cs.build_result(instance, "no-context", {})


def test_a_policy_returning_something_else_is_a_clear_error(isolated_registry: None) -> None:
    @cs.register_policy("wrong-type")
    def wrong(instance, context=None):  # type: ignore[no-untyped-def]
        return {"j1": 3}

    with pytest.raises(InputError, match="returned dict; return a PolicyResult"):
        cs.plan(REPO / "examples" / "instance.json", policy="wrong-type")


# --- the example package through simulate, sweep and plan, by module:function -----------


def _cli(args: list[str]) -> str:
    from carbonshift.cli.app import app

    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_example_policy_runs_through_plan_simulate_and_sweep(
    isolated_registry: None, tmp_path: Path
) -> None:
    instance = str(REPO / "examples" / "instance.json")
    out = _cli(
        [
            *("plan", "-i", instance, "--policy", GREENEST),
            *("--out", str(tmp_path / "plan.json"), "--param", "max_wait_slots=6"),
            *("--format", "json"),
        ]
    )
    assert json.loads(out)["feasible"] is True
    assert json.loads((tmp_path / "plan.json").read_text())["policy"] == "greenest"

    scenario = write_scenario(tmp_path, policy="asap")
    out = _cli(
        [
            *("simulate", str(scenario), "--out", str(tmp_path / "sim"), "--no-report"),
            *("--policy", GREENEST, "--format", "json"),
        ]
    )
    summary = json.loads(out)
    assert summary["policy"] == GREENEST
    assert summary["jobs_completed"] == summary["jobs_total"] - summary["jobs_rejected"]

    # in a scenario file, by name, and in a sweep (worker processes import it by name too)
    mine = tmp_path / "mine.toml"
    mine.write_text(scenario.read_text().replace('policy = "asap"', f'policy = "{GREENEST}"'))
    in_file = cs.simulate(mine).summary
    assert in_file["carbon_kg"] == pytest.approx(summary["carbon_kg"])
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('scenarios = ["mine.toml"]\nseeds = [1]\nworkers = 1\n')
    _cli(["sweep", str(sweep), "--out", str(tmp_path / "sw"), "--policy", GREENEST])
    with (tmp_path / "sw" / "sweep.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["policy"] for r in rows] == [GREENEST]
    assert float(rows[0]["carbon_kg"]) == pytest.approx(summary["carbon_kg"])


def test_serve_never_imports_a_module_named_in_a_request(
    isolated_registry: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from carbonshift.api import create_app
    from carbonshift.carbon.providers import ChainSet

    (tmp_path / "spy_policy_mod.py").write_text(
        "raise SystemExit('spy_policy_mod was imported')\ndef fn(i, c=None): ...\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    calls: list[object] = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(a) or 0)
    registry.load_policy_module("my_policy.greenest")  # what --policy-module does
    app = create_app(ChainSet(chains={}, providers={}))
    body = json.loads((REPO / "examples" / "instance.json").read_text())
    with TestClient(app, raise_server_exceptions=False) as client:
        for name in ("os:system", "spy_policy_mod:fn", GREENEST):
            response = client.post("/v1/plan", params={"policy": name}, json=body)
            assert 400 <= response.status_code < 500, (name, response.status_code)
            assert "not offered here" in response.text
        offered = client.get("/v1/policies").json()
        assert "greenest" in offered
        assert "asap" in offered
        response = client.post("/v1/plan", params={"policy": "greenest"}, json=body)
        assert response.status_code == 200, response.text
    assert calls == []
    assert "spy_policy_mod" not in sys.modules


def test_the_policy_module_doctests_run() -> None:
    import carbonshift.policy

    failures, tried = doctest.testmod(carbonshift.policy)
    assert tried > 0
    assert failures == 0


def test_plan_to_dict_carries_the_bound_the_cli_writes(tmp_path: Path) -> None:
    # before: to_dict() / to_json() dropped the plan's bound (CONTRACTS.md section 2)
    from carbonshift.cli.app import main

    path = REPO / "examples" / "instance.json"
    result = cs.plan(path, policy="carbonshift")
    body = result.to_dict()
    assert result.result.bound is not None
    assert body["bound"] == {
        "lower_bound_g": result.result.bound.lower_bound_g,
        # the file's gap is its own scores' (plan_to_dict), equal up to the last digits
        "gap": pytest.approx(result.result.bound.gap, rel=1e-9, abs=1e-12),
    }
    assert json.loads(result.to_json()) == body
    out = tmp_path / "cli.json"
    assert main(["plan", "-i", str(path), "-p", "carbonshift", "-o", str(out)]) == 0
    written = json.loads(out.read_text())
    assert set(written) == set(body)
    assert written["bound"]["lower_bound_g"] == pytest.approx(body["bound"]["lower_bound_g"])
