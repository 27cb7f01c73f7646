"""The README is the short way in and the pages of docs/ hold the topics: every page is reachable
from the README, and every link of the documentation leads to a file and heading that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.sample_data import REPO

README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md")), REPO / "bench" / "README.md"]
README_MAX_LINES = 300  # issue 32: a newcomer reads it in ten minutes


def prose(page: Path) -> str:
    """The page without its fenced code blocks (whose `#` lines are comments, not headings)."""
    return re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation but - and _ left out,
    spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", prose(page), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def links(page: Path) -> list[str]:
    """The targets of the page's Markdown links and images, other sites left out."""
    return [target for target in re.findall(r"\]\(([^)\s]+)\)", prose(page))
            if not re.match(r"[a-z]+:", target)]


def test_the_readme_is_a_short_read():
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move a topic to a page of docs/"


def test_every_page_of_docs_is_linked_from_the_readme():
    linked = {(README.parent / target.split("#")[0]).resolve() for target in links(README)}
    assert [page for page in PAGES if page not in linked and page != README] == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_link_leads_to_a_file_and_heading_that_exist(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target}: no heading with that anchor in {destination.relative_to(REPO)}")
    assert broken == []
