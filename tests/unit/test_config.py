"""config.yaml loads into MemAgentGRPOConfig, and bad grouping settings are refused."""

import re
import shlex
from dataclasses import asdict
from pathlib import Path

import pytest
import torch
from areal.api import FinetuneSpec
from transformers import get_constant_schedule_with_warmup

import examples.train
from examples.train import checked_workflow_kwargs, load_config, set_warmup, train_steps
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
    assert cfg.actor.kl_loss_coef == 0.001 and cfg.actor.kl_estimator == "k3"
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


def test_the_objective_is_the_papers(tmp_path):
    cfg = load(tmp_path)
    # every row of every group trained: tied groups count in the token mean
    assert cfg.memagent.skip_tied_groups is False
    # KL as a loss term (0.001 x low_var_kl), none in the reward
    assert cfg.actor.kl_loss_coef == 0.001 and cfg.actor.kl_ctl == 0
    assert cfg.actor.kl_estimator == "k3" and cfg.ref is not None
    # exact proximal log-probabilities, as verl recomputes them
    assert cfg.actor.prox_logp_method == "recompute"
    # an empty memory passed on, as the original's synchronous training
    assert cfg.memagent.empty_memory == "keep"
    assert workflow_kwargs(cfg)["empty_memory"] == "keep"
    # the authors' step count, reached on either size of the training file
    assert cfg.total_train_steps == 400
    for rows in (8192, 32768):
        assert train_steps(cfg, rows)[1] == 400


@pytest.mark.parametrize("rows", [8192, 32768])
def test_warmup_is_20_of_the_runs_real_steps(tmp_path, rows, monkeypatch):
    # total_train_steps stops the run, but AReaL's LR schedule spans every epoch
    # (FinetuneSpec): the proportion must be of that span, or the warm-up is short
    cfg = load(tmp_path)
    warned = []
    monkeypatch.setattr(examples.train.logger, "warning", warned.append)
    set_warmup(cfg, rows)
    batch = cfg.train_dataset.batch_size
    spec = FinetuneSpec(cfg.total_train_epochs, (rows // batch) * batch, batch)
    assert train_steps(cfg, rows) == (spec.total_train_steps, cfg.total_train_steps)
    # AReaL's FSDP engine, as it builds the constant schedule:
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    warmup = int(cfg.actor.optimizer.warmup_steps_proportion * spec.total_train_steps)
    schedule = get_constant_schedule_with_warmup(opt, warmup)
    lrs = []
    for _ in range(cfg.total_train_steps):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        schedule.step()
    assert lrs[0] == 0 and all(lr < 1 for lr in lrs[:20]) and set(lrs[20:]) == {1.0}
    assert warned == []


def test_a_run_shorter_than_its_steps_or_its_warmup_is_named(tmp_path, monkeypatch):
    cfg = load(tmp_path, "total_train_epochs=2")
    warned = []
    monkeypatch.setattr(examples.train.logger, "warning", warned.append)
    set_warmup(cfg, 8192)  # 2 epochs of 64 steps: the epochs end the run first
    assert train_steps(cfg, 8192) == (128, 128)
    assert warned and "the run stops at 128" in warned[0]
    cfg = load(tmp_path, "total_train_steps=10")
    warned.clear()
    set_warmup(cfg, 8192)
    assert train_steps(cfg, 8192)[1] == 10
    assert warned == ["warm-up of 20 steps is longer than the run (10)"]


def speedup_command() -> list[str]:
    """The command of docs/gpu-recipes.md, "Speed-ups (opt-in)", as a shell would
    split it."""
    text = (ROOT / "docs" / "gpu-recipes.md").read_text()
    text = text.split("**Speed-ups (opt-in).**", 1)[1]
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1).strip()
    return shlex.split(block)


def test_the_documented_speedup_line_turns_on_the_speedups_only(tmp_path):
    cmd = speedup_command()
    assert cmd[:4] == ["python3", "examples/train.py", "--config", "config.yaml"]
    overrides = cmd[4:]
    fast = load(tmp_path, *overrides)
    assert fast.memagent.skip_tied_groups is True
    assert fast.actor.prox_logp_method == "loglinear"
    # nothing else changes: the launch override aside, the paper's config
    launch = [o for o in overrides if o.startswith("scheduler.")]
    plain = asdict(load(tmp_path, *launch))
    plain["memagent"]["skip_tied_groups"] = True
    plain["actor"]["prox_logp_method"] = "loglinear"
    assert asdict(fast) == plain
    # the same overrides, verbatim, where config.yaml and performance.md name them
    line = " ".join(o for o in overrides if o not in launch)
    assert f"#   {line}\n" in (ROOT / "config.yaml").read_text()
    assert f"\n{line}\n" in (ROOT / "docs" / "performance.md").read_text()


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
    readme = (ROOT / "docs" / "gpu-recipes.md").read_text()
    table = readme.split("## GPU layouts", 1)[1].split("\n\n", 2)[1]
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
    spans = [s for row in rows for s in row.split("|")[3].split("`")[1::2]]
    return [s.split() for s in spans]


@pytest.mark.parametrize("overrides", readme_layout_overrides(), ids=" ".join)
def test_every_readme_layout_loads(tmp_path, overrides):
    cfg = load(tmp_path, *overrides)
    assert cfg.gconfig.n_samples == 1
