"""Preflight, memory: Qwen2.5-7B from its published config.json, the actor as
AReaL 1.0.4 keeps it (fp32 master weights, grads and Adam moments, fp32
reference, whole-model load) and SGLang's KV cache against the planned turns."""

from __future__ import annotations

import pytest

from memagent_workflow.preflight import Verdict
from memagent_workflow.preflight.memory import check_actor, check_server
from memagent_workflow.preflight.memory_estimate import actor_memory, server_memory
from memagent_workflow.preflight.model import ModelShape, find_model_config
from tests.unit.preflight_fakes import (
    GIB,
    H100_BYTES,
    QWEN25_7B,
    QWEN25_7B_PARAMS,
    FakeHardware,
    gpus,
    load,
    run_of,
    write_model,
)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return write_model(tmp_path_factory.mktemp("qwen25_7b"))


@pytest.fixture(scope="module")
def cfg(model_dir):
    return load("config.yaml", "scheduler.type=local", f"actor.path={model_dir}")


def test_parameter_count_is_the_published_one():
    assert ModelShape.from_config(QWEN25_7B).params == QWEN25_7B_PARAMS


def test_config_json_is_found_locally_and_not_downloaded(model_dir, tmp_path):
    shape, where = find_model_config(str(model_dir))
    assert shape is not None and where == str(model_dir / "config.json")
    shape, why = find_model_config("nobody/not-a-cached-model")
    assert shape is None and "no config.json here or in the hub cache" in why


def test_actor_on_four_gpus_keeps_fp32_state(cfg):
    assert cfg.actor.optimizer_dtype == "float32"  # AReaL 1.0.4's default
    est = actor_memory(ModelShape.from_config(QWEN25_7B), cfg, dp=4)
    # 16 bytes per parameter (fp32 weights 4 + grads 4 + Adam 8) over 4 GPUs.
    assert est.weights + est.grads + est.adam == 16 * QWEN25_7B_PARAMS // 4
    assert 30.4e9 < est.weights + est.grads + est.adam < 30.6e9
    assert 7.5e9 < est.ref < 7.7e9  # fp32 reference model, sharded
    # Each rank loads the whole fp32 reference beside its actor shard.
    assert est.load_peak == 4 * QWEN25_7B_PARAMS // 4 + 4 * QWEN25_7B_PARAMS


def test_memory_efficient_load_removes_the_load_peak(cfg):
    import copy

    cfg = copy.deepcopy(cfg)
    cfg.actor.fsdp.memory_efficient_load = True
    assert actor_memory(ModelShape.from_config(QWEN25_7B), cfg, dp=4).load_peak == 0


@pytest.mark.parametrize(
    "total_gib, verdict",
    [
        (79.6, Verdict.OK),
        (40, Verdict.WARN),  # 35.5 GiB of state fit, activations may not
        (32, Verdict.FAIL),
    ],
)
def test_actor_fits_the_gpu_or_fails(cfg, total_gib, verdict):
    hw = FakeHardware(gpus(8, total=int(total_gib * GIB), free_gib=total_gib))
    check = check_actor(run_of(cfg, hardware=hw))
    assert check.verdict is verdict, check
    assert "7.62B params on 4 GPU(s)" in check.found


def test_without_a_gpu_the_assumed_size_is_used_and_said(cfg):
    check = check_actor(run_of(cfg, hardware=FakeHardware(), gpu_memory_gib=80))
    assert check.verdict is Verdict.OK and "assumed 80 GiB" in check.needed


def test_sglang_kv_cache_of_7b_at_mem_fraction_0_8(cfg):
    run = run_of(cfg)
    est = server_memory(run, ModelShape.from_config(QWEN25_7B), H100_BYTES)
    assert est.weights == 2 * QWEN25_7B_PARAMS  # bf16, TP 1
    # K and V, 28 layers x 4 KV heads x 128 dims x 2 bytes = 56 KiB per token.
    kv_per_token = 2 * 28 * 4 * 128 * 2
    assert est.kv_tokens == (int(0.8 * H100_BYTES) - est.weights) // kv_per_token
    assert 850_000 < est.kv_tokens < 1_000_000
    assert (
        est.planned_turns == 64 * 16 // 4
    )  # max_concurrent_rollouts x group / servers
    assert 100 < est.turns_held < est.planned_turns


def test_a_turn_is_counted_with_the_real_templates(cfg, tiny_model_dir):
    """Chunk 5000 + memory 1024 in and 1024 out, plus the memory-update
    template's own tokens as the tokenizer counts them; without a tokenizer
    that loads, the row says the templates are not counted."""
    import copy

    from memagent_workflow.prompts import PromptTexts
    from memagent_workflow.workflow import load_tokenizer

    shape = ModelShape.from_config(QWEN25_7B)
    bare = run_of(cfg)  # the model folder holds config.json only
    assert server_memory(bare, shape, H100_BYTES).turn_tokens == 5000 + 2 * 1024
    assert "templates not counted" in check_server(bare).found
    local = copy.deepcopy(cfg)
    local.tokenizer_path = str(tiny_model_dir)
    template = PromptTexts().memory_template(load_tokenizer(str(tiny_model_dir)), "")
    assert template.overhead > 20
    est = server_memory(run_of(local), shape, H100_BYTES)
    assert est.turn_tokens == 5000 + 2 * 1024 + template.overhead
    found = check_server(run_of(local)).found
    assert f"turns of {est.turn_tokens} tokens" in found and "not counted" not in found


def test_kv_cache_short_of_the_planned_turns_warns_and_enough_passes(cfg):
    assert check_server(run_of(cfg)).verdict is Verdict.WARN
    import copy

    fewer = copy.deepcopy(cfg)
    fewer.rollout.max_concurrent_rollouts = 16  # 64 turns per server
    assert check_server(run_of(fewer)).verdict is Verdict.OK


def test_weights_leaving_no_kv_room_fail(cfg):
    small = FakeHardware(gpus(8, total=16 * GIB, free_gib=16))
    check = check_server(run_of(cfg, hardware=small))
    assert check.verdict is Verdict.FAIL


def test_unknown_model_warns_instead_of_guessing():
    cfg = load("config.yaml", "scheduler.type=local", "actor.path=nobody/not-cached")
    for check in (check_actor, check_server):
        result = check(run_of(cfg))
        assert result.verdict is Verdict.WARN and "--allow-download" in result.fix
