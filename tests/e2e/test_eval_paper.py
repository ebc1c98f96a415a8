"""``eval.preset=paper``: the paper's protocol in one override, end to end on the
CPU stand-in with docs/eval.md's command as written, plus its refusals."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memagent_workflow.data.synthetic import make_synthetic
from memagent_workflow.eval import results
from memagent_workflow.eval.sets import OFFICIAL_LENGTHS

REPO = Path(__file__).resolve().parents[2]
MARKER = "**The paper's protocol on CPU.**"


def doc_command() -> list[str]:
    """The CPU command under ``MARKER`` in docs/eval.md, as written."""
    text = (REPO / "docs" / "eval.md").read_text().split(MARKER, 1)[1]
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    joined = re.sub(r"\\\n\s*", " ", block)
    (line,) = [x.split("#", 1)[0].strip() for x in joined.splitlines() if x.strip()]
    return shlex.split(line)


def load(tmp_path, name, *overrides):
    from examples.eval import load_config

    return load_config(
        [
            "--config",
            str(REPO / name),
            f"cluster.fileroot={tmp_path / 'areal'}",
            f"cluster.name_resolve.nfs_record_root={tmp_path / 'name_resolve'}",
            *overrides,
        ]
    )


# ------------------------------------------------------------ the preset


def test_the_preset_sets_the_papers_protocol(tmp_path):
    cfg = load(tmp_path, "config_eval.yaml", "eval.preset=paper")
    assert cfg.eval.lengths == list(OFFICIAL_LENGTHS)  # 50 ... 25600 documents
    assert cfg.eval.headline == "non_failed" and cfg.eval.n_samples == 1
    assert cfg.memagent.answer_protocol == "answer_is"
    assert cfg.memagent.prompt_build == "text"  # as the original's eval sent them
    assert (cfg.gconfig.temperature, cfg.gconfig.top_p) == (0.7, 0.95)
    plain = load(tmp_path, "config_eval.yaml")
    assert plain.eval.lengths == [50, 100, 200, 400, 800, 1600, 3200, 6400]
    assert plain.eval.headline == "all" and plain.memagent.answer_protocol == "boxed"
    assert plain.memagent.prompt_build == "tokens"
    small = load(tmp_path, "config_eval.yaml", "eval.preset=paper", "eval.lengths=[50]")
    assert small.eval.lengths == [50]


def test_the_preset_takes_the_originals_prompts_or_refuses_other_sampling(tmp_path):
    from memagent_workflow.eval.checks import EvalRefused, check_preset

    cfg = load(tmp_path, "config_eval.yaml", "eval.preset=paper")
    assert cfg.memagent.prompts == "original-eval-answer_is"
    assert cfg.memagent.empty_memory == "keep"  # the original's eval sends "" on
    check_preset(cfg)
    prompts = "memagent.prompts=prompts/answer_is_example.yaml"
    hot = load(
        tmp_path,
        "config_eval.yaml",
        "eval.preset=paper",
        prompts,
        "gconfig.temperature=1.0",
    )
    with pytest.raises(EvalRefused, match="samples as the paper did"):
        check_preset(hot)


def test_the_preset_wants_official_sets_sharing_their_questions(tmp_path):
    from memagent_workflow.eval.checks import EvalRefused, check_official_questions

    cfg = load(tmp_path, "config_eval.yaml", "eval.preset=paper")
    ids = {50: {"1": ["a"], "2": ["b"]}, 100: {"1": ["a"], "2": ["b"]}}
    check_official_questions(cfg, ids, {50: None, 100: None})
    with pytest.raises(EvalRefused, match="RULER-HQA-style"):
        check_official_questions(cfg, ids, {50: None, 100: "RULER-HQA-style"})
    with pytest.raises(EvalRefused, match="does not ask the questions"):
        check_official_questions(cfg, {**ids, 100: {"1": ["a"]}}, {50: None, 100: None})


# ------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def paper_run(tmp_path_factory, tiny_model_dir):
    """docs/eval.md's CPU command, with a scored sample of an earlier run."""
    root = tmp_path_factory.mktemp("paper")
    data, out = root / "data", root / "out"
    data.mkdir()
    samples = {n: make_synthetic(4, seed=5, num_docs=n) for n in (50, 100)}
    for n, rows in samples.items():
        (data / f"eval_{n}.json").write_text(json.dumps(rows))
    first = samples[50][0]
    preseeded = f"Reasoning. Therefore, the answer is **{first['answers'][0]}**."
    out.mkdir()
    with results.ResultWriter(out / "length_50.jsonl") as w:
        w.write(
            results.make_record(
                first["id"], first["answers"], preseeded, protocol="answer_is", repeat=1
            )
        )
    cmd = doc_command()
    assert cmd[:3] == ["uv", "run", "python"]
    cmd = [sys.executable, *cmd[3:]] + [
        f"eval.data_root={data}",
        f"eval.output_dir={out}",
        f"actor.path={tiny_model_dir}",
        f"cluster.fileroot={root / 'areal'}",
        f"cluster.name_resolve.nfs_record_root={root / 'name_resolve'}",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TORCHDYNAMO_DISABLE": "1"}
    run = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, timeout=900)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    return {"out": out, "samples": samples, "preseeded": preseeded, "first": first}


