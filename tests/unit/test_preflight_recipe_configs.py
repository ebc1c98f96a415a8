"""The recipes for smaller budgets (docs/gpu-recipes.md, "Recipes for smaller budgets"),
config by config: each loads with the product's classes as config.yaml plus its
own keys and the paper's objective; the one-GPU recipe is colocated and fails
without its settings, the two-GPU one takes turns and needs enable_offload, the
LoRA ones serve their adapter, and every micro-batch holds the longest row. Also
the numbers the estimates rest on: the published shapes counted exactly, and
the step estimate against the original's update."""

from __future__ import annotations

import pytest

from memagent_workflow.preflight import Verdict
from memagent_workflow.preflight.hardware import check_gpu_count
from memagent_workflow.preflight.memory import check_actor, check_server
from memagent_workflow.preflight.memory_estimate import actor_memory, server_memory
from memagent_workflow.preflight.model import ModelShape
from memagent_workflow.preflight.step import step_estimate
from tests.unit.preflight_fakes import (
    GIB,
    QWEN3_4B,
    QWEN3_4B_PARAMS,
    QWEN25_1B5,
    QWEN25_1B5_PARAMS,
    FakeHardware,
    changed,
    gpus,
    load,
    run_of,
    write_model,
)
from tests.unit.test_preflight_recipes import LORA, RECIPES

# The module-scoped models fixture (three config.json files, written again for
# this module): "as models" marks it re-exported, so that ruff takes the tests'
# argument of that name for its use, not for a redefinition.
from tests.unit.test_preflight_recipes import models as models


def test_published_shapes_are_counted_exactly():
    qwen3 = ModelShape.from_config(QWEN3_4B)
    assert qwen3.params == QWEN3_4B_PARAMS  # tied: the embeddings once
    assert qwen3.q_width == 4096 != qwen3.hidden  # head_dim, not hidden / heads
    assert qwen3.kv_bytes_per_token() == 2 * 36 * 8 * 128 * 2  # 144 KiB
    assert ModelShape.from_config(QWEN25_1B5).params == QWEN25_1B5_PARAMS
    untied = ModelShape.from_config({**QWEN3_4B, "tie_word_embeddings": False})
    assert untied.params - qwen3.params == 151936 * 2560


@pytest.mark.parametrize("name", sorted({k.split()[0] for k in RECIPES}))
def test_a_recipe_is_config_yaml_with_the_papers_objective(name):
    base, cfg = load("config.yaml"), load(name)
    assert cfg.scheduler.type == "local"
    for key in ("kl_loss_coef", "kl_ctl", "eps_clip", "c_clip", "prox_logp_method"):
        assert getattr(cfg.actor, key) == getattr(base.actor, key), key
    # LoRA's best rate is ~10x full fine-tuning's (docs/gpu-lora.md)
    lr = base.actor.optimizer.lr * (10 if cfg.actor.use_lora else 1)
    assert cfg.actor.optimizer.lr == pytest.approx(lr)
    assert cfg.memagent == base.memagent  # chunks, budgets, group 16, reward
    assert cfg.gconfig.max_tokens == base.gconfig.max_tokens
    # a mini-batch of 8 questions x 16 episodes, as the paper's 128 / 16
    per_minibatch = cfg.train_dataset.batch_size // cfg.actor.ppo_n_minibatches
    assert per_minibatch == 128 // 16


def test_the_one_gpu_recipe_is_colocated(models):
    cfg = load("config_qwen25_1b5_1gpu.yaml", f"actor.path={models['qwen25_1b5']}")
    run = run_of(cfg, hardware=FakeHardware(gpus(1, total=40 * GIB, free_gib=40)))
    assert run.layout.colocated and run.layout.gpus == 1 and run.actor_offloads
    check = check_gpu_count(run)
    assert check.verdict is Verdict.OK and "colocated" in check.needed
    shape = ModelShape.from_config(QWEN25_1B5)
    est = server_memory(run, shape, 40 * GIB)
    assert est.beside == 4 * QWEN25_1B5_PARAMS  # the actor's fp32 weights
    alone = server_memory(
        run_of(changed(cfg, rollout__scheduling_strategy=None)), shape, 40 * GIB
    )
    assert alone.kv_tokens > est.kv_tokens
    actor = actor_memory(shape, cfg, 1, actor_offloads=True)
    assert actor.ref_apart and actor.state == 16 * QWEN25_1B5_PARAMS
    assert actor.load_peak == 4 * QWEN25_1B5_PARAMS  # the ref loads alone


