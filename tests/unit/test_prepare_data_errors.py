"""Data preparation's refusals: bad rows and unreadable files, each reported
with its file, line or row, and field; nothing is written.
"""

from __future__ import annotations

import json

import pytest

from memagent_workflow.data.files import DataError, read_records
from tests.unit.test_prepare_data import (
    CONTEXT,
    convert_file,
    convert_rows,
    good,
    memagent_row,
    write_jsonl,
    write_parquet,
)

# --------------------------------------------------------------------- errors

BAD_ROWS = [
    ({"question": "Q?", "answers": ["a"]}, "'context'", "missing"),
    (
        {"question": "Q?", "context": 3, "answers": ["a"]},
        "'context'",
        "expected a string",
    ),
    (
        {"question": "  ", "context": CONTEXT, "answers": ["a"]},
        "'question'",
        "expected a non-empty string",
    ),
    ({"context": CONTEXT, "answers": ["a"]}, "'prompt[0].content'", "missing"),
    ({"question": "Q?", "context": CONTEXT}, "'reward_model.ground_truth'", "missing"),
    (
        {"question": "Q?", "context": CONTEXT, "answers": []},
        "'answers'",
        "non-empty list",
    ),
    (
        {"question": "Q?", "context": CONTEXT, "answers": [1]},
        "'answers'",
        "non-empty list",
    ),
    (
        {**memagent_row(0), "reward_model": {"ground_truth": []}},
        "'reward_model.ground_truth'",
        "expected a non-empty list of non-empty strings, got []",
    ),
    ({**memagent_row(0), "prompt": [{"content": ""}]}, "'prompt[0].content'", "empty"),
]


@pytest.mark.parametrize(("bad", "field", "problem"), BAD_ROWS)
def test_bad_jsonl_row_names_file_line_and_field(tmp_path, bad, field, problem):
    src = write_jsonl(tmp_path / "train.jsonl", [good(0), good(1), bad])
    with pytest.raises(DataError) as err:
        convert_file(src)
    message = str(err.value)
    assert message.startswith(f"{src}: 1 bad row(s); nothing was written")
    assert f"\n  {src}: line 3" in message and ": field " in message
    assert field in message and problem in message


def test_blank_jsonl_lines_are_skipped_but_counted(tmp_path):
    src = tmp_path / "train.jsonl"
    src.write_text(json.dumps(good(0)) + "\n\n" + json.dumps({"question": "Q"}) + "\n")
    with pytest.raises(DataError, match=r"train\.jsonl: line 3: field 'context'"):
        convert_file(src)


def test_bad_json_line_reports_the_decoder_message(tmp_path):
    src = tmp_path / "train.jsonl"
    src.write_text(json.dumps(good(0)) + "\n{not json\n")
    with pytest.raises(DataError) as err:
        convert_file(src)
    assert f"{src}: line 2: field '(row)': invalid JSON: Expecting property name" in (
        str(err.value)
    )


def test_non_object_json_line_is_rejected(tmp_path):
    src = write_jsonl(tmp_path / "train.jsonl", [["a", "list"]])
    with pytest.raises(
        DataError, match=r"line 1: field '\(row\)': expected an object, got list"
    ):
        convert_file(src)


def test_duplicate_ids_name_both_rows(tmp_path):
    src = write_parquet(
        tmp_path / "t.parquet", [memagent_row(4), memagent_row(5), memagent_row(4)]
    )
    with pytest.raises(DataError) as err:
        convert_file(src)
    assert str(err.value) == (
        f"{src}: 1 bad row(s); nothing was written:\n  {src}: row 2 (0-based) (id '4'): "
        f"field 'id': duplicate '4' (first at {src}: row 0 (0-based))"
    )


def test_parquet_errors_use_zero_based_row_index(tmp_path):
    src = write_parquet(
        tmp_path / "t.parquet", [memagent_row(0), memagent_row(1, question="")]
    )
    with pytest.raises(
        DataError,
        match=r"t\.parquet: row 1 \(0-based\) \(id '1'\): field 'prompt\[0\]\.content': expected a non-empty string",
    ):
        convert_file(src)


def test_index_only_eval_context_is_rejected(tmp_path):
    src = tmp_path / "eval_25600.json"
    src.write_text(json.dumps([{"input": "Q", "context": [1, 2], "answers": ["a"]}]))
    with pytest.raises(
        DataError,
        match=r"item 0 \(0-based\): field 'context': is a list of document indices",
    ):
        convert_file(src)


def test_plain_dict_rows_are_labelled_by_position():
    with pytest.raises(DataError, match=r"\n  mem: row 1 \(0-based\): field 'context'"):
        convert_rows([good(0), {"question": "Q", "answers": ["a"]}], "mem")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("missing.jsonl", "file not found"),
        ("training.csv", "unsupported file type '.csv'"),
    ],
)
def test_unreadable_inputs(tmp_path, name, problem):
    with pytest.raises(DataError, match=problem):
        list(read_records(tmp_path / name))


def test_corrupt_parquet(tmp_path):
    src = tmp_path / "t.parquet"
    src.write_bytes(b"not a parquet file")
    with pytest.raises(DataError, match="cannot read parquet"):
        convert_file(src)
