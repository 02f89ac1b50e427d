"""``carbonshift status``: held workloads with planned start, place, reason and saving."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from carbonshift.cli.app import main
from fakekube import FakeKube
from tests.builders import pin_cli_clock


def pod(name: str, namespace: str, notes: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": notes},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


def held(start: str, reason: str, now_g: str, planned_g: str) -> dict[str, str]:
    return {
        "carbonshift.io/state": "held",
        "carbonshift.io/planned-start": start,
        "carbonshift.io/reason": reason,
        "carbonshift.io/estimated-g-now": now_g,
        "carbonshift.io/estimated-g-planned": planned_g,
    }


@pytest.fixture
def cluster(fakekube: FakeKube) -> FakeKube:
    for name in ("batch", "ml"):
        fakekube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    fakekube.create(pod("late", "batch", held("2031-01-01T12:00:00Z", "wind at noon", "90", "30")))
    fakekube.create(pod("soon", "ml", held("2031-01-01T03:00:00Z", "solar", "50.5", "40")))
    fakekube.create(
        pod("done", "ml", {"carbonshift.io/state": "released", "carbonshift.io/reason": "ok"})
    )
    fakekube.create(pod("plain", "ml", {}))
    fakekube.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "hub-job",
                "namespace": "batch",
                # as the hub writes it: no state, a planned cluster and start, a reason
                "annotations": {
                    "carbonshift.io/planned-cluster": "ca-on",
                    "carbonshift.io/planned-start": "2031-01-01T06:00:00Z",
                    "carbonshift.io/reason": "cleaner in CA-ON",
                    "carbonshift.io/estimated-g-now": "bad",
                    "carbonshift.io/estimated-g-planned": "1",
                },
            },
            "spec": {
                "suspend": True,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}],
                    }
                },
            },
        }
    )
    return fakekube


def test_status_lists_held_workloads_soonest_first_with_place_and_saving(
    cluster: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["status", "--kubeconfig", str(cluster.kubeconfig), "--format", "json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [(r["kind"], r["name"]) for r in rows] == [
        ("Pod", "soon"),
        ("Job", "hub-job"),
        ("Pod", "late"),
    ]
    by_name = {r["name"]: r for r in rows}
    assert by_name["late"]["estimated_saving_g"] == pytest.approx(60.0)
    assert by_name["soon"]["reason"] == "solar"
    assert by_name["hub-job"]["place"] == "ca-on"
    assert by_name["hub-job"]["estimated_saving_g"] is None  # "bad" is not a number


def test_status_all_and_namespace_and_csv(
    cluster: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["status", "--kubeconfig", str(cluster.kubeconfig), "-n", "ml", "--all", "--format", "csv"]
    )
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert code == 0
    assert sorted((r["name"], r["state"]) for r in rows) == [
        ("done", "released"),
        ("soon", "held"),
    ]


def test_status_table_says_why_work_waits(
    cluster: FakeKube, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code = main(["status", "--kubeconfig", str(cluster.kubeconfig)])
    out = capsys.readouterr().out
    assert code == 0
    assert "why it waits" in out
    assert "wind at noon" in out
    assert "3 workload(s) held" in out


@pytest.mark.parametrize(
    ("now", "want_cells"),
    [
        pytest.param(
            datetime(2031, 1, 1, 3, 30, tzinfo=UTC),
            [
                "2031-01-01T03:00:00Z (due)",
                "2031-01-01T06:00:00Z (in 2 h 30 min)",
                "2031-01-01T12:00:00Z (in 8 h 30 min)",
            ],
            id="between-planned-starts",
        ),
        pytest.param(
            datetime(2030, 12, 31, 23, 59, 30, tzinfo=UTC),
            [
                "2031-01-01T03:00:00Z (in 3 h 00 min)",
                "2031-01-01T06:00:00Z (in 6 h 00 min)",
                "2031-01-01T12:00:00Z (in 12 h 00 min)",
            ],
            id="the-evening-before",
        ),
    ],
)
def test_status_counts_the_time_left_by_the_cli_clock(
    cluster: FakeKube,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    now: datetime,
    want_cells: list[str],
) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    pin_cli_clock(monkeypatch, now)
    code = main(["status", "--kubeconfig", str(cluster.kubeconfig)])
    out = capsys.readouterr().out
    assert code == 0
    for cell in want_cells:
        assert cell in out
