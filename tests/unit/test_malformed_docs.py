"""docs/inputs.md states the malformed-input campaign as the tests run it: each
family's generated cases (``EXAMPLES``), its explicit ones and the totals."""

from __future__ import annotations

import re
from pathlib import Path

from tests.unit import (
    test_malformed_configs,
    test_malformed_eval_sources,
    test_malformed_haystacks,
    test_malformed_prompts,
    test_malformed_row_files,
)
from tests.unit.malformed import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]

# explicit cases per row of the table: the edge-case tables, and the tests
# beside them (--output a directory and the CLI process; NaN in a config file,
# train.py and ask.py on a bad config, train.py on a bad prompts file; ask.py on
# a document that is a directory or missing)
EXPLICIT = {
    "training rows": len(test_malformed_row_files.EDGE_CASES) + 2,
    "HotpotQA source": len(test_malformed_eval_sources.SOURCE_EDGES),
    "question indices": len(test_malformed_eval_sources.INDEX_EDGES),
    "haystacks": len(test_malformed_haystacks.EDGE_CASES),
    "prompts files": len(test_malformed_prompts.EDGE_CASES) + 1,
    "config overrides": len(test_malformed_configs.EDGE_CASES) + 3,
    "ask documents": 2,
}


def table() -> dict[str, tuple[int, int]]:
    """``{input: (generated, explicit)}`` of docs/inputs.md's campaign table."""
    text = (ROOT / "docs" / "inputs.md").read_text()
    rows = re.findall(r"^\| ([^|]+?) \| (\d+) \| (\d+) \|", text, re.M)
    return {name: (int(gen), int(exp)) for name, gen, exp in rows}


def test_the_doc_states_each_familys_cases_as_the_tests_run_them():
    found = table()
    assert {k: v[0] for k, v in found.items() if k in EXAMPLES} == EXAMPLES
    assert set(EXAMPLES) <= set(found)
    assert {k: v[1] for k, v in found.items() if v[1]} == EXPLICIT


def test_the_doc_states_the_totals():
    text = (ROOT / "docs" / "inputs.md").read_text()
    generated, explicit = sum(EXAMPLES.values()), sum(EXPLICIT.values())
    assert f"In all, {generated} generated and {explicit} explicit cases" in text
