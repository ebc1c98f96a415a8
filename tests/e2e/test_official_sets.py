"""Official sets end to end on CPU: an index-only file expanded by
prepare_eval_data.py, a full-text file and a built RULER-HQA-style set, evaluated
by examples/eval.py (as ``standin.eval``) with a user's prompts file (tiny
model, stand-in server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples import prepare_eval_data as cli
from tests.unit.test_expand import DEV, INDEX_ONLY, TEXT_0, TEXT_1

REPO = Path(__file__).resolve().parents[2]
PROMPTS = """\
memory_update: |-
  Keep notes for the question {question}
  Notes so far: {memory}
  Read: {chunk}
  Notes:
final_answer: |-
  Question: {question}
  Notes: {memory}
  Reply with \\boxed{{answer}}.
"""


def eval_argv(root: Path, *extra: str) -> list[str]:
    return [
        "--config", str(REPO / "config_eval_cpu.yaml"), f"eval.data_root={root / 'data'}",
        "eval.lengths=[200,12800,4]", f"eval.output_dir={root / 'out'}",
        f"actor.path={root / 'model'}", f"memagent.prompts={root / 'prompts.yaml'}",
        f"cluster.fileroot={root / 'areal'}", "eval.concurrency=2",
        f"cluster.name_resolve.nfs_record_root={root / 'name_resolve'}",
        # Greedy: the session's server samples from one generator that every
        # test on this worker draws from, so a sampled answer could come out
        # empty (counted in neither denominator) in one test order only.
        "gconfig.greedy=true", *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, tiny_model_dir, standin_server) -> Path:
    """Files written by prepare_eval_data.py, then standin.eval run in this
    process against the session's stand-in server (no second server start)."""
    from standin.eval import main

    root = tmp_path_factory.mktemp("official")
    data = root / "data"
    data.mkdir()
    (root / "model").symlink_to(tiny_model_dir)
    (root / "prompts.yaml").write_text(PROMPTS)
    dev = root / "hotpot_dev_distractor_v1.json"
    dev.write_text(json.dumps(DEV))
    index_only = root / "eval_12800.index-only.json"
    index_only.write_text(json.dumps(INDEX_ONLY, indent=4))
    full = [
        dict(s, context=t) for s, t in zip(INDEX_ONLY, (TEXT_0, TEXT_1), strict=True)
    ]
    (data / "eval_200.json").write_text(json.dumps(full, indent=4))
    out = data / "eval_12800.json"
    assert (
        cli.main(
            ["--expand", str(index_only), "--source", str(dev), "--output", str(out)]
        )
        == 0
    )
    base = ["--data-root", str(data), "--source", str(dev)]
    assert cli.main([*base, "--build", "4", "--seed", "1"]) == 0  # indices: eval_200
    main(eval_argv(root, f"+standin.server_addr={standin_server.addr}"))
    return root


def test_expanded_text_is_what_the_eval_read(evaluated, tiny_model_dir):
    from memagent_workflow.eval import results
    from memagent_workflow.workflow import load_tokenizer

    tok = load_tokenizer(str(tiny_model_dir))
    for n in (200, 12800):  # the full-text file and the expanded index-only one
        recs = results.read_records(evaluated / "out" / f"length_{n}.jsonl")
        assert sorted(recs) == [("0", 0), ("1", 0)]  # (id, repeat)
        for sid, text in (("0", TEXT_0), ("1", TEXT_1)):
            assert recs[sid, 0]["error"] is None
            assert recs[sid, 0]["context_tokens"] == len(
                tok.encode(text, add_special_tokens=False)
            )


def test_summary_labels_the_built_set_and_keeps_both_denominators(evaluated):
    summary = json.loads((evaluated / "out" / "summary.json").read_text())
    rows = {r["length"]: r for r in summary["lengths"]}
    assert rows[4]["set"] == "RULER-HQA-style"
    assert rows[200]["set"] is None and rows[12800]["set"] is None
    assert "RULER-HQA-style" in summary["meta"]["note"]
    assert all(
        r["non_failed"] == 2 and r["sub_em_non_failed"] is not None
        for r in rows.values()
    )
    md = (evaluated / "out" / "results.md").read_text()
    assert "| 4 (RULER-HQA-style) |" in md and "not the official sets" in md
    assert "prompts.yaml" in summary["meta"]["protocol"]


def test_the_prompts_file_drove_the_run_and_a_bad_one_is_refused(evaluated):
    from standin.eval import main

    run_config = json.loads((evaluated / "out" / "run_config.json").read_text())
    assert run_config["memagent"]["prompts"]["memory_update"].startswith(
        "Keep notes for the question {question}"
    )
    bad = evaluated / "bad.yaml"
    bad.write_text(PROMPTS.replace("{chunk}", "{section}"))
    with pytest.raises(SystemExit) as exit_:
        main(eval_argv(evaluated, f"memagent.prompts={bad}"))
    assert exit_.value.code == 2
