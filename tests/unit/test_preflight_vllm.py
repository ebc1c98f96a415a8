"""Preflight on AReaL's vLLM variant (``rollout.backend=vllm:...``), each check
both ways on faked machines: vLLM's package and torch pin, the actor's
FlashAttention in the vLLM environment, the SM row (SGLang's only), the KV cache
at ``vllm.gpu_memory_utilization`` (the SGLang arithmetic, one copy), the
colocated recipe's sleep mode and dev mode, LoRA's rank and slots, the start
time against ``rollout.setup_timeout``."""

from __future__ import annotations

import pytest

from memagent_workflow.preflight import Verdict, run_checks
from memagent_workflow.preflight.budgets import check_setup_timeout
from memagent_workflow.preflight.engine import VLLM, engine_of
from memagent_workflow.preflight.hardware import check_capability
from memagent_workflow.preflight.memory import check_actor, check_server
from memagent_workflow.preflight.memory_estimate import server_memory
from memagent_workflow.preflight.model import ModelShape
from memagent_workflow.preflight.packages import (
    check_engine,
    check_flash_attention,
    check_vllm,
)
from tests.unit.preflight_fakes import (
    GIB,
    H100_BYTES,
    QWEN25_1B5,
    QWEN25_7B,
    FakeHardware,
    FakePackages,
    changed,
    gpus,
    load,
    run_of,
    write_model,
)

VLLM_ENV = {"vllm": "0.19.1", "torch": "2.10.0"}


class FlashPackages(FakePackages):
    """A vLLM environment whose ``flash_attn`` imports, or is missing."""

    def __init__(self, versions, flash: bool):
        super().__init__(versions)
        self.flash = flash

    def import_names(self, module, names):
        return None if self.flash else f"not installed (No module named '{module}')"

    def providers(self, package):
        return ["flash-attn"] if self.flash else []


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {
        "7b": write_model(root / "qwen25-7b", QWEN25_7B),
        "1b5": write_model(root / "qwen25-1b5", QWEN25_1B5),
    }


@pytest.fixture(scope="module")
def vllm_config(models):
    return load(
        "config.yaml",
        "scheduler.type=local",
        "rollout.backend=vllm:d4p1t1",
        f"actor.path={models['7b']}",
    )


def vrun(cfg, versions=VLLM_ENV, **kw):
    return run_of(cfg, packages=kw.pop("packages", FakePackages(versions)), **kw)


def test_the_engine_is_the_word_of_rollout_backend(vllm_config):
    assert engine_of(vrun(vllm_config)) is VLLM
    assert check_engine(vrun(vllm_config)).name == "vllm"


def test_allocation_mode_names_the_servers_and_must_agree(vllm_config):
    launched = changed(vllm_config, allocation_mode="vllm:d4p1t1+fsdp:d4p1t1")
    assert check_engine(vrun(launched)).verdict is Verdict.OK
    spoken = changed(vllm_config, rollout__backend="sglang:d4p1t1")
    clash = changed(spoken, allocation_mode="vllm:d4p1t1+fsdp:d4p1t1")
    assert engine_of(vrun(clash)) is VLLM  # the servers the launcher starts
    check = check_engine(vrun(clash))
    assert check.verdict is Verdict.FAIL
    assert "rollout.backend=vllm:dN" in check.fix


@pytest.mark.parametrize(
    "versions, verdict, why",
    [
        (VLLM_ENV, Verdict.OK, ""),
        ({**VLLM_ENV, "torch": "2.10.0+cu129"}, Verdict.OK, ""),
        ({"torch": "2.10.0"}, Verdict.FAIL, "envs/vllm"),
        ({**VLLM_ENV, "torch": "2.9.1"}, Verdict.FAIL, "built for torch 2.10.0"),
        ({**VLLM_ENV, "vllm": "0.11.0"}, Verdict.FAIL, "module layout"),
    ],
)
def test_vllm_package_and_its_torch(vllm_config, versions, verdict, why):
    check = check_vllm(vrun(vllm_config, versions))
    assert check.verdict is verdict, check
    assert why in check.fix


def test_vllm_row_is_not_applicable_without_a_server(vllm_config):
    cpu = changed(vllm_config, cluster__n_gpus_per_node=0)
    for spec in (*cpu.actor.scheduling_spec, *cpu.rollout.scheduling_spec):
        spec.gpu = 0
    assert check_engine(vrun(cpu)).verdict is Verdict.NA


@pytest.mark.parametrize("flash", [True, False])
def test_flash_attention_in_the_vllm_environment(vllm_config, flash):
    check = check_flash_attention(
        vrun(vllm_config, packages=FlashPackages(VLLM_ENV, flash))
    )
    if flash:
        assert check.verdict is Verdict.OK
    else:
        assert check.verdict is Verdict.FAIL
        assert "vLLM brings no flash_attn" in check.fix
        assert "kernels-community/flash-attn2" in check.fix


def test_the_sm_row_is_sglangs_only(vllm_config):
    blackwell = FakeHardware(gpus(8, sm=(10, 0)))
    sglang = changed(vllm_config, rollout__backend="sglang:d4p1t1")
    assert check_capability(run_of(sglang, hardware=blackwell)).verdict is Verdict.FAIL
    check = check_capability(vrun(vllm_config, hardware=blackwell))
    assert check.verdict is Verdict.NA and "vLLM" in check.found