def test_the_doc_command_is_the_preset_with_a_prompts_file():
    cmd = doc_command()
    assert cmd[3:7] == ["-m", "standin.eval", "--config", "config_eval_cpu.yaml"]
    assert "eval.preset=paper" in cmd
    assert (REPO / "prompts" / "answer_is_example.yaml").is_file()
    assert "memagent.prompts=prompts/answer_is_example.yaml" in cmd
    # the shipped sample output was written by this same command
    sample = (REPO / "docs" / "cpu_eval_sample" / "README.md").read_text()
    (block,) = re.findall(r"```bash\n(.*?)```", sample, re.S)
    assert shlex.split(block) == cmd
    meta = json.loads((REPO / "docs" / "cpu_eval_sample" / "summary.json").read_text())
    assert (meta["meta"]["preset"], meta["meta"]["n_samples"]) == ("paper", 2)


def test_every_sample_and_repeat_once_and_the_earlier_one_kept(paper_run):
    out, samples = paper_run["out"], paper_run["samples"]
    for n, rows in samples.items():
        lines = [
            json.loads(x) for x in (out / f"length_{n}.jsonl").read_text().splitlines()
        ]
        keys = [results.sample_key(r) for r in lines]
        want = {(s["id"], k) for s in rows for k in (0, 1)}
        assert sorted(keys) == sorted(want)  # each (id, repeat) exactly once
        assert all(r["error"] is None for r in lines)
    kept = results.read_records(out / "length_50.jsonl")[(paper_run["first"]["id"], 1)]
    assert kept["prediction"] == paper_run["preseeded"]
    assert (
        kept["extracted"] == paper_run["first"]["answers"][0] and kept["sub_em"] == 1.0
    )
    config = json.loads((out / "run_config.json").read_text())
    assert config["memagent"]["answer_protocol"] == "answer_is"
    assert config["memagent"]["prompt_build"] == "text"
    assert "Therefore, the answer is" in config["memagent"]["prompts"]["final_answer"]


def test_summary_has_mean_std_best_and_both_denominators(paper_run):
    out = paper_run["out"]
    summary = json.loads((out / "summary.json").read_text())
    meta = summary["meta"]
    assert (meta["preset"], meta["answer_protocol"]) == ("paper", "answer_is")
    assert (meta["headline"], meta["n_samples"]) == ("non_failed", 2)
    for row in summary["lengths"]:
        recs = results.read_records(out / f"length_{row['length']}.jsonl")
        counted = [r for r in recs.values() if r["counted"]]
        assert (row["n"], row["repeats"], row["missing"]) == (8, 2, 0)
        assert row["empty"] == len(recs) - len(counted)
        runs = [[r["sub_em"] for r in counted if r["repeat"] == k] for k in (0, 1)]
        per_run = [100 * sum(v) / len(v) for v in runs]
        mean = 100 * sum(map(sum, runs)) / sum(map(len, runs))
        assert row["sub_em_non_failed"] == pytest.approx(mean) == row["sub_em"]
        assert row["sub_em_non_failed_best"] == pytest.approx(max(per_run))
        spread = abs(per_run[0] - per_run[1]) / 2**0.5  # stdev of two values
        assert row["sub_em_non_failed_std"] == pytest.approx(spread)
    row50 = summary["lengths"][0]
    assert row50["sub_em_non_failed_best"] >= 25.0  # the kept right answer
    assert row50["sub_em_non_failed_std"] > 0
    assert any(
        a.startswith("RL-MemAgent-14B [MemAgent paper v2") for a in summary["anchors"]
    )


def test_the_table_shows_the_original_denominator_first_and_the_anchors(paper_run):
    text = (paper_run["out"] / "results.md").read_text()
    assert (
        "| sub-EM (non-failed) | sub-EM (all) | sub-EM best-of-n (non-failed) |" in text
    )
    assert re.search(
        r"\| 50 \| 7K \| 8 \| 2 \| 0 \| \d \| 0 \| \d+\.\d\d ± \d+\.\d\d \|", text
    )
    assert "| **this run** | | mean (non-failed) |" in text
    assert "| this run | | best-of-n (non-failed) |" in text
    for anchor in (
        "| RL-MemAgent-14B | MemAgent paper v1 (arXiv 2507.02259v1) | 1 sample |",
        "| RL-MemAgent-14B | MemAgent paper v2 (ICLR 2026), Table 1 | 1 sample |",
        "| RL-MemAgent-7B | MemAgent paper v2 (ICLR 2026), Table 1 | 1 sample |",
        "| best of 5 runs |",
    ):
        assert anchor in text
    assert "preset: paper" in text
