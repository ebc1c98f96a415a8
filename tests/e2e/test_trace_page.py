"""The browser check of trace pages fails where it must: a page whose script
throws, or one without its diagnostics table (the passing case runs on a CPU
eval's own page: tests/e2e/test_eval.py)."""

from __future__ import annotations

import os

import pytest

from memagent_workflow.eval import diagnostics, trace_page
from tests.browser import chromium, trace_page_problems

pytestmark = pytest.mark.skipif(
    chromium() is None and not os.environ.get("MEMAGENT_REQUIRE_BROWSER"),
    reason="chromium missing (.ci/run installs it and requires these tests)",
)

SAMPLE = {
    "id": "s1", "question": "q", "terms": ["red"], "evidence_chunks": [0],
    "evidence_source": "answer", "initial_memory": "none", "caught": True,
    "caught_turn": 0, "kept": True, "lost_turn": None, "final_memory": "red",
    "prediction": "\\boxed{red}", "extracted": "red", "answered": True, "error": None,
    "turns": [{"chunk": 0, "start": 0, "end": 6, "evidence": True,
               "memory_tokens": 1, "holds": True, "wiped": False, "memory": "red"}],
}  # fmt: skip
ROWS = [
    {"task": "ruler_hqa", "length": 1, "mode": "memagent",
     "memory": {"traced": 1, **dict.fromkeys(diagnostics.COLUMNS, 100.0)}}
]  # fmt: skip


def page(tmp_path, html: str):
    path = tmp_path / "page.html"
    path.write_text(html)
    return trace_page_problems(path, tmp_path / "profile")


def good() -> str:
    return trace_page.page_html("t", ROWS, [trace_page.sample_view("length_1", SAMPLE)])


def test_a_good_page_passes(tmp_path):
    assert page(tmp_path, good()) == []


def test_a_throwing_script_fails(tmp_path):
    broken = good().replace('"use strict";', '"use strict"; null.boom;', 1)
    problems = page(tmp_path, broken)
    assert any("script error" in p and "boom" in p for p in problems)


def test_a_missing_table_fails(tmp_path):
    problems = page(tmp_path, good().replace('id="diagnostics"', 'id="other"'))
    assert any("no diagnostics table" in p for p in problems)
