"""owned_fields: what one manager owns, read from managedFields (Kueue nomination, issue 14)."""

from __future__ import annotations

from typing import Any

import pytest

from carbonshift.k8s.owned import owned_fields

LIVE: dict[str, Any] = {
    "metadata": {
        "name": "w",
        "managedFields": [
            {
                "manager": "kueue-admission",
                "operation": "Apply",
                "subresource": "status",
                "fieldsV1": {
                    "f:status": {
                        "f:admission": {"f:clusterQueue": {}},
                        "f:conditions": {'k:{"type":"QuotaReserved"}': {".": {}, "f:status": {}}},
                    }
                },
            },
            {
                "manager": "carbonshift",
                "operation": "Update",
                "subresource": "status",
                "fieldsV1": {"f:status": {"f:admissionChecks": {}}},
            },
        ],
    },
    "status": {
        "admission": {"clusterQueue": "batch", "podSetAssignments": []},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "x"},
            {"type": "Evicted", "status": "False"},
        ],
        "admissionChecks": [{"name": "carbon", "state": "Ready"}],
    },
}


@pytest.mark.parametrize(
    ("manager", "operation", "want"),
    [
        pytest.param(
            "kueue-admission",
            "Apply",
            {
                "status": {
                    "admission": {"clusterQueue": "batch"},
                    "conditions": [{"type": "QuotaReserved", "status": "True"}],
                }
            },
            id="kueue-owns-admission-and-its-condition-by-key",
        ),
        pytest.param(
            "carbonshift",
            "Update",
            {"status": {"admissionChecks": [{"name": "carbon", "state": "Ready"}]}},
            id="a-leaf-owns-the-whole-list",
        ),
        pytest.param("carbonshift", "Apply", {}, id="another-operation-owns-nothing"),
        pytest.param("nobody", "Apply", {}, id="unknown-manager-owns-nothing"),
    ],
)
def test_owned_fields_picks_what_the_entry_names(
    manager: str, operation: str, want: dict[str, Any]
) -> None:
    assert owned_fields(LIVE, manager, operation=operation, subresource="status") == want
