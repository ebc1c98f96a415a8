"""RULER-HQA evaluation: metrics, result files, the eval workflow, and the eval
script end to end (killed with SIGKILL mid-run, then resumed) on the CPU stand-in."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memagent_workflow.data.synthetic import make_synthetic
from memagent_workflow.eval import report, results
from tests.browser import chromium, trace_page_problems

REPO = Path(__file__).resolve().parents[2]

# ------------------------------------------------------------------ metrics


@pytest.mark.parametrize(
    "prediction, sub, em, f1",
    [
        ("so the answer is \\boxed{Paris}", 1.0, 1.0, 1.0),
        ("\\boxed{the paris.}", 1.0, 1.0, 1.0),  # normalised: case, article, dot
        ("\\boxed{Paris, France}", 1.0, 0.0, 0.67),  # gold inside; F1 rounded
        ("\\boxed{Par}", 1.0, 0.0, 0.0),  # prediction inside the gold (lenient)
        ("\\boxed{London}", 0.0, 0.0, 0.0),
        ("Paris", 0.0, 0.0, 0.0),  # right text but no box: scores 0
        ("\\boxed{}", 0.0, 0.0, 0.0),  # an empty box is no answer
    ],
)
def test_record_scores_the_boxed_answer(prediction, sub, em, f1):
    rec = results.make_record("q", ["Paris"], prediction, n_chunks=2)
    assert (rec["sub_em"], rec["em"]) == (sub, em)
    assert rec["f1"] == pytest.approx(f1)
    assert list(rec) == list(results.RECORD_KEYS)


def test_failed_record_scores_zero_and_keeps_its_reason():
    rec = results.make_record("q", ["Paris"], None, error="boom")
    assert rec["extracted"] is None and rec["error"] == "boom"
    assert rec["sub_em"] == rec["em"] == rec["f1"] == 0.0 and rec["counted"]


@pytest.mark.parametrize("protocol", ["boxed", "answer_is"])
def test_an_empty_output_is_counted_in_neither_denominator(protocol):
    good = "Therefore, the answer is x" if protocol == "answer_is" else "\\boxed{x}"
    recs = [
        results.make_record("a", ["x"], good, protocol=protocol),
        results.make_record("b", ["x"], "", protocol=protocol),  # skipped
        results.make_record("c", ["x"], "no answer", protocol=protocol),
        results.make_record("d", ["x"], None, protocol=protocol, error="down"),
    ]
    assert [r["counted"] for r in recs] == [True, False, True, True]
    row = results.summarize_length(50, {results.sample_key(r): r for r in recs})
    assert (row["n"], row["empty"], row["failures"], row["non_failed"]) == (4, 1, 1, 2)
    assert row["sub_em"] == pytest.approx(100 / 3)  # a, c, d (d wrong)
    assert row["sub_em_non_failed"] == pytest.approx(50.0)  # a, c: the original's


def test_repeats_give_mean_std_and_best_of_n():
    # 2 questions x 3 repeats: repeat 0 gets 2/2, repeat 1 1/2, repeat 2 0/2.
    right = {(0, "a"), (0, "b"), (1, "a")}
    recs = [
        results.make_record(
            i, ["x"], "\\boxed{x}" if (k, i) in right else "\\boxed{y}", repeat=k
        )
        for k in range(3)
        for i in "ab"
    ]
    recs = {results.sample_key(r): r for r in recs}
    row = results.summarize_length(50, recs, ["a", "b", "c"], n_samples=3)
    assert (row["n"], row["repeats"], row["missing"]) == (6, 3, 3)  # c x 3 missing
    assert row["sub_em"] == pytest.approx(50.0)  # 3 of 6 samples
    assert row["sub_em_std"] == pytest.approx(50.0)  # stdev(100, 50, 0)
    assert row["sub_em_best"] == 100.0 and row["sub_em_non_failed_best"] == 100.0
    one = results.summarize_length(50, recs, ["a", "b"], n_samples=1)
    assert one["n"] == 2 and one["sub_em_std"] is None and one["sub_em_best"] == 100.0


# ------------------------------------------------------------------ files


def test_last_line_per_id_wins_and_a_torn_tail_is_cut(tmp_path):
    path = tmp_path / "length_50.jsonl"
    with results.ResultWriter(path) as w:
        w.write(results.make_record("a", ["x"], None, error="timeout"))
        w.write(results.make_record("b", ["x"], "\\boxed{x}"))
    with path.open("ab") as f:
        f.write(b'{"id": "a", "predic')  # a kill in the middle of a write
    assert results.read_records(path)[("a", 0)]["error"] == "timeout"
    with results.ResultWriter(path) as w:
        w.write(results.make_record("a", ["x"], "\\boxed{x}"))
    lines = path.read_text().splitlines()
    assert [json.loads(s)["id"] for s in lines] == ["a", "b", "a"]
    recs = results.read_records(path)
    assert results.scored_ids(recs) == {("a", 0), ("b", 0)}
    assert recs[("a", 0)]["sub_em"] == 1.0


def test_summary_counts_failures_and_missing_in_the_denominator(tmp_path):
    recs = {
        "a": results.make_record("a", ["x"], "\\boxed{x}", n_chunks=2),
        "b": results.make_record("b", ["x"], "\\boxed{y}", n_chunks=4),
        "c": results.make_record("c", ["x"], None, error="engine down"),
    }
    timing = [{"length": 50, "wall_s": 2.0, "samples": 3, "output_tokens": 100}]
    row = results.summarize_length(50, recs, ["a", "b", "c", "d"], timing)
    assert (row["n"], row["failures"], row["missing"]) == (3, 1, 1)
    assert row["non_failed"] == 2
    assert row["sub_em"] == pytest.approx(100 / 3)  # failures count as wrong
    assert row["sub_em_non_failed"] == pytest.approx(50.0)  # the original's way
    assert row["em_non_failed"] == pytest.approx(50.0)
    assert row["mean_chunks"] == 3.0 and row["tokens_per_s"] == 50.0


def test_report_shows_both_denominators(tmp_path):
    recs = {
        "a": results.make_record("a", ["x"], "\\boxed{x}"),
        "b": results.make_record("b", ["x"], None, error="engine down"),
        "c": results.make_record("c", ["x"], None, error="engine down"),
        "d": results.make_record("d", ["x"], "\\boxed{y}"),
    }
    rows = [results.summarize_length(50, recs)]
    summary = {"meta": {"denominators": "..."}, "lengths": rows}
    text = report.results_markdown(summary)
    # n 4, 2 failed: 1 right of 4 (all) = 25%, 1 right of 2 (non-failed) = 50%
    assert (
        "| 50 | 7K | 4 | 1 | 2 | 0 | - | 25.00 | 50.00 | 25.00 | 25.00 | 50.00 |"
        in text
    )
    assert "| **this run** | | mean (all) | 25.00 |" in text
    assert "| this run | | mean (non-failed) | 50.00 |" in text
    assert "sub-EM (all) | sub-EM (non-failed) | sub-EM best-of-n (all)" in text
    # the original's denominator as the headline: its columns come first
    summary["meta"]["headline"] = "non_failed"
    text = report.results_markdown(summary)
    assert (
        "| 50 | 7K | 4 | 1 | 2 | 0 | - | 50.00 | 25.00 | 50.00 | 50.00 | 25.00 |"
        in text
    )
    assert "| **this run** | | mean (non-failed) | 50.00 |" in text


def test_report_sets_our_row_beside_the_paper(tmp_path, monkeypatch):
    import matplotlib.image
    from matplotlib.figure import Figure

    def rec(i, pred, tokens):
        return results.make_record(i, ["x"], pred, n_chunks=2, context_tokens=tokens)

    rows = [
        results.summarize_length(
            50, {"a": rec("a", "\\boxed{x}", 6000), "b": rec("b", "\\boxed{y}", 8000)}
        ),
        results.summarize_length(100, {"a": rec("a", "\\boxed{x}", 14500)}),
    ]
    summary = {"meta": {"label": "mine"}, "lengths": rows}
    figures = []
    save = Figure.savefig
    monkeypatch.setattr(
        Figure,
        "savefig",
        lambda fig, *a, **k: (figures.append(fig), save(fig, *a, **k)),
    )
    md, png = report.write_report(summary, tmp_path)
    text = md.read_text()
    assert "| **this run** | | mean (all) | 50.00 | 100.00 |" in text
    v1 = "MemAgent paper v1 (arXiv 2507.02259v1)"
    assert f"| RL-MemAgent-14B | {v1} | 1 sample | 83.59 | 82.03 |" in text
    # the plot: our line at (mean context tokens, sub-EM), beside the anchors
    (ax,) = figures[0].axes
    lines = {line.get_label(): line.get_xydata().tolist() for line in ax.get_lines()}
    assert lines["mine (mean, all)"] == [[7000, 50], [14500, 100]]
    qwen = next(a for a in report.ANCHOR_ROWS if a.name == "Qwen2.5-7B-Instruct-1M")
    assert lines[qwen.label] == [
        [report.PAPER_TOKENS[n], v] for n, v in qwen.values.items() if v is not None
    ]
    assert set(lines) == {"mine (mean, all)", *(a.label for a in report.ANCHOR_ROWS)}
    assert ax.get_xscale() == "log"
    assert matplotlib.image.imread(png).shape == (660, 840, 4)  # a whole PNG


# ------------------------------------------------------------ eval workflow


@pytest.fixture(scope="module")
def eval_workflow(tiny_model_dir):
    from areal.api.cli_args import GenerationHyperparameters

    from memagent_workflow.eval.workflow import MemAgentEvalWorkflow

    def make(**kw):
        args = dict(
            gconfig=GenerationHyperparameters(max_tokens=4096),
            tokenizer=str(tiny_model_dir),
            chunk_tokens=40,
            max_memory_tokens=16,
            max_final_tokens=64,  # FakeEngine.final_budget
            engine_retry_s=0,  # a failed call fails the episode at once
        )
        return MemAgentEvalWorkflow(**{**args, **kw})

    return make


SAMPLE = make_synthetic(1, seed=3, num_docs=6)[0]


def fake_engine(workflow, answer, fail_for=()):
    from tests.fakes import FakeEngine

    return FakeEngine(workflow.tokenizer, lambda ep: answer, fail_for=fail_for)


def test_eval_workflow_returns_one_scored_record(eval_workflow):
    wf = eval_workflow()
    gold = SAMPLE["answers"][0]
    engine = fake_engine(wf, f"It is \\boxed{{{gold}}}")
    rec = asyncio.run(wf.arun_episode(engine, SAMPLE))
    assert rec["error"] is None and rec["sub_em"] == 1.0 and rec["id"] == SAMPLE["id"]
    assert rec["n_chunks"] == len(engine.requests) - 1  # one memory turn per chunk


def test_eval_workflow_records_a_failed_episode_without_running_it_again(
    eval_workflow,
):
    wf = eval_workflow()
    # Episode 0 fails: no second episode; the record carries the error.
    engine = fake_engine(wf, "x", {0})
    rec = asyncio.run(wf.arun_episode(engine, SAMPLE))
    assert rec["error"].startswith("episode failed: RuntimeError: engine failure")
    assert rec["sub_em"] == 0 and rec["id"] == SAMPLE["id"]
    assert set(engine.episodes.values()) == {0}  # one episode, not retried
    # Retries belong to the model calls (memagent.engine_retry_s) and to a rerun.
    engine = fake_engine(wf, "\\boxed{x}")
    assert asyncio.run(wf.arun_episode(engine, SAMPLE))["error"] is None


def test_eval_workflow_never_cuts_a_document(eval_workflow):
    wf = eval_workflow(max_chunks=1)
    rec = asyncio.run(wf.arun_episode(fake_engine(wf, "\\boxed{x}"), SAMPLE))
    assert "max_chunks=1" in rec["error"] and rec["n_chunks"] > 1


def test_eval_workflow_reports_a_malformed_sample(eval_workflow):
    wf = eval_workflow()
    bad = {"id": "q9", "question": "", "context": "c", "answers": ["a"]}
    rec = asyncio.run(wf.arun_episode(fake_engine(wf, "x"), bad))
    assert rec["id"] == "q9" and "question" in rec["error"]


# ------------------------------------------------------------ configs, refusals


def load_eval_config(tmp_path, name="config_eval_cpu.yaml", *overrides):
    """The config as its entry loads it (a CPU config: the stand-in's)."""
    if "cpu" in name:
        from standin.eval import load_config
    else:
        from examples.eval import load_config

    args = [
        "--config",
        str(REPO / name),
        f"cluster.fileroot={tmp_path / 'areal'}",
        f"cluster.name_resolve.nfs_record_root={tmp_path / 'name_resolve'}",
    ]
    return load_config(args + list(overrides))


def test_gpu_eval_config_is_the_original_protocol(tmp_path):
    cfg = load_eval_config(tmp_path, "config_eval.yaml", "scheduler.type=local")
    assert (cfg.gconfig.temperature, cfg.gconfig.top_p) == (0.7, 0.95)
    mem = cfg.memagent
    assert (mem.chunk_tokens, mem.max_memory_tokens, mem.max_final_tokens) == (
        5000,
        1024,
        1024,
    )
    assert mem.max_chunks is None and cfg.eval.concurrency == 256
    assert cfg.actor.path == "Qwen/Qwen2.5-7B-Instruct"
    turn = 1024 + mem.max_memory_tokens + mem.chunk_tokens + mem.max_final_tokens
    assert cfg.sglang.context_length >= cfg.gconfig.max_tokens >= turn


def test_eval_section_overrides_from_the_command_line(tmp_path):
    cfg = load_eval_config(
        tmp_path, "config_eval_cpu.yaml", "eval.lengths=[50,800]", "eval.resume=false"
    )
    assert cfg.eval.lengths == [50, 800] and cfg.eval.resume is False


def write_eval_file(root: Path, n: int, samples: list) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / f"eval_{n}.json").write_text(json.dumps(samples))


