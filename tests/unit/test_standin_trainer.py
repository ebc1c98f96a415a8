"""The stand-in's trainer and engine build what AReaL's would, with the stand-in inside.

`StandinPPOTrainer._rollout_engine_of` mirrors AReaL's ``_init_rollout`` (pinned,
with the other AReaL internals the project relies on, in
``memagent_workflow/areal_internals/pinned.py``).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from areal.api.cli_args import InferenceEngineConfig
from areal.engine import RemoteSGLangEngine
from areal.infra import RemoteInfEngine

from standin.backend import (
    StandinBackend,
    StandinSGLangEngine,
    StandinvLLMBackend,
    StandinvLLMEngine,
)
from standin.trainer import StandinPPOTrainer


def test_the_stand_in_engine_keeps_sglang_s_protocol():
    engine = StandinSGLangEngine(InferenceEngineConfig(backend="sglang:d1"))
    assert isinstance(engine, RemoteSGLangEngine)
    assert isinstance(engine._engine, RemoteInfEngine)
    assert type(engine._engine.backend) is StandinBackend


def test_the_vllm_twin_keeps_areal_s_vllm_protocol():
    from areal.engine import RemotevLLMEngine
    from areal.engine.vllm_remote import VLLMBackend

    engine = StandinvLLMEngine(InferenceEngineConfig(backend="vllm:d1"))
    assert isinstance(engine, RemotevLLMEngine)
    assert isinstance(engine._engine.backend, VLLMBackend)
    assert type(engine._engine.backend) is StandinvLLMBackend


class Recorder:
    """Stands in for the engine class: records how the override uses it."""

    calls: list = []

    def __init__(self, config):
        self.config = config

    @classmethod
    def as_controller(cls, config, scheduler):
        cls.calls.append(("as_controller", config, scheduler))
        return cls(config)

    def initialize(self, **kwargs):
        self.calls.append(("initialize", kwargs))


@pytest.mark.parametrize("backend", ["sglang", "vllm"])
@pytest.mark.parametrize("spmd", [False, True])
def test_the_override_builds_what_areal_would(monkeypatch, spmd, backend):
    from areal.api.alloc_mode import ModelAllocation
    from areal.api.cli_args import SGLangConfig, vLLMConfig

    import standin.trainer

    monkeypatch.setitem(standin.trainer.ENGINES, backend, Recorder)
    if spmd:
        monkeypatch.setenv("AREAL_SPMD_MODE", "1")
    else:
        monkeypatch.delenv("AREAL_SPMD_MODE", raising=False)
    Recorder.calls = []
    trainer = SimpleNamespace(
        rollout_alloc=ModelAllocation.from_str(f"{backend}:d1", name="rollout"),
        actor_alloc=ModelAllocation.from_str("fsdp:d1", name="actor"),
        scheduler="the scheduler",
        rollout=SimpleNamespace(server_infos=["server 0"]),
        config=SimpleNamespace(
            rollout=SimpleNamespace(
                backend=f"{backend}:d1", return_routed_experts=False
            ),
            sglang=SGLangConfig(model_path="/m", context_length=64),
            vllm=vLLMConfig(model="/m", max_model_len=64),
            valid_dataset="a validation set",
        ),
    )
    config = InferenceEngineConfig(backend=f"{backend}:d1", max_head_offpolicyness=2)
    rollout = StandinPPOTrainer._rollout_engine_of(trainer, config, is_eval=False)
    evaluation = StandinPPOTrainer._rollout_engine_of(trainer, config, is_eval=True)
    assert rollout.config.max_head_offpolicyness == 2
    assert evaluation.config.max_head_offpolicyness == int(1e12)
    assert evaluation.config.scheduling_strategy.target == "rollout"
    inits = [c[1] for c in Recorder.calls if c[0] == "initialize"]
    if spmd:  # engines connect to running servers; no controller
        assert not [c for c in Recorder.calls if c[0] == "as_controller"]
        assert inits == [{"train_data_parallel_size": 1}] * 2
        return
    assert [i["role"] for i in inits] == ["rollout", "eval-rollout"]
    args = inits[0]["server_args"]  # AReaL's keys for the backend
    if backend == "vllm":
        assert args["max_model_len"] == 64 and args["model"] == "/m"
    else:
        assert args["context_length"] == 64 and args["model_path"] == "/m"
    assert "server_infos" not in inits[0]
    assert inits[1]["server_infos"] == ["server 0"]
    trainer.config.valid_dataset = None  # no validation set: no eval engine
    assert StandinPPOTrainer._rollout_engine_of(trainer, config, is_eval=True) is None


class Engine:
    """Stands in for the actor class: records the engines built in it."""

    built: list = []

    def __init__(self, config):
        self.config = config

    @classmethod
    def in_process(cls, config, skip_tied_groups=False):
        cls.built.append(config)
        return cls(config)

    def create_process_group(self, parallel_strategy):
        pass


def test_the_product_builds_the_reference_model(monkeypatch):
    """The stand-in gives only its actor class: the reference model for the KL
    loss is built by the product's ``_create_train_engine``, as on GPU."""
    from areal.api.alloc_mode import ModelAllocation

    from memagent_workflow.trainer.ppo_trainer import MemAgentPPOTrainer

    monkeypatch.setenv("AREAL_SPMD_MODE", "1")
    product = MemAgentPPOTrainer._create_train_engine
    reached = []

    def spy(self, config, alloc):
        reached.append(config)
        return product(self, config, alloc)

    monkeypatch.setattr(MemAgentPPOTrainer, "_create_train_engine", spy)
    trainer = object.__new__(StandinPPOTrainer)
    trainer.actor_cls, Engine.built = Engine, []
    trainer.config = SimpleNamespace(
        actor="the actor's config", memagent=SimpleNamespace(skip_tied_groups=False)
    )
    ref = trainer._create_train_engine(
        "the ref's config", ModelAllocation.from_str("fsdp:d1", name="ref")
    )
    assert reached == Engine.built == ["the ref's config"]
    assert type(ref) is Engine and ref.config == "the ref's config"
    with pytest.raises(ValueError, match="fsdp only, got backend megatron"):
        trainer._create_train_engine(
            "the ref's config", ModelAllocation.from_str("megatron:d1", name="ref")
        )
    assert len(reached) == 1  # refused before the product builds anything
