"""Every page is read in one sitting: the README at most 120 lines, every other
page at most 220, and no line over 300 characters (issue 54). Generated
outputs (bench/results.md, the eval's sample output) are not pages."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_LINES, PAGE_LINES, LINE_CHARS = 120, 220, 300
PAGES = sorted(
    p.relative_to(ROOT).as_posix()
    for p in [
        ROOT / "README.md",
        ROOT / "standin" / "README.md",
        ROOT / "bench" / "README.md",
        *(ROOT / "docs").glob("*.md"),
    ]
)


def test_the_pages_are_the_readme_and_the_docs():
    assert "README.md" in PAGES and "docs/gpu.md" in PAGES and len(PAGES) > 30


@pytest.mark.parametrize("page", PAGES)
def test_each_page_fits_one_sitting(page):
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    limit = README_LINES if page == "README.md" else PAGE_LINES
    assert len(lines) <= limit, f"{page}: {len(lines)} lines (at most {limit})"
    long = [(i, len(line)) for i, line in enumerate(lines, 1) if len(line) > LINE_CHARS]
    assert not long, (
        f"{page}: lines over {LINE_CHARS} characters (line, length): {long}"
    )
