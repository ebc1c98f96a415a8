"""The stand-in's trainer and engine build what AReaL's would, with the stand-in inside.

`StandinPPOTrainer._rollout_engine_of` mirrors AReaL's ``_init_rollout`` (pinned,
with the other AReaL internals the project relies on, in
``memagent_workflow/areal_private.py``).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from areal.api.cli_args import InferenceEngineConfig
from areal.engine import RemoteSGLangEngine
from areal.infra import RemoteInfEngine

from standin.backend import StandinBackend, StandinSGLangEngine
from standin.trainer import StandinPPOTrainer


def test_the_stand_in_engine_keeps_sglang_s_protocol():
    engine = StandinSGLangEngine(InferenceEngineConfig(backend="sglang:d1"))
    assert isinstance(engine, RemoteSGLangEngine)
    assert isinstance(engine._engine, RemoteInfEngine)
    assert type(engine._engine.backend) is StandinBackend


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


@pytest.mark.parametrize("spmd", [False, True])
def test_the_override_builds_what_areal_would(monkeypatch, spmd):
    from areal.api.alloc_mode import ModelAllocation
    from areal.api.cli_args import SGLangConfig

    import standin.trainer

    monkeypatch.setattr(standin.trainer, "StandinSGLangEngine", Recorder)
    if spmd:
        monkeypatch.setenv("AREAL_SPMD_MODE", "1")
    else:
        monkeypatch.delenv("AREAL_SPMD_MODE", raising=False)
    Recorder.calls = []
    trainer = SimpleNamespace(
        rollout_alloc=ModelAllocation.from_str("sglang:d1", name="rollout"),
        actor_alloc=ModelAllocation.from_str("fsdp:d1", name="actor"),
        scheduler="the scheduler",
        rollout=SimpleNamespace(server_infos=["server 0"]),
        config=SimpleNamespace(
            rollout=SimpleNamespace(backend="sglang:d1", return_routed_experts=False),
            sglang=SGLangConfig(model_path="/m", context_length=64),
            valid_dataset="a validation set",
        ),
    )
    config = InferenceEngineConfig(backend="sglang:d1", max_head_offpolicyness=2)
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
    assert inits[0]["server_args"]["context_length"] == 64
    assert inits[0]["server_args"]["model_path"] == "/m"
    assert "server_infos" not in inits[0]
    assert inits[1]["server_infos"] == ["server 0"]
    trainer.config.valid_dataset = None  # no validation set: no eval engine
    assert StandinPPOTrainer._rollout_engine_of(trainer, config, is_eval=True) is None
