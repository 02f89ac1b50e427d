"""The patch formats, without a server."""

from __future__ import annotations

from typing import Any

import pytest

from fakekube._errors import ApiError
from fakekube.patch import (
    apply_merge,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)

BASE: dict[str, Any] = {
    "metadata": {"labels": {"a": "1"}, "finalizers": ["f1"]},
    "spec": {
        "schedulingGates": [{"name": "g1"}, {"name": "g2"}],
        "containers": [{"name": "c", "image": "i:1", "env": [{"name": "X", "value": "1"}]}],
        "tolerations": [{"key": "t"}],
    },
}


@pytest.mark.parametrize(
    ("patch", "want_spec_part"),
    [
        pytest.param(
            {"spec": {"schedulingGates": [{"name": "g1", "$patch": "delete"}]}},
            {"schedulingGates": [{"name": "g2"}]},
            id="delete-one-gate",
        ),
        pytest.param(
            {"spec": {"schedulingGates": [{"$patch": "replace"}]}},
            {"schedulingGates": []},
            id="replace-gates",
        ),
        pytest.param({"spec": {"schedulingGates": None}}, {}, id="null-removes"),
        pytest.param(
            {"spec": {"containers": [{"name": "c", "image": "i:2"}]}},
            {"containers": [{"name": "c", "image": "i:2", "env": [{"name": "X", "value": "1"}]}]},
            id="merge-container-by-name",
        ),
        pytest.param(
            {"spec": {"tolerations": [{"key": "u"}]}},
            {"tolerations": [{"key": "u"}]},
            id="atomic-list-replaced",
        ),
    ],
)
def test_strategic_merge(patch: dict[str, Any], want_spec_part: dict[str, Any]) -> None:
    out = strategic_merge_patch(BASE, patch)

    for key in ("schedulingGates", "containers", "tolerations"):
        if key in want_spec_part:
            assert out["spec"][key] == want_spec_part[key]
    if not want_spec_part:
        assert "schedulingGates" not in out["spec"]


def test_strategic_merge_unions_finalizers_and_deletes_from_them() -> None:
    added = strategic_merge_patch(BASE, {"metadata": {"finalizers": ["f2"]}})
    removed = strategic_merge_patch(
        BASE, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"]}}
    )

    # A new item goes before the live ones (strategicpatch's mergeSortedSlice).
    assert added["metadata"]["finalizers"] == ["f2", "f1"]
    assert removed["metadata"]["finalizers"] == []


def test_merge_patch_replaces_lists_and_deletes_nulls() -> None:
    out = merge_patch(
        BASE,
        {
            "metadata": {"labels": {"a": None, "b": "2"}},
            "spec": {"schedulingGates": [{"name": "g3"}]},
        },
    )

    assert out["metadata"]["labels"] == {"b": "2"}
    assert out["spec"]["schedulingGates"] == [{"name": "g3"}]
    assert BASE["metadata"]["labels"] == {"a": "1"}


def test_json_patch_operations() -> None:
    out = json_patch(
        BASE,
        [
            {"op": "test", "path": "/metadata/labels/a", "value": "1"},
            {"op": "remove", "path": "/spec/schedulingGates/0"},
            {"op": "add", "path": "/metadata/labels/k8s.io~1x", "value": "y"},
            {"op": "replace", "path": "/spec/containers/0/image", "value": "i:3"},
            {"op": "copy", "from": "/metadata/labels/a", "path": "/metadata/labels/c"},
            {"op": "move", "from": "/metadata/labels/c", "path": "/metadata/labels/d"},
        ],
    )

    assert out["spec"]["schedulingGates"] == [{"name": "g2"}]
    assert out["metadata"]["labels"] == {"a": "1", "k8s.io/x": "y", "d": "1"}
    assert out["spec"]["containers"][0]["image"] == "i:3"


@pytest.mark.parametrize(
    "ops",
    [
        pytest.param([{"op": "remove", "path": "/spec/nothing"}], id="remove-missing"),
        pytest.param([{"op": "test", "path": "/metadata/labels/a", "value": "2"}], id="test-fails"),
        pytest.param(
            [{"op": "replace", "path": "/metadata/nothing", "value": 1}], id="replace-missing"
        ),
    ],
)
def test_json_patch_failures_are_422(ops: list[dict[str, Any]]) -> None:
    with pytest.raises(ApiError) as refused:
        json_patch(BASE, ops)

    assert refused.value.code == 422


def test_apply_merges_without_removing_fields() -> None:
    out = apply_merge(
        BASE, {"metadata": {"labels": {"b": "2"}}, "spec": {"schedulingGates": [{"name": "g3"}]}}
    )

    assert out["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert out["spec"]["schedulingGates"] == [{"name": "g1"}, {"name": "g2"}, {"name": "g3"}]
