"""Every Python code block of docs/python-api.md runs as written (from a copy of the root)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from carbonshift.planning import registry

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "python-api.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


@pytest.fixture
def in_a_root_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The working directory holds examples/ (linked) and an empty out/; the registry is
    restored afterwards."""
    (tmp_path / "examples").symlink_to(REPO / "examples")
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    before = dict(registry.POLICIES)
    yield tmp_path
    registry.POLICIES.clear()
    registry.POLICIES.update(before)


def test_the_page_has_the_main_examples() -> None:
    text = "\n".join(BLOCKS)
    for call in ("cs.simulate(", "cs.plan(", "cs.load_carbon(", "@cs.register_policy("):
        assert call in text, call


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block-{i + 1}" for i in range(len(BLOCKS))])
def test_each_python_block_runs(in_a_root_copy: Path, code: str) -> None:
    exec(compile(code, str(PAGE), "exec"), {"__name__": "docs_example"})
