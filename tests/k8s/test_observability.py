"""deploy/observability: dashboards and alert rules use only metrics the code registers, with
the suffixes their types expose; the rules pass promtool's checks and unit tests; the chart
ships the same files; every alert is documented."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

REPO = Path(__file__).resolve().parents[2]
PACK = REPO / "deploy" / "observability"
RULES = PACK / "carbonshift-rules.yaml"
RULE_TESTS = sorted((PACK / "tests").glob("*.yaml"))
DASHBOARDS = sorted((PACK / "dashboards").glob("*.json"))
CHART = REPO / "charts" / "carbonshift"

#: Metrics a dashboard or rule may name before the code registers them (none now); a name
#: here leaves the type check until it lands.
PENDING: dict[str, str] = {}

_REGISTERED = re.compile(r"\b(Counter|Gauge|Histogram|Summary)\(\s*\"(carbonshift_\w+)\"")
_USED = re.compile(r"\bcarbonshift_[a-z0-9_]+\b")
#: the series names a metric of each type exposes (prometheus_client)
_SUFFIXES = {
    "counter": ("_total",),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count"),
    "summary": ("_sum", "_count", ""),
}


def registered_metrics() -> dict[str, str]:
    """Every metric the package registers, by name (without suffix), with its type."""
    found: dict[str, str] = {}
    for path in (REPO / "src" / "carbonshift").rglob("*.py"):
        for kind, name in _REGISTERED.findall(path.read_text()):
            found[name] = kind.lower()
    return found


def exposed_series(metrics: dict[str, str]) -> dict[str, str]:
    """Series name -> metric name, for every series those metrics expose."""
    return {name + suffix: name for name, kind in metrics.items() for suffix in _SUFFIXES[kind]}


def dashboard_exprs() -> list[tuple[str, str]]:
    out = []
    for path in DASHBOARDS:
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel.get("targets", []):
                out.append((f"{path.name}: {panel['title']}", target["expr"]))
    return out


def rule_exprs() -> list[tuple[str, str]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [(rule["alert"], rule["expr"]) for g in groups for rule in g["rules"]]


def alert_names() -> list[str]:
    return [name for name, _ in rule_exprs()]


def test_the_registry_scan_finds_the_controller_and_hub_metrics() -> None:
    metrics = registered_metrics()
    want = {
        "carbonshift_held_workloads": "gauge",
        "carbonshift_planned_delay_seconds": "histogram",
        "carbonshift_estimated_carbon_saved_grams": "counter",
        "carbonshift_failed_open": "counter",
        "carbonshift_hub_spoke_healthy": "gauge",
        "carbonshift_hub_plan_duration_seconds": "histogram",
    }
    assert want.items() <= metrics.items()


def test_pending_metrics_are_not_registered_yet() -> None:
    # a pending name that the code registers must leave PENDING, so its type is checked
    landed = set(PENDING) & set(registered_metrics())
    assert not landed, f"{sorted(landed)} are registered now: remove them from PENDING"


@pytest.mark.parametrize(
    ("where", "expr"), dashboard_exprs() + rule_exprs(), ids=lambda v: str(v)[:60]
)
def test_every_series_in_dashboards_and_rules_is_exposed_by_the_code(where: str, expr: str) -> None:
    series = exposed_series({**registered_metrics(), **PENDING})
    used = set(_USED.findall(expr))
    assert used, f"{where}: no carbonshift metric in {expr!r}"
    unknown = sorted(used - set(series))
    assert not unknown, f"{where}: {unknown} are not exposed (counters end in _total)"


def test_every_metric_family_of_the_issue_is_on_a_dashboard() -> None:
    shown = {
        exposed_series({**registered_metrics(), **PENDING})[s]
        for _, expr in dashboard_exprs()
        for s in _USED.findall(expr)
    }
    want_shown = {
        "carbonshift_held_workloads",
        "carbonshift_planned_delay_seconds",
        "carbonshift_estimated_carbon_saved_grams",
        "carbonshift_forecast_age_seconds",
        "carbonshift_failed_open",
        "carbonshift_released",
        "carbonshift_reconcile_duration_seconds",
        "carbonshift_unusable_intent",
        "carbonshift_provider_errors",
        "carbonshift_carbon_answers",
        "carbonshift_carbon_fallbacks",
        "carbonshift_hub_held_workloads",
        "carbonshift_hub_placed_workloads",
        "carbonshift_hub_spoke_healthy",
        "carbonshift_hub_plan_duration_seconds",
        "carbonshift_hub_recalls",
        "carbonshift_hub_forecast_age_seconds",
        "carbonshift_leader",
        "carbonshift_hub_leader",
        *PENDING,
    }
    assert want_shown - shown == set()


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboards_are_importable_grafana_json(path: Path) -> None:
    dashboard: dict[str, Any] = json.loads(path.read_text())
    assert dashboard["uid"] == path.stem
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]


def test_the_chart_ships_the_same_dashboards_and_rules() -> None:
    chart_dashboards = sorted((CHART / "dashboards").glob("*.json"))
    assert [p.name for p in chart_dashboards] == [p.name for p in DASHBOARDS]
    for ours, theirs in zip(DASHBOARDS, chart_dashboards, strict=True):
        assert ours.read_bytes() == theirs.read_bytes(), ours.name
    assert (CHART / "files" / "carbonshift-rules.yaml").read_bytes() == RULES.read_bytes()


def test_every_alert_is_unit_tested_and_documented() -> None:
    tested = {
        case["alertname"]
        for path in RULE_TESTS
        for test in yaml.safe_load(path.read_text())["tests"]
        for case in test.get("alert_rule_test", [])
    }
    assert set(alert_names()) - tested == set()
    docs = (REPO / "docs" / "observability.md").read_text()
    undocumented = [name for name in alert_names() if f"### {name}" not in docs]
    assert undocumented == []


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing under CI; charts/check.sh installs it")
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    return found


def test_promtool_checks_the_rules() -> None:
    done = subprocess.run(
        [promtool(), "check", "rules", str(RULES)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alert_names())} rules found" in done.stdout


def test_promtool_unit_tests_pass() -> None:
    done = subprocess.run(
        [promtool(), "test", "rules", *map(str, RULE_TESTS)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
