"""The preflight's LoRA arithmetic (``memagent_workflow/preflight/lora.py``): the
adapter's parameter count against peft's on tiny Qwen2 and Qwen3 models built
here, the published models' counts by hand, what the actor and SGLang hold, the
keys a LoRA run needs, and the AReaL and peft facts it rests on (read from the
installed sources, so an upgrade that changes one fails here)."""

from __future__ import annotations

import inspect
import os
import shlex
import subprocess

import pytest
import torch

from memagent_workflow.preflight import Verdict, lora
from memagent_workflow.preflight.memory import check_actor
from memagent_workflow.preflight.memory_estimate import actor_memory, server_memory
from memagent_workflow.preflight.model import ModelShape
from memagent_workflow.preflight.step import forward_passes
from tests.unit.preflight_fakes import (
    GIB,
    QWEN3_4B,
    QWEN3_4B_PARAMS,
    QWEN25_7B,
    QWEN25_7B_PARAMS,
    ROOT,
    FakeHardware,
    changed,
    gpus,
    load,
    run_of,
    write_model,
)

SMALL_QWEN2 = {
    "model_type": "qwen2",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 96,
    "vocab_size": 128,
    "tie_word_embeddings": False,
}
# head_dim 24 is not hidden / heads (16), as in Qwen3-4B; tied embeddings
SMALL_QWEN3 = {
    **SMALL_QWEN2, "model_type": "qwen3", "head_dim": 24, "tie_word_embeddings": True,
}  # fmt: skip
LORA_2GPU = "config_qwen25_7b_lora_2gpu.yaml"


def tiny_model(cfg: dict, dtype: torch.dtype = torch.float32):
    from transformers import AutoConfig, AutoModelForCausalLM

    fields = {k: v for k, v in cfg.items() if k != "model_type"}
    config = AutoConfig.for_model(cfg["model_type"], **fields)
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config, dtype=dtype)


def peft_trainable(model, rank: int, targets) -> int:
    """What peft trains, wrapped as AReaL's ``_apply_peft_wrapper`` wraps it."""
    from peft import LoraConfig, TaskType, get_peft_model

    config = LoraConfig(
        task_type=TaskType.CAUSAL_LM, r=rank, lora_alpha=16,
        target_modules=targets, bias="none",
    )  # fmt: skip
    wrapped = get_peft_model(model, config, autocast_adapter_dtype=False)
    return sum(p.numel() for p in wrapped.parameters() if p.requires_grad)


@pytest.fixture(scope="module")
def lora_actor():
    """The 7B pair recipe's actor config (rank and targets varied below)."""
    return load(LORA_2GPU).actor


@pytest.mark.parametrize("cfg", [SMALL_QWEN2, SMALL_QWEN3], ids=["qwen2", "qwen3"])
@pytest.mark.parametrize(
    "targets",
    [
        "all-linear",
        ["q_proj", "v_proj"],
        ["gate_proj", "up_proj", "down_proj"],
        ["o_proj", "k_proj", "lm_head"],
    ],
)
@pytest.mark.parametrize("rank", [1, 8])
def test_adapter_count_is_peft_s(cfg, targets, rank, lora_actor):
    actor = changed(lora_actor, lora_rank=rank)
    actor.target_modules = [targets] if targets == "all-linear" else list(targets)
    shape = ModelShape.from_config(cfg)
    assert lora.actor_adapter_params(shape, actor) == peft_trainable(
        tiny_model(cfg), rank, targets
    )


def test_published_models_counted_by_hand():
    # per layer, r x (in + out) of q, k, v, o, gate, up, down
    qwen25_7b = (3584 + 3584) + 2 * (3584 + 512) + (3584 + 3584) + 3 * (3584 + 18944)
    qwen3_4b = (2560 + 4096) + 2 * (2560 + 1024) + (4096 + 2560) + 3 * (2560 + 9728)
    seven, four = ModelShape.from_config(QWEN25_7B), ModelShape.from_config(QWEN3_4B)
    assert lora.adapter_params(seven, 32, lora.ALL_LINEAR) == 28 * 32 * qwen25_7b
    assert lora.adapter_params(four, 32, lora.ALL_LINEAR) == 36 * 32 * qwen3_4b
    assert 28 * 32 * qwen25_7b == 80_740_352  # ~1.1% of 7.6B
    assert lora.adapter_params(four, 32, ("lm_head",)) == 32 * (2560 + 151936)


