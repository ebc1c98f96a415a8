"""RULER scoring, eval targets and their summary rows, the baseline prompts,
and the eval config's mode and task keys."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memagent_workflow.chunking import centre_truncate
from memagent_workflow.eval import report, results, targets
from memagent_workflow.eval.benchmarks import BENCHMARKS
from memagent_workflow.eval.config import EvalConfig
from memagent_workflow.eval.ruler.scoring import (
    score_record,
    string_match_all,
    string_match_part,
)
from memagent_workflow.eval.ruler.tasks import PAPER_TASKS
from memagent_workflow.eval.targets import Target


def test_string_match_all_is_recall_and_part_is_any():
    golds = ["1234567", "7654321", "ABC-def"]
    assert string_match_all("1234567 and abc-DEF", golds) == pytest.approx(2 / 3)
    assert string_match_all("nothing", golds) == 0.0
    assert string_match_part("it is 7654321", golds) == 1.0
    assert string_match_part("it is 765432", golds) == 0.0


@pytest.mark.parametrize(
    "task, prediction, error, score",
    [
        ("niah_multivalue", "\\boxed{11, 22 and 33}", None, 0.75),  # 3 of 4
        ("niah_multivalue", "11 22 33 44", None, 0.0),  # no box: nothing extracted
        ("niah_multivalue", "\\boxed{11 22 33 44}", "engine down", 0.0),
        ("qa_1", "\\boxed{it was 33}", None, 1.0),  # any gold (string_match_part)
    ],
)
def test_record_gets_its_ruler_score_from_the_boxed_answer(
    task, prediction, error, score
):
    golds = ["11", "22", "33", "44"]
    rec = results.make_record("q", golds, None if error else prediction, error=error)
    scored = score_record(rec, task)
    assert scored["ruler_score"] == pytest.approx(score)
    assert scored["task"] == task and scored["sub_em"] == rec["sub_em"]


def test_result_files_name_task_length_and_mode(tmp_path):
    plain = Target("ruler_hqa", 50, "memagent")
    assert plain.results_file(tmp_path) == tmp_path / "length_50.jsonl"  # as ever
    base = Target("niah_single_1", 8192, "full_context")
    assert base.results_file(tmp_path).name == "niah_single_1_8192.full_context.jsonl"
    for t in (plain, base, Target("qa_1", 16384, "no_context")):
        t.results_file(tmp_path).write_text("")
    (tmp_path / "notes.jsonl").write_text("")  # not a result file
    assert set(targets.present(tmp_path)) == {
        plain,
        base,
        Target("qa_1", 16384, "no_context"),
    }


def test_every_benchmark_names_its_files_and_finds_its_results(tmp_path):
    ev = EvalConfig(data_root="hqa", ruler_data_root="ruler")
    want = set()
    for name, b in BENCHMARKS.items():
        n = 4096 if b.unit == "tokens" else 50
        stem = "length_50" if name == "ruler_hqa" else f"{name}_4096"
        data = "hqa/eval_50.json" if name == "ruler_hqa" else f"ruler/eval_{stem}.json"
        for mode in ("memagent", "no_context"):
            t = Target(name, n, mode)
            assert t.data_file(ev) == Path(data)
            assert t.stem == stem and t.benchmark is b
            t.results_file(tmp_path).write_text("")
            want.add(t)
    assert set(targets.present(tmp_path)) == want
    assert [b.summary_key for b in BENCHMARKS.values()].count("lengths") == 1


def test_planned_targets_follow_the_config():
    ev = EvalConfig(
        tasks=["ruler_hqa", "vt"], lengths=[50], ruler_lengths=[8192, 16384]
    )
    ev.mode = "no_context"
    assert targets.planned(ev) == [
        Target("ruler_hqa", 50, "no_context"),
        Target("vt", 8192, "no_context"),
        Target("vt", 16384, "no_context"),
    ]
    assert EvalConfig(tasks=["ruler"], lengths=[]).tasks == list(PAPER_TASKS)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mode": "oracle"}, "eval.mode must be one of"),
        ({"tasks": ["niah_single_7"]}, "unknown RULER task 'niah_single_7'"),
        ({"tasks": ["vt"], "ruler_lengths": [0]}, "eval.ruler_lengths"),
        ({"tasks": ["ruler_hqa"], "lengths": [0]}, r"eval\.lengths must"),
        ({"tasks": []}, "eval.tasks is empty"),
    ],
)
def test_bad_eval_keys_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EvalConfig(**kwargs)


def write(path, records):
    with results.ResultWriter(path) as w:
        for rec in records:
            w.write(rec)


def test_summary_rows_by_task_and_mode_with_cuts(tmp_path):
    vt = Target("vt", 8192, "memagent")
    golds = ["AAAAA", "BBBBB"]
    write(
        vt.results_file(tmp_path),
        [
            score_record(results.make_record("a", golds, "\\boxed{AAAAA BBBBB}"), "vt"),
            score_record(results.make_record("b", golds, "\\boxed{AAAAA}"), "vt"),
            score_record(results.make_record("c", golds, None, error="x"), "vt"),
        ],
    )
    full = Target("ruler_hqa", 50, "full_context")
    cut = {"mode": "full_context"}
    write(
        full.results_file(tmp_path),
        [
            {**results.make_record("a", ["x"], "\\boxed{x}"), **cut, "cut_tokens": 100},
            {**results.make_record("b", ["x"], "\\boxed{y}"), **cut, "cut_tokens": 0},
        ],
    )
    summary = targets.summarize(tmp_path, {vt: ["a", "b", "c", "d"]}, {"label": "m"})
    (row,) = summary["ruler"]
    assert (row["task"], row["mode"], row["n"], row["missing"]) == (
        "vt",
        "memagent",
        3,
        1,
    )
    assert row["score"] == pytest.approx(50.0)  # (1 + 0.5 + 0) / 3
    assert row["score_non_failed"] == pytest.approx(75.0)
    (hqa,) = summary["lengths"]
    assert (hqa["mode"], hqa["sub_em"], hqa["cut_samples"]) == ("full_context", 50.0, 1)
    assert hqa["mean_cut_tokens"] == 50.0
    text = report.results_markdown(summary)
    assert "| vt | memagent | 50.00 (3) | - |" in text
    assert "| full_context | 50 | 2 | 0 | 50.00 |" in text
    assert "| NIAH average, RL-MemAgent-14B (paper) | memagent | - | 98.18 |" in text
    # MemAgent's own RULER-HQA table holds no baseline row
    assert "| **this run** | | mean (all) |  |" in text
    # two samples per question: each (id, repeat) not on disk is missing
    twice = targets.summarize(tmp_path, {vt: ["a", "b", "c", "d"]}, {}, n_samples=2)
    assert (twice["ruler"][0]["n"], twice["ruler"][0]["missing"]) == (3, 5)


def test_centre_cut_keeps_the_head_and_the_tail():
    ids = np.arange(10, dtype=np.int32)
    kept, cut = centre_truncate(ids, 5)
    assert kept.tolist() == [0, 1, 2, 8, 9] and cut == 5
    kept, cut = centre_truncate(ids, 10)
    assert kept.tolist() == list(range(10)) and cut == 0


@pytest.fixture(scope="module")
def baseline(tiny_model_dir):
    from areal.api.cli_args import GenerationHyperparameters

    from memagent_workflow.eval.baseline import BaselineEvalWorkflow

    def make(mode: str, protocol: str = "boxed") -> BaselineEvalWorkflow:
        g = GenerationHyperparameters(max_new_tokens=32, max_tokens=800)
        return BaselineEvalWorkflow(
            g, str(tiny_model_dir), chunk_tokens=64, max_memory_tokens=32,
            max_final_tokens=32, mode=mode, answer_protocol=protocol,
        )  # fmt: skip

    return make


def test_full_context_prompt_fits_the_window_and_counts_the_cut(baseline):
    import asyncio

    wf = baseline("full_context")
    tok = wf.tokenizer
    context = " ".join(f"word{i}" for i in range(600))
    ids = tok.encode(context, add_special_tokens=False)
    prompt, n, cut = asyncio.run(wf.build_prompt("Which word?", context))
    assert n == len(ids) and cut > 0
    assert len(prompt) + 32 < 800 and len(prompt) == 800 - 32 - 1
    assert len(prompt) - (len(ids) - cut) > 0  # the instruction and question stay
    kept = (len(ids) - cut + 1) // 2
    text = tok.decode(prompt.tolist())
    assert tok.decode(ids[:kept]) in text and tok.decode(ids[-5:]) in text
    assert "Which word?" in text
    short, n, cut = asyncio.run(wf.build_prompt("Which word?", "word1 word2"))
    assert cut == 0 and len(short) < len(prompt)


def test_no_context_prompt_holds_the_question_alone(baseline):
    import asyncio

    wf = baseline("no_context")
    prompt, n, cut = asyncio.run(wf.build_prompt("Which word?", "secretword " * 50))
    text = wf.tokenizer.decode(prompt.tolist())
    assert "Which word?" in text and "secretword" not in text and (n, cut) == (0, 0)


@pytest.mark.parametrize("mode", ["full_context", "no_context"])
def test_baselines_ask_and_score_in_the_answer_protocol(baseline, mode):
    import asyncio

    for protocol, asks, never in (
        ("boxed", "\\boxed{}", "the answer is"),
        ("answer_is", '"Therefore, the answer is (your answer)"', "\\boxed"),
    ):
        wf = baseline(mode, protocol)
        prompt, _, _ = asyncio.run(wf.build_prompt("Which word?", "word1 word2"))
        text = wf.tokenizer.decode(prompt.tolist())
        assert asks in text and never not in text and "Which word?" in text
    said = "I think so. Therefore, the answer is Paris."
    rec = record_of(baseline(mode, "answer_is"), said, repeat=3)
    assert (rec["repeat"], rec["extracted"], rec["sub_em"]) == (3, "Paris", 1.0)
    assert rec["mode"] == mode
    boxed = record_of(baseline(mode), said, repeat=1)
    assert (boxed["repeat"], boxed["extracted"], boxed["sub_em"]) == (1, None, 0.0)


def record_of(wf, said: str, repeat: int) -> dict:
    """The record ``wf`` writes for a sample answered ``said``."""
    import asyncio

    from memagent_workflow.eval.workflow import EvalSample

    item = {"id": "q", "question": "Which?", "context": "word1", "answers": ["Paris"]}
    sample = EvalSample.of({**item, "repeat": repeat})
    asyncio.run(wf.prepare(sample, item))
    return wf.record(sample, said)


@pytest.mark.parametrize("mode", ["full_context", "no_context"])
def test_a_baseline_sample_runs_the_eval_workflows_sample_loop(tiny_model_dir, mode):
    """One prompt, one model call, then the record: answered, failed or refused."""
    import asyncio

    from areal.api.cli_args import GenerationHyperparameters

    from memagent_workflow.eval.baseline import BaselineEvalWorkflow
    from tests.fakes import FakeEngine

    wf = BaselineEvalWorkflow(
        GenerationHyperparameters(max_tokens=800), str(tiny_model_dir),
        chunk_tokens=64, max_memory_tokens=32,
        max_final_tokens=FakeEngine.final_budget, mode=mode, engine_retry_s=0,
    )  # fmt: skip
    item = {"id": "q", "question": "Which?", "context": "word1 " * 900}
    item["answers"] = ["Paris"]
    engine = FakeEngine(wf.tokenizer, lambda ep: "\\boxed{Paris}")
    rec = asyncio.run(wf.arun_episode(engine, item))
    assert (rec["error"], rec["sub_em"], rec["mode"]) == (None, 1.0, mode)
    assert len(engine.requests) == 1 and rec["n_chunks"] == (mode == "full_context")
    assert (rec["cut_tokens"] > 0) == (mode == "full_context")
    assert rec["output_tokens"] == len(engine.tokenizer.encode("\\boxed{Paris}")) + 1
    down = FakeEngine(wf.tokenizer, str, fail_for={0})
    failed = asyncio.run(wf.arun_episode(down, item))
    assert "engine failure" in failed["error"] and failed["prediction"] is None
    assert failed["mode"] == mode and failed["cut_tokens"] == rec["cut_tokens"]
    bad = asyncio.run(wf.arun_episode(engine, {**item, "question": ""}))
    assert "question" in bad["error"] and bad["cut_tokens"] is None
