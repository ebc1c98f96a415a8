"""The browser check of trace pages fails where it must: a page whose script
throws, or one without its diagnostics table (the passing case runs on a CPU
eval's own page: tests/e2e/test_eval.py); a page whose memories hold script
markup still renders; an unscored sample reads unscored, and evidence located
by answer words says so beside the chunk's text around it."""

from __future__ import annotations

import os

import pytest

from memagent_workflow.eval import diagnostics, trace_page
from tests.browser import chromium, open_page, trace_page_problems

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


def test_memories_holding_script_markup_still_render(tmp_path):
    # "<!--" then "<script" with no "-->": HTML would read on past the data's end
    markup = "<!-- <script> x </script>"
    sample = {**SAMPLE, "initial_memory": markup, "final_memory": markup}
    sample["turns"] = [{**SAMPLE["turns"][0], "memory": markup}]
    html = trace_page.page_html("t", ROWS, [trace_page.sample_view("length_1", sample)])
    assert page(tmp_path, html) == []  # the script ran and shows the memory


def test_an_unscored_sample_reads_unscored_and_answer_words_are_said(tmp_path):
    unscored = {**SAMPLE, "answered": None, "terms": []}
    unscored["evidence_excerpts"] = [
        {"chunk": 0, "before": "code of cat is ", "match": "red", "after": " ."}
    ]
    path = tmp_path / "page.html"
    path.write_text(
        trace_page.page_html("t", ROWS, [trace_page.sample_view("ask", unscored)])
    )
    with open_page(path, tmp_path / "profile") as p:
        button = p.evaluate("document.querySelector('#list button').textContent")
        view = p.evaluate("document.getElementById('view').textContent")
        located = p.evaluate("document.getElementById('located').textContent")
        excerpt = p.evaluate("document.querySelector('#turn-0 .excerpt').textContent")
        errors = list(p.errors)
    assert errors == []
    assert button.startswith("\u2013 ") and "[unscored]" in button  # not a cross
    assert "unscored" in view and "wrong" not in view
    assert located.startswith("located by answer words")
    assert excerpt == "code of cat is red ."