def test_refuses_missing_and_malformed_eval_files(tmp_path):
    from memagent_workflow.eval.checks import EvalRefused, scan_lengths

    data = tmp_path / "data"
    cfg = load_eval_config(tmp_path, "config_eval_cpu.yaml", f"eval.data_root={data}")
    cfg.eval.lengths = [8]
    with pytest.raises(EvalRefused, match=r"no eval file for RULER-HQA N=\[8\]"):
        scan_lengths(cfg)
    bad = {"id": "q", "input": "Q?", "context": [1, 2], "answers": ["a"]}
    write_eval_file(data, 8, [bad])
    with pytest.raises(EvalRefused, match="document indices"):
        scan_lengths(cfg)


def test_a_chunk_cap_below_what_a_sample_needs_is_refused(tmp_path, tiny_model_dir):
    from memagent_workflow.eval.checks import EvalRefused, scan_lengths

    data = tmp_path / "data"
    write_eval_file(data, 8, make_synthetic(2, seed=1, num_docs=8))
    overrides = [f"eval.data_root={data}", f"actor.path={tiny_model_dir}"]
    cfg = load_eval_config(tmp_path, "config_eval_cpu.yaml", *overrides)
    cfg.eval.lengths = [8]
    ids, kinds = scan_lengths(cfg)
    assert set(ids[8]) == {"synthetic-1-0", "synthetic-1-1"} and kinds == {8: None}
    cfg.memagent.max_chunks = 1
    with pytest.raises(EvalRefused, match="more than memagent.max_chunks=1"):
        scan_lengths(cfg)


