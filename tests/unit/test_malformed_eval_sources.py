"""The malformed-input campaign: what the eval sets are made from.

An index-only official file (``--expand``), HotpotQA's dev file (the pool of
``--expand`` and ``--build``) and an official file's question indices
(``--indices-from``): one bad record among good ones is refused with an
``EvalDataError`` naming the file, the record and the field, and no eval file
is written. (The eval sets themselves: test_malformed_rows.py.)
"""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from examples import prepare_eval_data
from memagent_workflow.eval import build, expand
from memagent_workflow.eval.sets import EvalDataError
from tests.unit.malformed import (
    assert_names,
    bad_bytes,
    blank_text,
    campaign,
    dumps,
    files_in,
    folder,
    good_text,
    not_a_string,
    surrogate_text,
)


def hotpot_record(i: int) -> dict:
    """A HotpotQA distractor record: 3 paragraphs of 2 sentences."""
    return {
        "_id": f"h{i}",
        "question": f"Which is {i}?",
        "answer": f"A{i}",
        "supporting_facts": [[f"T{i}-0", 0]],
        "context": [[f"T{i}-{p}", [f"S{i}.{p}.", f" R{i}.{p}."]] for p in range(3)],
    }


SOURCE = [hotpot_record(i) for i in range(4)]
POOL = 12  # paragraphs in SOURCE's pool


def json_list(records: list, bad: int | None = None, raw: bytes = b"") -> bytes:
    """A JSON list, one record per line; ``raw`` in place of record ``bad``."""
    lines = [raw if i == bad else dumps(r) for i, r in enumerate(records)]
    return b"[\n" + b",\n".join(lines) + b"\n]\n"


# ---------------------------------------------------------- index-only files


def index_sample(i: int) -> dict:
    return {"_id": f"x{i}", "input": "Q?", "context": [i, i + 1], "answers": ["A"]}


@st.composite
def malformed_index_only(draw) -> tuple[bytes, int, str]:
    """An index-only file with one bad sample: its bytes, position and field."""
    n = draw(st.integers(2, 4))
    samples = [index_sample(i) for i in range(n)]
    at = draw(st.integers(1, n - 1))
    kind = draw(
        st.sampled_from(
            ["index", "indices", "question", "answers", "duplicate", "not UTF-8"]
        )
    )
    field = "context"
    if kind == "index":  # one bad document index
        k = draw(st.integers(0, 1))
        samples[at]["context"][k] = draw(
            st.one_of(
                st.integers(max_value=-1), st.integers(min_value=POOL),
                st.floats(allow_nan=True), st.booleans(), good_text, st.none(),
            )
        )  # fmt: skip
        field = f"context[{k}]"
    elif kind == "indices":  # no list of indices (a string would be text)
        samples[at]["context"] = draw(
            st.one_of(st.just([]), st.integers(), st.floats(allow_nan=True),
                      st.dictionaries(st.text(max_size=2), st.integers()))
        )  # fmt: skip
    elif kind == "question":
        samples[at]["input"], field = draw(st.one_of(blank_text, not_a_string)), "input"
    elif kind == "answers":
        samples[at]["answers"] = draw(st.sampled_from([[], [""], [3], 3, None]))
        field = "answers"
    elif kind == "duplicate":
        samples[at]["_id"], field = samples[0]["_id"], "id"
    line = dumps(samples[at])
    if kind == "not UTF-8":
        cut = draw(st.integers(0, len(line)))
        line, field = line[:cut] + draw(bad_bytes) + line[cut:], "(row)"
    return json_list(samples, at, line), at, field


@campaign("index-only samples")
@given(malformed_index_only())
def test_a_bad_index_only_sample_is_named_and_nothing_is_written(case):
    body, at, field = case
    with folder() as root:
        source, src = root / "hotpot_dev.json", root / "eval_25600.json"
        source.write_bytes(json_list(SOURCE))
        src.write_bytes(body)
        with pytest.raises(EvalDataError) as refused:
            expand.expand_file(src, source, root / "out" / "eval_25600.json", False)
        assert_names(str(refused.value), f"{src}: item {at} (0-based)", f"'{field}")
        assert files_in(root) == ["eval_25600.json", "hotpot_dev.json"]


# ------------------------------------------------------- HotpotQA's dev file