def test_adapters_take_the_base_dtype_as_areal_wraps_them():
    """``autocast_adapter_dtype=False``: a bf16 base gets bf16 adapters."""
    for dtype in (torch.bfloat16, torch.float32):
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(
            tiny_model(SMALL_QWEN2, dtype),
            LoraConfig(r=4, target_modules="all-linear"),
            autocast_adapter_dtype=False,
        )
        trained = {p.dtype for p in model.parameters() if p.requires_grad}
        assert trained == {dtype}


def test_memory_efficient_load_misses_every_base_weight_under_peft():
    """Why the preflight refuses it: AReaL's rank 0 loads the checkpoint's keys
    into the peft-wrapped model with ``strict=False``."""
    from peft import LoraConfig, get_peft_model

    plain = tiny_model(SMALL_QWEN2).state_dict()
    wrapped = get_peft_model(
        tiny_model(SMALL_QWEN2), LoraConfig(r=4, target_modules="all-linear")
    )
    missing, unexpected = wrapped.load_state_dict(plain, strict=False)
    assert set(unexpected) == set(plain)
    assert len([k for k in missing if "lora_" not in k]) == len(plain)


def test_areal_lora_facts():
    from areal.engine.fsdp_engine import FSDPEngine
    from areal.engine.sglang_remote import SGLangBackend
    from areal.trainer.rl_trainer import PPOTrainer

    wrap = inspect.getsource(FSDPEngine._apply_peft_wrapper)
    assert "autocast_adapter_dtype=False" in wrap
    assert 'target_modules = "all-linear"' in wrap and '"bias": "none"' in wrap
    refuses = inspect.getsource(SGLangBackend.build_distributed_weight_update_requests)
    assert "if meta.use_lora:" in refuses and "raise ValueError" in refuses
    loads = inspect.getsource(SGLangBackend.build_disk_weight_update_requests)
    assert '"/load_lora_adapter"' in loads and '"/unload_lora_adapter"' in loads
    trainer = inspect.getsource(PPOTrainer)
    assert '"lora_keep_versions": config.rollout.max_head_offpolicyness + 2' in trainer
    assert "if lora_path is not None and not is_single_controller():" in trainer
    # the reference is an engine of its own, built from ref: (no LoRA there)
    assert "self._create_train_engine(config.ref, ref_alloc)" in trainer


@pytest.fixture(scope="module")
def seven_b(tmp_path_factory) -> str:
    return str(write_model(tmp_path_factory.mktemp("qwen25_7b"), QWEN25_7B))


def test_the_actor_trains_only_the_adapters(seven_b):
    cfg = load(LORA_2GPU, f"actor.path={seven_b}")
    shape = ModelShape.from_config(QWEN25_7B)
    adapter = lora.actor_adapter_params(shape, cfg.actor)
    est = actor_memory(shape, cfg, 1, actor_offloads=True)
    assert est.weights == 2 * (QWEN25_7B_PARAMS + adapter)  # bf16 base and adapters
    assert est.grads == 2 * adapter
    assert est.adam == 3 * 2 * adapter  # adam_bf16: two moments and a Kahan buffer
    assert est.ref == 2 * QWEN25_7B_PARAMS and est.ref_apart
    # rank 0's whole state dict beside the shards it fills (dp 1: two copies)
    assert est.load_peak == 2 * 2 * (QWEN25_7B_PARAMS + adapter)
    assert actor_memory(shape, cfg, 4, actor_offloads=True).load_peak == (
        2 * (QWEN25_7B_PARAMS + adapter) * 5 // 4
    )
    fp32 = changed(cfg, actor__optimizer_dtype="float32")
    fp32 = changed(fp32, actor__optimizer__type="adam")
    est = actor_memory(shape, fp32, 1, actor_offloads=True)
    assert (est.weights, est.grads, est.adam) == (
        4 * (QWEN25_7B_PARAMS + adapter), 4 * adapter, 8 * adapter,
    )  # fmt: skip
    full = changed(cfg, actor__use_lora=False)
    assert actor_memory(shape, full, 1).grads == 2 * QWEN25_7B_PARAMS


def test_sglang_gives_eight_adapters_of_kv_cache(seven_b):
    cfg = load(LORA_2GPU, f"actor.path={seven_b}")
    shape = ModelShape.from_config(QWEN25_7B)
    adapter = lora.actor_adapter_params(shape, cfg.actor)
    est = server_memory(run_of(cfg, hardware=FakeHardware(gpus(2))), shape, 40 * GIB)
    assert est.adapters == 8 * 2 * adapter  # tp 1: whole adapters, bf16
    plain = changed(cfg, actor__use_lora=False)
    bare = server_memory(run_of(plain), shape, 40 * GIB)
    assert bare.adapters == 0
    lost = est.adapters / shape.kv_bytes_per_token()
    assert abs(bare.kv_tokens - est.kv_tokens - lost) <= 1
    # under TP 2, a column-parallel layer splits its B, a row-parallel one its A
    tp2 = lora.server_adapter_bytes(shape, cfg, 2)
    assert est.adapters // 2 < tp2 < est.adapters


