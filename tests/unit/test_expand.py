"""The official index-only construction, byte for byte, on a small synthetic dev file."""

import json
from pathlib import Path

import pytest

from examples import prepare_eval_data as cli
from memagent_workflow.eval import expand, sets
from memagent_workflow.eval.sets import EvalDataError

# A HotpotQA distractor dev file in miniature. "alpha" is shared by both questions
# (one pool entry); sentences carry their own leading spaces; Charlie's paragraph
# ends with a space.
DEV = [
    {
        "_id": "5a8b57f25542995d1e6f1371",
        "question": "Who wrote Bravo?",
        "answer": "Ann",
        "context": [
            ["Bravo", ["Bravo is a book.", " It was written by Ann."]],
            ["alpha", ["Alpha is lower case."]],
            ["Échelle", ["Échelle is French."]],
        ],
    },
    {
        "_id": "5a8c7595554299585d9e36b6",
        "question": "Where does Charlie live?",
        "answer": "Paris",
        "context": [
            ["alpha", ["Alpha is lower case."]],
            ["Charlie", ["Charlie lives in Paris. "]],
        ],
    },
]
# The pool: unique "title\ntext" strings in code-point order
# (uppercase < lowercase < accented).
POOL = [
    "Bravo\nBravo is a book. It was written by Ann.",
    "Charlie\nCharlie lives in Paris. ",
    "alpha\nAlpha is lower case.",
    "Échelle\nÉchelle is French.",
]
INDEX_ONLY = [
    {"context": [3, 0, 2], "input": "Who wrote Bravo?", "answers": ["Ann"],
     "num_docs": 3, "index": 0},
    {"context": [2, 1], "input": "Where does Charlie live?", "answers": ["Paris"],
     "num_docs": 2, "index": 1},
]  # fmt: skip
TEXT_0 = (
    "Document 1:\nÉchelle\nÉchelle is French.\n\n"
    "Document 2:\nBravo\nBravo is a book. It was written by Ann.\n\n"
    "Document 3:\nalpha\nAlpha is lower case."
)
TEXT_1 = (  # stripped: Charlie's trailing space is gone
    "Document 1:\nalpha\nAlpha is lower case.\n\n"
    "Document 2:\nCharlie\nCharlie lives in Paris."
)
# The whole output file: a JSON list, one sample per line, UTF-8, other fields kept.
EXPECTED_FILE = (
    "[\n"
    '{"context": "Document 1:\\nÉchelle\\nÉchelle is French.\\n\\nDocument 2:\\nBravo'
    "\\nBravo is a book. It was written by Ann.\\n\\nDocument 3:\\nalpha\\nAlpha is "
    'lower case.", "input": "Who wrote Bravo?", "answers": ["Ann"], "num_docs": 3, '
    '"index": 0},\n'
    '{"context": "Document 1:\\nalpha\\nAlpha is lower case.\\n\\nDocument 2:\\n'
    'Charlie\\nCharlie lives in Paris.", "input": "Where does Charlie live?", '
    '"answers": ["Paris"], "num_docs": 2, "index": 1}\n'
    "]\n"
)


def write(path: Path, data) -> Path:
    path.write_text(json.dumps(data, indent=4), encoding="utf-8")  # as the hub's
    return path


@pytest.fixture
def dev(tmp_path: Path) -> Path:
    return write(tmp_path / "hotpot_dev_distractor_v1.json", DEV)


def test_pool_is_the_sorted_unique_paragraphs(dev: Path) -> None:
    assert expand.paragraph_pool(expand.load_hotpotqa_source(dev)) == POOL
    assert expand.expand_context([3, 0, 2], POOL) == TEXT_0
    assert expand.expand_context([2, 1], POOL) == TEXT_1


def test_expand_cli_writes_the_stated_bytes(tmp_path: Path, dev: Path, capsys) -> None:
    index_only = write(tmp_path / "eval_12800.json", INDEX_ONLY)
    assert expand.is_index_only(index_only)
    out = tmp_path / "out" / "eval_12800.json"
    argv = ["--expand", str(index_only), "--source", str(dev), "--output", str(out)]
    assert cli.main(argv) == 0
    assert "2 samples" in capsys.readouterr().out
    assert out.read_bytes() == EXPECTED_FILE.encode("utf-8")
    assert not expand.is_index_only(out)
    samples = sets.load_eval_file(out)
    assert [s["context"] for s in samples] == [TEXT_0, TEXT_1]
    assert [s["id"] for s in samples] == ["0", "1"]  # from the 'index' field
    # A file that is already text passes through unchanged; in place works too.
    assert (
        cli.main(["--expand", str(out), "--source", str(dev), "--output", str(out)])
        == 0
    )
    assert out.read_bytes() == EXPECTED_FILE.encode("utf-8")


def test_bad_indices_are_refused_naming_sample_and_field(
    tmp_path: Path, dev: Path
) -> None:
    bad = [dict(INDEX_ONLY[0], context=[3, 4]), dict(INDEX_ONLY[1], context=[1, "2"])]
    path = write(tmp_path / "bad.json", bad)
    out = tmp_path / "out.json"
    with pytest.raises(EvalDataError) as err:
        expand.expand_file(path, dev, out, progress=False)
    msg = str(err.value)
    assert "2 bad sample(s); nothing was written" in msg
    assert (
        "item 0 (0-based): field 'context[1]': document index 4 is outside the pool of 4"
        in msg
    )
    assert "item 1 (0-based): field 'context[1]': '2' is not a document index" in msg
    assert not out.exists()
    with pytest.raises(EvalDataError, match="item 0 .*'answers'"):
        expand.expand_file(
            write(tmp_path / "b2.json", [dict(INDEX_ONLY[0], answers=[])]), dev, out
        )
