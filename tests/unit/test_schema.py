"""One row schema: the same rows give the same verdict at every entry point.

Entry points: ``prepare_data.py`` (training files), the eval set reader, the
workflow's ``parse_item`` (a data item at run time) and the eval workflow (a
result record). The one intended difference is a parameter: the workflow
accepts an empty context (a well-defined episode with no memory turn), the file
readers do not.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from examples import prepare_data
from memagent_workflow.data.files import DataError
from memagent_workflow.data.schema import MAX_LISTED, BadField, parse_row
from memagent_workflow.eval import sets
from memagent_workflow.workflow import parse_item

GOOD = {"id": "q", "question": "Q?", "context": "Document 1:\nT\nx", "answers": ["A"]}

# (row, id it gets or None when rejected, context allowed-empty verdict for the workflow)
CASES = {
    "empty context": (dict(GOOD, context=""), None, "q"),
    "empty gold answer": (dict(GOOD, answers=[""]), None, None),
    "id None, _id given": (dict(GOOD, id=None, _id="z"), "z", "z"),
    "input, not question": (
        {k: v for k, v in dict(GOOD, input="Q?").items() if k != "question"},
        "q",
        "q",
    ),
    "answers as one string": (dict(GOOD, answers="A"), "q", "q"),
    "bool id": (dict(GOOD, id=True), None, None),
    "index-only context": (dict(GOOD, context=[3, 1]), None, None),
    "blank question": (dict(GOOD, question="  "), None, None),
    "int id": (dict(GOOD, id=7), "7", "7"),
}


def via_prepare_data(tmp_path: Path, row: dict) -> str | None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(json.dumps(row) + "\n")
    if prepare_data.main(["--input", str(src), "--output", str(out)]) != 0:
        assert not out.exists()
        return None
    return json.loads(out.read_text())["id"]


def via_eval_reader(tmp_path: Path, row: dict) -> str | None:
    path = tmp_path / "eval_1.json"
    path.write_text(json.dumps([row]))
    try:
        return sets.load_eval_file(path)[0]["id"]
    except sets.EvalDataError:
        return None


def via_workflow(row: dict) -> str | None:
    try:
        return parse_item(row)[0]
    except DataError:
        return None


@pytest.mark.parametrize("case", CASES)
def test_every_reader_gives_the_same_verdict(tmp_path, case, capsys):
    row, file_id, workflow_id = CASES[case]
    assert via_prepare_data(tmp_path, row) == file_id
    assert via_eval_reader(tmp_path, row) == file_id
    assert via_workflow(row) == workflow_id


def test_the_eval_workflow_records_a_malformed_sample_with_its_reason(tiny_model_dir):
    from areal.api.cli_args import GenerationHyperparameters

    from memagent_workflow.eval.workflow import MemAgentEvalWorkflow

    wf = MemAgentEvalWorkflow(
        gconfig=GenerationHyperparameters(max_tokens=512),
        tokenizer=str(tiny_model_dir),
        chunk_tokens=64,
        max_memory_tokens=8,
        max_final_tokens=8,
    )
    rec = asyncio.run(wf.arun_episode(None, dict(GOOD, id=None, _id="z", answers=[""])))
    assert rec["id"] == "z" and "'answers'" in rec["error"]


def test_parse_row_names_the_field_that_was_used():
    with pytest.raises(BadField, match=r"field 'input': expected a non-empty string"):
        parse_row({"input": "", "context": "c", "answers": ["a"]}, fallback_id="0")
    with pytest.raises(
        BadField, match=r"'question' or 'input' or 'prompt\[0\]\.content'"
    ):
        parse_row({"context": "c", "answers": ["a"]}, fallback_id="0")


def test_every_bad_row_of_a_file_is_reported_capped_with_the_total(tmp_path, capsys):
    bad_kinds = [
        dict(GOOD, context=""),
        dict(GOOD, answers=[]),
        {"question": "Q?", "answers": ["A"]},
        "not an object",
    ]
    rows = [dict(GOOD, id=f"ok{i}") for i in range(3)]
    rows += [
        dict(kind, id=f"b{i}") if isinstance(kind, dict) else kind
        for i, kind in enumerate(bad_kinds * 8)
    ]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert prepare_data.main(["--input", str(src), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    n_bad = len(bad_kinds) * 8
    assert f"{n_bad} bad row(s); nothing was written" in err
    listed = [line for line in err.splitlines() if line.startswith(f"  {src}: line ")]
    assert len(listed) == MAX_LISTED
    assert f"... and {n_bad - MAX_LISTED} more" in err
    assert {"'context'", "'answers'", "'(row)'"} <= {
        part.split(": ")[0] for line in listed for part in [line.split("field ")[1]]
    }
    assert "line 4 (id 'b0'): field 'context': expected a non-empty string" in err
    assert not out.exists()
