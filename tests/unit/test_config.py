"""config.yaml loads into MemAgentGRPOConfig, and bad grouping settings are refused."""

from pathlib import Path

import pytest
from areal.api import FinetuneSpec

from examples.train import checked_workflow_kwargs, load_config, set_warmup
from memagent_workflow.config import workflow_kwargs

ROOT = Path(__file__).resolve().parents[2]


def load(tmp_path, *overrides):
    args = ["--config", str(ROOT / "config.yaml"), f"cluster.fileroot={tmp_path}"]
    return load_config(args + list(overrides))


def test_recipe_values(tmp_path):
    cfg = load(tmp_path)
    assert cfg.memagent.group_size == 16 and cfg.gconfig.n_samples == 1
    assert cfg.memagent.max_chunks == 8 and cfg.memagent.chunk_tokens == 5000
    assert cfg.actor.reward_norm is None and cfg.actor.adv_norm is None
    assert cfg.actor.kl_ctl == 0.001 and cfg.actor.kl_estimator == "k3"
    assert cfg.actor.ppo_n_minibatches == 16 and cfg.train_dataset.batch_size == 128
    assert cfg.actor.use_decoupled_loss and cfg.actor.recompute_logprob
    # every turn fits: template + question + memory + chunk + new tokens
    budget = 1024 + cfg.memagent.max_memory_tokens + cfg.memagent.chunk_tokens
    assert cfg.gconfig.max_tokens >= budget + cfg.memagent.max_memory_tokens + 150
    assert cfg.sglang.context_length >= cfg.gconfig.max_tokens


def test_recipe_follows_the_original_where_areal_can(tmp_path):
    cfg = load(tmp_path)
    assert cfg.memagent.reward == "original"
    assert cfg.actor.c_clip == 3.0 and cfg.actor.eps_clip == 0.2
    assert cfg.actor.eps_clip_higher is None
    assert cfg.train_dataset.shuffle is False
    assert cfg.warmup_steps == 20
    # validation: 4 episodes per question at T 1.0 / top-p 0.7, every 5 steps
    assert cfg.valid_group_size == 4 and cfg.eval_gconfig.n_samples == 1
    assert (cfg.eval_gconfig.temperature, cfg.eval_gconfig.top_p) == (1.0, 0.7)
    assert cfg.evaluator.freq_steps == 5 and cfg.evaluator.eval_before_train
    assert cfg.actor.optimizer.lr_scheduler_type == "constant"


@pytest.mark.parametrize("rows", [2600, 4096, 8192 + 77, 32768, 100_000])
def test_warmup_is_20_steps_whatever_the_row_count(tmp_path, rows):
    cfg = load(tmp_path)
    batch = cfg.train_dataset.batch_size
    for epochs in (1, 2, 3):
        cfg.total_train_epochs = epochs
        set_warmup(cfg, rows)
        # What AReaL 1.0.4's trainer and FSDP engine compute from it:
        spec = FinetuneSpec(epochs, (rows // batch) * batch, batch)
        proportion = cfg.actor.optimizer.warmup_steps_proportion
        assert int(proportion * spec.total_train_steps) == 20


def test_workflow_kwargs_leave_out_the_trainer_fields(tmp_path):
    cfg = load(tmp_path, f"actor.path={tmp_path}/no-model")
    train_kwargs = workflow_kwargs(cfg)
    assert "valid_group_size" not in train_kwargs and "warmup_steps" not in train_kwargs
    assert train_kwargs["reward"] == "original"


def test_checked_kwargs_build_both_workflows(tmp_path, tiny_model_dir):
    cfg = load(tmp_path, f"actor.path={tiny_model_dir}")
    train_kwargs, eval_kwargs = checked_workflow_kwargs(cfg)
    assert train_kwargs["group_size"] == 16 and eval_kwargs["group_size"] == 4
    assert eval_kwargs["gconfig"].temperature == 1.0
    assert eval_kwargs["gconfig"].top_p == 0.7


def test_unknown_reward_is_refused(tmp_path):
    with pytest.raises(ValueError, match="memagent.reward='f1'"):
        load(tmp_path, "memagent.reward=f1")


def test_eval_n_samples_other_than_one_is_refused(tmp_path):
    with pytest.raises(ValueError, match="in valid_group_size"):
        load(tmp_path, "eval_gconfig.n_samples=4")


def test_loads_with_the_spmd_launcher_allocation(tmp_path):
    cfg = load(tmp_path, "allocation_mode=sglang:d4p1t1+fsdp:d4p1t1")
    assert cfg.allocation_mode == "sglang:d4p1t1+fsdp:d4p1t1"


def test_loads_for_single_controller(tmp_path):
    assert load(tmp_path, "scheduler.type=local").scheduler.type == "local"


def test_overrides_reach_the_memagent_section(tmp_path):
    cfg = load(tmp_path, "memagent.group_size=4", "memagent.max_chunks=null")
    kwargs = workflow_kwargs(cfg)
    assert kwargs["group_size"] == 4 and kwargs["max_chunks"] is None
    assert kwargs["tokenizer"] == cfg.actor.path and kwargs["gconfig"] is cfg.gconfig


def test_n_samples_other_than_one_is_refused(tmp_path):
    with pytest.raises(ValueError, match="n_samples=4.*memagent.group_size"):
        load(tmp_path, "gconfig.n_samples=4")


def test_reward_norm_is_refused(tmp_path):
    with pytest.raises(ValueError, match="reward_norm must be null"):
        load(tmp_path, "+actor.reward_norm={mean_level: group, std_level: group}")


def readme_layout_overrides() -> list[list[str]]:
    readme = (ROOT / "docs" / "gpu.md").read_text()
    table = readme.split("## GPU layouts", 1)[1].split("\n\n", 2)[1]
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
    spans = [s for row in rows for s in row.split("|")[3].split("`")[1::2]]
    return [s.split() for s in spans]


@pytest.mark.parametrize("overrides", readme_layout_overrides(), ids=" ".join)
def test_every_readme_layout_loads(tmp_path, overrides):
    cfg = load(tmp_path, *overrides)
    assert cfg.gconfig.n_samples == 1
