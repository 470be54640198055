"""Every relative link in README.md and docs/*.md leads somewhere: the file exists, and an
anchor (``GUIDE.md#section``) names a heading of that file, as GitHub renders its ids."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (?P<title>.+)$", re.M)


def prose(path: Path) -> str:
    """The page with its fenced blocks blanked (a link in a code sample is not followed),
    its lines where they were."""
    return CODE.sub(lambda m: "\n" * m[0].count("\n"), path.read_text(encoding="utf-8"))


def anchors(path: Path) -> set[str]:
    """The ids GitHub gives the page's headings: lower case, punctuation but - dropped,
    spaces as -."""
    return {
        re.sub(r"[^\w\- ]", "", m["title"].strip().lower()).replace(" ", "-")
        for m in HEADING.finditer(prose(path))
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    text = prose(page)
    for m in LINK.finditer(text):
        target = m["target"]
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:: not this test's to fetch
        file, _, anchor = target.partition("#")
        where = (page.parent / file).resolve() if file else page
        line = text.count("\n", 0, m.start()) + 1
        if not where.exists():
            broken.append(f"{page.name}:{line}: {target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            broken.append(f"{page.name}:{line}: {target}: no heading #{anchor} in {where.name}")
    assert broken == [], "\n".join(broken)
