"""The eval entrypoint against a stand-in server failing ~10% of its calls.

Retries live in one layer, the model call (``memagent.engine_retry_s``); an
episode that fails anyway is recorded with its error, not run again. With that
layer (and AReaL's client retries) turned off, each injected fault must cost
exactly one sample, recorded with its error; the rerun, with model calls
retried, must fill those in (under the same faults) and leave the scored
samples alone.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from memagent_workflow.data.synthetic import make_synthetic
from memagent_workflow.eval import results
from standin.launch import StandinServer

REPO = Path(__file__).resolve().parents[2]
FAULTS = "error=0.04,reset=0.03,delay=0.03,delay_s=3,seed=7"
N, SAMPLES = 12, 8


def evaluate(root: Path, server: StandinServer, model: Path, *overrides: str) -> None:
    from standin.eval import evaluate, load_config

    config = load_config(
        [
            "--config", str(REPO / "config_eval_cpu.yaml"),
            f"eval.data_root={root / 'data'}", f"eval.lengths=[{N}]",
            f"eval.output_dir={root / 'out'}", f"actor.path={model}",
            "eval.concurrency=2", f"+standin.server_addr={server.addr}",
            "memagent.max_memory_tokens=8", "memagent.max_final_tokens=8",
            "gconfig.max_new_tokens=8", "rollout.request_timeout=2",
            f"cluster.fileroot={root / 'areal'}",
            f"cluster.name_resolve.nfs_record_root={root / 'name_resolve'}",
            *overrides,
        ]
    )  # fmt: skip
    evaluate(config)


@pytest.fixture(scope="module")
def runs(tiny_model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("eval_faults")
    (root / "data").mkdir()
    samples = make_synthetic(SAMPLES, seed=N, num_docs=N)
    (root / "data" / f"eval_{N}.json").write_text(json.dumps(samples))
    log = root / "events.jsonl"
    server = StandinServer(
        tiny_model_dir, log_file=root / "server.log",
        extra_args=["--faults", FAULTS, "--event-log", str(log)],
    )  # fmt: skip
    jsonl = root / "out" / f"length_{N}.jsonl"
    with server:
        no_retries = ("+rollout.request_retries=1", "memagent.engine_retry_s=0")
        evaluate(root, server, tiny_model_dir, *no_retries)
        first = results.read_records(jsonl)
        lines_first = len(jsonl.read_text().splitlines())
        rerun_at = time.time()
        evaluate(root, server, tiny_model_dir, "memagent.engine_retry_s=10")
    time.sleep(0.1)
    events = [json.loads(x) for x in log.read_text().splitlines()]
    faults = [e for e in events if e["path"] == "/generate" and e["fault"]]
    return {
        "ids": [s["id"] for s in samples],
        "first": first,
        "lines_first": lines_first,
        "final": results.read_records(jsonl),
        "lines_final": len(jsonl.read_text().splitlines()),
        "faults_first": [e for e in faults if e["t"] < rerun_at],
        "faults_rerun": [e for e in faults if e["t"] >= rerun_at],
        "summary": json.loads((root / "out" / "summary.json").read_text()),
    }


def test_without_retries_each_fault_costs_one_sample_recorded_with_its_error(runs):
    first = runs["first"]
    # the run finished every sample (keys: (id, repeat); one repeat here)
    assert sorted(first) == sorted((i, 0) for i in runs["ids"])
    failed = {i: r["error"] for i, r in first.items() if r["error"] is not None}
    assert len(failed) == len(runs["faults_first"]) >= 1
    assert {e["fault"] for e in runs["faults_first"]} <= {"error", "reset", "delay"}
    # each an episode that failed once and was not run again
    assert all(why.startswith("episode failed: ") for why in failed.values())


def test_the_rerun_fills_in_the_failed_samples_under_the_same_faults(runs):
    assert runs["faults_rerun"], "no fault hit the rerun: it proves nothing"
    final = runs["final"]
    assert sorted(final) == sorted((i, 0) for i in runs["ids"])
    assert all(r["error"] is None for r in final.values())
    n_failed = sum(r["error"] is not None for r in runs["first"].values())
    # Only the failed samples were run again; the scored ones were kept as they were.
    assert runs["lines_final"] == runs["lines_first"] + n_failed
    for i, rec in runs["first"].items():
        if rec["error"] is None:
            assert final[i] == rec
    (row,) = runs["summary"]["lengths"]
    assert row["n"] == SAMPLES and row["failures"] == 0 and row["missing"] == 0