def test_resume_into_another_models_results_is_refused(tmp_path):
    from memagent_workflow.eval.checks import EvalRefused, prepare_output

    out = tmp_path / "out"
    cfg = load_eval_config(tmp_path, "config_eval_cpu.yaml", f"eval.output_dir={out}")
    prepare_output(cfg)
    (out / "length_50.jsonl").write_text("{}\n")
    cfg.actor.path = "another/model"
    with pytest.raises(EvalRefused, match="different setup"):
        prepare_output(cfg)
    cfg.eval.resume = False  # a fresh start moves the old results aside
    prepare_output(cfg)
    assert (out / "length_50.jsonl.bak").is_file()
    assert not (out / "length_50.jsonl").exists()


# ------------------------------------------------------------ eval script


def eval_cmd(data_root: Path, out: Path, model: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "standin.eval", "--config", "config_eval_cpu.yaml",
        f"eval.data_root={data_root}", "eval.lengths=[12,24]",
        f"eval.output_dir={out}", f"actor.path={model}", "eval.concurrency=2",
        f"cluster.fileroot={out.parent / 'areal'}",
        f"cluster.name_resolve.nfs_record_root={out.parent / 'name_resolve'}", *extra,
    ]  # fmt: skip


def children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


PRESEEDED = "PRESEEDED \\boxed{new york city}"