@st.composite
def malformed_source(draw) -> tuple[bytes, int, str]:
    """HotpotQA's dev file with one bad record: bytes, position, field."""
    records = [hotpot_record(i) for i in range(4)]
    at = draw(st.integers(0, 3))
    rec = records[at]
    kind = draw(
        st.sampled_from(
            ["question", "answer", "context", "paragraph", "sentence", "surrogate",
             "id", "duplicate", "not an object", "not UTF-8"]
        )
    )  # fmt: skip
    field = kind
    if kind in ("question", "answer"):
        rec[kind] = draw(st.one_of(blank_text, not_a_string, st.none()))
    elif kind == "context":
        rec["context"] = draw(st.one_of(st.just([]), st.integers(), good_text))
    elif kind == "paragraph":
        j = draw(st.integers(0, 2))
        rec["context"][j] = draw(
            st.one_of(
                st.lists(good_text, max_size=1), st.integers(), good_text,
                st.tuples(st.integers(), st.lists(good_text, max_size=1)),
                st.tuples(good_text, good_text),
            )
        )  # fmt: skip
        field = f"context[{j}]"
    elif kind in ("sentence", "surrogate"):
        j, k = draw(st.integers(0, 2)), draw(st.integers(0, 1))
        bad = not_a_string if kind == "sentence" else surrogate_text
        rec["context"][j][1][k] = draw(bad)
        field = f"context[{j}]"
    elif kind == "id":
        rec["_id"] = draw(st.one_of(st.just(""), st.floats(), st.booleans()))
        field = "_id"
    elif kind == "duplicate":
        at = draw(st.integers(1, 3))
        records[at]["_id"], field = records[0]["_id"], "_id"
    elif kind == "not an object":
        records[at], field = draw(st.one_of(not_a_string, good_text)), "(row)"
        if isinstance(records[at], dict):
            field = "id' or '_id"  # an object without the record's fields
    line = dumps(records[at])
    if kind == "not UTF-8":
        cut = draw(st.integers(0, len(line)))
        line, field = line[:cut] + draw(bad_bytes) + line[cut:], "(row)"
    return json_list(records, at, line), at, field


@campaign("HotpotQA source")
@given(malformed_source())
def test_a_bad_source_record_is_named_and_no_set_is_built(case):
    body, at, field = case
    with folder() as root:
        source = root / "hotpot_dev_distractor_v1.json"
        source.write_bytes(body)
        with pytest.raises(EvalDataError) as refused:
            build.build([6], source, 0, root / "sets", [0, 1, 2, 3], progress=False)
        message = str(refused.value)
        assert_names(message, f"{source}: item {at} (0-based)", f"field '{field}'")
        assert files_in(root) == [source.name]


# ---------------------------------------------------------- explicit edges


def _indices(*lines: bytes) -> bytes:
    return b"[\n" + b",\n".join(lines) + b"\n]\n"


# name -> (the file's bytes, None for a directory; what the message names)
INDEX_EDGES = {
    "a duplicate question index": (
        _indices(b'{"index": 3}', b'{"index": 5}', b'{"index": 3}'),
        ["item 2 (0-based)", "field 'index'", "duplicate 3 (first at item 0"],
    ),
    "an index that is no int": (
        _indices(b'{"index": 3}', b'{"index": NaN}'),
        ["item 1 (0-based)", "field 'index'", "got nan"],
    ),
    "a line that is not UTF-8": (
        _indices(b'{"index": 3}', b'{"index": 4, "x": "\xff"}'),
        ["item 1 (0-based)", "field '(row)'", "not UTF-8"],
    ),
    "an empty file": (b"", ["no question indices"]),
    "a directory": (None, ["is a directory"]),
}


@pytest.mark.parametrize("case", INDEX_EDGES)
def test_a_bad_indices_file_stops_the_build_by_name(tmp_path, case):
    content, parts = INDEX_EDGES[case]
    source, src = tmp_path / "hotpot_dev.json", tmp_path / "eval_200.json"
    source.write_bytes(json_list(SOURCE))
    if content is None:
        src.mkdir()
    else:
        src.write_bytes(content)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = prepare_eval_data.main(
            ["--build", "6", "--source", str(source), "--seed", "1"]
            + ["--indices-from", str(src), "--data-root", str(tmp_path / "sets")]
        )
    assert code == 2
    assert_names(err.getvalue(), str(src), *parts)
    assert not (tmp_path / "sets").exists()


SOURCE_EDGES = {
    "an empty source": (b"[]", ["no records"]),
    "a source cut mid-record": (json_list(SOURCE)[:-30], ["invalid JSON", "line"]),
    "a source that is a directory": (None, ["is a directory"]),
}


@pytest.mark.parametrize("case", SOURCE_EDGES)
def test_an_edge_case_source_is_refused_by_name(tmp_path, case):
    content, parts = SOURCE_EDGES[case]
    source = tmp_path / "hotpot_dev.json"
    if content is None:
        source.mkdir()
    else:
        source.write_bytes(content)
    with pytest.raises(EvalDataError) as refused:
        build.build([6], source, 0, tmp_path / "sets", [0], progress=False)
    assert_names(str(refused.value), str(source), *parts)
    assert files_in(tmp_path) == ([] if content is None else ["hotpot_dev.json"])
