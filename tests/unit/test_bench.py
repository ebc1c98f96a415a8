"""The benchmarks' models and checks on hand-made inputs (no timing)."""

import random

import pytest
import torch


def test_train_cost_is_calibrated_on_the_mean_batch():
    from bench.train_cost import Calibration, TrainCost, calibrate, train_seconds

    calib = calibrate([1.0, 3.0], rows=[10, 30], tokens=[1000, 3000])
    assert calib == Calibration(rollout_s=2.0, rows=20, tokens=2000)
    model = TrainCost(fixed=0.1, per_row=0.1, per_token=0.8)
    # the mean batch trains for ratio x the mean synchronous rollout
    assert train_seconds(model, calib, 1.0, 20, 2000) == pytest.approx(2.0)
    assert train_seconds(model, calib, 4.0, 20, 2000) == pytest.approx(8.0)
    # twice the tokens: only the token share doubles
    assert train_seconds(model, calib, 1.0, 20, 4000) == pytest.approx(2.0 * 1.8)
    with pytest.raises(ValueError, match="sum to 1"):
        TrainCost(fixed=0.5, per_row=0.5, per_token=0.5)


def test_admission_bound_is_staleness_managers():
    from bench.training_loops import admission_violations

    # offpolicyness 1, batches of 2: 4 starts allowed at version 0, 6 at version 1
    assert admission_violations([0, 0, 0, 0], 1, 2) == 0
    assert admission_violations([0, 0, 0, 0, 0], 1, 2) == 1
    assert admission_violations([0, 0, 0, 0, 1, 1], 1, 2) == 0
    # synchronous: a batch at a time
    assert admission_violations([0, 0, 0], 0, 2) == 1


def test_staleness_reads_generated_tokens_only():
    from bench.training_loops import staleness

    # row 0: prompt (-1), tokens of versions 2 and 3, then padding (version 0)
    versions = torch.tensor([[-1, -1, 2, 3, 0], [-1, 3, 3, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]], dtype=torch.bool)
    out = staleness([{"versions": versions, "attention_mask": mask}], version=4)
    assert out["heads"] == [2]  # the oldest generated token, not the padding's 0
    assert out["token_n"] == 4 and out["token_sum"] == 2 + 1 + 1 + 1


def test_replayed_services_bill_like_the_simulated_engine():
    """With fixed output lengths, the replay's service times equal the engine's."""
    from bench.common import make_workflow, run_async
    from bench.engines import OutputModel, SimEngine
    from bench.replay import Config, PromptSizes, episode_services, prompt_sizes
    from bench.vocab import load_tokenizer, tokens_per_char
    from bench.workload import make_items

    fixed = OutputModel(memory_sigma=0.0, final_sigma=0.0)
    cfg = Config(group_size=1, outputs=fixed)
    tok = load_tokenizer()
    wf = make_workflow(
        tok, chunk_tokens=cfg.chunk_tokens, max_final_tokens=512, group_size=1
    )
    engine = SimEngine(tok, 4, cfg.memory_budget, cfg.cost, fixed, sleep=False)
    item = make_items([3], cfg.chunk_tokens, tokens_per_char(tok))[0]
    run_async(wf.arun_episode(engine, item))
    (measured,) = engine.services.values()
    sizes = prompt_sizes(tok, wf)
    assert isinstance(sizes, PromptSizes) and sizes.memory_turn > 0
    replayed = episode_services(random.Random(0), 3, cfg, sizes)
    assert len(replayed) == len(measured) == 4
    for k in (0, 1, 3):  # two full chunks and the answer: identical bills
        assert replayed[k] == pytest.approx(measured[k], abs=1e-12)
    # the document's last chunk is a few tokens short of a full one
    short = (replayed[2] - measured[2]) / cfg.cost.per_prompt_token_s
    assert 0 < short < 16


def test_reproducibility_compares_like_with_like():
    from bench.report_loop import repro

    def result(eps, cfg=1):
        return {
            "config": {"c": cfg},
            "machine": {"date": "d"},
            "loadavg_before": [0.5],
            "rows": [
                {
                    "loops": {
                        "original": {"episodes_per_s": eps},
                        "0": {"episodes_per_s": 2.0},
                    }
                }
            ],
        }

    cmp = repro(result(1.05), result(1.0))
    assert cmp["max"] == pytest.approx(0.05) and cmp["n"] == 2
    assert repro(result(1.0), result(1.0, cfg=2)) is None


def test_a_change_to_the_tokenizers_builder_changes_its_key(tmp_path, monkeypatch):
    """The benchmark tokenizer's key holds its builders' source (no version to
    bump): an edit to the corpus's module makes a new key, so a new build."""
    import importlib.machinery
    import importlib.util
    from pathlib import Path

    import bench.corpus
    from bench.vocab import build_key

    before = build_key(400, 300)
    source = tmp_path / "corpus.py"
    source.write_text(Path(bench.corpus.__file__).read_text() + "\n# edited\n")
    real = importlib.util.find_spec

    def edited(name, *args):
        found = real(name, *args)
        if name == "bench.corpus":
            return importlib.machinery.ModuleSpec(
                name, found.loader, origin=str(source)
            )
        return found

    monkeypatch.setattr("standin.build_cache.importlib.util.find_spec", edited)
    assert build_key(400, 300) != before
    monkeypatch.undo()
    assert build_key(400, 300) == before