@pytest.fixture(scope="module")
def killed_then_resumed(tmp_path_factory, tiny_model_dir):
    """Run eval.py, SIGKILL it once a few samples are written, run it again."""
    root = tmp_path_factory.mktemp("eval")
    data, out = root / "data", root / "out"
    data.mkdir()
    for n, count in ((12, 16), (24, 3)):
        samples = make_synthetic(count, seed=n, num_docs=n)
        (data / f"eval_{n}.json").write_text(json.dumps(samples))
    ids12 = [s["id"] for s in json.loads((data / "eval_12.json").read_text())]
    # A scored sample from an earlier run is kept; a failed one is retried.
    out.mkdir()
    with results.ResultWriter(out / "length_12.jsonl") as w:
        # sub-EM 1, EM 0, F1 0.8: the summary must tell the three apart
        w.write(results.make_record(ids12[0], ["new york"], PRESEEDED, n_chunks=3))
        w.write(results.make_record(ids12[1], ["a"], None, error="earlier failure"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TORCHDYNAMO_DISABLE": "1"}
    cmd = eval_cmd(data, out, tiny_model_dir)
    log = (root / "run1.log").open("wb")
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=log)
    jsonl, deadline = out / "length_12.jsonl", time.monotonic() + 240
    while len(jsonl.read_bytes().splitlines()) < 5 and proc.poll() is None:
        assert time.monotonic() < deadline, "eval.py wrote no results in time"
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.fail(f"eval.py exited early:\n{(root / 'run1.log').read_text()[-3000:]}")
    kids = children(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    lines_at_kill = len(jsonl.read_bytes().splitlines())
    deadline = time.monotonic() + 20
    while any(map(alive, kids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    orphans = [k for k in kids if alive(k)]
    for k in orphans:
        os.kill(k, signal.SIGKILL)
    run2 = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, timeout=300)
    assert run2.returncode == 0, run2.stderr.decode()[-3000:]
    return {
        "out": out,
        "data": data,
        "ids": {12: ids12, 24: [f"synthetic-24-{i}" for i in range(3)]},
        "lines_at_kill": lines_at_kill,
        "orphans": orphans,
        "children": kids,
    }


def test_kill_left_work_and_no_server_behind(killed_then_resumed):
    r = killed_then_resumed
    assert 5 <= r["lines_at_kill"] < 18, "the kill came too late to test resume"
    assert r["children"], "the stand-in server was not started as a child"
    assert not r["orphans"], "the stand-in server outlived the killed eval process"


def test_resume_writes_every_id_exactly_once(killed_then_resumed):
    out, ids = killed_then_resumed["out"], killed_then_resumed["ids"]
    lines = [json.loads(s) for s in (out / "length_12.jsonl").read_text().splitlines()]
    scored = [rec["id"] for rec in lines if rec["error"] is None]
    assert sorted(scored) == sorted(ids[12])  # no id missing, none scored twice
    # Every line parses (a torn tail was cut) and only the failed id has two lines.
    assert len(lines) == len(ids[12]) + 1 and lines[1]["error"] == "earlier failure"
    recs = results.read_records(out / "length_12.jsonl")  # keys: (id, repeat)
    assert recs[ids[12][0], 0]["prediction"] == PRESEEDED  # skipped
    assert recs[ids[12][1], 0]["error"] is None  # retried, superseding the failure
    assert set(results.read_records(out / "length_24.jsonl")) == {
        (i, 0) for i in ids[24]
    }


def test_summary_matches_the_jsonl(killed_then_resumed, tiny_model_dir):
    import yaml

    from memagent_workflow.workflow import load_tokenizer

    out, ids = killed_then_resumed["out"], killed_then_resumed["ids"]
    tokenizer = load_tokenizer(str(tiny_model_dir))
    config = yaml.safe_load((REPO / "config_eval_cpu.yaml").read_text())
    chunk = config["memagent"]["chunk_tokens"]
    data = killed_then_resumed["data"]
    summary = json.loads((out / "summary.json").read_text())
    name_of = {"n_chunks": "mean_chunks", "context_tokens": "mean_context_tokens"}
    assert [r["length"] for r in summary["lengths"]] == [12, 24]
    for row in summary["lengths"]:
        n = row["length"]
        recs = results.read_records(out / f"length_{n}.jsonl")
        assert row["n"] == len(recs) == len(ids[n]) and row["missing"] == 0
        assert row["failures"] == sum(r["error"] is not None for r in recs.values())
        assert row["failures"] == 0
        # each sample's chunks and context tokens, from the eval file itself
        samples = json.loads((data / f"eval_{n}.json").read_text())
        for sample in samples:
            if sample["id"] == ids[12][0]:
                continue  # the preseeded record was skipped, as written
            rec = recs[sample["id"], 0]
            tokens = len(tokenizer.encode(sample["context"], add_special_tokens=False))
            want = (tokens, -(-tokens // chunk))
            assert (rec["context_tokens"], rec["n_chunks"]) == want
        for key in ("sub_em", "em", "f1", "n_chunks", "context_tokens"):
            # an empty output (possible from a random model) is in no accuracy
            rows = [r for r in recs.values() if r["counted"] or key in name_of]
            total = sum(r[key] for r in rows if r[key] is not None)
            count = sum(r[key] is not None for r in rows)
            name = name_of
            scale = 100 if key in ("sub_em", "em", "f1") else 1
            assert row[name.get(key, key)] == pytest.approx(scale * total / count), key
            if key in ("sub_em", "em", "f1"):  # nothing failed: both denominators agree
                assert row[f"{key}_non_failed"] == pytest.approx(row[key])
        assert row["wall_s"] > 0 and row["tokens_per_s"] > 0
    # the preseeded record's scores (sub-EM 1, EM 0, F1 0.8) are in the length-12 row
    row12 = summary["lengths"][0]
    assert row12["sub_em"] >= 100 / 16 and row12["f1"] >= 80 / 16
    assert row12["sub_em"] != row12["em"] != row12["f1"]
    assert (out / "results.md").is_file() and (out / "accuracy.png").is_file()


# ------------------------------------------------------------ memory traces


def test_every_scored_sample_has_its_trace_turn_by_turn(killed_then_resumed):
    from memagent_workflow.eval import trace

    out, ids = killed_then_resumed["out"], killed_then_resumed["ids"]
    summary = json.loads((out / "summary.json").read_text())
    for row in summary["lengths"]:
        n = row["length"]
        recs = results.read_records(out / f"length_{n}.jsonl")
        traces = trace.read_traces(out / f"length_{n}.jsonl")
        ran = {k for k in recs if not (n == 12 and k == (ids[12][0], 0))}
        assert ran <= set(traces)  # the preseeded record was never run: no trace
        for key in ran:
            t, rec = traces[key], recs[key]
            assert len(t["turns"]) == rec["n_chunks"] == t["n_chunks"]
            assert [x["chunk"] for x in t["turns"]] == list(range(rec["n_chunks"]))
            assert t["turns"][-1]["end"] == rec["context_tokens"]
            assert t["answered"] == (rec["sub_em"] == 1.0)
        m = row["memory"]
        # an empty output (possible from a random model) is left out, as sub-EM
        empty = sum(not recs[k]["counted"] for k in ran)
        assert (m["traced"], m["empty"]) == (len(ran) - empty, empty)
        wrong = 100 - m["answered"]
        split = m["never_caught"] + m["caught_then_lost"] + m["held_but_wrong"]
        assert split == pytest.approx(wrong)
    assert "## Memory: where the answer was caught" in (out / "results.md").read_text()


@pytest.mark.skipif(
    chromium() is None and not os.environ.get("MEMAGENT_REQUIRE_BROWSER"),
    reason="chromium missing (.ci/run installs it and requires this test)",
)
def test_the_trace_page_renders_in_a_browser(killed_then_resumed, tmp_path):
    page = killed_then_resumed["out"] / "trace.html"
    assert trace_page_problems(page, tmp_path / "profile") == []