@pytest.mark.parametrize(
    "key",
    ["enable_offload", "actor__weight_update_mode", "sglang__enable_memory_saver"],
)
def test_colocation_without_its_settings_fails(key, models):
    cfg = load("config_qwen25_1b5_1gpu.yaml", f"actor.path={models['qwen25_1b5']}")
    value = "xccl" if key == "actor__weight_update_mode" else False
    check = check_server(run_of(changed(cfg, **{key: value}), gpu_memory_gib=40))
    assert check.verdict is Verdict.FAIL
    assert key.replace("__", ".").split("=")[0] in check.fix


def test_the_two_gpu_recipe_takes_turns_and_needs_enable_offload(models):
    cfg = load("config_qwen3_4b_2gpu.yaml", f"actor.path={models['qwen3_4b']}")
    hw = FakeHardware(gpus(2))
    assert check_actor(run_of(cfg, hardware=hw)).verdict is Verdict.OK
    both = changed(cfg, actor__offload=False, ref__offload=False)
    assert check_actor(run_of(both, hardware=hw)).verdict is Verdict.WARN
    off = check_actor(run_of(changed(cfg, enable_offload=False), hardware=hw))
    assert off.verdict is Verdict.FAIL and "enable_offload=true" in off.fix


def test_the_step_estimate_reproduces_the_original_update(tmp_path):
    """config.yaml's 7B on 32 H100s, as verl updates (4 forwards' worth, no
    reference or recompute pass): the default rate gives issue #31's 2,100 s."""
    from tests.unit.preflight_fakes import QWEN25_7B

    model = write_model(tmp_path / "qwen25_7b", QWEN25_7B)
    cfg = load("config.yaml", "scheduler.type=local", f"actor.path={model}")
    cfg = changed(cfg, actor__backend="fsdp:d32p1t1", actor__kl_loss_coef=0.0)
    cfg = changed(cfg, actor__prox_logp_method="loglinear")
    est = step_estimate(run_of(cfg, hardware=FakeHardware()))
    assert "update 4 forward(s)' worth" in est.actor_how and est.logp_passes == 0
    assert 2000 < est.actor_s < 2200


@pytest.mark.parametrize("name", LORA)
def test_a_lora_recipe_serves_its_adapter_and_fits_every_row(name, models):
    """The adapter reaches SGLang through the disk and is asked for by name; a
    micro-batch holds the longest row (AReaL refuses a longer row)."""
    cfg = load(name, f"actor.path={models[RECIPES[name][0]]}")
    assert cfg.actor.use_lora and cfg.rollout.use_lora and cfg.sglang.enable_lora
    assert cfg.actor.weight_update_mode == "disk"
    assert cfg.sglang.max_lora_rank == cfg.actor.lora_rank == 32
    assert cfg.eval_gconfig.lora_name == cfg.gconfig.lora_name
    for role in (cfg.actor, cfg.ref):
        assert role.mb_spec.max_tokens_per_mb >= cfg.gconfig.max_tokens
    assert cfg.ref.optimizer_dtype == "bfloat16"  # the frozen base, as published


@pytest.mark.parametrize(
    "name", ["config.yaml", *sorted({k.split()[0] for k in RECIPES})]
)
def test_every_micro_batch_holds_the_longest_row(name, models):
    """AReaL's packing raises on a row longer than ``max_tokens_per_mb``, and a
    row (a turn's prompt and reply) may reach ``gconfig.max_tokens``."""
    model = models[RECIPES[name][0]] if name in RECIPES else models["qwen25_7b"]
    cfg = load(name, f"actor.path={model}")
    for role in (cfg.actor, cfg.ref):
        assert role.mb_spec.max_tokens_per_mb >= cfg.gconfig.max_tokens, name
