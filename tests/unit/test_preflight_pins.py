"""The AReaL 1.0.4 and transformers facts the preflight's checks rest on, read
from the installed sources: an upgrade that changes one fails here, naming it."""

from __future__ import annotations

import inspect

import pytest

from memagent_workflow.preflight.packages import FLASH_IMPORTS, SGLANG_MIN
from tests.areal_release import CPU_RAY, NO_CPU_RAY


def test_areal_checks_the_sglang_version_the_preflight_asks_for():
    from areal.api.cli_args import SGLangConfig

    source = inspect.getsource(SGLangConfig.build_args)
    assert f'is_version_greater_or_equal("sglang", "{SGLANG_MIN}")' in source


def test_areal_stores_the_actor_in_fp32_by_default():
    from areal.api.cli_args import PPOActorConfig
    from areal.engine.fsdp_engine import FSDPEngine

    assert PPOActorConfig.__dataclass_fields__["optimizer_dtype"].default == "float32"
    # the model is created and loaded in the storage dtype, not the compute dtype
    for method in (
        FSDPEngine._create_llm_actor_or_critic,
        FSDPEngine._create_device_model,
    ):
        assert "getattr(torch, self.config.optimizer_dtype)" in inspect.getsource(
            method
        )


def test_request_timeout_bounds_a_whole_task_under_the_controller():
    from areal.infra.controller.rollout_controller import RolloutController

    source = inspect.getsource(RolloutController)
    assert (
        "await asyncio.wait_for(future, timeout=self.config.request_timeout)" in source
    )
    assert 'f"Rollout timed out after {self.config.request_timeout}s"' in source


def test_sglang_defaults_to_fa3_and_attn_impl_to_flash_attention_2():
    from areal.api.cli_args import PPOActorConfig, SGLangConfig

    assert SGLangConfig.__dataclass_fields__["attention_backend"].default == "fa3"
    assert (
        PPOActorConfig.__dataclass_fields__["attn_impl"].default == "flash_attention_2"
    )


def test_transformers_imports_what_the_preflight_imports():
    from transformers import modeling_flash_attention_utils as fa

    source = inspect.getsource(fa)
    for modules in FLASH_IMPORTS.values():
        for module, names in modules.items():
            assert f"from {module} import {', '.join(names)}" in source, module


@NO_CPU_RAY  # gone from AReaL main after the v2.0.0 tag (docs/areal-versions.md)
def test_ray_bundles_carry_the_worker_spec_per_worker():
    from areal.infra.utils import ray_placement_group as rpg

    source = inspect.getsource(rpg._bundle_spec)
    assert '"memory": mem * 1024**3' in source


@pytest.mark.skipif(CPU_RAY, reason="AReaL main's RayScheduler over HTTP only")
def test_http_ray_bundles_hold_a_roles_workers_per_node():
    """AReaL main after v2.0.0: one bundle per role and node, the specs of the
    role's workers there summed; GPUs required; ray.init called by it."""
    from areal.api.cli_args import SchedulingSpec
    from areal.infra.scheduler.ray import RayScheduler

    scheduler = RayScheduler.__new__(RayScheduler)
    scheduler._n_gpus_per_node, scheduler.ray_device_resource = 8, "GPU"
    spec = SchedulingSpec(cpu=4, gpu=1, mem=32)
    bundles, _, _ = scheduler._build_node_plan(16, spec)
    assert bundles == [{"CPU": 32, "GPU": 8.0, "memory": 256 * 1024**3}] * 2
    init = inspect.getsource(RayScheduler.__init__)
    assert "initialize_ray()" in init and "-only clusters" in init
    specs = inspect.getsource(RayScheduler._prepare_worker_specs)
    assert "additional_bash_cmds" in specs
