"""config.yaml loads into MemAgentGRPOConfig, and bad grouping settings are refused."""

from pathlib import Path

import pytest

from examples.train import load_config
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
    readme = (ROOT / "README.md").read_text()
    table = readme.split("### GPU layouts", 1)[1].split("\n\n", 2)[1]
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
    spans = [s for row in rows for s in row.split("|")[3].split("`")[1::2]]
    return [s.split() for s in spans]


@pytest.mark.parametrize("overrides", readme_layout_overrides(), ids=" ".join)
def test_every_readme_layout_loads(tmp_path, overrides):
    cfg = load(tmp_path, *overrides)
    assert cfg.gconfig.n_samples == 1