def test_sglang_buffers_follow_max_lora_rank(seven_b):
    cfg = load(LORA_2GPU, f"actor.path={seven_b}", "sglang.max_lora_rank=64")
    shape = ModelShape.from_config(QWEN25_7B)
    assert lora.server_adapter_bytes(shape, cfg, 1) == 8 * 2 * 2 * 80_740_352


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("rollout.use_lora=false", "rollout.use_lora=true"),
        ("actor.weight_update_mode=xccl", "actor.weight_update_mode=disk"),
        ("scheduler.type=null", "scheduler.type=local"),
        ("+actor.fsdp.memory_efficient_load=true", "memory_efficient_load=false"),
        ("sglang.max_lora_rank=16", "sglang.max_lora_rank >= actor.lora_rank"),
        ("eval_gconfig.lora_name=other", "eval_gconfig.lora_name=memagent"),
        ("rollout.max_head_offpolicyness=6", "max_head_offpolicyness + 3"),
        ("actor.target_modules=[qkv_proj]", "does not count qkv_proj"),
    ],
)
def test_a_lora_run_missing_a_key_fails(seven_b, override, named):
    cfg = load(LORA_2GPU, f"actor.path={seven_b}", override)
    check = check_actor(run_of(cfg, hardware=FakeHardware(gpus(2))))
    assert check.verdict is Verdict.FAIL and named in check.needed, check


def test_the_recipe_passes_and_says_what_it_trains(seven_b):
    cfg = load(LORA_2GPU, f"actor.path={seven_b}")
    check = check_actor(run_of(cfg, gpu_memory_gib=40, hardware=FakeHardware()))
    assert check.verdict is Verdict.OK, check
    assert "7.62B frozen + LoRA r32/a32 on all-linear: 80.7M trained" in check.found


def test_lora_backward_costs_one_forward(seven_b):
    cfg = load(LORA_2GPU, f"actor.path={seven_b}")
    full = changed(cfg, actor__use_lora=False)
    assert forward_passes(cfg) == forward_passes(full) - 1 == 5


def test_the_qwen3_recipe_keeps_fp32_adapters(tmp_path):
    model = write_model(tmp_path / "qwen3_4b", QWEN3_4B)
    cfg = load("config_qwen3_4b_lora_2gpu.yaml", f"actor.path={model}")
    shape = ModelShape.from_config(QWEN3_4B)
    adapter = lora.actor_adapter_params(shape, cfg.actor)
    est = actor_memory(shape, cfg, 1)
    assert cfg.actor.optimizer_dtype == "float32" and cfg.actor.optimizer.type == "adam"
    assert est.grads + est.adam == 12 * adapter  # fp32 gradients and moments
    assert est.ref == 2 * QWEN3_4B_PARAMS and not est.ref_apart


def verdicts(stdout: str) -> dict[str, str]:
    """The memory and time rows of the printed table, by label."""
    found = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.split(" | ")]
        if cells[0].startswith(("memory: ", "time: ")):
            found[cells[0]] = cells[-1]
    return found


@pytest.mark.skipif(torch.cuda.is_available(), reason="a visible GPU sets the size")
def test_the_docs_command_of_the_7b_pair(seven_b):
    """The 7B pair's preflight command as docs/gpu-recipes.md gives it, run as a shell
    runs it (the fixture model's folder added): every memory and time row ok.
    (test_preflight_recipes runs every recipe's command in-process, at the
    claimed size and on a card too small.)"""
    line = next(
        line
        for line in (ROOT / "docs" / "gpu-recipes.md").read_text().splitlines()
        if line.startswith(f"uv run python examples/preflight.py --config {LORA_2GPU} ")
    )
    cmd = [*shlex.split(line), f"actor.path={seven_b}"]
    env = {**os.environ, "COLUMNS": "120"}
    res = subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    found = verdicts(res.stdout)
    assert len(found) == 4 and set(found.values()) == {"ok"}, res.stdout + res.stderr
    assert "frozen" in res.stdout and "buffers" in res.stdout  # cells wrap
