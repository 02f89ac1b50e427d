"""One module owns every ``carbonshift.io/`` key: no other module under src/ spells one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from carbonshift.k8s import keys

SRC = Path(__file__).resolve().parents[2] / "src"
OWNER = SRC / "carbonshift" / "k8s" / "keys.py"
PREFIX = "carbonshift.io/"


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are documentation: a bare string statement (module,
    class and function docstrings, and the attribute docstrings after an assignment)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            out.add(id(node.value))
    return out


def key_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string literal in ``source`` that spells a carbonshift.io/ key,
    f-string parts included, documentation excepted."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and PREFIX in node.value
        and id(node) not in docs
    ]


@pytest.mark.parametrize(
    ("source", "want_lines"),
    [
        pytest.param('X = "carbonshift.io/state"\n', [1], id="plain-literal"),
        pytest.param('def f(n):\n    return f"carbonshift.io/{n}"\n', [2], id="f-string-part"),
        pytest.param('"""Writes ``carbonshift.io/state``."""\nX = 1\n', [], id="module-docstring"),
        pytest.param('X = STATE\n"""the ``carbonshift.io/state`` key"""\n', [], id="attribute-doc"),
        pytest.param('X = "kueue.x-k8s.io/queue-name"\n', [], id="another-group"),
    ],
)
def test_the_scanner_finds_key_literals_and_skips_documentation(
    source: str, want_lines: list[int]
) -> None:
    assert [line for line, _ in key_literals(source)] == want_lines


def test_no_module_but_keys_spells_a_carbonshift_key() -> None:
    offenders = [
        f"{path.relative_to(SRC)}:{line}: {text!r}"
        for path in sorted(SRC.rglob("*.py"))
        if path != OWNER
        for line, text in key_literals(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "import the key from carbonshift.k8s.keys instead:\n" + "\n".join(
        offenders
    )


def test_every_key_is_in_the_group_and_spelt_once() -> None:
    values = {
        name: getattr(keys, name)
        for name in keys.__all__
        if isinstance(getattr(keys, name), str) and name not in ("API_GROUP",)
    }
    assert all(v.startswith(keys.API_GROUP) for v in values.values())
    # the state is an annotation and a label of one key; the hub's Event reporter and its
    # Job label happen to share a name
    aliases = {"STATE_LABEL", "HUB_COMPONENT"}
    spelt = [v for name, v in values.items() if name not in aliases]
    assert len(spelt) == len(set(spelt)), sorted(spelt)
