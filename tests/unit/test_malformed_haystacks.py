"""The malformed-input campaign: RULER's haystack files (``--haystack``).

SQuAD's ``{"data": [...]}`` and HotpotQA's JSON list with one bad record, and
essays that cannot be read: each is refused with a ``HaystackError`` naming
the file, the record's place and the field, before any RULER file is written.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from examples import prepare_eval_data
from memagent_workflow.eval.ruler import haystack
from tests.unit.malformed import (
    DEEP,
    assert_names,
    blank_text,
    campaign,
    files_in,
    folder,
    good_text,
    not_a_string,
    surrogate_text,
)

SQUAD = {
    "data": [
        {
            "title": f"Article {a}",
            "paragraphs": [
                {
                    "context": f"Paragraph {a}.{p} says x{a}{p}.",
                    "qas": [
                        {
                            "id": f"q{a}{p}",
                            "question": f"What does {a}.{p} say?",
                            "answers": [{"text": f"x{a}{p}", "answer_start": 0}],
                        }
                    ],
                }
                for p in range(2)
            ],
        }
        for a in range(2)
    ]
}
HOTPOT = [
    {
        "question": f"Which is {i}?",
        "answer": f"A{i}",
        "context": [[f"T{i}-{p}", [f"S{i}.{p}.", " More."]] for p in range(2)],
        "supporting_facts": [[f"T{i}-0", 0]],
    }
    for i in range(3)
]
text_like = st.one_of(not_a_string, blank_text, surrogate_text)


@st.composite
def malformed_squad(draw) -> tuple[dict, str, str]:
    """SQuAD with one bad place: the data, the place, the field."""
    data = copy.deepcopy(SQUAD)
    a, p = draw(st.integers(0, 1)), draw(st.integers(0, 1))
    article = data["data"][a]
    para = article["paragraphs"][p]
    qa = para["qas"][0]
    kind = draw(st.sampled_from(["paragraphs", "context", "qas", "question", "answer"]))
    if kind == "paragraphs":
        article["paragraphs"] = draw(st.one_of(st.integers(), good_text, st.none()))
        return data, f"data[{a}]", "paragraphs"
    where = f"data[{a}].paragraphs[{p}]"
    if kind in ("context", "qas"):
        bad = text_like if kind == "context" else st.one_of(st.integers(), good_text)
        para[kind] = draw(bad)
        return data, where, kind
    if kind == "question":
        qa["question"] = draw(text_like)
        return data, f"{where}.qas[0]", "question"
    qa["answers"] = [draw(st.one_of(not_a_string, good_text, st.just({"t": 1})))]
    return data, f"{where}.qas[0]", "answers[0]"


@st.composite
def malformed_hotpot(draw) -> tuple[list, str, str]:
    """HotpotQA with one bad record (not the first: its keys say the kind)."""
    rows = copy.deepcopy(HOTPOT)
    i = draw(st.integers(1, 2))
    row = rows[i]
    kind = draw(st.sampled_from(["question", "answer", "context", "title", "facts"]))
    if kind in ("question", "answer"):
        row[kind] = draw(text_like)
        return rows, f"item {i} (0-based)", kind
    j = draw(st.integers(0, 1))
    if kind == "context":
        row["context"][j] = draw(
            st.one_of(good_text, st.integers(), st.lists(good_text, max_size=1))
        )
        return rows, f"item {i} (0-based)", f"context[{j}]"
    if kind == "title":
        row["context"][j][0] = draw(st.one_of(not_a_string, surrogate_text))
        return rows, f"item {i} (0-based)", f"context[{j}][0]"
    row["supporting_facts"] = draw(st.one_of(st.integers(), good_text))
    return rows, f"item {i} (0-based)", "supporting_facts"


@campaign("haystacks")
@given(st.one_of(malformed_squad(), malformed_hotpot()))
def test_a_bad_haystack_record_is_named_by_place_and_field(case):
    data, place, field = case
    with folder() as root:
        path = root / "haystack.json"
        path.write_text(json.dumps(data))
        with pytest.raises(haystack.HaystackError) as refused:
            haystack.read_file(path)
        assert_names(str(refused.value), f"{path}: {place}", f"field '{field}")


# name -> (file name, bytes or None for a directory, what the message names)
EDGE_CASES = {
    "a directory": ("essays.txt", None, ["is a directory"]),
    "an essay that is not UTF-8": (
        "essays.txt",
        b"One. Two.\nThree \xff four.\n",
        ["line 2", "not UTF-8 text: byte 0xff at column 7"],
    ),
    "an essay of one sentence": ("essays.txt", b"Only one sentence", ["1 sentence"]),
    "JSON nested too deeply": ("h.json", DEEP.encode(), ["nested too deeply"]),
    "JSON cut short": ("h.json", json.dumps(SQUAD).encode()[:-9], ["not valid JSON"]),
    "JSON of no haystack's shape": ("h.json", b'{"rows": []}', ["not a haystack"]),
    "SQuAD with no articles": ("h.json", b'{"data": []}', ["data", "non-empty"]),
}


@pytest.mark.parametrize("case", EDGE_CASES)
def test_an_unreadable_haystack_stops_before_any_ruler_file(tmp_path, case):
    name, content, parts = EDGE_CASES[case]
    path, out = tmp_path / name, tmp_path / "ruler"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = prepare_eval_data.main(
            ["--ruler", "qa_1", "--tokenizer", "unused", "--lengths", "4096"]
            + ["--haystack", str(path), "--output", str(out)]
        )
    assert code == 2
    assert_names(err.getvalue(), str(path), *parts)
    assert not out.exists() and files_in(tmp_path) == (
        [] if content is None else [name]
    )
