"""The docs site stays whole: every built-in policy has its section in the policies page,
and every page under docs/ is in the site's navigation (or deliberately left out)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from carbonshift.planning.registry import POLICIES

ROOT = Path(__file__).resolve().parents[1]


def test_every_built_in_policy_has_a_section_with_its_paper() -> None:
    page = (ROOT / "docs" / "reference" / "policies.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^## (.+)$", page, flags=re.MULTILINE))
    sections = {name for heading in headings for name in re.split(r"\s+and\s+", heading)}
    missing = sorted(set(POLICIES) - sections)
    assert not missing, f"policies without a section in docs/reference/policies.md: {missing}"


def _nav_pages(node: object) -> set[str]:
    if isinstance(node, str):
        return {node}
    if isinstance(node, list):
        return set().union(*(_nav_pages(item) for item in node))
    if isinstance(node, dict):
        return set().union(*(_nav_pages(value) for value in node.values()))
    return set()


def test_every_docs_page_is_in_the_navigation() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = _nav_pages(config["nav"])
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    left_out = {p for p in pages if p.startswith("design/")}
    missing = sorted(pages - in_nav - left_out)
    assert not missing, f"docs pages missing from mkdocs.yml nav: {missing}"
