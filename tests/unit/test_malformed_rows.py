"""The malformed-input campaign: training rows and eval-set samples.

One bad row among good ones, in JSONL, a JSON list written one row per line
(as this project writes them) or a compact JSON list, and in parquet: each is
refused by ``prepare_data.py`` (exit 2, ``DataError``, nothing written) and by
the eval set reader (``EvalDataError``), naming the file, the row and the field.
Extra fields never change the verdict. The hub's rows are read by the same
reader once downloaded (``hub.py`` fetches a file; its failures:
test_prepare_data_hub.py). Whole files that cannot be read:
test_malformed_row_files.py.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memagent_workflow.eval import sets
from tests.unit.malformed import (
    DEEP,
    HUGE_INT,
    assert_names,
    bad_bytes,
    blank_text,
    campaign,
    dumps,
    extras,
    files_in,
    folder,
    good_text,
    not_a_string,
    prepare,
    surrogate_text,
    with_raw,
)


@st.composite
def good_row(draw, i: int) -> dict:
    row = {
        "id": f"r{i}",
        "question": draw(good_text),
        "context": "Document 1:\n" + draw(good_text),
        "answers": draw(st.lists(good_text, min_size=1, max_size=2)),
    }
    return {**draw(extras), **row}


def bad_value(field: str) -> st.SearchStrategy:
    """Values ``field`` refuses (None is a missing field: another kind)."""
    if field == "id":
        return st.one_of(
            st.floats(allow_nan=True), st.booleans(), st.lists(st.integers()),
            st.just(""), st.dictionaries(st.text(max_size=2), st.integers()),
        )  # fmt: skip
    if field == "answers":
        return st.one_of(
            not_a_string,
            st.lists(st.one_of(blank_text, not_a_string), min_size=1, max_size=2),
        )
    return st.one_of(not_a_string, blank_text)


# kind -> what the message says about it
VALUE_KINDS = {
    "missing field": "missing",
    "wrong type or blank": "expected",
    "index-only context": "document indices",
    "lone surrogate": "not valid Unicode",
    "duplicate id": "duplicate",
    "not an object": "expected an object",
}
LINE_KINDS = {  # a row's own line: JSONL or a list written one row per line
    "not UTF-8": "not UTF-8 text",
    "int past 4300 digits": "invalid JSON",
    "nested too deeply": "nested too deeply",
}
LABELS = {
    "jsonl": lambda i: f"line {i + 1}",
    "list": lambda i: f"item {i} (0-based)",
    "compact": lambda i: f"item {i} (0-based)",
}


@st.composite
def malformed_rows(draw) -> tuple[bytes, str, str, str]:
    """``(file bytes, layout, label of the bad row, field)`` and the problem."""
    n = draw(st.integers(1, 4))
    rows = [draw(good_row(i)) for i in range(n)]
    layout = draw(st.sampled_from(sorted(LABELS)))
    kinds = [k for k in VALUE_KINDS if k != "index-only context"]
    kinds += [k for k in LINE_KINDS if layout != "compact"]
    kind = draw(st.sampled_from([k for k in kinds if n > 1 or k != "duplicate id"]))
    at = draw(st.integers(0, n - 1))
    field = draw(st.sampled_from(["question", "context", "answers"]))
    lines = [dumps(r) for r in rows]
    if kind == "missing field":
        del rows[at][field]
    elif kind == "wrong type or blank":
        field = draw(st.sampled_from(["id", field]))
        rows[at][field] = draw(bad_value(field))
        if field == "context" and isinstance(rows[at][field], list):
            kind = "index-only context"
    elif kind == "lone surrogate":
        field = draw(st.sampled_from(["id", field]))
        text = draw(surrogate_text)
        rows[at][field] = [text] if field == "answers" else text
    elif kind == "duplicate id":
        first, at = sorted(draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True)))  # fmt: skip
        rows[at]["id"], field = rows[first]["id"], "id"
    elif kind == "not an object":
        not_an_object = st.one_of(
            st.integers(), st.floats(allow_nan=True), st.booleans(), st.none(),
            st.lists(st.integers(), max_size=3), good_text,
        )  # fmt: skip
        rows[at], field = draw(not_an_object), "(row)"
    lines[at] = dumps(rows[at])
    if kind == "not UTF-8":
        cut = draw(st.integers(0, len(lines[at])))
        lines[at] = lines[at][:cut] + draw(bad_bytes) + lines[at][cut:]
    elif kind in ("int past 4300 digits", "nested too deeply"):
        raw = HUGE_INT if kind == "int past 4300 digits" else DEEP
        lines[at] = with_raw(rows[at], field, raw)
    if kind in LINE_KINDS:
        field = "(row)"
    body = {
        "jsonl": b"\n".join(lines) + b"\n",
        "list": b"[\n" + b",\n".join(lines) + b"\n]\n",
        "compact": b"[" + b", ".join(lines) + b"]",
    }[layout]
    problem = {**VALUE_KINDS, **LINE_KINDS}[kind]
    return body, layout, LABELS[layout](at), f"field '{field}", problem


def assert_refused_by_both(src: Path, *parts: str) -> None:
    """prepare_data.py refuses ``src`` naming ``parts`` and writes nothing; the
    eval set reader refuses it with the same names."""
    code, err = prepare(src, src.parent / "out" / "rows.jsonl")
    assert code == 2, err
    assert_names(err, str(src), *parts)
    assert files_in(src.parent) == [src.name]
    with pytest.raises(sets.EvalDataError) as refused:
        sets.load_eval_file(src)
    assert_names(str(refused.value), str(src), *parts)


@campaign("training rows")
@given(malformed_rows())
def test_a_malformed_row_is_named_by_file_row_and_field(case):
    body, layout, label, field, problem = case
    with folder() as root:
        src = root / ("train.jsonl" if layout == "jsonl" else "eval_2.json")
        src.write_bytes(body)
        assert_refused_by_both(src, f"{src}: {label}", field, problem)


ARROW = pa.schema(
    [(f, pa.string()) for f in ("id", "question", "context")]
    + [("answers", pa.list_(pa.string()))]
)


@st.composite
def malformed_parquet(draw) -> tuple[list[dict], int, str]:
    n = draw(st.integers(2, 4))
    rows = [
        {k: v for k, v in draw(good_row(i)).items() if k in ARROW.names}
        for i in range(n)
    ]
    at = draw(st.integers(1, n - 1))
    field = draw(st.sampled_from(["id", "question", "context", "answers"]))
    if field == "id":  # an empty id, or the first row's again
        rows[at]["id"] = draw(st.sampled_from(["", rows[0]["id"]]))
    elif field == "answers":
        rows[at]["answers"] = draw(st.sampled_from([None, [], [""], [" ", "a"]]))
    else:
        rows[at][field] = draw(st.one_of(st.none(), blank_text))
    return rows, at, field


@campaign("training rows, parquet")
@given(malformed_parquet())
def test_a_malformed_parquet_row_is_named_by_its_index_and_field(case):
    rows, at, field = case
    with folder() as root:
        src = root / "train.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=ARROW), src)
        assert_refused_by_both(src, f"{src}: row {at} (0-based)", f"field '{field}")


@st.composite
def bad_eval_field(draw) -> tuple[str, object]:
    field = draw(st.sampled_from(["num_docs", "set", "evidence"]))
    if field == "num_docs":
        value = draw(
            st.one_of(
                st.integers(max_value=-1), st.booleans(),
                st.floats(allow_nan=True), good_text, st.lists(st.integers()),
            )
        )  # fmt: skip
    elif field == "set":
        value = draw(not_a_string)
    else:  # an empty list is no evidence, which is allowed
        bad = st.one_of(blank_text, not_a_string)
        value = draw(
            st.one_of(
                not_a_string.filter(lambda v: v != []),
                st.lists(bad, min_size=1, max_size=2),
            )
        )
    return field, value


@campaign("eval set fields")
@given(bad_eval_field(), st.integers(0, 2))
def test_an_eval_samples_own_fields_are_checked(bad, at):
    field, value = bad
    with folder() as root:
        src = root / "eval_2.json"
        rows = [
            {"id": f"s{i}", "input": "Q?", "context": "C", "answers": ["A"]}
            for i in range(3)
        ]
        rows[at][field] = value
        src.write_bytes(b"[\n" + b",\n".join(map(dumps, rows)) + b"\n]\n")
        with pytest.raises(sets.EvalDataError) as refused:
            sets.load_eval_file(src)
        assert_names(str(refused.value), f"{src}: item {at} (0-based)", f"'{field}'")
