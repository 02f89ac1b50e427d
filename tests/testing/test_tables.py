"""The JSONPath subset of CRD printer columns (tables of cases)."""

from __future__ import annotations

from typing import Any

import pytest

from fakekube.tables import json_path

OBJ: dict[str, Any] = {
    "spec": {"zone": "DE", "zones": ["DE", "FR"], "items": [{"n": 1}, {"n": 2}]},
    "status": {
        "conditions": [{"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}]
    },
}


@pytest.mark.parametrize(
    ("path", "want"),
    [
        (".spec.zone", "DE"),
        ("{.spec.zone}", "DE"),
        ("$.spec.zone", "DE"),
        (".spec.zones[1]", "FR"),
        (".spec.zones[5]", None),
        (".spec.items[*].n", 1),
        (".status.conditions[?(@.type=='Ready')].status", "True"),
        ('.status.conditions[?(@.type=="Missing")].status', None),
        (".spec.absent.deeper", None),
        (".spec.zone[0]", None),
        ("spec zone", None),  # not a form the subset reads
    ],
)
def test_json_path_reads_the_printer_column_subset(path: str, want: Any) -> None:
    assert json_path(OBJ, path) == want
