"""The eval entry (``python -m standin.eval``: ``examples/eval.py`` with the stand-in)
under AReaL's single controller on SGLang gives what the plain run gives on vLLM.

The same command twice on the same questions and model, greedy so the answers
are deterministic: once plain (the script serves the model itself) with
``rollout.backend=vllm:d1``, through AReaL's `RemotevLLMEngine` and the
stand-in's vLLM mode, and once with ``scheduler.type=local`` on SGLang, where
AReaL's scheduler starts a rollout worker that launches the stand-in, exactly as
it launches SGLang on GPU (``config_eval.yaml ... scheduler.type=local`` in
docs/eval.md). Every answer, score, memory turn and summary field but the
timings must agree: the eval reads the two engines' replies alike.
"""

from __future__ import annotations

import getpass
import json
import sys

import pytest

from memagent_workflow.data.synthetic import make_synthetic
from memagent_workflow.eval import results, trace
from tests.e2e.launch_runs import EVAL_LAUNCH, VLLM, Launched

LENGTH = 12  # documents per sample
# Files every run leaves in eval.output_dir; the plain run also keeps its
# stand-in's log there.
RESULT_FILES = {
    f"length_{LENGTH}.jsonl",
    f"length_{LENGTH}.trace.jsonl",  # eval.trace: from the workers too
    "trace.html",
    "summary.json",
    "results.md",
    "accuracy.png",
    "timing.jsonl",
    "run_config.json",
}


def start(root, model, name, *overrides) -> Launched:
    out = root / name
    cmd = [
        sys.executable, "-m", "standin.eval", "--config", "config_eval_cpu.yaml",
        f"eval.data_root={root / 'data'}", f"eval.lengths=[{LENGTH}]",
        f"eval.output_dir={out / 'results'}", f"actor.path={model}",
        "eval.concurrency=1", "gconfig.greedy=true",  # deterministic answers
        f"cluster.fileroot={out / 'areal'}",
        f"cluster.name_resolve.nfs_record_root={out / 'name_resolve'}",
        *overrides,
    ]  # fmt: skip
    return Launched(cmd, out)


@pytest.fixture(scope="module")
def runs(tiny_model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("eval_launch")
    (root / "data").mkdir()
    samples = make_synthetic(4, seed=LENGTH, num_docs=LENGTH)
    (root / "data" / f"eval_{LENGTH}.json").write_text(json.dumps(samples))
    # Both at once (each mostly waits on one core); seeds of their own, as AReaL
    # draws ports from Python's `random` seeded by `seed` (greedy answers do not
    # depend on it).
    plain = start(
        root, tiny_model_dir, "plain", "scheduler.type=null", "seed=201", VLLM
    )
    controller = start(root, tiny_model_dir, "controller", *EVAL_LAUNCH, "seed=202")
    return plain.finish(), controller.finish()


def records(run) -> dict[str, dict]:
    path = run.out / "results" / f"length_{LENGTH}.jsonl"
    return results.read_records(path)


def test_the_same_result_files(runs):
    for run in runs:
        names = {p.name for p in (run.out / "results").iterdir()}
        assert RESULT_FILES <= names, sorted(names)
        assert names - RESULT_FILES <= {"standin_server.log"}


def test_the_same_answers_and_scores(runs):
    plain, controller = map(records, runs)
    assert len(plain) == 4 and plain.keys() == controller.keys()
    for sid, want in plain.items():
        got = controller[sid]
        assert got["error"] is None and want["error"] is None
        for key in ("prediction", "sub_em", "em", "f1", "n_chunks", "output_tokens"):
            assert got[key] == want[key], (sid, key)


def test_the_workers_traces_landed_complete_and_the_same(runs):
    plain, controller = (
        trace.read_traces(r.out / "results" / f"length_{LENGTH}.jsonl") for r in runs
    )
    assert plain.keys() == records(runs[0]).keys()  # a trace per scored sample
    for key, want in plain.items():
        # one turn per chunk, each with the memory it wrote (or null: unchanged)
        assert len(want["turns"]) == want["n_chunks"] > 1, key
        assert want["turns"][0]["memory"] is not None and want["evidence_chunks"]
        # greedy: the same memory, turn by turn (each run's own attempt ids)
        assert {**controller[key], "attempt": 0} == {**want, "attempt": 0}, key


def test_the_same_summary(runs):
    plain, controller = (
        json.loads((r.out / "results" / "summary.json").read_text()) for r in runs
    )
    timing = {"wall_s", "tokens_per_s"}  # the only fields that may differ
    assert plain["lengths"][0]["memory"]["traced"] == 4  # the split, from traces
    for want, got in zip(plain["lengths"], controller["lengths"], strict=True):
        assert {k: v for k, v in want.items() if k not in timing} == {
            k: v for k, v in got.items() if k not in timing
        }


def test_the_controller_run_launched_the_stand_in_on_a_worker(runs):
    _, controller = runs
    logs = controller.out / "areal" / "logs" / getpass.getuser()
    log = (logs / "memagent-eval-cpu" / "trial0" / "eval-rollout.log").read_text()
    assert "standin.backend.StandinSGLangEngine" in log
    assert "CPU stand-in SGLang server on http://" in log


def test_the_plain_run_served_the_model_as_vllm(runs):
    plain, _ = runs
    log = (plain.out / "results" / "standin_server.log").read_text()
    assert "CPU stand-in vLLM (AReaL's extension) server" in log
