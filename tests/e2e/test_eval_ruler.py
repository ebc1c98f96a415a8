"""docs/eval.md's CPU rows for RULER tasks and baselines, run as written against the
stand-in: MemAgent on every RULER task, then full_context and no_context, all into
one output folder and one table. Test-only overrides are appended (scratch
folders, the session's tiny model, 2 samples per file, RULER-HQA at N=12)."""

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
CHUNK, WINDOW, FINAL = 256, 1024, 32  # config_eval_cpu.yaml


@pytest.fixture(scope="module")
def run(tmp_path_factory, tiny_model_dir):
    root = tmp_path_factory.mktemp("eval_ruler")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TORCHDYNAMO_DISABLE": "1"}
    test_only = [
        f"eval.output_dir={root / 'out'}", f"eval.data_root={root / 'hqa'}",
        f"eval.ruler_data_root={root / 'ruler'}", "eval.lengths=[12]",
        "standin.synthetic_eval=2", f"actor.path={tiny_model_dir}",
        f"cluster.fileroot={root / 'areal'}",
        f"cluster.name_resolve.nfs_record_root={root / 'name_resolve'}",
    ]  # fmt: skip
    for i, cmd in enumerate(blocks()[1]):
        assert cmd[:3] == ["uv", "run", "python"]
        full = [sys.executable, *cmd[3:], *test_only, f"seed={300 + i}"]
        done = subprocess.run(full, cwd=REPO, env=env, capture_output=True, timeout=900)
        assert done.returncode == 0, done.stderr.decode()[-3000:]
    return root


def test_ruler_files_fit_the_tiny_models_tokens(run, tiny_model_dir):
    from memagent_workflow.workflow import load_tokenizer

    tok = load_tokenizer(str(tiny_model_dir))
    files = sorted((run / "ruler").iterdir())
    assert [p.name for p in files] == sorted(f"eval_{t}_1024.json" for t in PAPER_TASKS)
    for path in files:
        for s in json.loads(path.read_text()):
            n = len(tok.encode(s["question"], add_special_tokens=False))
            n += len(tok.encode(s["context"], add_special_tokens=False))
            assert s["length"] == n + TASKS[s["task"]].tokens_to_generate
            assert 0.98 * 1024 <= s["length"] <= 1024


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
        recs = results.read_records(out / f"{task}_1024{suffix}.jsonl")
        samples = {
            s["id"]: s
            for s in json.loads((run / "ruler" / f"eval_{task}_1024.json").read_text())
        }
        assert row["n"] == len(recs) == 2 and row["failures"] == 0
        want = [contains_score(r["boxed"], r["answers"], task) for r in recs.values()]
        assert row["score"] == pytest.approx(100 * sum(want) / len(want))
        for sid, rec in recs.items():
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
            assert row["cut_samples"] == 2
    no_ctx = results.read_records(out / "length_12.no_context.jsonl")
    assert len(no_ctx) == 2 and all(r["context_tokens"] == 0 for r in no_ctx.values())


def test_one_table_labels_every_row(run):
    text = (run / "out" / "results.md").read_text()
    for task in PAPER_TASKS:
        for mode in ("memagent", "full_context"):
            assert f"| {task} | {mode} | " in text
    assert (
        "| full_context | 12 | 2 | 0 |" in text
        and "| no_context | 12 | 2 | 0 |" in text
    )
    assert "| **NIAH average** | memagent |" in text
    assert (run / "out" / "accuracy.png").stat().st_size > 10_000
