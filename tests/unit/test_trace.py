"""Memory traces: where evidence sits, what the memory held, the failure split,
the page's HTML (rendered in a browser by tests/e2e/test_eval.py), ask.py's
streamed document and its refusals."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from memagent_workflow.eval import ask, diagnostics, evidence, trace, trace_page
from memagent_workflow.eval.sets import EvalDataError, load_eval_file


def decode_words(ids) -> str:
    return " ".join(f"w{int(i)}" for i in ids)


def decode_bpe(ids) -> str:  # byte-level BPE: a word's token carries its space
    return "".join(f" w{int(i)}" for i in ids)


@pytest.mark.parametrize("decode", [decode_words, decode_bpe])
def test_locate_finds_the_chunks_that_hold_a_term_even_across_a_cut(decode):
    chunks = [np.array([1, 2, 3]), np.array([4, 5, 6]), np.array([7, 8, 9])]
    where = lambda texts: evidence.locate(decode, chunks, texts)[0]  # noqa: E731
    assert where(["w5"]) == [1]
    assert where(["w6 w7"]) == [2]  # cut by a chunk end: the chunk it ends in
    assert where(["w2 w3"]) == [0]  # not again in 1
    assert where(["w10"]) == []
    _, (ex,) = evidence.locate(decode, chunks, ["w6 w7"])
    # the excerpt: this chunk's text around the match, which began in chunk 1
    assert (ex["chunk"], ex["before"], ex["match"]) == (2, "", "w6 w7")
    assert ex["after"].split() == ["w8", "w9"]
    _, (ex,) = evidence.locate(decode, chunks, ["w5"])
    assert (ex["before"].split(), ex["after"].split()) == (["w4"], ["w6"])


def test_holds_matches_whole_normalised_words():
    assert trace.holds("\\boxed{ Red }", [["red"]])
    assert not trace.holds("colored", [["red"]])
    assert not trace.holds("anything", [])


def recorder(**kw):
    args = dict(
        decode=decode_words, question="q", terms=["w7"], chunk_tokens=3,
        context_tokens=8, n_chunks=3, evidence_chunks=[1],
        evidence_source="evidence", initial_memory="none",
    )  # fmt: skip
    return trace.TraceRecorder(**{**args, **kw})


def test_recorder_marks_caught_kept_and_lost():
    r = recorder()
    for mem in ([1], [7], [7]):
        r.add(np.array(mem))
    line = r.as_dict()
    assert line["caught"] and line["caught_turn"] == 1 and line["kept"]
    assert [t["memory"] for t in line["turns"]] == ["w1", "w7", None]  # unchanged
    assert [(t["start"], t["end"]) for t in line["turns"]] == [(0, 3), (3, 6), (6, 8)]
    assert [t["evidence"] for t in line["turns"]] == [False, True, False]
    r = recorder()
    for mem in ([7], [2], [3]):
        r.add(np.array(mem))
    line = r.as_dict()
    assert line["caught"] and not line["kept"] and line["lost_turn"] == 1
    wiped = recorder()
    wiped.add(np.array([7]), carried="none")  # the memory-wiped control
    line = wiped.as_dict()
    assert line["caught"] and not line["kept"] and line["final_memory"] == "none"


def test_split_puts_each_wrong_answer_in_exactly_one_kind():
    kinds = {
        "a": ({"caught": False, "kept": False}, 0.0),
        "b": ({"caught": True, "kept": False}, 0.0),
        "c": ({"caught": True, "kept": True}, 0.0),
        "d": ({"caught": True, "kept": True}, 1.0),
        "e": ({"caught": False, "kept": False}, 1.0),  # a guess
    }
    records = {(k, 0): {"sub_em": s, "error": None} for k, (_, s) in kinds.items()}
    traces = {(k, 0): {"read": True, **t} for k, (t, _) in kinds.items()}
    m = diagnostics.split(records, traces)
    assert m["traced"] == 5 and m["answered"] == 40 and m["caught"] == 60
    assert (m["never_caught"], m["caught_then_lost"], m["held_but_wrong"]) == (
        20,
        20,
        20,
    )
    assert m["right_unheld"] == 20 and m["kept"] == 40
    base = diagnostics.split(records, None)  # a baseline: answered only
    assert base["answered"] == 40 and base["caught"] is None


def test_page_carries_the_table_and_cannot_be_closed_by_its_data():
    rows = [{"task": "ruler_hqa", "length": 4, "mode": "memagent", "memory": {
        "traced": 1, **dict.fromkeys(diagnostics.COLUMNS, 50.0)}}]  # fmt: skip
    sample = {"id": "x", "turns": [], "memory": "</script><b>", "answered": False}
    page = trace_page.page_html("t", rows, [trace_page.sample_view("length_4", sample)])
    assert '<table id="diagnostics">' in page and "<td>50</td>" in page
    data = page.split('id="trace-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data)["samples"][0]["memory"] == "</script><b>"


def test_eval_files_may_carry_evidence_and_a_bad_one_is_named(tmp_path):
    row = {"id": "a", "question": "q", "context": "c", "answers": ["x"]}
    path = tmp_path / "eval_1.json"
    path.write_text(json.dumps([{**row, "evidence": ["c"]}]))
    assert load_eval_file(path)[0]["evidence"] == ["c"]
    path.write_text(json.dumps([{**row, "evidence": "c"}]))
    with pytest.raises(EvalDataError, match="evidence"):
        load_eval_file(path)


def test_a_document_is_encoded_in_pieces_as_a_whole(tokenizer, monkeypatch):
    text = "".join(
        f"Document {i}:\nThe code of item {i} is {i * 7}.\n\n" for i in range(800)
    )
    monkeypatch.setattr(ask, "BLOCK_CHARS", 3000)  # many blocks, several pieces
    ids = ask.encode_stream(tokenizer, io.StringIO(text), "doc")
    assert ids.dtype == np.int32
    assert ids.tolist() == tokenizer.encode(text, add_special_tokens=False)


def test_bad_documents_are_refused_by_name(tmp_path, tokenizer):
    with pytest.raises(ask.AskRefused, match="nope.txt: no such file"):
        ask.open_document(str(tmp_path / "nope.txt"))
    (tmp_path / "e.txt").write_text(" \n\n ")
    with pytest.raises(ask.AskRefused, match="e.txt: empty"):
        ask.encode_stream(
            tokenizer, ask.open_document(str(tmp_path / "e.txt")), "e.txt"
        )
    (tmp_path / "b.txt").write_bytes(b"\xff\xfe bad")
    with pytest.raises(ask.AskRefused, match="b.txt: not UTF-8"):
        ask.encode_stream(
            tokenizer, ask.open_document(str(tmp_path / "b.txt")), "b.txt"
        )


def test_a_remote_workers_turns_reach_the_bar_through_the_progress_file(tmp_path):
    path = tmp_path / "progress.txt"
    assert ask.read_progress(path) is None  # the worker has not started
    ask.report_turn(str(path), 0, 5)
    ask.report_turn(str(path), 1, 7)
    assert ask.read_progress(path) == (1, 7)
    with open(path, "a") as f:
        f.write("2 3")  # a line still being written is not read
    assert ask.read_progress(path) == (1, 7)
