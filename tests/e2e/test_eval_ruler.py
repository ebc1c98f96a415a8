"""docs/eval-ruler.md's CPU rows for RULER tasks and baselines, run as written against the
stand-in: MemAgent on every RULER task, then full_context and no_context, all into
one output folder and one table. Test-only overrides are appended to keep it cheap:
scratch folders, the session's tiny model, one sample per file, RULER-HQA at N=12,
RULER files at 768 tokens (the shortest at which every task fits the tiny model's
tokenizer: qa_1's documents need about 610 context tokens), a 640-token window for
full_context (so that those files are cut there; a memory turn of
config_eval_cpu.yaml needs 633) and two samples per question for no_context
(repeats in a baseline)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memagent_workflow.eval import results
from memagent_workflow.eval.ruler.tasks import PAPER_TASKS, TASKS
from tests.unit.test_eval_docs_ruler import blocks

REPO = Path(__file__).resolve().parents[2]
CHUNK = 256  # config_eval_cpu.yaml
LENGTH = 768  # RULER files: the shortest every task fits in the tiny model's tokens
PER_MODE = {  # test-only overrides of one command
    "full_context": ["gconfig.max_tokens=640"],
    "no_context": ["eval.n_samples=2"],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory, tiny_model_dir):
    root = tmp_path_factory.mktemp("eval_ruler")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TORCHDYNAMO_DISABLE": "1"}
    test_only = [
        f"eval.output_dir={root / 'out'}", f"eval.data_root={root / 'hqa'}",
        f"eval.ruler_data_root={root / 'ruler'}", "eval.lengths=[12]",
        "standin.synthetic_eval=1", f"eval.ruler_lengths=[{LENGTH}]",
        f"actor.path={tiny_model_dir}",
        f"cluster.fileroot={root / 'areal'}",
        f"cluster.name_resolve.nfs_record_root={root / 'name_resolve'}",
    ]  # fmt: skip
    for i, cmd in enumerate(blocks()[1]):
        assert cmd[:3] == ["uv", "run", "python"]
        mode = next((a.split("=")[1] for a in cmd if a.startswith("eval.mode=")), "")
        extra = PER_MODE.get(mode, [])
        full = [sys.executable, *cmd[3:], *test_only, *extra, f"seed={300 + i}"]
        done = subprocess.run(full, cwd=REPO, env=env, capture_output=True, timeout=900)
        assert done.returncode == 0, done.stderr.decode()[-3000:]
    return root


def test_ruler_files_fit_the_tiny_models_tokens(run, tiny_model_dir):
    from memagent_workflow.workflow import load_tokenizer

    tok = load_tokenizer(str(tiny_model_dir))
    files = sorted((run / "ruler").iterdir())
    assert [p.name for p in files] == sorted(
        f"eval_{t}_{LENGTH}.json" for t in PAPER_TASKS
    )
    for path in files:
        for s in json.loads(path.read_text()):
            n = len(tok.encode(s["question"], add_special_tokens=False))
            n += len(tok.encode(s["context"], add_special_tokens=False))
            assert s["length"] == n + TASKS[s["task"]].tokens_to_generate
            assert 0.98 * LENGTH <= s["length"] <= LENGTH


def contains_score(answer: str | None, golds: list[str], task: str) -> float:
    if answer is None:
        return 0.0
    found = [g.lower() in answer.lower() for g in golds]
    return (
        float(any(found))
        if TASKS[task].metric.endswith("part")
        else sum(found) / len(found)
    )


def test_one_summary_holds_every_task_and_mode(run, tiny_model_dir):
    from memagent_workflow.workflow import load_tokenizer

    tok = load_tokenizer(str(tiny_model_dir))
    out = run / "out"
    summary = json.loads((out / "summary.json").read_text())
    rows = {(r["task"], r["mode"]): r for r in summary["ruler"]}
    assert set(rows) == {
        (t, m) for t in PAPER_TASKS for m in ("memagent", "full_context")
    }
    hqa = {r["mode"]: r for r in summary["lengths"]}
    assert set(hqa) == {"full_context", "no_context"}
    for (task, mode), row in rows.items():
        suffix = "" if mode == "memagent" else f".{mode}"
        recs = results.read_records(out / f"{task}_{LENGTH}{suffix}.jsonl")
        samples = {
            s["id"]: s
            for s in json.loads(
                (run / "ruler" / f"eval_{task}_{LENGTH}.json").read_text()
            )
        }
        assert row["n"] == len(recs) == 1 and row["failures"] == 0
        want = [
            contains_score(r["extracted"], r["answers"], task) for r in recs.values()
        ]
        assert row["score"] == pytest.approx(100 * sum(want) / len(want))
        for (sid, _), rec in recs.items():
            tokens = len(tok.encode(samples[sid]["context"], add_special_tokens=False))
            assert (
                rec["context_tokens"] == tokens
                and rec["answers"] == samples[sid]["answers"]
            )
            if mode == "memagent":
                assert rec["n_chunks"] == -(-tokens // CHUNK)
            else:  # one turn: the context centre-cut to the window, the cut counted
                assert rec["n_chunks"] == 1 and rec["cut_tokens"] > 0
        if mode == "full_context":
            assert row["cut_samples"] == 1
    no_ctx = results.read_records(out / "length_12.no_context.jsonl")
    assert sorted(k for _, k in no_ctx) == [0, 1]  # one question, two repeats
    assert all(r["context_tokens"] == 0 for r in no_ctx.values())
    assert (hqa["no_context"]["n"], hqa["no_context"]["repeats"]) == (2, 2)


def test_one_table_labels_every_row(run):
    text = (run / "out" / "results.md").read_text()
    for task in PAPER_TASKS:
        for mode in ("memagent", "full_context"):
            assert f"| {task} | {mode} | " in text
    assert (
        "| full_context | 12 | 1 | 0 |" in text
        and "| no_context | 12 | 2 | 0 |" in text
    )
    assert "| **NIAH average** | memagent |" in text
    assert (run / "out" / "accuracy.png").stat().st_size > 10_000
