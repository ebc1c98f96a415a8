"""The memory split beside its row, traces joined to their own attempt only, the
page's embedded data, and ask.py's page without a gold answer (small records
written as eval.py writes them; no model, no server)."""

from __future__ import annotations

import argparse
import json

import numpy as np

from examples import ask as ask_cli
from memagent_workflow.eval import diagnostics, results, targets, trace, trace_page
from memagent_workflow.eval.ruler.scoring import score_record

TRACE = {"turns": [], "read": True, "caught": True, "kept": True}


def write_run(out, name, rows):
    """eval.py's writes for ``rows`` of (record, trace or None): the trace first
    (when traced), then the result line."""
    path = out / f"{name}.jsonl"
    with (
        results.ResultWriter(path) as w,
        trace.TraceWriter(trace.trace_file(path)) as t,
    ):
        for rec, tr in rows:
            t.write(rec, tr)
            w.write(rec)
    return path


def test_answered_is_the_rows_own_accuracy_on_a_run_with_empty_outputs(tmp_path):
    pred = {"a": "\\boxed{x}", "b": "\\boxed{y}", "c": "", "d": None}  # c: empty
    hqa = [
        (results.make_record(i, ["x"], p, error=None if p is not None else "down"),
         TRACE if p is not None else None)
        for i, p in pred.items()
    ]  # fmt: skip
    write_run(tmp_path, "length_4", hqa)
    ruler = [(score_record(r, "niah_single_1"), t) for r, t in hqa]
    write_run(tmp_path, "niah_single_1_1024", ruler)
    ids = list(pred)
    expected = {
        targets.Target("ruler_hqa", 4, "memagent"): ids,
        targets.Target("niah_single_1", 1024, "memagent"): ids,
    }
    summary = targets.summarize(tmp_path, expected, {})
    (row,), (rrow,) = summary["lengths"], summary["ruler"]
    # RULER-HQA: sub-EM leaves the empty output out, and so does the split
    assert row["memory"]["answered"] == row["sub_em_non_failed"] == 50
    assert row["memory"]["traced"] == 2  # a, b: c is empty, d failed
    assert (row["empty"], row["memory"]["empty"]) == (1, 1)
    # RULER: the score counts the empty output as 0, and so does the split
    assert rrow["memory"]["answered"] == rrow["score_non_failed"]
    assert rrow["memory"]["traced"] == 3 and rrow["memory"]["empty"] == 0


def test_a_trace_left_by_a_killed_attempt_joins_no_later_result(tmp_path):
    first = results.make_record("a", ["x"], "\\boxed{x}")
    path = tmp_path / "length_4.jsonl"
    with trace.TraceWriter(trace.trace_file(path)) as t:
        t.write(first, TRACE)  # killed here, before the result line
    failed = results.make_record("a", ["x"], None, error="episode failed: boom")
    write_run(tmp_path, "length_4", [(failed, None)])  # the retry failed
    records = results.read_records(path)
    m = diagnostics.target_split(path, records, "memagent")
    assert m["traced"] == 0 and m["never_caught"] is None
    assert trace_page.collect(tmp_path)[1] == []
    # a later rerun with eval.trace=false scores it: still not that trace's
    write_run(tmp_path, "length_4", [(results.make_record("a", ["x"], "\\boxed{y}"),
                                      None)])  # fmt: skip
    records = results.read_records(path)
    assert diagnostics.target_split(path, records, "memagent")["traced"] == 0
    # the same attempt's trace and result are joined
    ok = results.make_record("a", ["x"], "\\boxed{x}")
    write_run(tmp_path, "length_4", [(ok, TRACE)])
    records = results.read_records(path)
    m = diagnostics.target_split(path, records, "memagent")
    assert m["traced"] == 1 and m["answered"] == 100
    assert [s["id"] for s in trace_page.collect(tmp_path)[1]] == ["a"]


def test_traces_written_before_attempt_ids_still_join_their_results():
    rec = {**results.make_record("a", ["x"], "\\boxed{x}"), "attempt": None}
    old = {k: v for k, v in rec.items() if k != "attempt"}
    assert trace.join({("a", 0): old}, {("a", 0): {"id": "a", **TRACE}})
    failed = {**old, "error": "boom"}  # but never to a failed record
    assert not trace.join({("a", 0): failed}, {("a", 0): {"id": "a", **TRACE}})


def test_evidence_by_answer_words_is_said_in_the_split_and_its_tables():
    records = {(i, 0): results.make_record(i, ["x"], "\\boxed{x}") for i in "abc"}
    source = {"a": "evidence", "b": "answer", "c": "answer"}
    traces = {
        k: {**TRACE, "attempt": r["attempt"], "evidence_source": source[k[0]]}
        for k, r in records.items()
    }
    m = diagnostics.split(records, traces)
    assert m["by_answer"] == 2 and diagnostics.located_by(m) == "answer words 2/3"
    only_set = {k: {**t, "evidence_source": "evidence"} for k, t in traces.items()}
    assert diagnostics.located_by(diagnostics.split(records, only_set)) == "set"
    row = {"task": "ruler_hqa", "length": 4, "mode": "memagent", "memory": m}
    md = diagnostics.markdown([row])
    assert md[5].endswith("| evidence |") and md[-1].endswith("| answer words 2/3 |")
    assert "<td>answer words 2/3</td>" in trace_page.table_html([row])


def test_the_pages_data_cannot_end_or_escape_its_script_element():
    text = "<!-- <script> x </script> --> & <b>"
    sample = {"id": "x", "turns": [], "memory": text, "answered": False}
    page = trace_page.page_html("t", [], [trace_page.sample_view("length_4", sample)])
    data = page.split('id="trace-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data and ">" not in data  # HTML's script-data rules
    assert json.loads(data)["samples"][0]["memory"] == text


def test_ask_without_an_answer_is_unscored_on_its_page(tmp_path):
    rec = results.make_record("doc.txt", ["-"], "\\boxed{red}", n_chunks=1)
    rec.update(answers=[], sub_em=None, em=None, f1=None)  # AskWorkflow.record's
    recorder = trace.TraceRecorder(
        decode=lambda ids: " ".join(f"w{i}" for i in ids), question="q", terms=[],
        chunk_tokens=2, context_tokens=2, n_chunks=1, evidence_chunks=[],
        evidence_source="answer", initial_memory="none",
    )  # fmt: skip
    recorder.add(np.array([1]))
    rec["trace"] = recorder.as_dict()
    page = tmp_path / "ask.html"
    ask_cli.show(rec, argparse.Namespace(answer=None, trace=page))
    data = page.read_text().split('id="trace-data">', 1)[1].split("</script>", 1)[0]
    (sample,) = json.loads(data)["samples"]
    assert sample["answered"] is None and sample["kind"] is None  # not "wrong"