def test_kv_cache_at_gpu_memory_utilization_is_sglangs_arithmetic(vllm_config):
    shape = ModelShape.from_config(QWEN25_7B)
    vllm = server_memory(vrun(vllm_config), shape, H100_BYTES)
    sglang = changed(vllm_config, rollout__backend="sglang:d4p1t1")
    same = server_memory(run_of(sglang), shape, H100_BYTES)
    assert vllm.engine is VLLM and vllm.pool == int(0.8 * H100_BYTES)
    assert (vllm.kv_tokens, vllm.weights) == (same.kv_tokens, same.weights)
    check = check_server(vrun(vllm_config))
    assert check.name == "vLLM KV cache per server"
    assert "gpu_memory_utilization 0.8" in check.found
    assert check.verdict is not Verdict.FAIL


def test_a_share_below_the_weights_fails_naming_vllms_key(vllm_config):
    small = changed(vllm_config, vllm__gpu_memory_utilization=0.18)
    check = check_server(vrun(small))
    assert check.verdict is Verdict.FAIL
    assert "vllm.gpu_memory_utilization" in check.fix


@pytest.fixture(scope="module")
def colocated(models):
    return load(
        "config_qwen25_1b5_1gpu.yaml",
        "rollout.backend=vllm:d1p1t1",
        f"actor.path={models['1b5']}",
    )


def one_gpu(gib: float = 40) -> FakeHardware:
    return FakeHardware(gpus(1, total=int(gib * GIB), free_gib=gib))


def test_the_colocated_recipe_passes_on_vllm(colocated):
    run = vrun(colocated, hardware=one_gpu())
    assert run.layout.colocated
    check = check_server(run)
    assert check.verdict is not Verdict.FAIL, check
    # vLLM's share is of the whole GPU: the actor's weights are outside it
    shape = ModelShape.from_config(QWEN25_1B5)
    est = server_memory(run, shape, 40 * GIB)
    sglang = changed(colocated, rollout__backend="sglang:d1p1t1")
    assert est.kv_tokens > server_memory(run_of(sglang), shape, 40 * GIB).kv_tokens


@pytest.mark.parametrize(
    "key, value, named",
    [
        ("vllm__enable_sleep_mode", False, "vllm.enable_sleep_mode=true"),
        ("actor__weight_update_mode", "xccl", "actor.weight_update_mode=disk"),
    ],
)
def test_colocated_vllm_without_its_settings_fails(colocated, key, value, named):
    check = check_server(vrun(changed(colocated, **{key: value}), hardware=one_gpu()))
    assert check.verdict is Verdict.FAIL and named in check.fix


def test_colocated_vllm_needs_dev_mode_for_sleep(colocated, monkeypatch):
    monkeypatch.delenv("VLLM_SERVER_DEV_MODE", raising=False)
    cfg = changed(colocated)
    for spec in cfg.rollout.scheduling_spec:
        spec.env_vars = {}
    check = check_server(vrun(cfg, hardware=one_gpu()))
    assert check.verdict is Verdict.FAIL and "VLLM_SERVER_DEV_MODE=1" in check.fix
    monkeypatch.setenv("VLLM_SERVER_DEV_MODE", "1")
    assert check_server(vrun(cfg, hardware=one_gpu())).verdict is not Verdict.FAIL


def test_colocated_vllm_needs_its_share_free_beside_the_actor(colocated):
    greedy = changed(colocated, vllm__gpu_memory_utilization=0.95)
    check = check_server(vrun(greedy, hardware=one_gpu()))
    assert check.verdict is Verdict.FAIL
    assert "vLLM refuses to start" in check.fix


@pytest.fixture(scope="module")
def lora_config(models):
    return load(
        "config_qwen25_7b_lora_2gpu.yaml",
        "rollout.backend=vllm:d1p1t1",
        f"actor.path={models['7b']}",
    )


def test_lora_recipe_serves_its_adapter_on_vllm(lora_config):
    run = vrun(lora_config, hardware=FakeHardware(gpus(2, total=40 * GIB)))
    assert check_actor(run).verdict is not Verdict.FAIL
    est = server_memory(run, ModelShape.from_config(QWEN25_7B), 40 * GIB)
    assert est.adapters == 8 * 2 * 32 * 80_740_352 // 32  # 8 slots, rank 32, bf16


@pytest.mark.parametrize(
    "key, value, named",
    [
        ("vllm__max_lora_rank", 16, "vllm.max_lora_rank"),
        ("vllm__enable_lora", False, "vllm.enable_lora=true"),
    ],
)
def test_lora_on_vllm_without_its_keys_fails(lora_config, key, value, named):
    run = vrun(changed(lora_config, **{key: value}))
    check = check_actor(run)
    assert check.verdict is Verdict.FAIL and named in check.fix


def test_lora_xccl_is_refused_for_sglang_only(lora_config):
    xccl = changed(lora_config, actor__weight_update_mode="xccl")
    assert check_actor(vrun(xccl)).verdict is not Verdict.FAIL
    sglang = changed(xccl, rollout__backend="sglang:d1p1t1")
    assert check_actor(run_of(sglang)).verdict is Verdict.FAIL


def test_setup_timeout_counts_vllms_start(vllm_config, monkeypatch):
    monkeypatch.setattr("memagent_workflow.preflight.budgets.weights_local", bool)
    check = check_setup_timeout(vrun(vllm_config))
    assert check.verdict is Verdict.OK and "240 s to start vLLM" in check.found
    short = changed(vllm_config, rollout__setup_timeout=300)
    assert check_setup_timeout(vrun(short)).verdict is Verdict.WARN


def test_every_row_names_vllm_not_sglang(vllm_config):
    labels = [c.label for c in run_checks(vrun(vllm_config))]
    assert "packages: vllm" in labels and "memory: vLLM KV cache per server" in labels
    assert not any(
        "SGLang KV" in label or label == "packages: sglang" for label in labels
    )
